import type { LiteralValue } from '../scan-task.ts';
import { indexById } from '../iceberg/schema.ts';
import { decimalParams, decimalToUnscaled, fromBinary, parseDate, parseTimestamp, unscaledToDecimal } from '../iceberg/single-value.ts';
import { transformResultType, tryParseTransform } from '../iceberg/transforms.ts';
import type { DataFile, FieldSummary, IcebergType, PartitionField, StructType } from '../iceberg/types.ts';

/**
 * Statistics in the forms the evaluators read: Iceberg bounds decoded from their single-value
 * binary form, manifest-list partition summaries decoded by partition type, Delta stats JSON
 * values converted to `LiteralValue`. Anything that does not decode is left out: a missing bound
 * only costs pruning, a misread one would skip files that match.
 */

/** Iceberg file metrics keyed by field ID, bounds decoded. */
export interface FileMetrics {
  recordCount?: number;
  valueCounts?: Map<number, number>;
  nullCounts?: Map<number, number>;
  nanCounts?: Map<number, number>;
  lowerBounds?: Map<number, LiteralValue>;
  upperBounds?: Map<number, LiteralValue>;
}

/** One manifest-list `field_summary` with its bounds decoded by the partition field's type. */
export interface PartitionFieldSummary {
  containsNull: boolean;
  containsNaN?: boolean;
  lower?: LiteralValue;
  upper?: LiteralValue;
}

/** Bounds of primitive columns anywhere in the schema; unknown IDs and undecodable bytes are dropped. */
export function decodeBounds(schema: StructType, bounds: Map<number, Uint8Array> | undefined): Map<number, LiteralValue> {
  const out = new Map<number, LiteralValue>();
  if (!bounds) return out;
  const index = indexById(schema);
  for (const [id, bytes] of bounds) {
    const type = index.get(id)?.field.type;
    if (typeof type !== 'string') continue;
    // Files written before an int→long or float→double promotion keep 4-byte bounds (spec
    // §Schema Evolution); they decode as the narrower type and compare the same.
    const stored = bytes.length === 4 && type === 'long' ? 'int' : bytes.length === 4 && type === 'double' ? 'float' : type;
    try {
      out.set(id, fromBinary(stored, bytes));
    } catch {
      // A bound this reader cannot decode is treated as absent.
    }
  }
  return out;
}

export function dataFileMetrics(schema: StructType, file: DataFile): FileMetrics {
  return {
    recordCount: file['record-count'],
    valueCounts: file['value-counts'],
    nullCounts: file['null-value-counts'],
    nanCounts: file['nan-value-counts'],
    lowerBounds: decodeBounds(schema, file['lower-bounds']),
    upperBounds: decodeBounds(schema, file['upper-bounds']),
  };
}

/**
 * Decodes a manifest's partition summaries (spec §Manifest Lists) for the spec it was written
 * with. An entry is undefined when its field cannot be judged (unknown transform, dropped source
 * column, undecodable bound), which evaluators read as "might match".
 */
export function decodeFieldSummaries(
  fields: readonly PartitionField[],
  schema: StructType,
  summaries: readonly FieldSummary[] | undefined,
): (PartitionFieldSummary | undefined)[] | undefined {
  if (!summaries) return undefined;
  const index = indexById(schema);
  return fields.map((f, i) => {
    const s = summaries[i];
    const source = index.get(f['source-id'])?.field.type;
    if (!s || source === undefined || !tryParseTransformQuietly(f.transform)) return undefined;
    try {
      const type = transformResultType(f.transform, source);
      const out: PartitionFieldSummary = { containsNull: s['contains-null'] };
      if (s['contains-nan'] !== undefined && s['contains-nan'] !== null) out.containsNaN = s['contains-nan'];
      if (s['lower-bound']) out.lower = fromBinary(type, s['lower-bound']);
      if (s['upper-bound']) out.upper = fromBinary(type, s['upper-bound']);
      return out;
    } catch {
      return undefined;
    }
  });
}

function tryParseTransformQuietly(transform: string): boolean {
  try {
    return tryParseTransform(transform) !== undefined;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Delta stats values

/** A value Delta writers may round (milliseconds) or cut (string prefixes), with how far to trust it. */
export interface DeltaBound {
  value: LiteralValue;
  /** The value is a prefix of an upper bound, not an upper bound itself (cut string maxima). */
  prefix?: boolean;
}

const WIDEN_MICROS = 999n;
const WIDEN_NANOS = 999_999n;

/** A decimal text exact to the digit, or undefined when the JSON number may have been rounded. */
function exactDecimal(raw: unknown, precision: number): string | undefined {
  if (typeof raw === 'bigint') return raw.toString();
  if (typeof raw === 'string') return raw;
  if (typeof raw !== 'number' || !Number.isFinite(raw)) return undefined;
  // A double keeps 15 significant digits exactly; beyond that the JSON text may not survive.
  if (!Number.isSafeInteger(raw) && precision > 15) return undefined;
  const text = String(raw);
  return /e/i.test(text) ? undefined : text;
}

/**
 * A Delta `minValues`/`maxValues` leaf as a bound of `type` (PROTOCOL.md §Per-file Statistics).
 * Timestamps are kept to milliseconds by Delta writers, so both ends widen by just under a
 * millisecond; a string maximum may be cut to a prefix, which only bounds the data as a prefix.
 */
export function deltaBound(type: IcebergType, raw: unknown, side: 'min' | 'max'): DeltaBound | undefined {
  if (typeof type !== 'string' || raw === null || raw === undefined) return undefined;
  try {
    switch (type) {
      case 'boolean':
        return typeof raw === 'boolean' ? { value: raw } : undefined;
      case 'int':
        return (typeof raw === 'number' && Number.isInteger(raw)) || typeof raw === 'bigint' ? { value: Number(raw) } : undefined;
      case 'long':
        return (typeof raw === 'number' && Number.isSafeInteger(raw)) || typeof raw === 'bigint' ? { value: BigInt(raw) } : undefined;
      case 'float':
      case 'double':
        if (typeof raw !== 'number' || Number.isNaN(raw)) return undefined;
        return { value: type === 'float' ? Math.fround(raw) : raw };
      case 'date':
        return typeof raw === 'string' ? { value: parseDate(raw) } : undefined;
      case 'timestamp':
      case 'timestamptz':
      case 'timestamp_ns':
      case 'timestamptz_ns': {
        if (typeof raw !== 'string') return undefined;
        const nanos = type.endsWith('_ns');
        const r = parseTimestamp(raw, nanos ? 'nanos' : 'micros');
        // A zone on a wall-clock column's stats leaves its meaning unclear.
        if (r.zoned && !type.startsWith('timestamptz') && !/(Z|z|[+-]00(:?00)?)$/.test(raw)) return undefined;
        const widen = nanos ? WIDEN_NANOS : WIDEN_MICROS;
        return { value: side === 'min' ? r.value - widen : r.value + widen };
      }
      case 'string': {
        if (typeof raw !== 'string') return undefined;
        if (side === 'min') return { value: raw };
        // A cut may split a surrogate pair; the prefix that remains is whole code points.
        const last = raw.charCodeAt(raw.length - 1);
        const whole = last >= 0xd800 && last <= 0xdbff ? raw.slice(0, -1) : raw;
        return { value: whole, prefix: true };
      }
    }
    const dec = decimalParams(type);
    if (dec) {
      const text = exactDecimal(raw, dec.precision);
      return text === undefined ? undefined : { value: unscaledToDecimal(decimalToUnscaled(text, dec.scale), dec.scale) };
    }
  } catch {
    // Unparseable stats are no stats.
  }
  return undefined;
}
