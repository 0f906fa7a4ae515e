import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import { isUri, joinUri } from '../../core/uri.ts';
import { bytesToUuid, uuidToBytes } from '../iceberg/single-value.ts';
import { RoaringBitmap64 } from '../roaring.ts';
import type { DeletionVectorDescriptor } from './actions.ts';
import { decodePath } from './replay.ts';
import { crc32 } from '../../core/crc32.ts';

export { crc32 };

/**
 * Delta deletion vectors (PROTOCOL.md §Deletion Vectors, §Deletion Vector Format): descriptors,
 * Z85 text, and the bytes. A DV is the 4-byte magic then a portable 64-bit Roaring bitmap; stored
 * inline in the log it is Z85 text; stored in a file (format version byte `1` first) each DV is
 * framed as a big-endian u32 size, the DV, and a big-endian CRC-32 of the DV. Iceberg's Puffin
 * `deletion-vector-v1` blob is that same frame: a bitmap serializes to the same bytes in both.
 */

/** 1681511377 little-endian: bytes D1 D3 39 64. */
export const DV_MAGIC = 1681511377;
/**
 * Delta's earlier "native" layout, which the inline example of PROTOCOL.md still uses: this magic
 * big-endian, a big-endian count of 32-bit bitmaps, then each with a big-endian size; the i-th
 * bitmap holds the positions whose high 32 bits are i. Read, never written.
 */
const NATIVE_MAGIC = 1681511376;
const FILE_FORMAT_VERSION = 1;
const UUID_Z85_LENGTH = 20;

// --- Z85 (ZeroMQ RFC 32), padded like Delta's codec for lengths that are not a multiple of 4 ---

const Z85_ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';
const Z85_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < Z85_ALPHABET.length; i++) Z85_VALUE[Z85_ALPHABET.charCodeAt(i)] = i;

/** Z85 text of `bytes`; input is zero-padded to a multiple of 4 (decode with the length to undo). */
export function z85Encode(bytes: Uint8Array): string {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let out = '';
  for (let i = 0; i < padded.length; i += 4) {
    let v = view.getUint32(i, false);
    const chunk = new Array<string>(5);
    for (let j = 4; j >= 0; j--) {
      chunk[j] = Z85_ALPHABET[v % 85]!;
      v = Math.floor(v / 85);
    }
    out += chunk.join('');
  }
  return out;
}

/** The bytes of Z85 text, cut to `length` when given (the size before padding). */
export function z85Decode(text: string, length?: number): Uint8Array {
  if (text.length % 5 !== 0) throw dataInvalid(`z85: expected a multiple of 5 characters, found ${text.length}`);
  const out = new Uint8Array((text.length / 5) * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < text.length; i += 5) {
    let v = 0;
    for (let j = 0; j < 5; j++) {
      const code = text.charCodeAt(i + j);
      const d = code < 128 ? Z85_VALUE[code]! : -1;
      if (d < 0) throw dataInvalid(`z85: expected a Z85 character at ${i + j}, found ${JSON.stringify(text[i + j])}`);
      v = v * 85 + d;
    }
    if (v > 0xffffffff) throw dataInvalid(`z85: group at ${i} overflows 32 bits`);
    view.setUint32((i / 5) * 4, v, false);
  }
  if (length === undefined) return out;
  if (length > out.length || length < out.length - 3) throw dataInvalid(`z85: expected ${length} bytes, the text holds ${out.length}`);
  return out.subarray(0, length);
}



// --- bytes --------------------------------------------------------------------------------------

/** The magic and the portable bitmap: what inline DVs encode and what the frame's size counts. */
export function serializeDeletionVector(bitmap: RoaringBitmap64): Uint8Array {
  const body = bitmap.serialize();
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, DV_MAGIC, true);
  out.set(body, 4);
  return out;
}

export function parseDeletionVector(bytes: Uint8Array, where = 'deletion vector'): RoaringBitmap64 {
  if (bytes.length < 4) throw dataInvalid(`${where}: expected at least 4 bytes, found ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) === DV_MAGIC) return RoaringBitmap64.deserialize(bytes.subarray(4));
  if (view.getUint32(0, false) !== NATIVE_MAGIC) throw dataInvalid(`${where}: expected magic ${DV_MAGIC}, found ${view.getUint32(0, true)}`);
  if (bytes.length < 8) throw dataInvalid(`${where}: expected a bitmap count after the magic, found ${bytes.length - 4} bytes`);
  const count = view.getInt32(4, false);
  const buckets: { key: number; bytes: Uint8Array }[] = [];
  let pos = 8;
  for (let key = 0; key < count; key++) {
    if (pos + 4 > bytes.length) throw dataInvalid(`${where}: expected ${count} bitmaps, found ${key}`);
    const size = view.getInt32(pos, false);
    if (size < 0 || pos + 4 + size > bytes.length) throw dataInvalid(`${where}: bitmap ${key} expected ${size} bytes, found ${bytes.length - pos - 4}`);
    buckets.push({ key, bytes: bytes.subarray(pos + 4, pos + 4 + size) });
    pos += 4 + size;
  }
  if (pos !== bytes.length) throw dataInvalid(`${where}: expected ${pos} bytes, found ${bytes.length}`);
  return RoaringBitmap64.fromBuckets(buckets);
}

/** A framed DV: big-endian size, the DV (magic and bitmap), big-endian CRC-32 of the DV. */
export function encodeDeletionVectorBlob(bitmap: RoaringBitmap64): Uint8Array {
  const dv = serializeDeletionVector(bitmap);
  const out = new Uint8Array(dv.length + 8);
  const view = new DataView(out.buffer);
  view.setUint32(0, dv.length, false);
  out.set(dv, 4);
  view.setUint32(4 + dv.length, crc32(dv), false);
  return out;
}

/**
 * Reads a framed DV (see `encodeDeletionVectorBlob`); `bytes` starts at the size field and may
 * run past the CRC. `expectedSize`, when known from metadata, must equal the size field.
 */
export function decodeDeletionVectorBlob(bytes: Uint8Array, opts: { expectedSize?: number; where?: string } = {}): RoaringBitmap64 {
  const where = opts.where ?? 'deletion vector';
  if (bytes.length < 8) throw dataInvalid(`${where}: expected at least 8 bytes, found ${bytes.length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getUint32(0, false);
  if (opts.expectedSize !== undefined && size !== opts.expectedSize) throw dataInvalid(`${where}: expected size ${opts.expectedSize}, found ${size}`);
  if (bytes.length < size + 8) throw dataInvalid(`${where}: expected ${size + 8} bytes, found ${bytes.length}`);
  const dv = bytes.subarray(4, 4 + size);
  const stored = view.getUint32(4 + size, false);
  const actual = crc32(dv);
  if (stored !== actual) throw dataInvalid(`${where}: expected CRC-32 ${hex(stored)}, computed ${hex(actual)}`);
  return parseDeletionVector(dv, where);
}

/** A DV file holding `bitmaps` in order, and where each one starts (for its descriptor). */
export function encodeDeletionVectorFile(bitmaps: RoaringBitmap64[]): { bytes: Uint8Array; entries: { offset: number; sizeInBytes: number; cardinality: number }[] } {
  const blobs = bitmaps.map(encodeDeletionVectorBlob);
  const bytes = new Uint8Array(1 + blobs.reduce((n, b) => n + b.length, 0));
  bytes[0] = FILE_FORMAT_VERSION;
  let pos = 1;
  const entries = blobs.map((b, i) => {
    bytes.set(b, pos);
    const entry = { offset: pos, sizeInBytes: b.length - 8, cardinality: bitmaps[i]!.cardinality };
    pos += b.length;
    return entry;
  });
  return { bytes, entries };
}

/** Reads the DV a descriptor names from the whole DV file's bytes. */
export function readDeletionVectorFile(bytes: Uint8Array, dv: Pick<DeletionVectorDescriptor, 'offset' | 'sizeInBytes'>, where = 'deletion vector file'): RoaringBitmap64 {
  if (bytes.length < 1 || bytes[0] !== FILE_FORMAT_VERSION) throw dataInvalid(`${where}: expected format version ${FILE_FORMAT_VERSION}, found ${bytes[0]}`);
  const offset = dv.offset ?? 0;
  return decodeDeletionVectorBlob(bytes.subarray(offset), { expectedSize: dv.sizeInBytes, where: `${where} at ${offset}` });
}

/** The one DV of a DV file holding a single vector (`encodeDeletionVectorFile([bitmap])`): where it is, and its positions. */
export function soleDeletionVector(bytes: Uint8Array, where = 'deletion vector file'): { entry: { offset: number; sizeInBytes: number; cardinality: number }; bitmap: RoaringBitmap64 } {
  const sizeInBytes = bytes.length - 9; // version byte, size field, CRC
  const bitmap = readDeletionVectorFile(bytes, { offset: 1, sizeInBytes }, where);
  return { entry: { offset: 1, sizeInBytes, cardinality: bitmap.cardinality }, bitmap };
}

/**
 * The Delta DV file holding the same framed vectors as a Puffin file of `deletion-vector-v1`
 * blobs written back to back from offset 4 (after Puffin's magic), as `encodeDeletionVectorPuffin`
 * writes them: the format version byte, then that blob section as it is. Delta readers require the
 * version byte at the start of a DV file, which a Puffin file cannot have, so the bytes are kept
 * twice; a blob at Puffin offset `o` is at `o - PUFFIN_TO_DV_FILE_OFFSET` here.
 */
export function deletionVectorFileFromPuffin(puffin: Uint8Array, blobs: { contentOffset: number; contentSizeInBytes: number }[]): Uint8Array {
  const first = blobs[0]!;
  const last = blobs[blobs.length - 1]!;
  if (first.contentOffset !== PUFFIN_TO_DV_FILE_OFFSET + 1) throw invalidInput(`puffin: expected the first blob at ${PUFFIN_TO_DV_FILE_OFFSET + 1}, found ${first.contentOffset}`);
  const section = puffin.subarray(first.contentOffset, last.contentOffset + last.contentSizeInBytes);
  const out = new Uint8Array(1 + section.length);
  out[0] = FILE_FORMAT_VERSION;
  out.set(section, 1);
  return out;
}

/** Puffin's 4-byte magic precedes its first blob; a DV file's version byte precedes its first DV. */
export const PUFFIN_TO_DV_FILE_OFFSET = 3;

/** Where a Puffin blob sits in its `deletionVectorFileFromPuffin` copy (size: the DV without its frame). */
export function puffinBlobInDeletionVectorFile(blob: { contentOffset: number; contentSizeInBytes: number; cardinality: number }): { offset: number; sizeInBytes: number; cardinality: number } {
  return { offset: blob.contentOffset - PUFFIN_TO_DV_FILE_OFFSET, sizeInBytes: blob.contentSizeInBytes - 8, cardinality: blob.cardinality };
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

// --- descriptors --------------------------------------------------------------------------------

/** The UUID (canonical text) as Delta writes it in `pathOrInlineDv`: Z85 of its 16 bytes. */
export function uuidToZ85(uuid: string): string {
  return z85Encode(uuidToBytes(uuid));
}

export function uuidFromZ85(text: string): string {
  if (text.length !== UUID_Z85_LENGTH) throw dataInvalid(`deletion vector: expected a ${UUID_Z85_LENGTH}-character Z85 UUID, found ${JSON.stringify(text)}`);
  return bytesToUuid(z85Decode(text));
}

/** The DV file name for a UUID: `deletion_vector_<uuid>.bin`. */
export function deletionVectorFileName(uuid: string): string {
  return `deletion_vector_${uuid}.bin`;
}

/**
 * PROTOCOL.md §Derived Fields `absolutePath`: for `u`, `<table>/<random prefix>/deletion_vector_<uuid>.bin`
 * (the prefix is whatever precedes the 20-character UUID); for `p`, the path itself (encoded like
 * an `add` path). Undefined for inline DVs.
 */
export function deletionVectorLocation(dv: DeletionVectorDescriptor, tableRootUri: string): string | undefined {
  switch (dv.storageType) {
    case 'i':
      return undefined;
    case 'u': {
      const text = dv.pathOrInlineDv;
      if (text.length < UUID_Z85_LENGTH) throw dataInvalid(`deletion vector: expected at least ${UUID_Z85_LENGTH} characters for storage type u, found ${JSON.stringify(text)}`);
      const prefix = text.slice(0, text.length - UUID_Z85_LENGTH);
      const uuid = uuidFromZ85(text.slice(text.length - UUID_Z85_LENGTH));
      return joinUri(tableRootUri, prefix, deletionVectorFileName(uuid));
    }
    case 'p': {
      const path = decodePath(dv.pathOrInlineDv);
      if (!isUri(path)) throw dataInvalid(`deletion vector: expected an absolute path for storage type p, found ${JSON.stringify(dv.pathOrInlineDv)}`);
      return path;
    }
    default:
      throw unsupported(`deletion vector: expected storage type u, i or p, found ${JSON.stringify(dv.storageType)}`);
  }
}

/** The bitmap of an inline (`i`) DV. */
export function inlineDeletionVector(dv: DeletionVectorDescriptor): RoaringBitmap64 {
  if (dv.storageType !== 'i') throw invalidInput(`deletion vector: expected storage type i, found ${JSON.stringify(dv.storageType)}`);
  return parseDeletionVector(z85Decode(dv.pathOrInlineDv, dv.sizeInBytes), 'inline deletion vector');
}

/** A descriptor for a bitmap stored inline in the log. */
export function inlineDescriptor(bitmap: RoaringBitmap64): DeletionVectorDescriptor {
  const bytes = serializeDeletionVector(bitmap);
  return { storageType: 'i', pathOrInlineDv: z85Encode(bytes), sizeInBytes: bytes.length, cardinality: bitmap.cardinality };
}

/**
 * A descriptor for a DV stored in a file: relative by UUID (`u`, with an optional random prefix)
 * or by absolute URI (`p`). `offset` is where its size field starts; `sizeInBytes` counts the
 * magic and the bitmap.
 */
export function fileDescriptor(
  where: { uuid: string; prefix?: string } | { absolutePath: string },
  entry: { offset: number; sizeInBytes: number; cardinality: number },
): DeletionVectorDescriptor {
  const base = { offset: entry.offset, sizeInBytes: entry.sizeInBytes, cardinality: entry.cardinality };
  if ('uuid' in where) return { storageType: 'u', pathOrInlineDv: `${where.prefix ?? ''}${uuidToZ85(where.uuid)}`, ...base };
  if (!isUri(where.absolutePath)) throw invalidInput(`deletion vector: expected an absolute URI, found ${JSON.stringify(where.absolutePath)}`);
  return { storageType: 'p', pathOrInlineDv: encodeURI(where.absolutePath), ...base };
}
