import { invalidInput, unsupported } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import { isPrimitive, normalizePrimitive, typeToString } from './schema.ts';
import { decimalParams, decimalToUnscaled, fixedLength, floorDiv, minimalTwosComplement, uuidToBytes } from './single-value.ts';
import type { IcebergType } from './types.ts';

/**
 * The 32-bit hash of spec §Bucket Transform Details and Appendix B: Murmur3, x86 variant, seed 0,
 * over each type's byte form. Results are signed 32-bit integers, as Java returns them.
 */

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK(k: number): number {
  k = Math.imul(k, C1);
  k = (k << 15) | (k >>> 17);
  return Math.imul(k, C2);
}

function mixH(h: number, k: number): number {
  h ^= mixK(k);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

function finish(h: number, length: number): number {
  h ^= length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

/** murmur3_x86_32 of `bytes` (or its first `length` bytes) with the given seed (0 for Iceberg). */
export function murmur3Hash32(bytes: Uint8Array, seed = 0, length = bytes.length): number {
  let h = seed | 0;
  const blocks = length >>> 2;
  for (let i = 0; i < blocks; i++) {
    const o = i << 2;
    h = mixH(h, bytes[o]! | (bytes[o + 1]! << 8) | (bytes[o + 2]! << 16) | (bytes[o + 3]! << 24));
  }
  const tail = blocks << 2;
  let k = 0;
  switch (length & 3) {
    case 3:
      k ^= bytes[tail + 2]! << 16;
    // falls through
    case 2:
      k ^= bytes[tail + 1]! << 8;
    // falls through
    case 1:
      k ^= bytes[tail]!;
      h ^= mixK(k);
  }
  return finish(h, length);
}

/** Hash of the 8 little-endian bytes of a 64-bit integer given as its low and high 32 bits. */
function hashLongParts(lo: number, hi: number): number {
  return finish(mixH(mixH(0, lo), hi), 8);
}

/**
 * `hashLong` of Appendix B: the 8 little-endian bytes of a long. Ints hash as longs too (note 1 of
 * Appendix B), so a column promoted from int to long keeps its buckets.
 */
export function hashLong(v: bigint | number): number {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw invalidInput(`bucket hash: expected an integer, found ${v}`);
    if (v >= -0x80000000 && v <= 0x7fffffff) return hashLongParts(v | 0, v < 0 ? -1 : 0);
    v = BigInt(v);
  }
  const x = BigInt.asIntN(64, v);
  return hashLongParts(Number(BigInt.asIntN(32, x)), Number(BigInt.asIntN(32, x >> 32n)));
}

/** `hashBytes` of Appendix B. */
export function hashBytes(bytes: Uint8Array): number {
  return murmur3Hash32(bytes);
}

const utf8 = new TextEncoder();
let scratch = new Uint8Array(256);

/** `hashBytes(utf8Bytes(v))`, encoding into a reused buffer: bucketing hashes one string per row. */
export function hashString(v: string): number {
  if (v.length * 3 > scratch.length) scratch = new Uint8Array(Math.max(v.length * 3, scratch.length * 2));
  const { written } = utf8.encodeInto(v, scratch);
  return murmur3Hash32(scratch, 0, written);
}

/**
 * Appendix B for floating point: `hashLong(doubleToLongBits(double(v)))`, every NaN canonical and
 * -0.0 as 0.0. Floats widen to double first, so a float promoted to double keeps its hash.
 */
export function hashDouble(v: number): number {
  if (Number.isNaN(v)) return hashLongParts(0, 0x7ff80000);
  if (v === 0) return hashLongParts(0, 0);
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, v, true);
  return hashLongParts(dv.getInt32(0, true), dv.getInt32(4, true));
}

function describe(value: LiteralValue): string {
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'bigint') return `${value}n`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

function integer(value: LiteralValue, type: string): bigint | number {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  throw invalidInput(`bucket hash: expected an integer for ${type}, found ${describe(value)}`);
}

/**
 * The Appendix B hash function for values of `type` in `LiteralValue` form (dates as days,
 * timestamps as micros, `timestamp_ns` as nanos, decimals as text or unscaled bigint, uuids as text
 * or 16 bytes). Boolean, float and double follow the appendix's second table: defined, though not
 * bucketable. The type is resolved once, for loops over many values.
 */
export function bucketHasher(type: IcebergType): (value: LiteralValue) => number {
  if (!isPrimitive(type)) throw unsupported(`bucket hash: not defined for ${typeToString(type)}`);
  const t = normalizePrimitive(type);
  const notNull = (value: LiteralValue): Exclude<LiteralValue, null> => {
    if (value === null) throw invalidInput(`bucket hash: expected a ${t} value, found null (null has no hash; the bucket of null is null)`);
    return value;
  };
  switch (t) {
    case 'int':
    case 'long':
    case 'date':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return (value) => hashLong(integer(notNull(value), t));
    case 'timestamp_ns':
    case 'timestamptz_ns':
      // Appendix B note 3: hash the microsecond value, so ns and us columns bucket alike.
      return (value) => hashLong(floorDiv(BigInt(integer(notNull(value), t)), 1000n));
    case 'string':
      return (value) => {
        if (typeof value !== 'string') throw invalidInput(`bucket hash: expected a string, found ${describe(value)}`);
        return hashString(value);
      };
    case 'uuid':
      return (value) => {
        if (typeof value === 'string') return hashBytes(uuidToBytes(value));
        if (value instanceof Uint8Array && value.length === 16) return hashBytes(value);
        throw invalidInput(`bucket hash: expected a uuid, found ${describe(value)}`);
      };
    case 'binary':
      return (value) => {
        if (!(value instanceof Uint8Array)) throw invalidInput(`bucket hash: expected bytes, found ${describe(value)}`);
        return hashBytes(value);
      };
    case 'boolean':
      return (value) => {
        if (typeof value !== 'boolean') throw invalidInput(`bucket hash: expected a boolean, found ${describe(value)}`);
        return hashLong(value ? 1 : 0);
      };
    case 'float':
    case 'double':
      return (value) => {
        if (typeof value !== 'number') throw invalidInput(`bucket hash: expected a number, found ${describe(value)}`);
        return hashDouble(t === 'float' ? Math.fround(value) : value);
      };
  }
  const len = fixedLength(t);
  if (len !== undefined) {
    return (value) => {
      if (!(value instanceof Uint8Array)) throw invalidInput(`bucket hash: expected ${len} bytes for ${t}, found ${describe(value)}`);
      return hashBytes(value);
    };
  }
  const dec = decimalParams(t);
  if (dec) {
    // Appendix B note 2: the unscaled value in its fewest two's-complement bytes; the scale is
    // part of the type, not the hash.
    return (value) => {
      const v = notNull(value);
      const unscaled = typeof v === 'string' ? decimalToUnscaled(v, dec.scale) : BigInt(integer(v, t));
      return hashBytes(minimalTwosComplement(unscaled));
    };
  }
  throw unsupported(`bucket hash: not defined for ${t}`);
}

/** The Appendix B hash of one value; see `bucketHasher`. */
export function bucketHash(type: IcebergType, value: LiteralValue): number {
  return bucketHasher(type)(value);
}
