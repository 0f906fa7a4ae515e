import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import { decodeDeletionVectorBlob, encodeDeletionVectorBlob } from '../delta/deletion-vector.ts';
import type { RoaringBitmap64 } from '../roaring.ts';

/**
 * Puffin files (Puffin spec): `Magic Blob₁ … Blobₙ Footer`, the footer being
 * `Magic FooterPayload FooterPayloadSize Flags Magic` with a UTF-8 JSON `FileMetadata` payload.
 * Twinlake writes uncompressed footers and blobs; it reads uncompressed ones and refuses the rest.
 */

const MAGIC = new Uint8Array([0x50, 0x46, 0x41, 0x31]);
const FLAG_FOOTER_COMPRESSED = 1;
export const DELETION_VECTOR_V1 = 'deletion-vector-v1';
/** The `_pos` metadata column (spec §Reserved Field IDs): what a DV's positions are of. */
const ROW_POSITION_FIELD_ID = 2147483645;

export interface BlobMetadata {
  type: string;
  fields: number[];
  'snapshot-id': bigint | number;
  'sequence-number': bigint | number;
  offset: number;
  length: number;
  'compression-codec'?: string;
  properties?: Record<string, string>;
}

export interface FileMetadata {
  blobs: BlobMetadata[];
  properties?: Record<string, string>;
}

export interface PuffinBlobInput {
  type: string;
  fields: number[];
  snapshotId: bigint | number;
  sequenceNumber: bigint | number;
  data: Uint8Array;
  properties?: Record<string, string>;
}

/** A Puffin file of uncompressed blobs; returns the bytes and each blob's metadata (with offsets). */
export function encodePuffin(blobs: PuffinBlobInput[], properties?: Record<string, string>): { bytes: Uint8Array; metadata: FileMetadata } {
  let offset = MAGIC.length;
  const metas: BlobMetadata[] = blobs.map((b) => {
    const meta: BlobMetadata = {
      type: b.type,
      fields: b.fields,
      'snapshot-id': b.snapshotId,
      'sequence-number': b.sequenceNumber,
      offset,
      length: b.data.length,
    };
    if (b.properties) meta.properties = b.properties;
    offset += b.data.length;
    return meta;
  });
  const metadata: FileMetadata = { blobs: metas, ...(properties ? { properties } : {}) };
  const payload = new TextEncoder().encode(stringifyJson(metadata));
  const out = new Uint8Array(offset + MAGIC.length + payload.length + 12);
  out.set(MAGIC, 0);
  blobs.forEach((b, i) => out.set(b.data, metas[i]!.offset));
  let pos = offset;
  out.set(MAGIC, pos);
  pos += MAGIC.length;
  out.set(payload, pos);
  pos += payload.length;
  const view = new DataView(out.buffer);
  view.setInt32(pos, payload.length, true);
  view.setInt32(pos + 4, 0, true); // flags: footer not compressed
  out.set(MAGIC, pos + 8);
  return { bytes: out, metadata };
}

function hasMagic(bytes: Uint8Array, at: number): boolean {
  return at >= 0 && MAGIC.every((b, i) => bytes[at + i] === b);
}

/**
 * The footer's `FileMetadata`. `bytes` may be just the file's tail (a ranged read) when
 * `fileLength` says how long the whole file is; blob offsets are relative to the whole file.
 */
export function decodePuffinFooter(bytes: Uint8Array, opts: { fileLength?: number; source?: string } = {}): FileMetadata {
  const source = opts.source ?? 'puffin';
  const fileLength = opts.fileLength ?? bytes.length;
  const tail = bytes.length;
  if (tail < 12 + MAGIC.length || !hasMagic(bytes, tail - 4)) throw dataInvalid(`${source}: expected the Puffin magic at the end of the file, found none`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloadSize = view.getInt32(tail - 12, true);
  const flags = view.getInt32(tail - 8, true);
  const payloadStart = tail - 12 - payloadSize;
  if (payloadSize < 0 || !hasMagic(bytes, payloadStart - 4)) {
    throw dataInvalid(`${source}: expected the footer magic before a ${payloadSize}-byte payload, found none`);
  }
  if (fileLength === bytes.length && !hasMagic(bytes, 0)) throw dataInvalid(`${source}: expected the Puffin magic at the start of the file, found none`);
  if (flags & FLAG_FOOTER_COMPRESSED) throw unsupported(`${source}: LZ4-compressed Puffin footers are not supported`);
  let raw: any;
  try {
    raw = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(payloadStart, tail - 12)), `${source} footer`);
  } catch (e) {
    throw dataInvalid(`${source}: footer payload is not UTF-8 JSON: ${(e as Error).message}`);
  }
  if (!raw || !Array.isArray(raw.blobs)) throw dataInvalid(`${source}: expected a footer with a blobs list, found ${JSON.stringify(Object.keys(raw ?? {}))}`);
  const footerStart = fileLength - (tail - (payloadStart - 4));
  const blobs = raw.blobs.map((b: any, i: number): BlobMetadata => {
    const offset = Number(b.offset);
    const length = Number(b.length);
    if (typeof b.type !== 'string' || !Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < MAGIC.length || offset + length > footerStart) {
      throw dataInvalid(`${source}: blob ${i} expected a type and an offset/length inside [4, ${footerStart}), found ${stringifyJson(b)}`);
    }
    return { ...b, offset, length, fields: (b.fields ?? []).map(Number) };
  });
  return { ...raw, blobs };
}

/** The bytes of one blob, given the whole file. */
export function puffinBlob(file: Uint8Array, blob: Pick<BlobMetadata, 'offset' | 'length' | 'compression-codec'>): Uint8Array {
  if (blob['compression-codec'] !== undefined) throw unsupported(`puffin: compressed blobs (${blob['compression-codec']}) are not supported`);
  if (blob.offset + blob.length > file.length) throw dataInvalid(`puffin: expected a blob at [${blob.offset}, ${blob.offset + blob.length}), the file has ${file.length} bytes`);
  return file.subarray(blob.offset, blob.offset + blob.length);
}

export interface DeletionVectorInput {
  /** The data file's location, exactly as the manifest names it. */
  referencedDataFile: string;
  bitmap: RoaringBitmap64;
}

/** What a delete manifest records for one DV in a Puffin file (spec §Deletion Vectors). */
export interface DeletionVectorEntry {
  referencedDataFile: string;
  contentOffset: number;
  contentSizeInBytes: number;
  cardinality: number;
}

/**
 * A Puffin file of `deletion-vector-v1` blobs. Snapshot ID and sequence number are -1: they are
 * not known when the file is written (Puffin spec).
 */
export function encodeDeletionVectorPuffin(vectors: DeletionVectorInput[], properties?: Record<string, string>): { bytes: Uint8Array; entries: DeletionVectorEntry[] } {
  const seen = new Set<string>();
  for (const v of vectors) {
    if (seen.has(v.referencedDataFile)) throw invalidInput(`puffin: expected at most one deletion vector per data file, found two for ${v.referencedDataFile}`);
    seen.add(v.referencedDataFile);
  }
  const { bytes, metadata } = encodePuffin(
    vectors.map((v) => ({
      type: DELETION_VECTOR_V1,
      fields: [ROW_POSITION_FIELD_ID],
      snapshotId: -1,
      sequenceNumber: -1,
      data: encodeDeletionVectorBlob(v.bitmap),
      properties: { 'referenced-data-file': v.referencedDataFile, cardinality: String(v.bitmap.cardinality) },
    })),
    properties,
  );
  const entries = metadata.blobs.map((b, i) => ({
    referencedDataFile: vectors[i]!.referencedDataFile,
    contentOffset: b.offset,
    contentSizeInBytes: b.length,
    cardinality: vectors[i]!.bitmap.cardinality,
  }));
  return { bytes, entries };
}

/**
 * The positions of a `deletion-vector-v1` blob (its bytes from `content-offset`, for
 * `content-size-in-bytes`). The blob's own length and CRC must agree; so must `cardinality`.
 */
export function readDeletionVectorBlob(blob: Uint8Array, opts: { cardinality?: number; where?: string } = {}): RoaringBitmap64 {
  const where = opts.where ?? 'puffin deletion vector';
  const bitmap = decodeDeletionVectorBlob(blob, { expectedSize: blob.length - 8, where });
  if (opts.cardinality !== undefined && bitmap.cardinality !== opts.cardinality) {
    throw dataInvalid(`${where}: expected cardinality ${opts.cardinality}, found ${bitmap.cardinality}`);
  }
  return bitmap;
}

/** Every deletion vector of a whole Puffin file, by referenced data file. */
export function readDeletionVectorPuffin(file: Uint8Array, source = 'puffin'): Map<string, RoaringBitmap64> {
  const out = new Map<string, RoaringBitmap64>();
  for (const blob of decodePuffinFooter(file, { source }).blobs) {
    if (blob.type !== DELETION_VECTOR_V1) continue;
    const ref = blob.properties?.['referenced-data-file'];
    if (ref === undefined) throw dataInvalid(`${source}: deletion vector at ${blob.offset} has no referenced-data-file property`);
    const cardinality = blob.properties?.cardinality;
    out.set(ref, readDeletionVectorBlob(puffinBlob(file, blob), { cardinality: cardinality === undefined ? undefined : Number(cardinality), where: `${source} blob at ${blob.offset}` }));
  }
  return out;
}
