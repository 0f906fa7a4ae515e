/**
 * Z-order keys (compaction's `zorder`): each column's value becomes 8 bytes whose unsigned
 * byte order is the value's order, and the keys of a row interleave those bytes bit by bit, most
 * significant first. Sorting rows by the key clusters them along every column at once, so each
 * rewritten file covers a narrow range of each column and a filter on any of them skips files.
 * The encodings follow Iceberg's ZOrderByteUtils: integers (int, long, and dates and timestamps
 * as their day or microsecond counts) with the sign bit flipped, strings by their first 8 UTF-8
 * bytes padded with zeros; null is all zero bytes, so nulls come first.
 */

export const ZORDER_BYTES = 8;

const SIGN = 1n << 63n;
const MASK = (1n << 64n) - 1n;

/** A signed 64-bit integer as 8 bytes in its order: the sign bit flipped, big-endian. */
export function orderedLong(v: bigint | number | null): Uint8Array {
  const out = new Uint8Array(ZORDER_BYTES);
  if (v === null) return out;
  let u = (BigInt(v) ^ SIGN) & MASK;
  for (let i = ZORDER_BYTES - 1; i >= 0; i--) {
    out[i] = Number(u & 0xffn);
    u >>= 8n;
  }
  return out;
}

const utf8 = new TextEncoder();

/** A string's first 8 UTF-8 bytes, zero-padded: strings sharing those bytes tie. */
export function orderedString(v: string | null): Uint8Array {
  const out = new Uint8Array(ZORDER_BYTES);
  if (v === null) return out;
  out.set(utf8.encode(v).subarray(0, ZORDER_BYTES));
  return out;
}

/**
 * Interleaves equally long keys bit by bit: bit k of column i (most significant first) becomes
 * bit k·n + i of the result, so the result's first bits are every column's top bits.
 */
export function interleaveBits(keys: readonly Uint8Array[]): Uint8Array {
  const n = keys.length;
  if (n === 0) return new Uint8Array(0);
  const width = keys[0]!.length;
  for (const k of keys) if (k.length !== width) throw new RangeError(`zorder: keys of ${width} and ${k.length} bytes cannot be interleaved`);
  const out = new Uint8Array(width * n);
  let bit = 0;
  for (let k = 0; k < width * 8; k++) {
    const byte = k >> 3;
    const shift = 7 - (k & 7);
    for (let i = 0; i < n; i++, bit++) {
      if ((keys[i]![byte]! >> shift) & 1) out[bit >> 3]! |= 0x80 >> (bit & 7);
    }
  }
  return out;
}

/** The kinds of column a Z-order key encodes: integers (and dates, timestamps as counts) and strings. */
export type ZOrderKind = 'integer' | 'string';

/** The Z-order key of one row: its columns' values (bigint or number for integers, string for strings). */
export function zorderKey(kinds: readonly ZOrderKind[], values: readonly (bigint | number | string | null)[]): Uint8Array {
  return interleaveBits(kinds.map((kind, i) => (kind === 'string' ? orderedString(values[i] as string | null) : orderedLong(values[i] as bigint | number | null))));
}

/** The Z-order kind of an Iceberg primitive type, or undefined when Z-order cannot encode it. */
export function zorderKindOf(type: string): ZOrderKind | undefined {
  if (type === 'int' || type === 'long' || type === 'date' || type === 'timestamp' || type === 'timestamptz') return 'integer';
  if (type === 'string') return 'string';
  return undefined;
}
