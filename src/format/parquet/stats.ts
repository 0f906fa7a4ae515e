import { invalidInput } from '../../core/errors.ts';
import { stringifyJson } from '../../core/json.ts';
import type { LiteralValue } from '../scan-task.ts';
import {
  compareUtf8,
  daysFromCivil,
  decimalParams,
  decimalToUnscaled,
  floorDiv,
  formatDate,
  formatTimestamp,
  fromBinary,
  hexToBytes,
  parseTime,
  toBinary,
  truncateBinaryLowerBound,
  truncateBinaryUpperBound,
  truncateLowerBound,
  truncateUpperBound,
  unscaledToDecimal,
} from '../iceberg/single-value.ts';
import type { DataFile, IcebergType, StructType } from '../iceberg/types.ts';
import { physicalName } from './field-ids.ts';

/**
 * Per-file statistics, computed once by the Parquet writer and projected twice (DESIGN.md §5):
 * into Iceberg metrics and, from those alone, into Delta `stats` JSON.
 */

export interface ColumnStats {
  /** Values in the column chunk, nulls included (for nested columns: entries at the leaf level). */
  valueCount?: number;
  nullCount?: number;
  /**
   * DuckDB's NaN flag. `true` is reliable; `false` is not (DuckDB 1.5.6 loses the flag for row
   * groups that have no min/max), so it never becomes a NaN count of 0.
   */
  hasNaN?: boolean;
  /** Smallest non-null, non-NaN value, as DuckDB reports it (strings may be long). */
  min?: LiteralValue;
  max?: LiteralValue;
  sizeBytes?: number;
}

export interface FileStats {
  /** The file as DuckDB names it (a local path). */
  path: string;
  recordCount: number;
  sizeBytes: number;
  /** Keyed by field ID. */
  columns: Map<number, ColumnStats>;
}

/** One row of DuckDB's `COPY ... (RETURN_STATS)` result, with its maps as Maps. */
export interface ReturnStatsRow {
  filename: string;
  count: number | bigint;
  fileSizeBytes: number | bigint;
  /** Column path such as `"s"."y"."element"` → statistic name → value as text. */
  columnStatistics: Map<string, Map<string, string>>;
}

interface LeafInfo {
  id: number;
  type: IcebergType;
  /** Inside a list or map: bounds do not describe a single value per row. */
  repeated: boolean;
}

/** Physical column paths of every column (DuckDB's `element`, `key`, `value` for list and map). */
export function columnPaths(schema: StructType, physicalNames: Map<number, string>): Map<string, LeafInfo> {
  const out = new Map<string, LeafInfo>();
  const visit = (type: IcebergType, id: number, path: string[], repeated: boolean) => {
    out.set(JSON.stringify(path), { id, type, repeated });
    if (typeof type === 'string') return;
    if (type.type === 'struct') for (const f of type.fields) visit(f.type, f.id, [...path, physicalName(f, physicalNames)], repeated);
    else if (type.type === 'list') visit(type.element, type['element-id'], [...path, 'element'], true);
    else {
      visit(type.key, type['key-id'], [...path, 'key'], true);
      visit(type.value, type['value-id'], [...path, 'value'], true);
    }
  };
  for (const f of schema.fields) visit(f.type, f.id, [physicalName(f, physicalNames)], false);
  return out;
}

/** `"s"."q""t"."element"` → ['s', 'q"t', 'element']. */
export function parseColumnPath(text: string): string[] {
  const parts: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] !== '"') throw invalidInput(`parquet stats: expected '"' at offset ${i} of column path ${JSON.stringify(text)}`);
    let part = '';
    i++;
    for (;;) {
      if (i >= text.length) throw invalidInput(`parquet stats: unterminated name in column path ${JSON.stringify(text)}`);
      if (text[i] === '"') {
        if (text[i + 1] === '"') { part += '"'; i += 2; continue; }
        i++;
        break;
      }
      part += text[i++];
    }
    parts.push(part);
    if (i < text.length) {
      if (text[i] !== '.') throw invalidInput(`parquet stats: expected '.' at offset ${i} of column path ${JSON.stringify(text)}`);
      i++;
    }
  }
  return parts;
}

function parseFloatText(text: string): number | undefined {
  const t = text.trim().toLowerCase();
  if (t === 'nan' || t === '-nan') return NaN;
  if (t === 'inf' || t === 'infinity') return Infinity;
  if (t === '-inf' || t === '-infinity') return -Infinity;
  if (!/^-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(t)) return undefined;
  return Number(t);
}

const DUCK_DATE = /^(\d{4,})-(\d{2})-(\d{2})( \(BC\))?/;

function duckDays(m: RegExpExecArray): number {
  // DuckDB prints year 0 as "0001 (BC)".
  const y = Number(m[1]);
  return daysFromCivil(m[4] ? 1 - y : y, Number(m[2]), Number(m[3]));
}

function parseDuckTimestamp(text: string, unit: 'micros' | 'nanos', zoned: boolean): bigint | undefined {
  const m = /^(\d{4,})-(\d{2})-(\d{2})( \(BC\))? (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([+-]\d{2}(?::?\d{2}){0,2})?$/.exec(text);
  if (!m) return undefined;
  const digits = unit === 'micros' ? 6 : 9;
  const frac = m[8] ?? '';
  if (frac.length > digits) return undefined;
  const perSecond = unit === 'micros' ? 1_000_000n : 1_000_000_000n;
  let seconds = BigInt(duckDays(m)) * 86_400n + (BigInt(m[5]) * 60n + BigInt(m[6])) * 60n + BigInt(m[7]);
  if (m[9]) {
    if (!zoned) return undefined;
    const z = /^([+-])(\d{2})(?::?(\d{2}))?(?::?(\d{2}))?$/.exec(m[9])!;
    const offset = (BigInt(z[2]) * 60n + BigInt(z[3] ?? '0')) * 60n + BigInt(z[4] ?? '0');
    seconds = z[1] === '+' ? seconds - offset : seconds + offset;
  } else if (zoned) {
    return undefined;
  }
  return seconds * perSecond + BigInt(frac.padEnd(digits, '0'));
}

/**
 * A value as DuckDB prints it in RETURN_STATS, in `LiteralValue` form; undefined when the text is
 * not an exact value of the type (e.g. `infinity` timestamps), so no bound is made from it.
 */
export function parseDuckDBStatValue(type: IcebergType, text: string): LiteralValue | undefined {
  if (typeof type !== 'string') return undefined;
  switch (type) {
    case 'boolean':
      return text === '1' || text === 'true' ? true : text === '0' || text === 'false' ? false : undefined;
    case 'int':
      return /^-?\d+$/.test(text) ? Number(text) : undefined;
    case 'long':
      return /^-?\d+$/.test(text) ? BigInt(text) : undefined;
    case 'float': {
      const n = parseFloatText(text);
      return n === undefined ? undefined : Math.fround(n);
    }
    case 'double':
      return parseFloatText(text);
    case 'date': {
      const m = DUCK_DATE.exec(text);
      return m && m[0].length === text.length ? duckDays(m) : undefined;
    }
    case 'time':
      try {
        return parseTime(text);
      } catch {
        return undefined;
      }
    case 'timestamp':
    case 'timestamptz':
      return parseDuckTimestamp(text, 'micros', type === 'timestamptz');
    case 'timestamp_ns':
      return parseDuckTimestamp(text, 'nanos', false);
    case 'string':
    case 'uuid':
      return text;
    case 'binary':
      return /^([0-9A-Fa-f]{2})*$/.test(text) ? hexToBytes(text) : undefined;
  }
  const dec = decimalParams(type);
  if (dec && /^-?\d+(\.\d+)?$/.test(text)) {
    try {
      return unscaledToDecimal(decimalToUnscaled(text, dec.scale), dec.scale);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function toNumber(v: number | bigint | undefined): number | undefined {
  return v === undefined ? undefined : Number(v);
}

/** Turns one RETURN_STATS row into per-field-ID statistics. Columns not in the schema are ignored. */
export function parseReturnStats(row: ReturnStatsRow, schema: StructType, physicalNames: Map<number, string>): FileStats {
  const paths = columnPaths(schema, physicalNames);
  const columns = new Map<number, ColumnStats>();
  for (const [pathText, stats] of row.columnStatistics) {
    const leaf = paths.get(JSON.stringify(parseColumnPath(pathText)));
    if (!leaf) continue;
    const num = (key: string) => {
      const v = stats.get(key);
      return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
    };
    const col: ColumnStats = { valueCount: num('num_values'), nullCount: num('null_count'), sizeBytes: num('column_size_bytes') };
    const nan = stats.get('has_nan');
    if (nan !== undefined) col.hasNaN = nan === 'true';
    const min = stats.get('min');
    const max = stats.get('max');
    if (min !== undefined) col.min = parseDuckDBStatValue(leaf.type, min);
    if (max !== undefined) col.max = parseDuckDBStatValue(leaf.type, max);
    columns.set(leaf.id, col);
  }
  return { path: row.filename, recordCount: toNumber(row.count)!, sizeBytes: toNumber(row.fileSizeBytes)!, columns };
}

// ---------------------------------------------------------------------------------------------
// Iceberg metrics

export type IcebergMetrics = Pick<DataFile, 'value-counts' | 'null-value-counts' | 'nan-value-counts' | 'lower-bounds' | 'upper-bounds' | 'column-sizes'>;

export function compareLiterals(a: LiteralValue, b: LiteralValue): number | undefined {
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (typeof a === 'string' && typeof b === 'string') return compareUtf8(a, b);
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  }
  return undefined;
}

/**
 * Bounds Iceberg can rely on, or undefined. A missing bound costs some pruning; a wrong one
 * returns wrong results in every engine (DESIGN.md §5), so anything doubtful is dropped.
 */
function bounds(type: IcebergType, min: LiteralValue, max: LiteralValue): { lower?: LiteralValue; upper?: LiteralValue } {
  if (typeof type !== 'string' || min === null || max === null) return {};
  switch (type) {
    case 'float':
    case 'double': {
      if (typeof min !== 'number' || typeof max !== 'number' || Number.isNaN(min) || Number.isNaN(max)) return {};
      // DuckDB treats -0.0 and +0.0 as equal and keeps whichever came first; Iceberg orders -0.0
      // before +0.0 (spec, Data File Fields note 2), so a zero bound is widened to the outer zero.
      return { lower: min === 0 ? -0 : min, upper: max === 0 ? 0 : max };
    }
    case 'string': {
      if (typeof min !== 'string' || typeof max !== 'string' || compareUtf8(min, max) > 0) return {};
      return { lower: truncateLowerBound(min), upper: truncateUpperBound(max) };
    }
    case 'binary': {
      if (!(min instanceof Uint8Array) || !(max instanceof Uint8Array) || compareLiterals(min, max)! > 0) return {};
      return { lower: truncateBinaryLowerBound(min), upper: truncateBinaryUpperBound(max) };
    }
    // Engines disagree on UUID order (Java compares the two halves as signed longs); fixed is
    // never written by DuckDB as FIXED_LEN_BYTE_ARRAY.
    case 'uuid':
      return {};
  }
  if (isFixed(type)) return {};
  // Decimals come as text at the type's scale: order them as numbers ("9.00" < "10.00").
  const d = decimalParams(type);
  if (d) return decimalToUnscaled(String(min), d.scale) <= decimalToUnscaled(String(max), d.scale) ? { lower: min, upper: max } : {};
  const order = compareLiterals(min, max);
  if (order === undefined || order > 0) return {};
  return { lower: min, upper: max };
}

function isFixed(type: string): boolean {
  return /^fixed\[/.test(type);
}

/** Field ID → type and whether it sits inside a list or map. */
function leavesById(schema: StructType): Map<number, LeafInfo> {
  const out = new Map<number, LeafInfo>();
  for (const leaf of columnPaths(schema, new Map()).values()) out.set(leaf.id, leaf);
  return out;
}

/**
 * Iceberg metrics of one file. Counts for every column (as Iceberg's own Parquet writer reports
 * them, list and map children included); bounds only for primitive columns outside lists and maps;
 * `nan-value-counts` never, since DuckDB gives no NaN count and its NaN flag can be wrong.
 */
export function icebergMetrics(stats: FileStats, schema: StructType): IcebergMetrics {
  const leaves = leavesById(schema);
  const valueCounts = new Map<number, number>();
  const nullCounts = new Map<number, number>();
  const sizes = new Map<number, number>();
  const lower = new Map<number, Uint8Array>();
  const upper = new Map<number, Uint8Array>();
  for (const [id, col] of stats.columns) {
    const leaf = leaves.get(id);
    if (!leaf || typeof leaf.type !== 'string') continue;
    if (col.valueCount !== undefined) valueCounts.set(id, col.valueCount);
    if (col.nullCount !== undefined) nullCounts.set(id, col.nullCount);
    if (col.sizeBytes !== undefined) sizes.set(id, col.sizeBytes);
    if (leaf.repeated || col.min === undefined || col.max === undefined) continue;
    const b = bounds(leaf.type, col.min, col.max);
    if (b.lower !== undefined) lower.set(id, toBinary(leaf.type, b.lower));
    if (b.upper !== undefined) upper.set(id, toBinary(leaf.type, b.upper));
  }
  return { 'value-counts': valueCounts, 'null-value-counts': nullCounts, 'column-sizes': sizes, 'lower-bounds': lower, 'upper-bounds': upper };
}

// ---------------------------------------------------------------------------------------------
// Delta stats, derived from Iceberg metrics alone

export type DeltaStatsInput = Pick<DataFile, 'record-count' | 'null-value-counts' | 'lower-bounds' | 'upper-bounds'>;

const MICROS_PER_MILLI = 1000n;

function millisText(micros: bigint, side: 'min' | 'max', zoned: boolean): string | undefined {
  let ms = floorDiv(micros, MICROS_PER_MILLI);
  // Delta keeps milliseconds: a maximum rounded down would no longer bound the data.
  if (side === 'max' && ms * MICROS_PER_MILLI !== micros) ms += 1n;
  const text = formatTimestamp(ms * MICROS_PER_MILLI).slice(0, -3);
  if (!/^\d{4}-/.test(text) || text.startsWith('0000')) return undefined;
  return zoned ? `${text}Z` : text;
}

/** A bound in Delta's JSON form, or undefined when Delta has no exact form for it. */
function deltaValue(type: IcebergType, value: LiteralValue, side: 'min' | 'max'): unknown {
  if (typeof type !== 'string' || value === null) return undefined;
  switch (type) {
    case 'int':
      return value;
    case 'long':
      return typeof value === 'bigint' && Number.isSafeInteger(Number(value)) ? Number(value) : value;
    case 'float':
    case 'double':
      return typeof value === 'number' && Number.isFinite(value) ? (value === 0 ? 0 : value) : undefined;
    case 'date': {
      const text = formatDate(value as number);
      return /^\d{4}-/.test(text) && !text.startsWith('0000') ? text : undefined;
    }
    case 'timestamp':
    case 'timestamptz':
      return millisText(value as bigint, side, type === 'timestamptz');
    case 'string':
      return value;
  }
  if (decimalParams(type)) {
    // Readers may parse JSON numbers as doubles: only decimals a double holds exactly enough.
    const text = String(value);
    const significant = text.replace(/^-/, '').replace('.', '').replace(/^0+/, '');
    return significant.length <= 15 ? Number(text) : undefined;
  }
  return undefined;
}

/**
 * Delta `stats` JSON for a file: `numRecords`, and `minValues` / `maxValues` / `nullCount` keyed by
 * physical names and nested like the schema. Lists and maps get none (Delta has no per-element
 * statistics, and the Parquet leaves do not give a list's own null count); booleans and binary get
 * no min/max; timestamps are cut to milliseconds with the maximum rounded up; strings are the
 * Iceberg bounds (16 code points, upper bound incremented), which bound the data as Delta needs.
 */
export function deltaStats(metrics: DeltaStatsInput, schema: StructType, physicalNames: Map<number, string>, opts: { tightBounds?: boolean } = {}): string {
  return deltaStatsEncoder(schema, physicalNames)(metrics, opts.tightBounds === false);
}

/** `deltaStats` as the rules above say it, building objects and walking them: the reference for the compiled encoder. */
export function deltaStatsGeneric(metrics: DeltaStatsInput, schema: StructType, physicalNames: Map<number, string>, opts: { tightBounds?: boolean } = {}): string {
  const decode = (map: Map<number, Uint8Array> | undefined, id: number, type: IcebergType): LiteralValue | undefined => {
    const bytes = map?.get(id);
    if (bytes === undefined) return undefined;
    try {
      return fromBinary(type, bytes);
    } catch {
      return undefined;
    }
  };
  const walk = (struct: StructType) => {
    const min: Record<string, unknown> = {};
    const max: Record<string, unknown> = {};
    const nulls: Record<string, unknown> = {};
    for (const f of struct.fields) {
      const name = physicalName(f, physicalNames);
      if (typeof f.type !== 'string') {
        if (f.type.type !== 'struct') continue;
        const child = walk(f.type);
        if (Object.keys(child.min).length) min[name] = child.min;
        if (Object.keys(child.max).length) max[name] = child.max;
        if (Object.keys(child.nulls).length) nulls[name] = child.nulls;
        continue;
      }
      const n = metrics['null-value-counts']?.get(f.id);
      if (n !== undefined) nulls[name] = n;
      const lo = decode(metrics['lower-bounds'], f.id, f.type);
      const hi = decode(metrics['upper-bounds'], f.id, f.type);
      const loValue = lo === undefined ? undefined : deltaValue(f.type, lo, 'min');
      const hiValue = hi === undefined ? undefined : deltaValue(f.type, hi, 'max');
      if (loValue !== undefined) min[name] = loValue;
      if (hiValue !== undefined) max[name] = hiValue;
    }
    return { min, max, nulls };
  };
  const { min, max, nulls } = walk(schema);
  return stringifyJson({
    numRecords: metrics['record-count'],
    minValues: min,
    maxValues: max,
    nullCount: nulls,
    ...(opts.tightBounds === false ? { tightBounds: false } : {}),
  });
}

// ---------------------------------------------------------------------------------------------
// The compiled Delta stats encoder: one add-files commit writes 100,000 stats strings.

type StatsEncoder = (metrics: DeltaStatsInput, loose: boolean) => string;

interface StatsLeaf {
  kind: 'leaf';
  /** `"name":`, JSON-quoted once. */
  key: string;
  id: number;
  type: string;
  /** A bound's JSON text, undefined when Delta has none for it (the rules of `deltaValue`). */
  bound?: (bytes: Uint8Array, side: 'min' | 'max') => string | undefined;
}
interface StatsStruct {
  kind: 'struct';
  key: string;
  fields: StatsNode[];
}
type StatsNode = StatsLeaf | StatsStruct;

const encoders = new WeakMap<StructType, WeakMap<Map<number, string>, StatsEncoder>>();

/**
 * `deltaStats` for one schema and set of physical names, compiled once: each leaf's JSON key and
 * bound decoder are worked out up front, and the JSON text is written directly, in the key order
 * `stringifyJson` of the generic objects gives. Names that a JS object would reorder or swallow
 * (array indices, `__proto__`) keep the generic encoder, whose output is the definition.
 */
export function deltaStatsEncoder(schema: StructType, physicalNames: Map<number, string>): StatsEncoder {
  let bySchema = encoders.get(schema);
  if (!bySchema) encoders.set(schema, (bySchema = new WeakMap()));
  let enc = bySchema.get(physicalNames);
  if (!enc) bySchema.set(physicalNames, (enc = compileStats(schema, physicalNames)));
  return enc;
}

function compileStats(schema: StructType, physicalNames: Map<number, string>): StatsEncoder {
  let plain = true;
  const nodes = (struct: StructType): StatsNode[] => {
    const out: StatsNode[] = [];
    for (const f of struct.fields) {
      const name = physicalName(f, physicalNames);
      if (/^(0|[1-9]\d*)$/.test(name) || name === '__proto__') plain = false;
      const key = `${JSON.stringify(name)}:`;
      if (typeof f.type !== 'string') {
        if (f.type.type === 'struct') out.push({ kind: 'struct', key, fields: nodes(f.type) });
        continue;
      }
      const leaf: StatsLeaf = { kind: 'leaf', key, id: f.id, type: f.type };
      const bound = boundText(f.type);
      if (bound) leaf.bound = bound;
      out.push(leaf);
    }
    return out;
  };
  const tree = nodes(schema);
  if (!plain) return (metrics, loose) => deltaStatsGeneric(metrics, schema, physicalNames, loose ? { tightBounds: false } : {});
  return (metrics, loose) => {
    const records = metrics['record-count'];
    const head = records === undefined ? '{' : `{"numRecords":${jsonNumber(records)},`;
    const min = boundsSection(tree, metrics['lower-bounds'], 'min');
    const max = boundsSection(tree, metrics['upper-bounds'], 'max');
    const nulls = countsSection(tree, metrics['null-value-counts']);
    return `${head}"minValues":${min},"maxValues":${max},"nullCount":${nulls}${loose ? ',"tightBounds":false' : ''}}`;
  };
}

/** One struct's bounds as a JSON object; a struct without any is left out of its parent. */
function boundsSection(fields: StatsNode[], bounds: Map<number, Uint8Array> | undefined, side: 'min' | 'max'): string {
  let out = '';
  for (const n of fields) {
    let text: string | undefined;
    if (n.kind === 'struct') {
      text = boundsSection(n.fields, bounds, side);
      if (text === '{}') continue;
    } else {
      const b = n.bound && bounds?.get(n.id);
      text = b ? n.bound!(b, side) : undefined;
      if (text === undefined) continue;
    }
    out += (out === '' ? '{' : ',') + n.key + text;
  }
  return out === '' ? '{}' : out + '}';
}

function countsSection(fields: StatsNode[], counts: Map<number, number> | undefined): string {
  let out = '';
  for (const n of fields) {
    let text: string;
    if (n.kind === 'struct') {
      text = countsSection(n.fields, counts);
      if (text === '{}') continue;
    } else {
      const c = counts?.get(n.id);
      if (c === undefined) continue;
      text = jsonNumber(c);
    }
    out += (out === '' ? '{' : ',') + n.key + text;
  }
  return out === '' ? '{}' : out + '}';
}

/** A number or bigint as `stringifyJson` writes it. */
function jsonNumber(n: number | bigint): string {
  return typeof n === 'bigint' ? n.toString() : Number.isFinite(n) ? String(n) : 'null';
}

/** The generic rules for one bound: decode, then Delta's form, then JSON. */
function genericBound(type: string): (bytes: Uint8Array, side: 'min' | 'max') => string | undefined {
  return (bytes, side) => {
    let value: LiteralValue;
    try {
      value = fromBinary(type, bytes);
    } catch {
      return undefined;
    }
    const v = deltaValue(type, value, side);
    return v === undefined ? undefined : stringifyJson(v);
  };
}

const TWO_32 = 2 ** 32;

/** An 8-byte little-endian long as decimal text, without a bigint when it is a safe integer. */
function longText(b: Uint8Array): string {
  const lo = (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
  const hi = b[4]! | (b[5]! << 8) | (b[6]! << 16) | (b[7]! << 24);
  if (hi >= -0x200000 && hi < 0x200000) return String(hi * TWO_32 + lo);
  return ((BigInt(hi) << 32n) | BigInt(lo)).toString();
}

const MS_PER_DAY = 86_400_000;
const TWO_DIGITS = Array.from({ length: 100 }, (_, n) => String(n).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));
/** The day last formatted: a file's bounds, and the next file's, mostly fall on one day. */
let lastDay = NaN;
let lastDayText = '';

/** `YYYY-MM-DDTHH:MM:SS.mmm` of epoch milliseconds within the fast path's range, as formatTimestamp writes it. */
function isoMillis(ms: number): string {
  const day = Math.floor(ms / MS_PER_DAY);
  if (day !== lastDay) {
    lastDay = day;
    lastDayText = `${formatDate(day)}T`;
  }
  let rest = ms - day * MS_PER_DAY;
  const milli = rest % 1000;
  rest = (rest - milli) / 1000;
  const sec = rest % 60;
  rest = (rest - sec) / 60;
  return `${lastDayText}${TWO_DIGITS[(rest - (rest % 60)) / 60]!}:${TWO_DIGITS[rest % 60]!}:${TWO_DIGITS[sec]!}.${THREE_DIGITS[milli]!}`;
}

/**
 * A bound decoder per type: the common types decoded straight from their bytes to Delta's JSON
 * text; the rest (and values outside the fast path's range) by the generic rules. Undefined for
 * types Delta keeps no bounds for.
 */
function boundText(type: string): ((bytes: Uint8Array, side: 'min' | 'max') => string | undefined) | undefined {
  switch (type) {
    case 'int':
      return (b) => (b.length === 4 ? String(b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) : undefined);
    case 'long':
      return (b) => (b.length === 8 ? longText(b) : undefined);
    case 'float':
    case 'double':
    case 'date':
      return genericBound(type);
    case 'timestamp':
    case 'timestamptz': {
      const generic = genericBound(type);
      const zoned = type === 'timestamptz';
      return (b, side) => {
        if (b.length !== 8) return undefined;
        const hi = b[4]! | (b[5]! << 8) | (b[6]! << 16) | (b[7]! << 24);
        // Within 2^53 µs of 1970 (years 1685 to 2254) the micros are a safe number and Date writes
        // the same ISO text; further out, the generic rules.
        if (hi < -0x200000 || hi >= 0x200000) return generic(b, side);
        const micros = hi * TWO_32 + ((b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0);
        let ms = Math.floor(micros / 1000);
        // Delta keeps milliseconds: a maximum rounded down would no longer bound the data.
        if (side === 'max' && ms * 1000 !== micros) ms += 1;
        return `"${isoMillis(ms)}${zoned ? 'Z' : ''}"`;
      };
    }
    case 'string': {
      const generic = genericBound(type);
      return (b, side) => {
        // Printable ASCII without quote or backslash is its own JSON text; anything else, the generic rules.
        if (b.length > 64) return generic(b, side);
        for (let k = 0; k < b.length; k++) {
          const c = b[k]!;
          if (c >= 0x7f || c < 0x20 || c === 0x22 || c === 0x5c) return generic(b, side);
        }
        return `"${String.fromCharCode.apply(null, b as unknown as number[])}"`;
      };
    }
  }
  return decimalParams(type) ? genericBound(type) : undefined;
}
