import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import type { IcebergType } from '../iceberg/types.ts';
import type { LiteralValue } from '../scan-task.ts';
import { civilFromDays, daysFromCivil, floorDiv } from '../iceberg/single-value.ts';

/**
 * Delta partition values are strings (PROTOCOL.md §Partition Value Serialization). Values here are
 * `LiteralValue`s: dates as days since epoch, timestamps as microseconds (bigint), longs as bigint,
 * decimals as text, binary as bytes.
 */

const MICROS_PER_SECOND = 1_000_000n;
const SECONDS_PER_DAY = 86_400n;

/**
 * The string Delta stores for `value`. `null` stays `null` (written as JSON null). Empty strings
 * are refused: the protocol reads "" back as null, so a Delta reader would see a different value
 * than the Iceberg reader of the same file.
 */
export function serializePartitionValue(value: LiteralValue, type: IcebergType, column = 'partition column'): string | null {
  if (value === null) return null;
  const bad = (): never => {
    throw invalidInput(`delta partition value ${column}: expected a ${String(type)} value, found ${describe(value)}`);
  };
  if (typeof type !== 'string') throw unsupported(`delta partition value ${column}: nested type ${type.type} cannot be a partition column`);
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  if (decimal) {
    const text = typeof value === 'number' || typeof value === 'bigint' ? String(value) : value;
    if (typeof text !== 'string' || !/^-?\d+(\.\d+)?$/.test(text)) bad();
    return rescaleDecimal(text as string, Number(decimal[2]), column);
  }
  switch (type) {
    case 'string': {
      if (typeof value !== 'string') bad();
      if (value === '') {
        throw unsupported(`delta partition value ${column}: expected a non-empty string, found "" (Delta reads an empty partition value as null)`);
      }
      return value as string;
    }
    case 'boolean':
      if (typeof value !== 'boolean') bad();
      return value ? 'true' : 'false';
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) bad();
      return String(value);
    case 'long':
      if (typeof value !== 'bigint' && !(typeof value === 'number' && Number.isInteger(value))) bad();
      return String(value);
    case 'float':
    case 'double':
      if (typeof value !== 'number') bad();
      return formatFloating(value as number, type === 'float');
    case 'date':
      if (typeof value !== 'number' || !Number.isInteger(value)) bad();
      return formatDate(value as number);
    case 'timestamptz':
      if (typeof value !== 'bigint') bad();
      // The ISO-8601 UTC form is the one the protocol recommends: it carries its own zone.
      return `${formatDate(Number(floorDiv(floorDiv(value as bigint, MICROS_PER_SECOND), SECONDS_PER_DAY)))}T${formatTime(value as bigint, true)}Z`;
    case 'timestamp':
      if (typeof value !== 'bigint') bad();
      return `${formatDate(Number(floorDiv(floorDiv(value as bigint, MICROS_PER_SECOND), SECONDS_PER_DAY)))} ${formatTime(value as bigint, false)}`;
    case 'binary': {
      if (!(value instanceof Uint8Array)) bad();
      // Spark turns the bytes into a Java string as UTF-8; other bytes have no faithful form.
      try {
        return new TextDecoder('utf-8', { fatal: true }).decode(value as Uint8Array);
      } catch {
        throw unsupported(`delta partition value ${column}: expected UTF-8 bytes in a binary partition value, found ${hex(value as Uint8Array)}`);
      }
    }
    default:
      throw unsupported(`delta partition value ${column}: type ${type} has no Delta partition value form`);
  }
}

/** Parses a stored partition value; `null`, missing and "" are null (PROTOCOL.md). */
export function parsePartitionValue(raw: string | null | undefined, type: IcebergType, column = 'partition column'): LiteralValue {
  if (raw === null || raw === undefined || raw === '') return null;
  const bad = (what: string): never => {
    throw dataInvalid(`delta partition value ${column}: expected ${what}, found ${JSON.stringify(raw)}`);
  };
  if (typeof type !== 'string') throw unsupported(`delta partition value ${column}: nested type ${type.type} cannot be a partition column`);
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  if (decimal) {
    if (!/^[-+]?\d+(\.\d+)?$/.test(raw)) bad(`a decimal(${decimal[1]}, ${decimal[2]})`);
    const text = raw.replace(/^\+/, '');
    const scale = Number(decimal[2]);
    if (/[^0]/.test(text.split('.')[1]?.slice(scale) ?? '')) bad(`at most ${scale} fraction digits`);
    return rescaleDecimal(text, scale, column);
  }
  switch (type) {
    case 'string':
      return raw;
    case 'boolean': {
      const s = raw.toLowerCase();
      if (s === 'true') return true;
      if (s === 'false') return false;
      return bad('true or false');
    }
    case 'int': {
      if (!/^[-+]?\d+$/.test(raw)) bad('an integer');
      const n = Number(raw);
      if (n < -2147483648 || n > 2147483647) bad('a 32-bit integer');
      return n;
    }
    case 'long': {
      if (!/^[-+]?\d+$/.test(raw)) bad('an integer');
      const n = BigInt(raw.replace(/^\+/, ''));
      if (n < -(2n ** 63n) || n >= 2n ** 63n) bad('a 64-bit integer');
      return n;
    }
    case 'float':
    case 'double': {
      const n = parseFloating(raw);
      if (n === undefined) bad('a number');
      return type === 'float' ? Math.fround(n!) : n!;
    }
    case 'date': {
      const m = /^([-+]?\d{4,})-(\d{1,2})-(\d{1,2})$/.exec(raw);
      if (!m) return bad('a date YYYY-MM-DD');
      return checkedEpochDay(Number(m[1]), Number(m[2]), Number(m[3]), bad);
    }
    case 'timestamp':
    case 'timestamptz':
      return parseTimestamp(raw, type === 'timestamptz', bad);
    case 'binary':
      return new TextEncoder().encode(raw);
    default:
      throw unsupported(`delta partition value ${column}: type ${type} has no Delta partition value form`);
  }
}

// --- timestamps ------------------------------------------------------------------------------

/**
 * Accepts `YYYY-MM-DD HH:MM:SS[.f]` and ISO-8601 (`T` separator, `Z` or `±HH:MM` offset). Values
 * without a zone are read as UTC: the protocol says they are in the writer's zone, which the log
 * does not record, and Spark writers run in UTC in practice.
 */
function parseTimestamp(raw: string, adjustToUtc: boolean, bad: (what: string) => never): bigint {
  const m = /^([-+]?\d{4,})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/.exec(raw);
  if (!m) return bad('a timestamp YYYY-MM-DD HH:MM:SS[.ffffff]');
  const [, y, mo, d, hh, mi, ss = '0', frac = '', zone] = m;
  if (zone !== undefined && !adjustToUtc && zone !== 'Z' && !/^[+-]00:?00$/.test(zone)) {
    bad('a timestamp without a time zone offset');
  }
  const day = checkedEpochDay(Number(y), Number(mo), Number(d), bad);
  const h = Number(hh);
  const min = Number(mi);
  const s = Number(ss);
  if (h > 23 || min > 59 || s > 59) bad('a valid time of day');
  let seconds = BigInt(day) * SECONDS_PER_DAY + BigInt(h * 3600 + min * 60 + s);
  if (zone !== undefined && zone !== 'Z') {
    const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
    const offset = BigInt(Number(z[2]) * 3600 + Number(z[3]) * 60);
    seconds -= z[1] === '+' ? offset : -offset;
  }
  // Digits beyond microseconds are truncated: a partition value is one exact instant, and no
  // Delta writer produces nanoseconds here.
  const micros = BigInt((frac + '000000').slice(0, 6));
  return seconds * MICROS_PER_SECOND + micros;
}

function formatTime(micros: bigint, alwaysFraction: boolean): string {
  const seconds = floorDiv(micros, MICROS_PER_SECOND);
  const frac = Number(micros - seconds * MICROS_PER_SECOND);
  const sod = Number(seconds - floorDiv(seconds, SECONDS_PER_DAY) * SECONDS_PER_DAY);
  const hms = `${two(Math.floor(sod / 3600))}:${two(Math.floor(sod / 60) % 60)}:${two(sod % 60)}`;
  return frac === 0 && !alwaysFraction ? hms : `${hms}.${String(frac).padStart(6, '0')}`;
}

// --- dates (proleptic Gregorian, no Date object: years 0–99 and negative years stay exact) ----

/** Days since 1970-01-01 of a civil date (the calendar code lives with the other single values). */
export const epochDay = daysFromCivil;

/** The civil date of a day count since 1970-01-01. */
export const civilDate = civilFromDays;

function checkedEpochDay(y: number, m: number, d: number, bad: (what: string) => never): number {
  const days = epochDay(y, m, d);
  const back = civilDate(days);
  if (m < 1 || m > 12 || back.month !== m || back.day !== d) bad('a valid calendar date');
  return days;
}

export function formatDate(days: number): string {
  const { year, month, day } = civilDate(days);
  const y = year < 0 ? '-' + String(-year).padStart(4, '0') : String(year).padStart(4, '0');
  return `${y}-${two(month)}-${two(day)}`;
}

// --- numbers -----------------------------------------------------------------------------------

function parseFloating(raw: string): number | undefined {
  if (raw === 'NaN') return NaN;
  if (raw === 'Infinity' || raw === '+Infinity') return Infinity;
  if (raw === '-Infinity') return -Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) return undefined;
  return Number(raw);
}

/** Java's spelling (`1.0`, `NaN`, `-0.0`), shortest digits that read back to the same value. */
function formatFloating(v: number, single: boolean): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return 'Infinity';
  if (v === -Infinity) return '-Infinity';
  if (Object.is(v, -0)) return '-0.0';
  let s = String(v);
  if (single) {
    const f = Math.fround(v);
    for (let p = 1; p <= 9; p++) {
      const t = Number(f.toPrecision(p));
      if (Math.fround(t) === f) {
        s = String(t);
        break;
      }
    }
  }
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

/** Decimal text with exactly `scale` fraction digits; refuses to drop non-zero digits. */
function rescaleDecimal(text: string, scale: number, column: string): string {
  const neg = text.startsWith('-');
  const [int = '0', frac = ''] = (neg ? text.slice(1) : text).split('.');
  let f = frac;
  if (f.length > scale) {
    if (/[^0]/.test(f.slice(scale))) {
      throw invalidInput(`delta partition value ${column}: expected at most ${scale} fraction digits, found ${JSON.stringify(text)}`);
    }
    f = f.slice(0, scale);
  }
  f = f.padEnd(scale, '0');
  const i = int.replace(/^0+(?=\d)/, '');
  const isZero = /^0*$/.test(i + f);
  return `${neg && !isZero ? '-' : ''}${i}${scale > 0 ? '.' + f : ''}`;
}

function two(n: number): string {
  return String(n).padStart(2, '0');
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function describe(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  if (v instanceof Uint8Array) return `bytes ${hex(v)}`;
  return JSON.stringify(v) ?? String(v);
}
