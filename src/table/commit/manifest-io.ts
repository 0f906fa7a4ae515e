import { randomBytes } from 'node:crypto';
import type { FileIO } from '../../io/file-io.ts';
import { decodeManifest, encodeManifest, inheritFirstRowIds, inheritSequenceNumbers } from '../../format/iceberg/manifest.ts';
import { decodeManifestList } from '../../format/iceberg/manifest-list.ts';
import type { ManifestEntry, ManifestFile, PartitionSpec, Schema, TableMetadata } from '../../format/iceberg/types.ts';
import { Props } from '../../format/dual/table-properties.ts';

/** Reads and writes the Avro files of a snapshot through a FileIO. */

export async function readManifestList(io: FileIO, uri: string): Promise<ManifestFile[]> {
  return decodeManifestList(await io.read(uri));
}

/** A manifest's entries with inherited snapshot IDs, sequence numbers and (v3) first row IDs filled in. */
export async function readManifestEntries(io: FileIO, manifest: ManifestFile, metadata: TableMetadata): Promise<ManifestEntry[]> {
  const specsById = new Map(metadata['partition-specs'].map((s) => [s['spec-id'], s]));
  const decoded = decodeManifest(await io.read(manifest['manifest-path']), { specsById });
  return inheritFirstRowIds(inheritSequenceNumbers(decoded.entries, manifest), manifest);
}

export function avroCodec(metadata: TableMetadata): 'null' | 'deflate' {
  const raw = (metadata.properties[Props.avroCompression] ?? 'gzip').toLowerCase();
  return raw === 'uncompressed' || raw === 'none' ? 'null' : 'deflate';
}

export function syncMarker(): Uint8Array {
  return new Uint8Array(randomBytes(16));
}

/** A manifest's Avro bytes (spec §Manifests), for `writeManifest` or a write the caller schedules. */
export function encodeManifestFile(metadata: TableMetadata, args: { schema: Schema; spec: PartitionSpec; content: 0 | 1; entries: ManifestEntry[] }): Uint8Array {
  return encodeManifest({
    formatVersion: metadata['format-version'],
    schema: args.schema,
    spec: args.spec,
    content: args.content,
    entries: args.entries,
    syncMarker: syncMarker(),
    codec: avroCodec(metadata),
  });
}

export async function writeManifest(
  io: FileIO,
  uri: string,
  metadata: TableMetadata,
  args: { schema: Schema; spec: PartitionSpec; content: 0 | 1; entries: ManifestEntry[] },
): Promise<number> {
  const bytes = encodeManifestFile(metadata, args);
  await io.write(uri, bytes);
  return bytes.length;
}
