import { bytesToHex, formatDate, formatTimestamp, unscaledToDecimal } from '../../../src/format/iceberg/single-value.ts';
import type { NestedField, Schema } from '../../../src/format/iceberg/types.ts';
import type { LiteralValue } from '../../../src/format/scan-task.ts';

/**
 * Random rows and random filter texts over one small schema, for property tests of the pruning
 * evaluators: values cluster in small domains so equality and ranges hit, and include what breaks
 * naive code (NaN, ±0, ±Infinity, pre-1970 instants, leap days, astral-plane and U+FFFF strings,
 * long strings that bounds truncate, bytes above 0x7F, nulls at every level).
 */

export type Row = Map<number, LiteralValue>;

export const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'i', required: false, type: 'int' },
    { id: 3, name: 'l', required: false, type: 'long' },
    { id: 4, name: 'dbl', required: false, type: 'double' },
    { id: 5, name: 'f', required: false, type: 'float' },
    { id: 6, name: 's', required: false, type: 'string' },
    { id: 7, name: 'd', required: false, type: 'date' },
    { id: 8, name: 'ts', required: false, type: 'timestamptz' },
    { id: 9, name: 'lts', required: false, type: 'timestamp' },
    { id: 10, name: 'dec', required: false, type: 'decimal(9, 2)' },
    { id: 11, name: 'flag', required: false, type: 'boolean' },
    { id: 12, name: 'bin', required: false, type: 'binary' },
    { id: 13, name: 'st', required: false, type: { type: 'struct', fields: [{ id: 14, name: 'x', required: false, type: 'int' }] } },
  ],
};

/** Primitive columns a predicate can name: field ID → path text and type. */
export const columns: { id: number; path: string; type: string }[] = [
  ...schema.fields.filter((f): f is NestedField & { type: string } => typeof f.type === 'string' && f.id !== 1).map((f) => ({ id: f.id, path: f.name, type: f.type })),
  { id: 14, path: 'st.x', type: 'int' },
];

export type Rng = () => number;

/** mulberry32: small, seedable, good enough to spread test cases. */
export function rng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));

const MICROS_PER_DAY = 86_400_000_000n;
const DOUBLES = [-1.5, -0, 0, 0.1, 2.5, 3, 1e300, -Infinity, Infinity, NaN, 7.25, -1e-300];
const STRING_PARTS = ['a', 'b', 'z', 'é', 'ü', '😀', '\uffff', 'Z', ' ', "'"];
const BYTES = [0, 1, 0x7f, 0x80, 0xff];

function randomString(r: Rng): string {
  if (r() < 0.5) return pick(r, ['', 'a', 'ab', 'abc', 'b', 'é', 'z', '😀', 'a😀', '\uffff', 'US', 'us', 'aaaaaaaaaaaaaaaaaaaa1', 'aaaaaaaaaaaaaaaaaaaa2', '😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀x']);
  const n = int(r, 0, 20);
  let s = '';
  for (let k = 0; k < n; k++) s += pick(r, STRING_PARTS);
  return s;
}

function randomValue(r: Rng, type: string): LiteralValue {
  switch (type) {
    case 'int': return r() < 0.05 ? pick(r, [-2147483648, 2147483647]) : int(r, -20, 20);
    case 'long': return r() < 0.05 ? pick(r, [-(2n ** 63n), 2n ** 63n - 1n]) : BigInt(int(r, -50, 50));
    case 'double': return r() < 0.7 ? pick(r, DOUBLES) : (r() - 0.5) * 10;
    case 'float': return Math.fround(r() < 0.7 ? pick(r, DOUBLES) : (r() - 0.5) * 10);
    case 'string': return randomString(r);
    case 'date': return r() < 0.2 ? pick(r, [-1, 0, 19782, 19783, -719162, 2932896]) : int(r, -800, 800);
    case 'timestamp':
    case 'timestamptz': {
      if (r() < 0.2) return pick(r, [-1n, 0n, 1n, 1_709_164_800_000_000n, -62_135_596_800_000_000n]);
      return BigInt(int(r, -400, 400)) * MICROS_PER_DAY + BigInt(int(r, 0, 86_399)) * 1_000_000n + BigInt(pick(r, [0, 1, 999, 1000, 999_999, int(r, 0, 999_999)]));
    }
    case 'decimal(9, 2)': return unscaledToDecimal(BigInt(int(r, -2000, 2000)), 2);
    case 'boolean': return r() < 0.5;
    case 'binary': {
      const n = int(r, 0, 20);
      return Uint8Array.from({ length: n }, () => pick(r, BYTES));
    }
  }
  throw new Error(`no generator for ${type}`);
}

export function randomRow(r: Rng, id: number): Row {
  const row: Row = new Map([[1, BigInt(id)]]);
  for (const c of columns) {
    if (c.id === 14) continue;
    row.set(c.id, r() < 0.15 ? null : randomValue(r, c.type));
  }
  const structNull = r() < 0.1;
  row.set(13, structNull ? null : 'struct');
  row.set(14, structNull || r() < 0.15 ? null : (randomValue(r, 'int') as number));
  return row;
}

/** Filter text of a literal for a column, in a form the parser and binder take. */
export function literalText(type: string, v: LiteralValue): string {
  if (type === 'double' || type === 'float') {
    const n = v as number;
    if (!Number.isFinite(n)) return n > 0 ? "'Infinity'" : "'-Infinity'";
    return String(n);
  }
  switch (type) {
    case 'string': return `'${(v as string).replace(/'/g, "''")}'`;
    case 'date': return `'${formatDate(v as number)}'`;
    case 'timestamptz': return `'${formatTimestamp(v as bigint)}Z'`;
    case 'timestamp': return `'${formatTimestamp(v as bigint)}'`;
    case 'binary': return `X'${bytesToHex(v as Uint8Array)}'`;
    case 'boolean': return v ? 'TRUE' : 'FALSE';
    default: return String(v);
  }
}

function randomLiteral(r: Rng, c: { id: number; type: string }, rows: readonly Row[]): string {
  let v: LiteralValue | undefined;
  if (r() < 0.6 && rows.length > 0) v = rows[int(r, 0, rows.length - 1)].get(c.id);
  if (v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) v = randomValue(r, c.type);
  if (typeof v === 'number' && Number.isNaN(v)) v = 0;
  // Near misses around stored values exercise strict vs non-strict bounds.
  if (c.type === 'string' && r() < 0.2) v = `${v as string}${pick(r, ['', 'a', '\u0000', '😀'])}`;
  if ((c.type === 'timestamp' || c.type === 'timestamptz') && r() < 0.3) v = (v as bigint) + BigInt(pick(r, [-1, 1, -1000, 1000]));
  if (c.type === 'int' && r() < 0.2) v = Math.max(-2147483648, Math.min(2147483647, (v as number) + pick(r, [-1, 1])));
  return literalText(c.type, v);
}

function randomPredicate(r: Rng, rows: readonly Row[]): string {
  if (r() < 0.03) return r() < 0.5 ? 'st IS NULL' : 'st IS NOT NULL';
  const c = pick(r, columns);
  const lit = () => randomLiteral(r, c, rows);
  const floats = c.type === 'double' || c.type === 'float';
  const kinds = ['=', '<>', '<', '<=', '>', '>=', 'in', 'not in', 'null', 'not null', 'between', ...(floats ? ['nan', 'not nan'] : [])];
  const kind = pick(r, kinds);
  switch (kind) {
    case 'in':
    case 'not in':
      return `${c.path} ${kind.toUpperCase()} (${Array.from({ length: int(r, 1, 4) }, lit).join(', ')})`;
    case 'null': return `${c.path} IS NULL`;
    case 'not null': return `${c.path} IS NOT NULL`;
    case 'nan': return `${c.path} IS NAN`;
    case 'not nan': return `${c.path} IS NOT NAN`;
    case 'between': return `${c.path} BETWEEN ${lit()} AND ${lit()}`;
    default: return r() < 0.1 ? `${lit()} ${kind} ${c.path}` : `${c.path} ${kind} ${lit()}`;
  }
}

/** A random filter text over `columns`, literals drawn mostly from `rows`. */
export function randomFilter(r: Rng, rows: readonly Row[], depth = 0): string {
  const x = r();
  if (depth >= 3 || x < 0.45) return randomPredicate(r, rows);
  if (x < 0.6) return `NOT (${randomFilter(r, rows, depth + 1)})`;
  return `(${randomFilter(r, rows, depth + 1)}) ${x < 0.8 ? 'AND' : 'OR'} (${randomFilter(r, rows, depth + 1)})`;
}
