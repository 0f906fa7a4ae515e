import { invalidInput, isTwinlakeError, unsupported } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import {
  bytesToHex,
  bytesToUuid,
  decimalParams,
  decimalToUnscaled,
  fixedLength,
  parseDate,
  parseTime,
  parseTimestamp,
  unscaledToDecimal,
  uuidToBytes,
} from '../iceberg/single-value.ts';
import type { IcebergType, NestedField, StructType } from '../iceberg/types.ts';
import type { Expr, Literal, PredicateOp } from './parser.ts';

/**
 * Binding resolves column names to field IDs and converts literals to the column's type, in the
 * `LiteralValue` forms of spec/scan-task.ts (int/date number, long/time/timestamps bigint, decimal
 * text at the column's scale, binary bytes). After binding, every evaluator compares values of one
 * type only.
 *
 * Semantics (shared by every evaluator and by `toDuckDBSql`): SQL three-valued logic, where a
 * comparison with a null value is unknown and a row is selected only when the filter is true; float
 * and double compare as IEEE 754, so NaN fails every comparison except `<>` / `NOT IN` and is
 * found with `IS NAN`.
 */

export interface BoundReference {
  id: number;
  /** The column's path in the schema, dotted, for messages. */
  name: string;
  type: IcebergType;
}

export interface BoundPredicate {
  kind: 'pred';
  op: PredicateOp;
  ref: BoundReference;
  value?: LiteralValue;
  values?: LiteralValue[];
}

export type BoundExpr =
  | { kind: 'and' | 'or'; left: BoundExpr; right: BoundExpr }
  | { kind: 'not'; child: BoundExpr }
  | BoundPredicate
  | { kind: 'true' }
  | { kind: 'false' };

const TRUE: BoundExpr = { kind: 'true' };
const FALSE: BoundExpr = { kind: 'false' };

export function and(left: BoundExpr, right: BoundExpr): BoundExpr {
  if (left.kind === 'false' || right.kind === 'false') return FALSE;
  if (left.kind === 'true') return right;
  if (right.kind === 'true') return left;
  return { kind: 'and', left, right };
}

export function or(left: BoundExpr, right: BoundExpr): BoundExpr {
  if (left.kind === 'true' || right.kind === 'true') return TRUE;
  if (left.kind === 'false') return right;
  if (right.kind === 'false') return left;
  return { kind: 'or', left, right };
}

// ---------------------------------------------------------------------------------------------
// Columns

function findField(fields: readonly NestedField[], name: string): NestedField | undefined {
  const exact = fields.find((f) => f.name === name);
  if (exact) return exact;
  const lower = name.toLowerCase();
  const matches = fields.filter((f) => f.name.toLowerCase() === lower);
  if (matches.length > 1) {
    throw invalidInput(`filter: column name ${JSON.stringify(name)} is ambiguous; it matches ${matches.map((f) => JSON.stringify(f.name)).join(', ')} (quote it with the exact case)`);
  }
  return matches[0];
}

/** Column paths a filter can use: struct members are reachable, list and map contents are not. */
function columnNames(struct: StructType, prefix = '', out: string[] = []): string[] {
  for (const f of struct.fields) {
    const name = prefix + f.name;
    out.push(name);
    if (typeof f.type !== 'string' && f.type.type === 'struct') columnNames(f.type, `${name}.`, out);
  }
  return out;
}

function resolve(schema: StructType, path: string[]): BoundReference {
  let fields = schema.fields;
  const names: string[] = [];
  for (let i = 0; i < path.length; i++) {
    let f = findField(fields, path[i]);
    let consumed = 1;
    // A top-level column whose name contains dots, written without quotes.
    if (!f && i === 0 && path.length > 1) {
      for (let n = path.length; n > 1 && !f; n--) {
        f = findField(fields, path.slice(0, n).join('.'));
        if (f) consumed = n;
      }
    }
    if (!f) {
      const available = i === 0 ? columnNames(schema) : fields.map((x) => `${names.join('.')}.${x.name}`);
      const shown = available.length > 40 ? [...available.slice(0, 40), `… ${available.length - 40} more`] : available;
      throw invalidInput(`filter: unknown column ${JSON.stringify([...names, path[i]].join('.'))}; available columns: ${shown.join(', ') || '(none)'}`);
    }
    names.push(f.name);
    i += consumed - 1;
    if (i === path.length - 1) return { id: f.id, name: names.join('.'), type: f.type };
    const type = f.type;
    if (typeof type === 'string') {
      throw invalidInput(`filter: column ${names.join('.')} is ${type}, not a struct, so it has no field ${JSON.stringify(path[i + 1])}`);
    }
    if (type.type !== 'struct') {
      throw unsupported(`filter: predicates on values inside ${type.type} column ${names.join('.')} are not supported`);
    }
    fields = type.fields;
  }
  throw invalidInput('filter: expected a column name, found an empty path');
}

// ---------------------------------------------------------------------------------------------
// Literals

const utf8 = new TextEncoder();
const MICROS_PER_DAY = 86_400_000_000n;
const NANOS_PER_DAY = 86_400_000_000_000n;

export function describeLiteral(v: Literal): string {
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  if (v instanceof Uint8Array) return `X'${bytesToHex(v)}'`;
  if (typeof v === 'object' && v !== null) return v.number;
  return String(v);
}

/** "1.5e3" → "1500", "-.25" → "-0.25": exact decimal text without an exponent. */
function plainDecimal(text: string): string | undefined {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return undefined;
  const exp = Number(m[4] ?? '0');
  if (Math.abs(exp) > 400) return undefined;
  const digits = m[2] + (m[3] ?? '');
  let point = m[2].length + exp;
  let padded = digits;
  if (point < 0) {
    padded = '0'.repeat(-point) + padded;
    point = 0;
  }
  if (point > padded.length) padded += '0'.repeat(point - padded.length);
  const int = padded.slice(0, point).replace(/^0+(?=\d)/, '') || '0';
  const frac = padded.slice(point).replace(/0+$/, '');
  return `${m[1] === '-' ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

function numericText(v: Literal): string | undefined {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return Number.isFinite(v) ? plainDecimal(String(v)) : undefined;
  if (typeof v === 'string') return plainDecimal(v);
  if (typeof v === 'object' && v !== null && !(v instanceof Uint8Array)) return plainDecimal(v.number);
  return undefined;
}

function floatValue(v: Literal): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const text = typeof v === 'string' ? v.trim() : typeof v === 'object' && v !== null && !(v instanceof Uint8Array) ? v.number : undefined;
  if (text === undefined) return undefined;
  if (/^[+-]?(inf|infinity)$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^[+-]?nan$/i.test(text)) return NaN;
  return plainDecimal(text) === undefined ? undefined : Number(text);
}

/** Why a literal cannot become a value of the column's type. */
class Mismatch {
  constructor(readonly reason: string) {}
}

const mismatch = (reason: string): never => {
  throw new Mismatch(reason);
};

function timestampValue(text: string, unit: 'micros' | 'nanos', zonedColumn: boolean): bigint {
  if (/^[+-]?\d{4,}-\d{2}-\d{2}$/.test(text)) return BigInt(parseDate(text)) * (unit === 'micros' ? MICROS_PER_DAY : NANOS_PER_DAY);
  const r = parseTimestamp(text, unit);
  // A timestamp without zone is wall-clock time: only a zero offset leaves it unchanged.
  if (!zonedColumn && r.zoned && !/(Z|z|[+-]00(:?00)?)$/.test(text)) mismatch('has a time zone offset, but the column is a timestamp without time zone');
  return r.value;
}

function convert(v: Literal, type: string): LiteralValue {
  const text = typeof v === 'string' ? v : undefined;
  const notNumber = typeof v === 'boolean' || v instanceof Uint8Array;
  switch (type) {
    case 'boolean':
      if (typeof v === 'boolean') return v;
      if (text !== undefined && /^(true|false)$/i.test(text.trim())) return text.trim().toLowerCase() === 'true';
      return mismatch('is not a boolean');
    case 'int':
    case 'long': {
      const plain = notNumber ? undefined : numericText(v);
      if (plain === undefined || !/^-?\d+$/.test(plain)) return mismatch('is not an integer');
      const n = BigInt(plain);
      const bits = type === 'int' ? 31n : 63n;
      if (n < -(1n << bits) || n >= 1n << bits) mismatch(`does not fit in ${type === 'int' ? 32 : 64} bits`);
      return type === 'int' ? Number(n) : n;
    }
    case 'float':
    case 'double': {
      const n = notNumber ? undefined : floatValue(v);
      if (n === undefined) return mismatch('is not a number');
      if (Number.isNaN(n)) mismatch('is NaN, which equals nothing; use IS NAN');
      const out = type === 'float' ? Math.fround(n) : n;
      if (Number.isFinite(n) && !Number.isFinite(out)) mismatch('is out of range for float');
      return out;
    }
    case 'date':
      return text === undefined ? mismatch("is not a date (expected a string such as '2024-01-31')") : parseDate(text);
    case 'time':
      return text === undefined ? mismatch("is not a time (expected a string such as '13:45:00')") : parseTime(text);
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      if (text === undefined) return mismatch("is not a timestamp (expected a string such as '2024-01-31T13:45:00Z')");
      return timestampValue(text, type.endsWith('_ns') ? 'nanos' : 'micros', type.startsWith('timestamptz'));
    case 'string':
      return text ?? mismatch('is not a string (quote it)');
    case 'uuid':
      return text === undefined ? mismatch('is not a uuid string') : bytesToUuid(uuidToBytes(text));
    case 'binary':
      if (v instanceof Uint8Array) return v;
      return text === undefined ? mismatch("is not binary (use X'hex' or a string)") : utf8.encode(text);
  }
  const len = fixedLength(type);
  if (len !== undefined) {
    const bytes = v instanceof Uint8Array ? v : text !== undefined ? utf8.encode(text) : mismatch("is not binary (use X'hex' or a string)");
    return bytes.length === len ? bytes : mismatch(`has ${bytes.length} bytes, not ${len}`);
  }
  const dec = decimalParams(type);
  if (dec) {
    const plain = notNumber ? undefined : numericText(v);
    if (plain === undefined) return mismatch('is not a number');
    if ((plain.split('.')[1] ?? '').length > dec.scale) mismatch(`has more than ${dec.scale} fractional digits`);
    const unscaled = decimalToUnscaled(plain, dec.scale);
    if ((unscaled < 0n ? -unscaled : unscaled) >= 10n ** BigInt(dec.precision)) mismatch(`does not fit in ${dec.precision} digits`);
    return unscaledToDecimal(unscaled, dec.scale);
  }
  return mismatch(`cannot be compared with a ${type} column`);
}

function literalFor(v: Literal, ref: BoundReference): LiteralValue {
  const type = ref.type as string;
  if (v === null || v === undefined) throw invalidInput(`filter: column ${ref.name}: expected a value, found null (use IS NULL)`);
  const bad = (reason: string) => invalidInput(`filter: column ${ref.name} is ${type}; literal ${describeLiteral(v)} ${reason}`, { column: ref.name, type, literal: describeLiteral(v) });
  try {
    return convert(v, type);
  } catch (e) {
    if (e instanceof Mismatch) throw bad(e.reason);
    if (isTwinlakeError(e, 'invalid-input')) throw bad(`is not a valid ${type} (${e.message})`);
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------
// Predicates

const FLOATS = new Set(['float', 'double']);
const EQUALITY_ONLY = new Set(['uuid']);
const COMPARABLE = /^(boolean|int|long|float|double|date|time|timestamp|timestamptz|timestamp_ns|timestamptz_ns|string|uuid|binary|decimal\(.*\)|fixed\[.*\])$/;

function literalKey(v: LiteralValue): string {
  return v instanceof Uint8Array ? `b:${bytesToHex(v)}` : `${typeof v}:${String(v)}`;
}

function bindPredicate(p: Extract<Expr, { kind: 'pred' }>, schema: StructType): BoundExpr {
  const ref = resolve(schema, p.column);
  const type = ref.type;
  const typeText = typeof type === 'string' ? type : type.type;
  if (p.op === 'is-null' || p.op === 'not-null') return { kind: 'pred', op: p.op, ref };
  if (p.op === 'is-nan' || p.op === 'not-nan') {
    if (typeof type !== 'string' || !FLOATS.has(type)) throw invalidInput(`filter: IS NAN needs a float or double column; ${ref.name} is ${typeText}`);
    return { kind: 'pred', op: p.op, ref };
  }
  if (typeof type !== 'string' || !COMPARABLE.test(type)) {
    throw unsupported(`filter: column ${ref.name} is ${typeText}; only IS NULL and IS NOT NULL apply to it`);
  }
  if (EQUALITY_ONLY.has(type) && p.op !== 'eq' && p.op !== 'not-eq' && p.op !== 'in' && p.op !== 'not-in') {
    // Engines disagree on how UUIDs sort; only equality means the same everywhere.
    throw unsupported(`filter: column ${ref.name} is ${type}; only =, <>, IN and NOT IN apply to it`);
  }
  if (p.op === 'in' || p.op === 'not-in') {
    if (!p.values || p.values.length === 0) throw invalidInput(`filter: ${p.op.toUpperCase()} on ${ref.name} needs at least one value`);
    const seen = new Map<string, LiteralValue>();
    for (const v of p.values) {
      const lit = literalFor(v, ref);
      seen.set(literalKey(lit), lit);
    }
    const values = [...seen.values()];
    if (values.length === 1) return { kind: 'pred', op: p.op === 'in' ? 'eq' : 'not-eq', ref, value: values[0] };
    return { kind: 'pred', op: p.op, ref, values };
  }
  if (p.value === undefined) throw invalidInput(`filter: ${p.op} on ${ref.name} needs a value`);
  return { kind: 'pred', op: p.op, ref, value: literalFor(p.value, ref) };
}

/**
 * Binds an expression to a schema: names resolve case-sensitively first, then to the one field
 * whose name matches ignoring case; dotted paths reach struct members.
 */
export function bind(expr: Expr, schema: StructType): BoundExpr {
  switch (expr.kind) {
    case 'true':
    case 'false':
      return expr.kind === 'true' ? TRUE : FALSE;
    case 'and':
      return and(bind(expr.left, schema), bind(expr.right, schema));
    case 'or':
      return or(bind(expr.left, schema), bind(expr.right, schema));
    case 'not': {
      const child = bind(expr.child, schema);
      if (child.kind === 'true') return FALSE;
      if (child.kind === 'false') return TRUE;
      return { kind: 'not', child };
    }
    case 'pred':
      return bindPredicate(expr, schema);
  }
}

const NEGATE: Record<PredicateOp, PredicateOp> = {
  eq: 'not-eq',
  'not-eq': 'eq',
  lt: 'gt-eq',
  'lt-eq': 'gt',
  gt: 'lt-eq',
  'gt-eq': 'lt',
  in: 'not-in',
  'not-in': 'in',
  'is-null': 'not-null',
  'not-null': 'is-null',
  'is-nan': 'not-nan',
  'not-nan': 'is-nan',
};

function negate(e: BoundExpr): BoundExpr {
  switch (e.kind) {
    case 'true': return FALSE;
    case 'false': return TRUE;
    case 'not': return rewriteNot(e.child);
    case 'and': return or(negate(e.left), negate(e.right));
    case 'or': return and(negate(e.left), negate(e.right));
  }
  const flipped: BoundExpr = { ...e, op: NEGATE[e.op] };
  // NaN fails both `x < 5` and `x >= 5`, so NOT (x < 5) also holds for NaN.
  if (typeof e.ref.type === 'string' && FLOATS.has(e.ref.type) && ['lt', 'lt-eq', 'gt', 'gt-eq'].includes(e.op)) {
    return or(flipped, { kind: 'pred', op: 'is-nan', ref: e.ref });
  }
  return flipped;
}

/** The same filter with every NOT pushed into the predicates, so evaluators never see NOT. */
export function rewriteNot(e: BoundExpr): BoundExpr {
  switch (e.kind) {
    case 'not': return negate(e.child);
    case 'and': return and(rewriteNot(e.left), rewriteNot(e.right));
    case 'or': return or(rewriteNot(e.left), rewriteNot(e.right));
    default: return e;
  }
}

/** Field IDs the filter reads. */
export function referencedFieldIds(e: BoundExpr, out = new Set<number>()): Set<number> {
  if (e.kind === 'pred') out.add(e.ref.id);
  else if (e.kind === 'and' || e.kind === 'or') {
    referencedFieldIds(e.left, out);
    referencedFieldIds(e.right, out);
  } else if (e.kind === 'not') referencedFieldIds(e.child, out);
  return out;
}
