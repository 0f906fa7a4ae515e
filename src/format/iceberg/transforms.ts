import { createHash } from 'node:crypto';
import { stringifyJson } from '../../core/json.ts';
import { invalidInput, isTwinlakeError, unsupported } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import { bucketHasher } from './murmur3.ts';
import { isPrimitive, normalizePrimitive, typeToString } from './schema.ts';
import {
  bytesToUuid,
  civilFromDays,
  decimalParams,
  decimalToUnscaled,
  fixedLength,
  floorDiv,
  formatDate,
  unscaledToDecimal,
} from './single-value.ts';
import type { IcebergType, PrimitiveType, Transform } from './types.ts';

/**
 * Partition transforms (spec §Partition Transforms, §Bucket Transform Details, §Truncate Transform
 * Details): parsing, source-type rules, result types, application to values, inclusive projection
 * of predicates (spec §Scan Planning), and the human-readable path form Iceberg Java writes.
 *
 * Values follow `LiteralValue`: int/date as number (date = days since epoch), long as bigint,
 * time/timestamp/timestamptz as bigint microseconds, timestamp_ns/timestamptz_ns as bigint
 * nanoseconds, decimal as text at the type's scale, uuid as text, binary/fixed as bytes. Integer
 * inputs may also come as the other numeric kind (a safe number for a long, and so on).
 */

export type TransformKind = 'identity' | 'year' | 'month' | 'day' | 'hour' | 'bucket' | 'truncate' | 'void';

export interface ParsedTransform {
  kind: TransformKind;
  /** N of bucket[N], W of truncate[W]. */
  param?: number;
}

const MAX_INT = 2147483647;
const utf8 = new TextEncoder();
const TIME_KINDS: ReadonlySet<TransformKind> = new Set(['year', 'month', 'day', 'hour']);
const TIMESTAMPS = ['timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns'];

/** Parses a transform's JSON form; a string describes why it is not usable. */
function readTransform(transform: Transform): ParsedTransform | string {
  const t = transform.trim().toLowerCase();
  switch (t) {
    case 'identity':
    case 'year':
    case 'month':
    case 'day':
    case 'hour':
    case 'void':
      return { kind: t };
  }
  const m = /^(bucket|truncate)\s*\[\s*(\d+)\s*\]$/.exec(t);
  if (!m) return `unknown transform ${JSON.stringify(transform.trim())}; expected identity, bucket[N], truncate[W], year, month, day, hour or void`;
  const param = Number(m[2]);
  if (param < 1 || param > MAX_INT) return `${m[1]} parameter must be between 1 and ${MAX_INT}, found ${m[2]} in ${JSON.stringify(transform)}`;
  return { kind: m[1] as 'bucket' | 'truncate', param };
}

/**
 * The transform of a spec's JSON form (`bucket[16]`), or undefined when it is unknown or unusable
 * (`bucket[0]`): readers ignore such fields (spec §Partitioning).
 */
export function tryParseTransform(transform: Transform): ParsedTransform | undefined {
  const p = readTransform(transform);
  return typeof p === 'string' ? undefined : p;
}

/** Like `tryParseTransform`, but unknown transforms are `unsupported` and bad parameters `invalid-input`. */
export function parseTransform(transform: Transform): ParsedTransform {
  const p = readTransform(transform);
  if (typeof p !== 'string') return p;
  throw p.startsWith('unknown') ? unsupported(`iceberg partition: ${p}`) : invalidInput(`iceberg partition: ${p}`);
}

/** The spec's JSON form: `identity`, `bucket[16]`, `truncate[4]`, ... */
export function formatTransform(t: ParsedTransform): Transform {
  return t.kind === 'bucket' || t.kind === 'truncate' ? `${t.kind}[${t.param}]` : t.kind;
}

/** Result type of a partition transform (spec §Partition Transforms). Does not check the source type. */
export function transformResultType(transform: Transform, source: IcebergType): PrimitiveType {
  const p = parseTransform(transform);
  // spec: void yields "source type or int"; int where the source is not a primitive.
  if (p.kind === 'void') return isPrimitive(source) ? normalizePrimitive(source) : 'int';
  if (!isPrimitive(source)) throw invalidInput(`iceberg partition: transform ${transform.trim()} needs a primitive source column, found ${typeToString(source)}`);
  switch (p.kind) {
    case 'identity':
    case 'truncate':
      return normalizePrimitive(source);
    case 'day':
      return 'date';
    default:
      return 'int';
  }
}

/** The source types a transform accepts, as the spec's table lists them (for messages). */
export function transformSourceTypes(kind: TransformKind): string {
  switch (kind) {
    case 'identity':
      return 'any primitive type except geometry and geography';
    case 'bucket':
      return 'int, long, decimal, date, time, timestamp, timestamptz, timestamp_ns, timestamptz_ns, string, uuid, fixed, binary';
    case 'truncate':
      return 'int, long, decimal, string, binary';
    case 'year':
    case 'month':
    case 'day':
      return 'date, timestamp, timestamptz, timestamp_ns, timestamptz_ns';
    case 'hour':
      return 'timestamp, timestamptz, timestamp_ns, timestamptz_ns';
    case 'void':
      return 'any type';
  }
}

/** Whether `transform` may be applied to a column of `sourceType` (spec §Partition Transforms). */
export function canTransform(transform: Transform, sourceType: IcebergType): boolean {
  const p = tryParseTransform(transform);
  if (!p) return false;
  if (p.kind === 'void') return true;
  if (!isPrimitive(sourceType)) return false;
  const t = normalizePrimitive(sourceType);
  const decimal = decimalParams(t) !== undefined;
  switch (p.kind) {
    case 'identity':
      return !/^(geometry|geography)\b/.test(t) && t !== 'variant';
    case 'bucket':
      return ['int', 'long', 'date', 'time', ...TIMESTAMPS, 'string', 'uuid', 'binary'].includes(t) || decimal || fixedLength(t) !== undefined;
    case 'truncate':
      return ['int', 'long', 'string', 'binary'].includes(t) || decimal;
    case 'year':
    case 'month':
    case 'day':
      return t === 'date' || TIMESTAMPS.includes(t);
    case 'hour':
      return TIMESTAMPS.includes(t);
  }
}

// ---------------------------------------------------------------------------------------------
// Applying transforms

function describe(value: unknown): string {
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return `a list [${value.map(describe).join(', ')}]`;
  return `${typeof value} ${stringifyJson(value)}`;
}

function asInt(value: LiteralValue, what: string): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'bigint' && value >= -(2n ** 53n) && value <= 2n ** 53n) return Number(value);
  throw invalidInput(`iceberg partition: expected an integer ${what} value, found ${describe(value)}`);
}

function asLong(value: LiteralValue, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  throw invalidInput(`iceberg partition: expected an integer ${what} value, found ${describe(value)}`);
}

function asUnscaled(value: LiteralValue, scale: number, type: string): bigint {
  if (typeof value === 'string') return decimalToUnscaled(value, scale);
  if (typeof value === 'bigint') return value; // an unscaled value, as single-value.ts accepts
  if (typeof value === 'number' && Number.isFinite(value)) return decimalToUnscaled(String(value), scale);
  throw invalidInput(`iceberg partition: expected a ${type} value, found ${describe(value)}`);
}

const MICROS_PER_HOUR = 3_600_000_000n;
const MICROS_PER_DAY = 86_400_000_000n;
const NANOS_PER_HOUR = 3_600_000_000_000n;
const NANOS_PER_DAY = 86_400_000_000_000n;

function yearOfDays(days: number): number {
  return civilFromDays(days).year - 1970;
}

function monthOfDays(days: number): number {
  const { year, month } = civilFromDays(days);
  return (year - 1970) * 12 + month - 1;
}

/** Code points, not UTF-16 units (spec §Truncate Transform Details note 3). */
export function truncateCodePoints(s: string, length: number): string {
  let i = 0;
  for (let n = 0; n < length && i < s.length; n++) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    i += pair ? 2 : 1;
  }
  return i >= s.length ? s : s.slice(0, i);
}

type Apply = (value: LiteralValue) => LiteralValue;

/**
 * A function that applies `transform` to values of `sourceType`, for loops over many values.
 * Throws `invalid-input` when the transform does not apply to the type.
 */
export function bindTransform(transform: Transform, sourceType: IcebergType): Apply {
  const p = parseTransform(transform);
  if (p.kind === 'void') return () => null;
  if (!canTransform(transform, sourceType)) {
    throw invalidInput(`iceberg partition: transform ${formatTransform(p)} does not apply to ${typeToString(sourceType)}; ${p.kind} accepts ${transformSourceTypes(p.kind)}`);
  }
  const t = normalizePrimitive(sourceType as PrimitiveType);
  const nullSafe = (f: (v: Exclude<LiteralValue, null>) => LiteralValue): Apply => (v) => (v === null ? null : f(v));
  switch (p.kind) {
    case 'identity':
      return (v) => v;
    case 'bucket': {
      const n = p.param!;
      const hash = bucketHasher(t);
      return nullSafe((v) => (hash(v) & MAX_INT) % n);
    }
    case 'truncate':
      return bindTruncate(t, p.param!);
    default:
      return bindTime(p.kind, t);
  }
}

/**
 * truncate[W] of an int or long, or undefined where Java's fixed-width arithmetic
 * (`v - (((v % W) + W) % W)`, TruncateUtil) overflows: for the values just above the type's
 * minimum whose next lower multiple of W lies below it, and for int widths over 2^30. Java wraps: truncate(10, -2^31)
 * is 2147483646, a partition above every other value, so every engine's inclusive projection of
 * `n < 0` (`n_trunc <= -10`) skips that row, Java's own included. A value in that range is
 * refused instead of written with a partition value that hides it from range filters, or with
 * one that differs from the value Java computes, which would hide it from equality filters. The
 * bounds are exact: no value outside that range is refused.
 */
export function truncateInteger<T extends number | bigint>(value: T, width: number, bits: 32 | 64): T | undefined {
  if (typeof value === 'number') {
    const min = -(2 ** 31);
    const max = 2 ** 31 - 1;
    const step = (value % width) + width;
    const out = value - (step % width);
    return (step > max || out < min ? undefined : out) as T | undefined;
  }
  const w = BigInt(width);
  const out = (value as bigint) - ((((value as bigint) % w) + w) % w);
  return (out < -(2n ** BigInt(bits - 1)) ? undefined : out) as T | undefined;
}

/**
 * Why truncate[W] of a value is refused: its truncation (the next lower multiple of W) lies below
 * the type's minimum, or, for int widths over 2^30, Java's `(v % W) + W` passes the int maximum.
 * The value itself is in range; what Java computes from it is not. Worded alike by the engine's
 * key expression (partition-keys.ts).
 */
function truncateOverflow(width: number, type: string, value: number | bigint) {
  const [min, max] = type === 'int' ? [-(2n ** 31n), 2n ** 31n - 1n] : [-(2n ** 63n), 2n ** 63n - 1n];
  const v = BigInt(value);
  const w = BigInt(width);
  const truncated = v - (((v % w) + w) % w);
  const why =
    truncated < min
      ? `its truncation, ${truncated}, would be below the smallest ${type} (${min}); Iceberg Java would wrap it into the largest partition, where range filters never find it`
      : `Iceberg's formula (v % ${width}) + ${width} would pass the largest ${type} (${max}); Iceberg Java would put it in a partition that is not its truncation, where filters never find it`;
  return invalidInput(`iceberg partition: truncate[${width}] of ${type} ${value}: ${why}`, { overflow: true });
}

function bindTruncate(t: string, w: number): Apply {
  const dec = decimalParams(t);
  if (dec) {
    const width = BigInt(w);
    return (v) => {
      if (v === null) return null;
      const u = asUnscaled(v, dec.scale, t);
      return unscaledToDecimal(u - (((u % width) + width) % width), dec.scale);
    };
  }
  switch (t) {
    case 'int':
      return (v) => {
        if (v === null) return null;
        const x = asInt(v, t);
        const out = truncateInteger(x, w, 32);
        if (out === undefined) throw truncateOverflow(w, t, x);
        return out;
      };
    case 'long':
      return (v) => {
        if (v === null) return null;
        const x = asLong(v, t);
        const out = truncateInteger(x, w, 64);
        if (out === undefined) throw truncateOverflow(w, t, x);
        return out;
      };
    case 'string':
      return (v) => {
        if (v === null) return null;
        if (typeof v !== 'string') throw invalidInput(`iceberg partition: expected a string value, found ${describe(v)}`);
        return truncateCodePoints(v, w);
      };
    default: // binary, by bytes
      return (v) => {
        if (v === null) return null;
        if (!(v instanceof Uint8Array)) throw invalidInput(`iceberg partition: expected a binary value, found ${describe(v)}`);
        return v.length <= w ? v : v.slice(0, w);
      };
  }
}

/** year/month/day/hour as ordinals from 1970-01-01 00:00 UTC, rounding toward negative infinity. */
function bindTime(kind: TransformKind, t: string): Apply {
  if (t === 'date') {
    return (v) => {
      if (v === null) return null;
      const days = asInt(v, t);
      return kind === 'year' ? yearOfDays(days) : kind === 'month' ? monthOfDays(days) : days;
    };
  }
  const nanos = t.endsWith('_ns');
  const perHour = nanos ? NANOS_PER_HOUR : MICROS_PER_HOUR;
  const perDay = nanos ? NANOS_PER_DAY : MICROS_PER_DAY;
  return (v) => {
    if (v === null) return null;
    const x = asLong(v, t);
    if (kind === 'hour') return Number(floorDiv(x, perHour));
    const days = Number(floorDiv(x, perDay));
    return kind === 'year' ? yearOfDays(days) : kind === 'month' ? monthOfDays(days) : days;
  };
}

const bound = new Map<string, Apply>();

/** The partition value of `value` (spec §Partition Transforms). Null in, null out. */
export function applyTransform(transform: Transform, sourceType: IcebergType, value: LiteralValue): LiteralValue {
  const key = `${transform}\u0000${isPrimitive(sourceType) ? sourceType : typeToString(sourceType)}`;
  let f = bound.get(key);
  if (!f) {
    f = bindTransform(transform, sourceType);
    if (bound.size > 1000) bound.clear();
    bound.set(key, f);
  }
  return f(value);
}

// ---------------------------------------------------------------------------------------------
// Partition field names and paths

/**
 * The default partition field name, as Iceberg Java's `PartitionSpec.Builder` gives it: `ts_day`,
 * `user_id_bucket`, `zip_code_trunc`, `x_null` for void. `source` is the column's path (or a whole
 * name); identity fields take the column's own name, which for a nested column is its last part.
 */
export function partitionFieldName(transform: Transform, source: string | readonly string[]): string {
  const full = typeof source === 'string' ? source : source.join('.');
  const leaf = typeof source === 'string' ? source : source[source.length - 1]!;
  const p = parseTransform(transform);
  switch (p.kind) {
    case 'identity':
      return leaf;
    case 'truncate':
      return `${full}_trunc`;
    case 'void':
      return `${full}_null`;
    default:
      return `${full}_${p.kind}`;
  }
}

const pad = (n: number | bigint, width: number): string => String(n).padStart(width, '0');

/** Java's `%04d`: the sign counts toward the width. */
function javaYear(year: number): string {
  return year < 0 ? `-${pad(-year, 3)}` : pad(year, 4);
}

function humanDay(days: number): string {
  const { year, month, day } = civilFromDays(days);
  return `${javaYear(year)}-${pad(month, 2)}-${pad(day, 2)}`;
}

function humanHour(hours: number): string {
  const days = Math.floor(hours / 24);
  return `${humanDay(days)}-${pad(hours - days * 24, 2)}`;
}

/** java.time `LocalTime.toString()`: seconds only when set, fractions in groups of three digits. */
function javaLocalTime(micros: bigint): string {
  const secs = micros / 1_000_000n;
  const nanos = Number(micros % 1_000_000n) * 1000;
  let out = `${pad(secs / 3600n, 2)}:${pad((secs / 60n) % 60n, 2)}`;
  if (secs % 60n !== 0n || nanos !== 0) out += `:${pad(secs % 60n, 2)}`;
  if (nanos !== 0) {
    if (nanos % 1_000_000 === 0) out += `.${pad(nanos / 1_000_000, 3)}`;
    else if (nanos % 1000 === 0) out += `.${pad(nanos / 1000, 6)}`;
    else out += `.${pad(nanos, 9)}`;
  }
  return out;
}

/** `DateTimeFormatter.ISO_LOCAL_DATE_TIME`: seconds always, fraction without trailing zeros. */
function isoLocalDateTime(value: bigint, perSecond: bigint): string {
  const perDay = perSecond * 86_400n;
  const days = floorDiv(value, perDay);
  const ofDay = value - days * perDay;
  const secs = ofDay / perSecond;
  const digits = perSecond === 1_000_000n ? 6 : 9;
  const frac = pad(ofDay % perSecond, digits).replace(/0+$/, '');
  return `${formatDate(Number(days))}T${pad(secs / 3600n, 2)}:${pad((secs / 60n) % 60n, 2)}:${pad(secs % 60n, 2)}${frac ? `.${frac}` : ''}`;
}

/** `BigDecimal.toString()`: plain unless the exponent is below -6, then scientific. */
function javaDecimal(unscaled: bigint, scale: number): string {
  const coeff = (unscaled < 0n ? -unscaled : unscaled).toString();
  const adjusted = coeff.length - 1 - scale;
  if (scale >= 0 && adjusted >= -6) return unscaledToDecimal(unscaled, scale);
  const mantissa = coeff.length > 1 ? `${coeff[0]}.${coeff.slice(1)}` : coeff;
  const exp = adjusted === 0 ? '' : `E${adjusted > 0 ? '+' : ''}${adjusted}`;
  return `${unscaled < 0n ? '-' : ''}${mantissa}${exp}`;
}

/** `Double.toString` / `Float.toString`: shortest digits, plain within [1e-3, 1e7), else `d.dddE±n`. */
function javaFloating(v: number, single: boolean): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
  if (v === 0) return Object.is(v, -0) ? '-0.0' : '0.0';
  const a = Math.abs(v);
  let exp = a.toExponential();
  if (single) {
    for (let p = 0; p < 9; p++) {
      exp = a.toExponential(p);
      if (Math.fround(Number(exp)) === a) break;
    }
  }
  const [mant, e] = exp.split('e') as [string, string];
  const digits = mant.replace('.', '');
  const e10 = Number(e);
  let body: string;
  if (a >= 1e-3 && a < 1e7) {
    if (e10 >= 0) {
      const int = digits.slice(0, e10 + 1).padEnd(e10 + 1, '0');
      body = `${int}.${digits.slice(e10 + 1) || '0'}`;
    } else {
      body = `0.${'0'.repeat(-e10 - 1)}${digits}`;
    }
  } else {
    body = `${digits[0]}.${digits.slice(1) || '0'}E${e10}`;
  }
  return (v < 0 ? '-' : '') + body;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** A value of a partition result type as Java's default `Transform.toHumanString(type, value)`. */
function humanValue(type: string, value: Exclude<LiteralValue, null>): string {
  switch (type) {
    case 'date':
      return humanDay(asInt(value, type));
    case 'time':
      return javaLocalTime(asLong(value, type));
    case 'timestamp':
      return isoLocalDateTime(asLong(value, type), 1_000_000n);
    case 'timestamptz':
      return `${isoLocalDateTime(asLong(value, type), 1_000_000n)}+00:00`;
    case 'timestamp_ns':
      return isoLocalDateTime(asLong(value, type), 1_000_000_000n);
    case 'timestamptz_ns':
      return `${isoLocalDateTime(asLong(value, type), 1_000_000_000n)}+00:00`;
    case 'float':
    case 'double':
      if (typeof value !== 'number') throw invalidInput(`iceberg partition: expected a ${type} value, found ${describe(value)}`);
      return javaFloating(value, type === 'float');
  }
  if (value instanceof Uint8Array) return type === 'uuid' ? bytesToUuid(value) : base64(value);
  const dec = decimalParams(type);
  if (dec) return javaDecimal(asUnscaled(value, dec.scale, type), dec.scale);
  return String(value);
}

/**
 * The human-readable form of a partition value (the transform's result, not the source value), as
 * Iceberg Java's `toHumanString` gives it: year `2024`, month `2024-01`, day `2024-01-15`, hour
 * `2024-01-15-10`, identity dates and timestamps in ISO form, binary as base64, null as `null`.
 */
export function partitionHumanString(transform: Transform, sourceType: IcebergType, partitionValue: LiteralValue): string {
  if (partitionValue === null) return 'null';
  const p = parseTransform(transform);
  switch (p.kind) {
    case 'year':
      return javaYear(1970 + asInt(partitionValue, 'year'));
    case 'month': {
      const m = asInt(partitionValue, 'month');
      const years = Math.floor(m / 12);
      return `${javaYear(1970 + years)}-${pad(m - years * 12 + 1, 2)}`;
    }
    case 'day':
      return humanDay(asInt(partitionValue, 'day'));
    case 'hour':
      return humanHour(asInt(partitionValue, 'hour'));
    case 'bucket':
      return String(asInt(partitionValue, 'bucket'));
  }
  return humanValue(transformResultType(transform, sourceType), partitionValue);
}

/**
 * `java.net.URLEncoder.encode(s, "UTF-8")`: letters, digits and `.-*_` stay, space becomes `+`,
 * everything else is its UTF-8 bytes as `%XX` (a lone surrogate encodes as `?`, as Java does).
 */
export function urlEncode(s: string): string {
  let out = '';
  for (const ch of s) {
    if (/^[A-Za-z0-9.\-*_]$/.test(ch)) out += ch;
    else if (ch === ' ') out += '+';
    else {
      const cp = ch.codePointAt(0)!;
      const bytes = cp >= 0xd800 && cp <= 0xdfff ? [0x3f] : utf8.encode(ch);
      for (const b of bytes) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    }
  }
  return out;
}

/** Hive's name for the null partition, which Spark, Trino and Hive readers of paths know. */
export const HIVE_NULL_PARTITION = '__HIVE_DEFAULT_PARTITION__';

/**
 * The value part of a data path segment `<field>=<value>`, escaped as Java's `partitionToPath`,
 * except for null: Java writes `null` there, the same text as the string "null", so the two
 * would share a folder. Null takes Hive's `__HIVE_DEFAULT_PARTITION__` instead, and a value that
 * spells that name has its first character percent-encoded (`%5F_HIVE…`), which every path
 * decoder turns back into the value, so no value's folder is the null folder.
 */
export function partitionPathValue(transform: Transform, sourceType: IcebergType, partitionValue: LiteralValue): string {
  if (partitionValue === null) return HIVE_NULL_PARTITION;
  const text = urlEncode(partitionHumanString(transform, sourceType, partitionValue));
  return text === HIVE_NULL_PARTITION ? `%5F${text.slice(1)}` : text;
}

/**
 * The longest data path segment, in bytes (escaped segments are ASCII). File systems allow 255
 * bytes per name, and a cloud key 1,024 in all, which the table's folder, `data/`, every
 * partition's segment and the file name share.
 */
export const MAX_PARTITION_SEGMENT_BYTES = 128;

/**
 * One data path segment, `ts_day=2024-01-15`, name and value escaped as Java escapes them.
 *
 * A segment longer than MAX_PARTITION_SEGMENT_BYTES (a long string value, a long column name)
 * is shortened to `<name prefix>~<value prefix>~<hash>`: the hash (of the whole segment) keeps
 * distinct values in distinct folders. Partition values live in the metadata (Iceberg's manifests,
 * Delta's `partitionValues`), not in paths, so every reader still finds each file's value; the
 * shortened form has no `=`, so a reader that takes values from `name=value` folders (Hive
 * style) sees no value rather than a wrong one, and no escaped segment holds `~` (Java escapes it),
 * so it never spells a full segment.
 */
export function partitionPathSegment(name: string, transform: Transform, sourceType: IcebergType, partitionValue: LiteralValue): string {
  const escapedName = urlEncode(name);
  const escapedValue = partitionPathValue(transform, sourceType, partitionValue);
  const segment = `${escapedName}=${escapedValue}`;
  if (segment.length <= MAX_PARTITION_SEGMENT_BYTES) return segment;
  const hash = createHash('sha256').update(segment).digest('hex').slice(0, 16);
  return `${cutEscaped(escapedName, 48)}~${cutEscaped(escapedValue, 56)}~${hash}`;
}

/** The first `n` characters of an escaped text, never ending inside a `%XX` escape. */
function cutEscaped(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = s.slice(0, n);
  const p = cut.lastIndexOf('%');
  return p >= 0 && p > n - 3 ? cut.slice(0, p) : cut;
}

// ---------------------------------------------------------------------------------------------
// Inclusive projection (spec §Scan Planning)

export type PredicateOp = '<' | '<=' | '>' | '>=' | '=' | '!=' | 'in' | 'not-in' | 'is-null' | 'not-null' | 'is-nan' | 'not-nan';

/** A predicate on a partition field's value: `value` for comparisons, `values` for in/not-in. */
export interface PartitionPredicate {
  op: PredicateOp;
  value?: LiteralValue;
  values?: LiteralValue[];
}

const UNARY: ReadonlySet<PredicateOp> = new Set(['is-null', 'not-null', 'is-nan', 'not-nan']);

function valueKey(v: LiteralValue): string {
  if (v instanceof Uint8Array) return `b:${Array.from(v).join(',')}`;
  return `${typeof v}:${String(v)}`;
}

function distinct(values: LiteralValue[]): LiteralValue[] {
  const seen = new Set<string>();
  return values.filter((v) => {
    const k = valueKey(v);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The next or previous value of an integer-like source type (int, long, date, timestamps, decimal). */
function neighbor(t: string, value: LiteralValue, delta: 1 | -1): LiteralValue {
  const dec = decimalParams(t);
  if (dec) return unscaledToDecimal(asUnscaled(value, dec.scale, t) + BigInt(delta), dec.scale);
  if (t === 'int' || t === 'date') return asInt(value, t) + delta;
  return asLong(value, t) + BigInt(delta);
}

/**
 * Tables written by Iceberg 0.10 and earlier hold time partition values one too large for instants
 * before 1970 (day(1969-12-31 10:00) was 0, not -1). Iceberg Java widens inclusive projections of
 * negative ordinals to match those files too; so do we, since widening never drops a match.
 */
function widenForOldTimeValues(pred: PartitionPredicate): PartitionPredicate {
  const neg = (v: LiteralValue) => typeof v === 'number' && v < 0;
  if ((pred.op === '<=' || pred.op === '<') && neg(pred.value!)) return { op: pred.op, value: (pred.value as number) + 1 };
  if (pred.op === '=' && neg(pred.value!)) return { op: 'in', values: [pred.value!, (pred.value as number) + 1] };
  if (pred.op === 'in' && pred.values!.some(neg)) {
    return { op: 'in', values: distinct(pred.values!.flatMap((v) => (neg(v) ? [v, (v as number) + 1] : [v]))) };
  }
  return pred;
}

/**
 * An inclusive projection of `source <op> literal` onto the partition field: whenever the source
 * predicate holds for a value, the returned predicate holds for that value's partition value.
 * `undefined` means the predicate cannot prune by this field (void and unknown transforms,
 * `!=`/`not-in` through a lossy transform, ranges through bucket). `literal` is one value for
 * comparisons and a list for in/not-in, in the source type's `LiteralValue` form.
 */
export function projectInclusive(
  transform: Transform,
  sourceType: IcebergType,
  op: PredicateOp,
  literal?: LiteralValue | readonly LiteralValue[],
): PartitionPredicate | undefined {
  const p = tryParseTransform(transform);
  if (!p || p.kind === 'void') return undefined;
  if (UNARY.has(op)) return { op };
  const list = (): LiteralValue[] => {
    if (!Array.isArray(literal)) throw invalidInput(`iceberg projection: ${op} expects a list of values, found ${describe(literal)}`);
    return (literal as LiteralValue[]).filter((v) => v !== null);
  };
  const single = (): LiteralValue => {
    if (Array.isArray(literal) || literal === undefined) throw invalidInput(`iceberg projection: ${op} expects one value, found ${describe(literal)}`);
    return literal as LiteralValue;
  };
  if (p.kind === 'identity') return op === 'in' || op === 'not-in' ? { op, values: list() } : { op, value: single() };
  if (op === '!=' || op === 'not-in') return undefined;
  if (!canTransform(transform, sourceType)) return undefined;

  const strict = bindTransform(transform, sourceType);
  // A literal whose truncation overflows has no partition value in tables we write, and Java's
  // wrapped one in tables Java writes: such a predicate cannot prune by this field.
  const CANNOT_PRUNE = Symbol('cannot prune');
  const apply = (x: LiteralValue): LiteralValue => {
    try {
      return strict(x);
    } catch (e) {
      if (isTwinlakeError(e) && e.context.overflow === true) throw CANNOT_PRUNE;
      throw e;
    }
  };
  try {
    return projectOrdered(p, sourceType, op, apply, list, single);
  } catch (e) {
    if (e === CANNOT_PRUNE) return undefined;
    throw e;
  }
}

function projectOrdered(
  p: ParsedTransform,
  sourceType: IcebergType,
  op: PredicateOp,
  apply: Apply,
  list: () => LiteralValue[],
  single: () => LiteralValue,
): PartitionPredicate | undefined {
  const t = normalizePrimitive(sourceType as PrimitiveType);
  const fix = TIME_KINDS.has(p.kind) && !(p.kind === 'day' && t === 'date') ? widenForOldTimeValues : (x: PartitionPredicate) => x;
  if (op === 'in') return fix({ op: 'in', values: distinct(list().map(apply)) });
  const v = single();
  if (v === null) return undefined;
  if (op === '=') return fix({ op: '=', value: apply(v) });
  if (p.kind === 'bucket') return undefined;

  // Order-preserving transforms: close an open bound on the source's own grid, then transform.
  // Strings and binary have no "previous value", and need none: a < b implies t(a) <= t(b).
  const discrete = t !== 'string' && t !== 'binary';
  switch (op) {
    case '<':
      return fix({ op: '<=', value: apply(discrete ? neighbor(t, v, -1) : v) });
    case '<=':
      return fix({ op: '<=', value: apply(v) });
    case '>':
      return fix({ op: '>=', value: apply(discrete ? neighbor(t, v, 1) : v) });
    case '>=':
      return fix({ op: '>=', value: apply(v) });
  }
  return undefined;
}
