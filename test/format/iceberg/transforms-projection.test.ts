import { describe, expect, it } from 'vitest';
import type { LiteralValue } from '../../../src/format/scan-task.ts';
import { compareUtf8, decimalParams, decimalToUnscaled, parseTimestamp, unscaledToDecimal } from '../../../src/format/iceberg/single-value.ts';
import { applyTransform, projectInclusive, transformResultType, type PartitionPredicate, type PredicateOp } from '../../../src/format/iceberg/transforms.ts';

const ts = (text: string) => parseTimestamp(text, 'micros').value;
const MICROS_PER_DAY = 86_400_000_000n;
const dayOf = (iso: string) => Date.UTC(Number(iso.slice(0, 4)), Number(iso.slice(5, 7)) - 1, Number(iso.slice(8, 10))) / 86_400_000;

// ---------------------------------------------------------------------------------------------
// A small evaluator with SQL semantics (comparisons with null are false), written for these tests.

function compare(type: string, a: Exclude<LiteralValue, null>, b: Exclude<LiteralValue, null>): number {
  if (type === 'string') return compareUtf8(a as string, b as string);
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
    return a.length - b.length;
  }
  const dec = decimalParams(type);
  if (dec) {
    const x = decimalToUnscaled(a as string, dec.scale);
    const y = decimalToUnscaled(b as string, dec.scale);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

function holds(type: string, op: PredicateOp, v: LiteralValue, lit?: LiteralValue | LiteralValue[]): boolean {
  const isNaN_ = typeof v === 'number' && Number.isNaN(v);
  switch (op) {
    case 'is-null':
      return v === null;
    case 'not-null':
      return v !== null;
    case 'is-nan':
      return isNaN_;
    case 'not-nan':
      return !isNaN_;
  }
  if (v === null) return false;
  if (op === 'in' || op === 'not-in') {
    const hit = (lit as LiteralValue[]).some((x) => x !== null && compare(type, v, x) === 0);
    return op === 'in' ? hit : !hit && !(lit as LiteralValue[]).includes(null);
  }
  if (lit === null) return false;
  const c = compare(type, v, lit as Exclude<LiteralValue, null>);
  return { '<': c < 0, '<=': c <= 0, '>': c > 0, '>=': c >= 0, '=': c === 0, '!=': c !== 0 }[op as '<'];
}

const predHolds = (type: string, p: PartitionPredicate, v: LiteralValue) => holds(type, p.op, v, p.op === 'in' || p.op === 'not-in' ? p.values : p.value);

// ---------------------------------------------------------------------------------------------
// Value generators

let seed = 42;
const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

const CHARS = ['a', 'b', 'c', 'é', 'ÿ', '€', '\uffff', '😀', '😁', '\u{10ffff}'];

const generators: Record<string, () => LiteralValue> = {
  int: () => (rand() < 0.3 ? int(-25, 25) : int(-2_000_000, 2_000_000)),
  long: () => (rand() < 0.3 ? BigInt(int(-25, 25)) : BigInt(int(-(2 ** 30), 2 ** 30)) * BigInt(int(1, 2 ** 20))),
  date: () => (rand() < 0.3 ? int(-40, 40) : int(-200_000, 200_000)),
  timestamp: () => {
    // near day/hour boundaries (either side of the epoch) or anywhere in ±300 years
    if (rand() < 0.5) return BigInt(int(-800, 800)) * 3_600_000_000n + BigInt(int(-2, 2));
    return BigInt(int(-9_000_000, 9_000_000)) * 1_000_000_000n + BigInt(int(0, 999_999_999));
  },
  timestamp_ns: () => BigInt(int(-9_000_000, 9_000_000)) * 1_000_000_000_000n + BigInt(int(-3, 3)),
  'decimal(9, 2)': () => unscaledToDecimal(BigInt(rand() < 0.3 ? int(-30, 30) : int(-99_999_999, 99_999_999)), 2),
  string: () => Array.from({ length: int(0, 5) }, () => pick(CHARS)).join(''),
  binary: () => Uint8Array.from({ length: int(0, 4) }, () => pick([0, 1, 2, 127, 128, 255])),
  uuid: () => pick(['f79c3e09-677c-4bbd-a479-3f349cb785e7', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff']),
  double: () => pick([0, -0, 1.5, -2, NaN, Infinity, 1e-9]),
};

const cases: [string, string][] = [
  ['identity', 'int'],
  ['identity', 'string'],
  ['identity', 'double'],
  ['bucket[7]', 'int'],
  ['bucket[7]', 'long'],
  ['bucket[4]', 'string'],
  ['bucket[3]', 'uuid'],
  ['bucket[5]', 'timestamp'],
  ['truncate[10]', 'int'],
  ['truncate[3]', 'int'],
  ['truncate[1000]', 'long'],
  ['truncate[50]', 'decimal(9, 2)'],
  ['truncate[2]', 'string'],
  ['truncate[2]', 'binary'],
  ['year', 'date'],
  ['month', 'date'],
  ['day', 'date'],
  ['year', 'timestamp'],
  ['month', 'timestamp'],
  ['day', 'timestamp'],
  ['hour', 'timestamp'],
  ['day', 'timestamp_ns'],
  ['hour', 'timestamp_ns'],
];

const OPS: PredicateOp[] = ['<', '<=', '>', '>=', '=', '!=', 'in', 'not-in', 'is-null', 'not-null', 'is-nan', 'not-nan'];

describe('inclusive projection: if the row matches, its partition matches (spec §Scan Planning)', () => {
  for (const [transform, type] of cases) {
    it(`${transform} on ${type}`, () => {
      const gen = generators[type]!;
      const resultType = transformResultType(transform, type);
      let checked = 0;
      for (let i = 0; i < 400; i++) {
        const op = pick(OPS);
        const literal: LiteralValue | LiteralValue[] = op === 'in' || op === 'not-in' ? Array.from({ length: int(0, 3) }, gen) : gen();
        const projected = projectInclusive(transform, type, op, literal);
        for (let j = 0; j < 25; j++) {
          // values drawn at random, plus the literal itself, so equality and boundaries occur
          const v = j === 0 && !Array.isArray(literal) ? literal : j === 1 ? null : gen();
          if (!holds(type, op, v, literal) || projected === undefined) continue;
          const pv = applyTransform(transform, type, v);
          checked++;
          if (!predHolds(resultType, projected, pv)) {
            throw new Error(`${transform}(${type}): ${String(v)} ${op} ${String(literal)} holds, but projected ${JSON.stringify(projected, (_, x) => (typeof x === 'bigint' ? `${x}n` : x))} fails on ${String(pv)}`);
          }
        }
      }
      expect(checked).toBeGreaterThan(100);
    });
  }
});

describe('inclusive projection: exact results', () => {
  it('day(ts): closes open bounds on the microsecond grid (the spec’s ts > X → ts_day >= day(X) example)', () => {
    const d15 = dayOf('2024-01-15');
    expect(projectInclusive('day', 'timestamp', '>', ts('2024-01-15T10:00:00'))).toEqual({ op: '>=', value: d15 });
    expect(projectInclusive('day', 'timestamp', '>', ts('2024-01-15T23:59:59.999999'))).toEqual({ op: '>=', value: d15 + 1 });
    expect(projectInclusive('day', 'timestamp', '>=', ts('2024-01-15T00:00:00'))).toEqual({ op: '>=', value: d15 });
    expect(projectInclusive('day', 'timestamp', '<', ts('2024-01-15T00:00:00'))).toEqual({ op: '<=', value: d15 - 1 });
    expect(projectInclusive('day', 'timestamp', '<', ts('2024-01-15T00:00:00.000001'))).toEqual({ op: '<=', value: d15 });
    expect(projectInclusive('day', 'timestamptz', '<=', ts('2024-01-15T00:00:00Z'))).toEqual({ op: '<=', value: d15 });
    expect(projectInclusive('day', 'timestamp', '=', ts('2024-01-15T10:00:00'))).toEqual({ op: '=', value: d15 });
    expect(projectInclusive('day', 'timestamp', 'in', [ts('2024-01-15T10:00:00'), ts('2024-01-15T11:00:00'), ts('2024-01-16T00:00:00')])).toEqual({ op: 'in', values: [d15, d15 + 1] });
  });

  it('month, year and hour', () => {
    expect(projectInclusive('month', 'date', '<', dayOf('2024-03-01'))).toEqual({ op: '<=', value: 54 * 12 + 1 });
    expect(projectInclusive('month', 'date', '>=', dayOf('2024-03-01'))).toEqual({ op: '>=', value: 54 * 12 + 2 });
    expect(projectInclusive('year', 'timestamp', '>', ts('2023-12-31T23:59:59.999999'))).toEqual({ op: '>=', value: 54 });
    expect(projectInclusive('hour', 'timestamp', '<', ts('2024-01-15T10:00:00'))).toEqual({ op: '<=', value: Date.UTC(2024, 0, 15, 9) / 3_600_000 });
    expect(projectInclusive('day', 'date', '<', 0)).toEqual({ op: '<=', value: -1 });
  });

  it('widens negative time ordinals to also match files from writers with the pre-0.11 off-by-one', () => {
    // day(1969-12-31T10:00) is -1; those writers stored 0
    expect(projectInclusive('day', 'timestamp', '=', ts('1969-12-31T10:00:00'))).toEqual({ op: 'in', values: [-1, 0] });
    expect(projectInclusive('day', 'timestamp', '<', ts('1969-12-31T10:00:00'))).toEqual({ op: '<=', value: 0 });
    expect(projectInclusive('day', 'timestamp', '>=', -1n)).toEqual({ op: '>=', value: -1 });
    expect(projectInclusive('month', 'date', 'in', [-1, dayOf('1970-06-10')])).toEqual({ op: 'in', values: [-1, 0, 5] });
    // day on a date is the date itself: nothing to widen
    expect(projectInclusive('day', 'date', '=', -1)).toEqual({ op: '=', value: -1 });
  });

  it('bucket: only = and in', () => {
    expect(projectInclusive('bucket[100]', 'int', '=', 34)).toEqual({ op: '=', value: 2017239379 % 100 });
    expect(projectInclusive('bucket[100]', 'long', 'in', [34n, 34n, null])).toEqual({ op: 'in', values: [2017239379 % 100] });
    for (const op of ['<', '<=', '>', '>=', '!=', 'not-in'] as const) {
      expect(projectInclusive('bucket[100]', 'int', op, op === 'not-in' ? [34] : 34)).toBeUndefined();
    }
    expect(projectInclusive('bucket[100]', 'int', 'is-null')).toEqual({ op: 'is-null' });
    expect(projectInclusive('bucket[100]', 'int', 'not-null')).toEqual({ op: 'not-null' });
  });

  it('truncate on numbers: transform the closed bound', () => {
    expect(projectInclusive('truncate[10]', 'int', '<', 10)).toEqual({ op: '<=', value: 0 });
    expect(projectInclusive('truncate[10]', 'int', '<=', 10)).toEqual({ op: '<=', value: 10 });
    expect(projectInclusive('truncate[10]', 'int', '>', 9)).toEqual({ op: '>=', value: 10 });
    expect(projectInclusive('truncate[10]', 'int', '>', -1)).toEqual({ op: '>=', value: 0 });
    expect(projectInclusive('truncate[10]', 'int', '=', -15)).toEqual({ op: '=', value: -20 });
    expect(projectInclusive('truncate[10]', 'long', '<', 0n)).toEqual({ op: '<=', value: -10n });
    expect(projectInclusive('truncate[50]', 'decimal(9, 2)', '<', '10.50')).toEqual({ op: '<=', value: '10.00' });
    expect(projectInclusive('truncate[50]', 'decimal(9, 2)', '>', '10.49')).toEqual({ op: '>=', value: '10.50' });
    expect(projectInclusive('truncate[10]', 'int', '!=', 5)).toBeUndefined();
  });

  it('truncate on strings and binary: prefixes, no grid adjustment', () => {
    expect(projectInclusive('truncate[3]', 'string', '=', 'iceberg')).toEqual({ op: '=', value: 'ice' });
    expect(projectInclusive('truncate[3]', 'string', '<', 'iceberg')).toEqual({ op: '<=', value: 'ice' });
    expect(projectInclusive('truncate[3]', 'string', '>', 'iceberg')).toEqual({ op: '>=', value: 'ice' });
    expect(projectInclusive('truncate[2]', 'string', 'in', ['😀😁😂', '😀😁x', 'ab'])).toEqual({ op: 'in', values: ['😀😁', 'ab'] });
    expect(projectInclusive('truncate[2]', 'binary', '>=', Uint8Array.of(9, 8, 7))).toEqual({ op: '>=', value: Uint8Array.of(9, 8) });
    expect(projectInclusive('truncate[3]', 'string', 'not-in', ['a'])).toBeUndefined();
  });

  it('identity passes every predicate through', () => {
    expect(projectInclusive('identity', 'string', '!=', 'us')).toEqual({ op: '!=', value: 'us' });
    expect(projectInclusive('identity', 'string', 'not-in', ['us', 'eu'])).toEqual({ op: 'not-in', values: ['us', 'eu'] });
    expect(projectInclusive('identity', 'double', 'is-nan')).toEqual({ op: 'is-nan' });
    expect(projectInclusive('identity', 'timestamp', '<', 5n)).toEqual({ op: '<', value: 5n });
  });

  it('void and unknown transforms cannot prune', () => {
    expect(projectInclusive('void', 'int', '=', 1)).toBeUndefined();
    expect(projectInclusive('void', 'int', 'not-null')).toBeUndefined();
    expect(projectInclusive('zorder', 'int', '=', 1)).toBeUndefined();
    expect(projectInclusive('day', 'double', '=', 1)).toBeUndefined();
  });

  it('comparisons with a null literal do not prune', () => {
    expect(projectInclusive('day', 'timestamp', '<', null)).toBeUndefined();
  });

  it('refuses a list where one value is expected and the reverse', () => {
    expect(() => projectInclusive('day', 'timestamp', 'in', 5n)).toThrow(/list/);
    expect(() => projectInclusive('day', 'timestamp', '=', [5n])).toThrow(/one value/);
  });

  it('projects each day of a year-long range to that day’s ordinal', () => {
    const start = ts('2024-01-01T00:00:00');
    for (let d = 0n; d < 366n; d += 1n) {
      const lo = start + d * MICROS_PER_DAY;
      expect(projectInclusive('day', 'timestamp', '>=', lo)).toEqual({ op: '>=', value: dayOf('2024-01-01') + Number(d) });
    }
  });
});

describe('projections of truncate near the smallest int and long', () => {
  it('cannot prune with a literal whose truncation overflows, and prunes exactly next to it', () => {
    const INT_MIN = -2147483648;
    expect(projectInclusive('truncate[10]', 'int', '=', INT_MIN)).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'int', 'in', [INT_MIN, 5])).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'int', '<=', INT_MIN + 1)).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'int', '<', INT_MIN + 8)).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'int', '>', INT_MIN)).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'int', '<=', INT_MIN + 8)).toEqual({ op: '<=', value: -2147483640 });
    expect(projectInclusive('truncate[10]', 'int', '>=', INT_MIN + 8)).toEqual({ op: '>=', value: -2147483640 });
    expect(projectInclusive('truncate[10]', 'int', '<', 0)).toEqual({ op: '<=', value: -10 });
    expect(projectInclusive('truncate[10]', 'long', '=', -(2n ** 63n))).toBeUndefined();
    expect(projectInclusive('truncate[10]', 'long', '>=', -(2n ** 63n) + 8n)).toEqual({ op: '>=', value: -9223372036854775800n });
  });
});
