import { invalidInput, unsupported } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import type { IcebergType, PrimitiveType } from './types.ts';

/**
 * Iceberg single values (spec Appendix D): the binary form used for bounds and the JSON form used
 * for defaults, plus the truncation rules writers apply to string and binary bounds.
 *
 * In-memory values follow `LiteralValue`: int/date as number (date = days since epoch), long as
 * bigint (a safe-integer number is accepted), time/timestamp as bigint microseconds (number
 * accepted), timestamp_ns as bigint nanoseconds, float/double as number, decimal as its text
 * ("12.30"), uuid as lowercase text, string as string, binary/fixed as Uint8Array.
 */

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { fatal: true });

export function decimalParams(type: string): { precision: number; scale: number } | undefined {
  const m = /^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$/.exec(type);
  return m ? { precision: Number(m[1]), scale: Number(m[2]) } : undefined;
}

export function fixedLength(type: string): number | undefined {
  const m = /^fixed\[\s*(\d+)\s*\]$/.exec(type);
  return m ? Number(m[1]) : undefined;
}

function asBigInt(value: LiteralValue, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  throw invalidInput(`single value: expected an integer for ${what}, found ${describe(value)}`);
}

function asNumber(value: LiteralValue, what: string): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint' && value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  throw invalidInput(`single value: expected a number for ${what}, found ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'bigint') return `${value}n`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

function checkRange(v: bigint, bits: 32 | 64, what: string): void {
  const limit = 1n << BigInt(bits - 1);
  if (v < -limit || v >= limit) throw invalidInput(`single value: ${what} ${v} does not fit in ${bits} bits`);
}

// ---------------------------------------------------------------------------------------------
// Decimal text ⇄ unscaled integer

/** "12.3" at scale 2 → 1230n. More fractional digits than the scale is an error (no rounding). */
export function decimalToUnscaled(text: string, scale: number): bigint {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw invalidInput(`decimal: expected a decimal number, found ${JSON.stringify(text)}`);
  let frac = m[3] ?? '';
  while (frac.length > scale && frac.endsWith('0')) frac = frac.slice(0, -1);
  if (frac.length > scale) throw invalidInput(`decimal: expected at most ${scale} fractional digits, found ${JSON.stringify(text)}`);
  const digits = (m[2] || '0') + frac.padEnd(scale, '0');
  const v = BigInt(digits);
  return m[1] === '-' ? -v : v;
}

/** 1230n at scale 2 → "12.30". */
export function unscaledToDecimal(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n;
  let digits = (neg ? -unscaled : unscaled).toString();
  if (scale > 0) {
    digits = digits.padStart(scale + 1, '0');
    digits = `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  }
  return (neg ? '-' : '') + digits;
}

/** Two's complement, big-endian, in the fewest bytes that hold the value (spec Appendix D). */
export function minimalTwosComplement(v: bigint): Uint8Array {
  let n = 1;
  while (v < -(1n << BigInt(8 * n - 1)) || v >= 1n << BigInt(8 * n - 1)) n++;
  const out = new Uint8Array(n);
  let x = BigInt.asUintN(8 * n, v);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

export function readTwosComplement(bytes: Uint8Array): bigint {
  if (bytes.length === 0) throw invalidInput('decimal: expected at least one byte, found none');
  let x = 0n;
  for (const b of bytes) x = (x << 8n) | BigInt(b);
  return BigInt.asIntN(8 * bytes.length, x);
}

// ---------------------------------------------------------------------------------------------
// UUID, hex

export function uuidToBytes(text: string): Uint8Array {
  const hex = text.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw invalidInput(`uuid: expected 32 hex digits, found ${JSON.stringify(text)}`);
  return hexToBytes(hex);
}

export function bytesToUuid(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw invalidInput(`uuid: expected 16 bytes, found ${bytes.length}`);
  const h = bytesToHex(bytes);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function bytesToHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

export function hexToBytes(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw invalidInput(`hex: expected an even number of hex digits, found ${JSON.stringify(hex)}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Calendar: proleptic Gregorian, as Iceberg and Parquet count days and microseconds.

/** Days since 1970-01-01 of a civil date (any year). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = (month + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: era * 400 + yoe + (month <= 2 ? 1 : 0), month, day };
}

const pad = (n: number | bigint, width: number) => n.toString().padStart(width, '0');

/** ISO-8601 date; years outside 0000–9999 get a sign, as java.time prints them. */
export function formatDate(days: number): string {
  const { year, month, day } = civilFromDays(days);
  const y = year < 0 ? `-${pad(-year, 4)}` : year > 9999 ? `+${year}` : pad(year, 4);
  return `${y}-${pad(month, 2)}-${pad(day, 2)}`;
}

export function parseDate(text: string): number {
  const m = /^([+-]?\d{4,})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) throw invalidInput(`date: expected YYYY-MM-DD, found ${JSON.stringify(text)}`);
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const days = daysFromCivil(year, month, day);
  const back = civilFromDays(days);
  if (back.month !== month || back.day !== day) throw invalidInput(`date: ${JSON.stringify(text)} is not a calendar date`);
  return days;
}

/** `HH:MM:SS.ffffff` (or 9 digits for nanoseconds) of a time of day in `unitsPerSecond`. */
function formatClock(unitsOfDay: bigint, unitsPerSecond: bigint, digits: number): string {
  const secs = unitsOfDay / unitsPerSecond;
  const frac = unitsOfDay % unitsPerSecond;
  return `${pad(secs / 3600n, 2)}:${pad((secs / 60n) % 60n, 2)}:${pad(secs % 60n, 2)}.${pad(frac, digits)}`;
}

/** Integer division rounding toward negative infinity (dates and times before 1970). */
export function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

const MICROS_PER_DAY = 86_400_000_000n;
const NANOS_PER_DAY = 86_400_000_000_000n;

export function formatTime(micros: bigint): string {
  return formatClock(micros, 1_000_000n, 6);
}

/** `YYYY-MM-DDTHH:MM:SS.ffffff` of microseconds (or nanoseconds) since the epoch, no zone. */
export function formatTimestamp(value: bigint, unit: 'micros' | 'nanos' = 'micros'): string {
  const perDay = unit === 'micros' ? MICROS_PER_DAY : NANOS_PER_DAY;
  const days = floorDiv(value, perDay);
  const ofDay = value - days * perDay;
  const clock = formatClock(ofDay, unit === 'micros' ? 1_000_000n : 1_000_000_000n, unit === 'micros' ? 6 : 9);
  return `${formatDate(Number(days))}T${clock}`;
}

/**
 * Parses an ISO-8601 timestamp: date, `T` or space, `HH:MM[:SS[.fraction]]`, optional zone
 * (`Z`, `+HH`, `+HH:MM`, `+HHMM`). A zone is converted to UTC. More fractional digits than the
 * unit holds is an error, not a silent rounding.
 */
export function parseTimestamp(text: string, unit: 'micros' | 'nanos' = 'micros'): { value: bigint; zoned: boolean } {
  const m = /^([+-]?\d{4,}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/.exec(text);
  if (!m) throw invalidInput(`timestamp: expected an ISO-8601 timestamp, found ${JSON.stringify(text)}`);
  const digits = unit === 'micros' ? 6 : 9;
  const frac = m[5] ?? '';
  if (frac.replace(/0+$/, '').length > digits) throw invalidInput(`timestamp: expected at most ${digits} fractional digits, found ${JSON.stringify(text)}`);
  const [h, mi, s] = [BigInt(m[2]), BigInt(m[3]), BigInt(m[4] ?? '0')];
  if (h > 23n || mi > 59n || s > 59n) throw invalidInput(`timestamp: ${JSON.stringify(text)} is not a time of day`);
  const perSecond = unit === 'micros' ? 1_000_000n : 1_000_000_000n;
  let value = BigInt(parseDate(m[1])) * 86_400n * perSecond + ((h * 60n + mi) * 60n + s) * perSecond + BigInt(frac.slice(0, digits).padEnd(digits, '0'));
  const zone = m[6];
  if (zone && zone !== 'Z' && zone !== 'z') {
    const z = /^([+-])(\d{2}):?(\d{2})?$/.exec(zone)!;
    const offset = (BigInt(z[2]) * 60n + BigInt(z[3] ?? '0')) * 60n * perSecond;
    value = z[1] === '+' ? value - offset : value + offset;
  }
  return { value, zoned: zone !== undefined };
}

export function parseTime(text: string): bigint {
  const m = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?$/.exec(text);
  if (!m || Number(m[1]) > 23 || Number(m[2]) > 59 || Number(m[3] ?? 0) > 59) throw invalidInput(`time: expected HH:MM:SS[.ffffff], found ${JSON.stringify(text)}`);
  return ((BigInt(m[1]) * 60n + BigInt(m[2])) * 60n + BigInt(m[3] ?? '0')) * 1_000_000n + BigInt((m[4] ?? '').padEnd(6, '0'));
}

// ---------------------------------------------------------------------------------------------
// Binary single-value serialization

function isPrimitive(type: IcebergType): type is PrimitiveType {
  return typeof type === 'string';
}

function primitiveOf(type: IcebergType, what: string): string {
  if (!isPrimitive(type)) throw unsupported(`single value: ${what} is not defined for ${type.type} types`);
  return type;
}

export function toBinary(type: IcebergType, value: LiteralValue): Uint8Array {
  const t = primitiveOf(type, 'binary serialization');
  if (value === null) throw invalidInput(`single value: expected a ${t} value, found null`);
  const view = (n: number) => {
    const bytes = new Uint8Array(n);
    return { bytes, dv: new DataView(bytes.buffer) };
  };
  switch (t) {
    case 'boolean': {
      if (typeof value !== 'boolean') throw invalidInput(`single value: expected a boolean, found ${describe(value)}`);
      return Uint8Array.of(value ? 1 : 0);
    }
    case 'int':
    case 'date': {
      const v = asBigInt(value, t);
      checkRange(v, 32, t);
      const { bytes, dv } = view(4);
      dv.setInt32(0, Number(v), true);
      return bytes;
    }
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns': {
      const v = asBigInt(value, t);
      checkRange(v, 64, t);
      const { bytes, dv } = view(8);
      dv.setBigInt64(0, v, true);
      return bytes;
    }
    case 'float': {
      const { bytes, dv } = view(4);
      dv.setFloat32(0, asNumber(value, t), true);
      return bytes;
    }
    case 'double': {
      const { bytes, dv } = view(8);
      dv.setFloat64(0, asNumber(value, t), true);
      return bytes;
    }
    case 'string':
      if (typeof value !== 'string') throw invalidInput(`single value: expected a string, found ${describe(value)}`);
      return utf8.encode(value);
    case 'uuid':
      if (typeof value === 'string') return uuidToBytes(value);
      if (value instanceof Uint8Array && value.length === 16) return value.slice();
      throw invalidInput(`single value: expected a uuid, found ${describe(value)}`);
    case 'binary':
      if (!(value instanceof Uint8Array)) throw invalidInput(`single value: expected bytes, found ${describe(value)}`);
      return value.slice();
  }
  const len = fixedLength(t);
  if (len !== undefined) {
    if (!(value instanceof Uint8Array) || value.length !== len) throw invalidInput(`single value: expected ${len} bytes for ${t}, found ${describe(value)}`);
    return value.slice();
  }
  const dec = decimalParams(t);
  if (dec) {
    const unscaled = typeof value === 'string' ? decimalToUnscaled(value, dec.scale) : asBigInt(value, t);
    return minimalTwosComplement(unscaled);
  }
  throw unsupported(`single value: binary serialization of ${t} is not supported`);
}

export function fromBinary(type: IcebergType, bytes: Uint8Array): LiteralValue {
  const t = primitiveOf(type, 'binary serialization');
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number) => {
    if (bytes.length !== n) throw invalidInput(`single value: expected ${n} bytes for ${t}, found ${bytes.length}`);
  };
  switch (t) {
    case 'boolean':
      need(1);
      return bytes[0] !== 0;
    case 'int':
    case 'date':
      need(4);
      return dv.getInt32(0, true);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      need(8);
      return dv.getBigInt64(0, true);
    case 'float':
      need(4);
      return dv.getFloat32(0, true);
    case 'double':
      need(8);
      return dv.getFloat64(0, true);
    case 'string':
      try {
        return utf8Decoder.decode(bytes);
      } catch {
        throw invalidInput('single value: expected UTF-8 bytes for string, found invalid UTF-8');
      }
    case 'uuid':
      return bytesToUuid(bytes);
    case 'binary':
      return bytes.slice();
  }
  const len = fixedLength(t);
  if (len !== undefined) {
    need(len);
    return bytes.slice();
  }
  const dec = decimalParams(t);
  if (dec) return unscaledToDecimal(readTwosComplement(bytes), dec.scale);
  throw unsupported(`single value: binary serialization of ${t} is not supported`);
}

// ---------------------------------------------------------------------------------------------
// JSON single-value serialization

/**
 * Nested values in memory: struct as an object keyed by field ID, list as an array, map as
 * `{ keys: [...], values: [...] }`, mirroring the JSON form.
 */
export type JsonSingleValue = null | boolean | number | bigint | string | JsonSingleValue[] | { [key: string]: JsonSingleValue };

export function toJsonValue(type: IcebergType, value: unknown): JsonSingleValue {
  if (value === null || value === undefined) return null;
  if (!isPrimitive(type)) {
    if (type.type === 'list') {
      if (!Array.isArray(value)) throw invalidInput(`single value: expected an array for a list, found ${describe(value)}`);
      return value.map((v) => toJsonValue(type.element, v));
    }
    if (type.type === 'map') {
      const m = value as { keys?: unknown[]; values?: unknown[] };
      if (!Array.isArray(m.keys) || !Array.isArray(m.values) || m.keys.length !== m.values.length) throw invalidInput(`single value: expected {keys, values} for a map, found ${describe(value)}`);
      return { keys: m.keys.map((k) => toJsonValue(type.key, k)), values: m.values.map((v) => toJsonValue(type.value, v)) };
    }
    const obj = value as Record<string, unknown>;
    const out: Record<string, JsonSingleValue> = {};
    for (const f of type.fields) if (obj[f.id] !== undefined) out[String(f.id)] = toJsonValue(f.type, obj[f.id]);
    return out;
  }
  const v = value as LiteralValue;
  switch (type) {
    case 'boolean':
      if (typeof v !== 'boolean') throw invalidInput(`single value: expected a boolean, found ${describe(v)}`);
      return v;
    case 'int':
      return asNumber(v, type);
    case 'long': {
      const b = asBigInt(v, type);
      return Number.isSafeInteger(Number(b)) ? Number(b) : b;
    }
    case 'float':
    case 'double': {
      const n = asNumber(v, type);
      if (!Number.isFinite(n)) throw invalidInput(`single value: ${n} has no JSON form`);
      return n;
    }
    case 'date':
      return formatDate(asNumber(v, type));
    case 'time':
      return formatTime(asBigInt(v, type));
    case 'timestamp':
      return formatTimestamp(asBigInt(v, type));
    case 'timestamptz':
      return `${formatTimestamp(asBigInt(v, type))}+00:00`;
    case 'timestamp_ns':
      return formatTimestamp(asBigInt(v, type), 'nanos');
    case 'timestamptz_ns':
      return `${formatTimestamp(asBigInt(v, type), 'nanos')}+00:00`;
    case 'string':
      if (typeof v !== 'string') throw invalidInput(`single value: expected a string, found ${describe(v)}`);
      return v;
    case 'uuid':
      return bytesToUuid(toBinary('uuid', v));
    case 'binary':
      return bytesToHex(toBinary('binary', v));
  }
  if (fixedLength(type) !== undefined) return bytesToHex(toBinary(type, v));
  const dec = decimalParams(type);
  if (dec) {
    if (dec.scale < 0) throw unsupported(`single value: negative decimal scale in ${type}`);
    const unscaled = typeof v === 'string' ? decimalToUnscaled(v, dec.scale) : asBigInt(v, type);
    return unscaledToDecimal(unscaled, dec.scale);
  }
  throw unsupported(`single value: JSON serialization of ${type} is not supported`);
}

export function fromJsonValue(type: IcebergType, json: unknown): unknown {
  if (json === null || json === undefined) return null;
  if (!isPrimitive(type)) {
    if (type.type === 'list') {
      if (!Array.isArray(json)) throw invalidInput(`single value: expected a JSON array for a list, found ${describe(json)}`);
      return json.map((v) => fromJsonValue(type.element, v));
    }
    if (type.type === 'map') {
      const m = json as { keys?: unknown[]; values?: unknown[] };
      if (!Array.isArray(m.keys) || !Array.isArray(m.values) || m.keys.length !== m.values.length) throw invalidInput(`single value: expected {"keys", "values"} for a map, found ${describe(json)}`);
      return { keys: m.keys.map((k) => fromJsonValue(type.key, k)), values: m.values.map((v) => fromJsonValue(type.value, v)) };
    }
    if (typeof json !== 'object' || Array.isArray(json)) throw invalidInput(`single value: expected a JSON object for a struct, found ${describe(json)}`);
    const obj = json as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const f of type.fields) if (obj[String(f.id)] !== undefined) out[String(f.id)] = fromJsonValue(f.type, obj[String(f.id)]);
    return out;
  }
  const expectString = (): string => {
    if (typeof json !== 'string') throw invalidInput(`single value: expected a JSON string for ${type}, found ${describe(json)}`);
    return json;
  };
  switch (type) {
    case 'boolean':
      if (typeof json !== 'boolean') throw invalidInput(`single value: expected a JSON boolean, found ${describe(json)}`);
      return json;
    case 'int': {
      const n = asNumber(json as LiteralValue, type);
      if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 31) throw invalidInput(`single value: expected an int, found ${n}`);
      return n;
    }
    case 'long': {
      const b = asBigInt(json as LiteralValue, type);
      checkRange(b, 64, type);
      return b;
    }
    case 'float':
      return Math.fround(asNumber(json as LiteralValue, type));
    case 'double':
      return asNumber(json as LiteralValue, type);
    case 'date':
      return parseDate(expectString());
    case 'time':
      return parseTime(expectString());
    case 'timestamp':
    case 'timestamp_ns': {
      const r = parseTimestamp(expectString(), type === 'timestamp' ? 'micros' : 'nanos');
      if (r.zoned) throw invalidInput(`single value: expected a ${type} without zone, found ${JSON.stringify(json)}`);
      return r.value;
    }
    case 'timestamptz':
    case 'timestamptz_ns': {
      const r = parseTimestamp(expectString(), type === 'timestamptz' ? 'micros' : 'nanos');
      if (!r.zoned) throw invalidInput(`single value: expected a ${type} with zone offset, found ${JSON.stringify(json)}`);
      return r.value;
    }
    case 'string':
      return expectString();
    case 'uuid':
      return bytesToUuid(uuidToBytes(expectString()));
    case 'binary':
      return hexToBytes(expectString());
  }
  const len = fixedLength(type);
  if (len !== undefined) {
    const b = hexToBytes(expectString());
    if (b.length !== len) throw invalidInput(`single value: expected ${len} bytes for ${type}, found ${b.length}`);
    return b;
  }
  const dec = decimalParams(type);
  if (dec) {
    const text = typeof json === 'number' || typeof json === 'bigint' ? String(json) : expectString();
    return unscaledToDecimal(decimalToUnscaled(text, dec.scale), dec.scale);
  }
  throw unsupported(`single value: JSON serialization of ${type} is not supported`);
}

// ---------------------------------------------------------------------------------------------
// Bound truncation (what Iceberg writers do for string and binary metrics)

/** The first `length` code points: a prefix never sorts after the value, so it is a lower bound. */
export function truncateLowerBound(value: string, length = 16): string {
  const cps = Array.from(value);
  return cps.length <= length ? value : cps.slice(0, length).join('');
}

/**
 * The first `length` code points with the last one that can be incremented incremented (and what
 * follows it dropped): the smallest such string sorts after every string with the original prefix.
 * Code points sort as their UTF-8 bytes do, so this also bounds Iceberg's unsigned-byte order.
 * Incrementing skips the surrogate range (a lone surrogate is not valid UTF-8) and U+10FFFF cannot
 * be incremented. undefined when no code point can be incremented.
 */
export function truncateUpperBound(value: string, length = 16): string | undefined {
  const cps = Array.from(value);
  if (cps.length <= length) return value;
  const prefix = cps.slice(0, length);
  for (let i = prefix.length - 1; i >= 0; i--) {
    let next = prefix[i].codePointAt(0)! + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) return prefix.slice(0, i).join('') + String.fromCodePoint(next);
  }
  return undefined;
}

export function truncateBinaryLowerBound(value: Uint8Array, length = 16): Uint8Array {
  return value.length <= length ? value : value.slice(0, length);
}

/** The first `length` bytes with the last byte below 0xFF incremented; undefined when all are 0xFF. */
export function truncateBinaryUpperBound(value: Uint8Array, length = 16): Uint8Array | undefined {
  if (value.length <= length) return value;
  for (let i = length - 1; i >= 0; i--) {
    if (value[i] !== 0xff) {
      const out = value.slice(0, i + 1);
      out[i] = value[i] + 1;
      return out;
    }
  }
  return undefined;
}

/** Compares strings as Iceberg does: by code point, which is the order of their UTF-8 bytes. */
export function compareUtf8(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}
