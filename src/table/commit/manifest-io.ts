import { randomBytes } from 'node:crypto';
import type { FileIO } from '../../io/file-io.ts';
import { decodeManifest, encodeManifest, inheritFirstRowIds, inheritSequenceNumbers } from '../../format/iceberg/manifest.ts';
import { decodeManifestList } from '../../format/iceberg/manifest-list.ts';
import type { ManifestEntry, ManifestFile, PartitionSpec, Schema, TableMetadata } from '../../format/iceberg/types.ts';
import { Props } from '../../format/dual/table-properties.ts';

/** Reads and writes the Avro files of a snapshot through a FileIO. */

/**
 * The Avro files written through a FileIO, by URI, once each is durable. A manifest or manifest
 * list never changes after it is written (its name is unique), and the steps right after its
 * commit read it again: the Delta version mirroring the snapshot reads the list and the manifest
 * of added files, the next commit reads the list, and every tenth commit merges the small
 * manifests the commits before it wrote. Those reads are served from here. The oldest files go
 * first once the bytes held pass the limit.
 */
class WrittenAvro {
  private readonly files = new Map<string, Uint8Array>();
  private bytes = 0;

  constructor(private readonly limit: number) {}

  get(uri: string): Uint8Array | undefined {
    const hit = this.files.get(uri);
    if (hit) {
      this.files.delete(uri);
      this.files.set(uri, hit);
    }
    return hit;
  }

  add(uri: string, bytes: Uint8Array): void {
    if (bytes.length > this.limit / 4) return;
    this.files.delete(uri);
    this.files.set(uri, bytes);
    this.bytes += bytes.length;
    for (const [k, v] of this.files) {
      if (this.bytes <= this.limit) break;
      this.files.delete(k);
      this.bytes -= v.length;
    }
  }

  forget(uri: string): void {
    const held = this.files.get(uri);
    if (held) this.bytes -= held.length;
    this.files.delete(uri);
  }
}

const WRITTEN_AVRO_BYTES = 64 * 1024 * 1024;
const writtenAvro = new WeakMap<FileIO, WrittenAvro>();

function writtenOf(io: FileIO): WrittenAvro {
  let w = writtenAvro.get(io);
  if (!w) writtenAvro.set(io, (w = new WrittenAvro(WRITTEN_AVRO_BYTES)));
  return w;
}

/**
 * Writes a manifest or manifest list and, once it is durable, keeps its bytes for the reads that
 * follow (see WrittenAvro).
 */
export async function writeAvroFile(io: FileIO, uri: string, bytes: Uint8Array): Promise<void> {
  await io.write(uri, bytes);
  writtenOf(io).add(uri, bytes);
}

/** A file removed (its commit lost): it is no longer served from memory. */
export function forgetAvroFiles(io: FileIO, uris: readonly string[]): void {
  const w = writtenAvro.get(io);
  if (w) for (const u of uris) w.forget(u);
}

function readAvroFile(io: FileIO, uri: string): Promise<Uint8Array> {
  const held = writtenAvro.get(io)?.get(uri);
  return held ? Promise.resolve(held) : io.read(uri);
}

/** A snapshot's manifest list; `snapshotId`, when given, must be the snapshot the list's header names. */
export async function readManifestList(io: FileIO, uri: string, snapshotId?: bigint): Promise<ManifestFile[]> {
  return decodeManifestList(await readAvroFile(io, uri), uri, { snapshotId });
}

/** A manifest's entries with inherited snapshot IDs, sequence numbers and (v3) first row IDs filled in. */
export async function readManifestEntries(io: FileIO, manifest: ManifestFile, metadata: TableMetadata): Promise<ManifestEntry[]> {
  const specsById = new Map(metadata['partition-specs'].map((s) => [s['spec-id'], s]));
  const decoded = decodeManifest(await readAvroFile(io, manifest['manifest-path']), { specsById, manifestFile: manifest });
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
  await writeAvroFile(io, uri, bytes);
  return bytes.length;
}
