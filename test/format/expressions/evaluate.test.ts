import { describe, expect, it } from 'vitest';
import { stringifyJson } from '../../../src/core/json.ts';
import { parseStats } from '../../../src/format/delta/stats.ts';
import { bind, type BoundExpr } from '../../../src/format/expressions/bind.ts';
import { decodeBounds, decodeFieldSummaries, type FileMetrics, type PartitionFieldSummary } from '../../../src/format/expressions/decode.ts';
import { deltaStatsMightMatch, manifestMightMatch, partitionMightMatch, rowsMightMatch } from '../../../src/format/expressions/evaluate.ts';
import { parseFilter } from '../../../src/format/expressions/parser.ts';
import { compareValues, evaluateRow, isNaNValue } from '../../../src/format/expressions/values.ts';
import {
  formatDate,
  formatTimestamp,
  toBinary,
  truncateBinaryLowerBound,
  truncateBinaryUpperBound,
  truncateLowerBound,
  truncateUpperBound,
} from '../../../src/format/iceberg/single-value.ts';
import { applyTransform, transformResultType, tryParseTransform } from '../../../src/format/iceberg/transforms.ts';
import type { FieldSummary, PartitionField, PartitionTuple } from '../../../src/format/iceberg/types.ts';
import { deltaStats } from '../../../src/format/parquet/stats.ts';
import type { LiteralValue } from '../../../src/format/scan-task.ts';
import { columns, randomFilter, randomRow, rng, schema, type Rng, type Row } from './random-filters.ts';

const typeOf = new Map(columns.map((c) => [c.id, c.type]));
const f = (text: string) => bind(parseFilter(text), schema);
const matches = (e: BoundExpr, rows: readonly Row[]) => rows.some((row) => evaluateRow(e, (id) => row.get(id)) === true);

function minMax(type: string, values: LiteralValue[]): { min?: LiteralValue; max?: LiteralValue } {
  let min: LiteralValue | undefined;
  let max: LiteralValue | undefined;
  for (const v of values) {
    if (v === null || isNaNValue(v)) continue;
    if (min === undefined || compareValues(type, v, min) < 0) min = v;
    if (max === undefined || compareValues(type, v, max) > 0) max = v;
  }
  return { min, max };
}

/** Exact Iceberg metrics of a group of rows, bounds truncated as writers truncate them, in binary. */
function binaryMetrics(rows: readonly Row[], r: Rng) {
  const valueCounts = new Map<number, number>();
  const nullCounts = new Map<number, number>();
  const nanCounts = new Map<number, number>();
  const lower = new Map<number, Uint8Array>();
  const upper = new Map<number, Uint8Array>();
  const keep = () => r() > 0.1; // writers may leave any metric out
  for (const c of columns) {
    const values = rows.map((row) => row.get(c.id) ?? null);
    if (keep()) valueCounts.set(c.id, values.length);
    if (keep()) nullCounts.set(c.id, values.filter((v) => v === null).length);
    if ((c.type === 'double' || c.type === 'float') && keep()) nanCounts.set(c.id, values.filter(isNaNValue).length);
    let { min, max } = minMax(c.type, values);
    if (c.type === 'string' && min !== undefined) [min, max] = [truncateLowerBound(min as string), truncateUpperBound(max as string)];
    if (c.type === 'binary' && min !== undefined) [min, max] = [truncateBinaryLowerBound(min as Uint8Array), truncateBinaryUpperBound(max as Uint8Array)];
    if (min !== undefined && keep()) lower.set(c.id, toBinary(c.type, min));
    if (max !== undefined && keep()) upper.set(c.id, toBinary(c.type, max));
  }
  return { valueCounts, nullCounts, nanCounts, lower, upper };
}

function fileMetrics(rows: readonly Row[], r: Rng): FileMetrics {
  const m = binaryMetrics(rows, r);
  return {
    recordCount: rows.length,
    valueCounts: m.valueCounts,
    nullCounts: m.nullCounts,
    nanCounts: m.nanCounts,
    lowerBounds: decodeBounds(schema, m.lower),
    upperBounds: decodeBounds(schema, m.upper),
  };
}

/** Splits rows into random groups of 1–12. */
function groups<T>(items: readonly T[], r: Rng): T[][] {
  const out: T[][] = [];
  for (let k = 0; k < items.length; ) {
    const n = 1 + Math.floor(r() * 12);
    out.push(items.slice(k, k + n));
    k += n;
  }
  return out;
}

const ROWS = Array.from({ length: 600 }, (_, k) => randomRow(rng(1000 + k), k));
const FILTERS = 400;

/** Runs `mightMatch` over groups and filters; fails on any wrong skip; returns how often non-matching groups were skipped. */
function checkNeverWrong<G>(name: string, seed: number, groupsOf: (r: Rng) => G[], rowsOf: (g: G) => readonly Row[], mightMatch: (e: BoundExpr, g: G) => boolean): number {
  const r = rng(seed);
  const all = groupsOf(r);
  let skippable = 0;
  let skipped = 0;
  for (let n = 0; n < FILTERS; n++) {
    const text = randomFilter(r, ROWS);
    const e = f(text);
    for (const g of all) {
      const any = matches(e, rowsOf(g));
      const might = mightMatch(e, g);
      if (any && !might) {
        const rows = rowsOf(g).map((row) => Object.fromEntries([...row].map(([k, v]) => [k, v instanceof Uint8Array ? [...v] : typeof v === 'bigint' ? `${v}n` : String(v)])));
        expect.fail(`${name} skipped a group with a matching row: ${text}\n${JSON.stringify(rows)}`);
      }
      if (!any) {
        skippable++;
        if (!might) skipped++;
      }
    }
  }
  return skipped / skippable;
}

describe('rowsMightMatch', () => {
  it('never skips a file holding a matching row, and skips many that hold none', () => {
    const rate = checkNeverWrong('rowsMightMatch', 1, (r) => groups(ROWS, r).map((rows) => ({ rows, metrics: fileMetrics(rows, r) })), (g) => g.rows, (e, g) => rowsMightMatch(e, g.metrics));
    expect(rate).toBeGreaterThan(0.3);
  });

  it('prunes by bounds, counts and NaN counts', () => {
    const m = (over: Partial<FileMetrics>): FileMetrics => ({ recordCount: 10, valueCounts: new Map([[2, 10], [4, 10]]), nullCounts: new Map([[2, 0], [4, 0]]), nanCounts: new Map([[4, 0]]), lowerBounds: new Map<number, LiteralValue>([[2, 10], [4, -1.5]]), upperBounds: new Map<number, LiteralValue>([[2, 20], [4, 2.5]]), ...over });
    const base = m({});
    const cases: [string, boolean][] = [
      ['i < 10', false], ['i <= 10', true], ['i > 20', false], ['i >= 20', true], ['i = 21', false], ['i = 15', true],
      ['i IN (1, 30)', false], ['i IN (1, 15)', true], ['i <> 15', true], ['i IS NULL', false], ['i IS NOT NULL', true],
      ['NOT (i >= 10)', false], ['NOT (i > 12)', true], ['i < 10 OR dbl > 3', false], ['i < 10 OR dbl > 2', true],
      ['dbl IS NAN', false], ['dbl IS NOT NAN', true], ['NOT (dbl < 3)', false], ['l = 1', true],
    ];
    for (const [text, want] of cases) expect(rowsMightMatch(f(text), base), text).toBe(want);
    expect(rowsMightMatch(f('i = 15'), m({ recordCount: 0 }))).toBe(false);
    expect(rowsMightMatch(f('i = 99'), m({ lowerBounds: new Map(), upperBounds: new Map() }))).toBe(true);
    expect(rowsMightMatch(f('NOT (dbl < 3)'), m({ nanCounts: new Map() }))).toBe(true);
    // Only nulls: nothing compares, IS NULL might.
    const nulls = m({ nullCounts: new Map([[2, 10]]), lowerBounds: new Map(), upperBounds: new Map() });
    expect(rowsMightMatch(f('i <> 3'), nulls)).toBe(false);
    expect(rowsMightMatch(f('i IS NULL'), nulls)).toBe(true);
    expect(rowsMightMatch(f('i IS NOT NULL'), nulls)).toBe(false);
    // Only NaN: `<>` holds for NaN, comparisons do not.
    const nans = m({ nanCounts: new Map([[4, 10]]), lowerBounds: new Map(), upperBounds: new Map() });
    expect(rowsMightMatch(f('dbl > 0'), nans)).toBe(false);
    expect(rowsMightMatch(f('dbl <> 0'), nans)).toBe(true);
    expect(rowsMightMatch(f('dbl IS NOT NAN'), nans)).toBe(false);
    // One value only: `<>` that value cannot hold.
    const one = m({ lowerBounds: new Map([[2, 7]]), upperBounds: new Map([[2, 7]]) });
    expect(rowsMightMatch(f('i <> 7'), one)).toBe(false);
    expect(rowsMightMatch(f('i NOT IN (6, 7)'), one)).toBe(false);
    expect(rowsMightMatch(f('i <> 8'), one)).toBe(true);
  });

  it('orders strings by code point (UTF-8 bytes), not UTF-16 units', () => {
    const strings = (lo: string, hi: string): FileMetrics => ({ recordCount: 3, lowerBounds: new Map([[6, lo]]), upperBounds: new Map([[6, hi]]) });
    expect(rowsMightMatch(f("s = '😀'"), strings('a', 'z'))).toBe(false);
    expect(rowsMightMatch(f("s = '😀'"), strings('a', '\uffff'))).toBe(false);
    expect(rowsMightMatch(f("s >= '\uffff'"), strings('a', '😀'))).toBe(true);
    expect(rowsMightMatch(f("s < '😀'"), strings('\uffff', '\uffff'))).toBe(true);
    // A truncated upper bound ("ab" + 1 = "ac") still bounds "ab…" values.
    expect(rowsMightMatch(f("s > 'abzzzz'"), strings('aa', 'ac'))).toBe(true);
    expect(rowsMightMatch(f("s >= 'ac'"), strings('aa', 'ab'))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// Partitions

const SPECS: PartitionField[][] = [
  [{ 'source-id': 8, 'field-id': 1000, name: 'ts_day', transform: 'day' }],
  [
    { 'source-id': 6, 'field-id': 1000, name: 's_trunc', transform: 'truncate[2]' },
    { 'source-id': 3, 'field-id': 1001, name: 'l_bucket', transform: 'bucket[4]' },
  ],
  [{ 'source-id': 2, 'field-id': 1000, name: 'i', transform: 'identity' }],
  [
    { 'source-id': 8, 'field-id': 1000, name: 'ts_hour', transform: 'hour' },
    { 'source-id': 8, 'field-id': 1001, name: 'ts', transform: 'identity' },
    { 'source-id': 7, 'field-id': 1002, name: 'd_month', transform: 'month' },
    { 'source-id': 9, 'field-id': 1003, name: 'lts_year', transform: 'year' },
    { 'source-id': 10, 'field-id': 1004, name: 'dec_trunc', transform: 'truncate[100]' },
  ],
  [
    { 'source-id': 4, 'field-id': 1000, name: 'dbl', transform: 'identity' },
    { 'source-id': 11, 'field-id': 1001, name: 'flag', transform: 'identity' },
    { 'source-id': 12, 'field-id': 1002, name: 'bin_trunc', transform: 'truncate[1]' },
    { 'source-id': 14, 'field-id': 1003, name: 'x_bucket', transform: 'bucket[3]' },
    { 'source-id': 6, 'field-id': 1004, name: 's_void', transform: 'void' },
    { 'source-id': 5, 'field-id': 1005, name: 'f_future', transform: 'zorder[2]' },
  ],
  [
    { 'source-id': 5, 'field-id': 1000, name: 'f', transform: 'identity' },
    { 'source-id': 7, 'field-id': 1001, name: 'd_year', transform: 'year' },
    { 'source-id': 7, 'field-id': 1002, name: 'd_day', transform: 'day' },
  ],
];

function tupleOf(spec: PartitionField[], row: Row): PartitionTuple {
  const out: PartitionTuple = {};
  for (const pf of spec) {
    if (!tryParseTransform(pf.transform)) continue; // a transform this reader does not know leaves no value it can read
    out[pf.name] = applyTransform(pf.transform, typeOf.get(pf['source-id'])!, row.get(pf['source-id']) ?? null);
  }
  return out;
}

const valueKey = (v: unknown) => (v instanceof Uint8Array ? `b${[...v].join('.')}` : typeof v === 'string' ? JSON.stringify(v) : `${typeof v}:${String(v)}`);
const tupleKey = (t: PartitionTuple) => Object.values(t).map(valueKey).join('|');

interface Partition {
  spec: PartitionField[];
  tuple: PartitionTuple;
  rows: Row[];
}

function partitions(spec: PartitionField[]): Partition[] {
  const byKey = new Map<string, Partition>();
  for (const row of ROWS) {
    const tuple = tupleOf(spec, row);
    const k = tupleKey(tuple);
    if (!byKey.has(k)) byKey.set(k, { spec, tuple, rows: [] });
    byKey.get(k)!.rows.push(row);
  }
  return [...byKey.values()];
}

/** Manifest-list summaries of some partitions, through their binary form and back. */
function summaries(spec: PartitionField[], parts: readonly Partition[], r: Rng): (PartitionFieldSummary | undefined)[] {
  const raw: FieldSummary[] = spec.map((pf) => {
    const known = tryParseTransform(pf.transform);
    const type = known ? transformResultType(pf.transform, typeOf.get(pf['source-id'])!) : 'int';
    const values = parts.map((p) => (p.tuple[pf.name] ?? null) as LiteralValue);
    const { min, max } = minMax(type, values);
    const s: FieldSummary = { 'contains-null': values.some((v) => v === null) };
    if (r() < 0.7) s['contains-nan'] = values.some(isNaNValue);
    if (min !== undefined) s['lower-bound'] = toBinary(type, min);
    if (max !== undefined) s['upper-bound'] = toBinary(type, max);
    return s;
  });
  return decodeFieldSummaries(spec, schema, raw)!;
}

describe('partitionMightMatch', () => {
  for (const [n, spec] of SPECS.entries()) {
    it(`never skips a partition holding a matching row (spec ${n}: ${spec.map((p) => p.transform).join(', ')})`, () => {
      const rate = checkNeverWrong('partitionMightMatch', 10 + n, () => partitions(spec), (p) => p.rows, (e, p) => partitionMightMatch(e, spec, p.tuple));
      if (n < 4) expect(rate).toBeGreaterThan(0.05);
    });
  }

  it('projects through each transform and prunes', () => {
    const day = SPECS[0];
    const tuple = { ts_day: 19782 }; // 2024-02-29
    expect(partitionMightMatch(f("ts >= '2024-03-01'"), day, tuple)).toBe(false);
    expect(partitionMightMatch(f("ts > '2024-02-29T23:59:59.999999Z'"), day, tuple)).toBe(false);
    expect(partitionMightMatch(f("ts >= '2024-02-29T23:59:59.999999Z'"), day, tuple)).toBe(true);
    expect(partitionMightMatch(f("ts = '2024-02-29T10:00:00+05:00'"), day, tuple)).toBe(true);
    expect(partitionMightMatch(f("ts < '2024-02-29'"), day, tuple)).toBe(false);
    expect(partitionMightMatch(f('ts IS NULL'), day, tuple)).toBe(false);
    expect(partitionMightMatch(f('ts IS NULL'), day, { ts_day: null })).toBe(true);
    expect(partitionMightMatch(f("ts > '2000-01-01'"), day, { ts_day: null })).toBe(false);
    expect(partitionMightMatch(f("NOT (ts < '2024-02-29')"), day, tuple)).toBe(true);

    const sb = SPECS[1];
    const b5 = applyTransform('bucket[4]', 'long', 5n) as number;
    expect(partitionMightMatch(f('l = 5'), sb, { s_trunc: 'ab', l_bucket: b5 })).toBe(true);
    expect(partitionMightMatch(f('l = 5'), sb, { s_trunc: 'ab', l_bucket: (b5 + 1) % 4 })).toBe(false);
    expect(partitionMightMatch(f('l > 5'), sb, { s_trunc: 'ab', l_bucket: (b5 + 1) % 4 })).toBe(true);
    expect(partitionMightMatch(f("s = 'abc'"), sb, { s_trunc: 'ab', l_bucket: 0 })).toBe(true);
    expect(partitionMightMatch(f("s = 'acb'"), sb, { s_trunc: 'ab', l_bucket: 0 })).toBe(false);
    expect(partitionMightMatch(f("s IN ('x', 'abz')"), sb, { s_trunc: 'ab', l_bucket: 0 })).toBe(true);
    expect(partitionMightMatch(f("s < 'aa'"), sb, { s_trunc: 'ab', l_bucket: 0 })).toBe(false);
    expect(partitionMightMatch(f("s < 'ab'"), sb, { s_trunc: 'ab', l_bucket: 0 })).toBe(true); // inclusive, not tight
    // A value missing from the tuple never prunes.
    expect(partitionMightMatch(f("s = 'zz'"), sb, { l_bucket: 0 })).toBe(true);
  });
});

describe('manifestMightMatch', () => {
  for (const [n, spec] of SPECS.entries()) {
    it(`never skips a manifest listing a matching partition (spec ${n})`, () => {
      const rate = checkNeverWrong(
        'manifestMightMatch',
        20 + n,
        (r) => {
          const parts = partitions(spec);
          // Manifests of neighbouring partitions (in tuple order) and of random ones.
          parts.sort((a, b) => tupleKey(a.tuple).localeCompare(tupleKey(b.tuple)));
          return groups(parts, r).map((ps) => ({ rows: ps.flatMap((p) => p.rows), summaries: summaries(spec, ps, r) }));
        },
        (m) => m.rows,
        (e, m) => manifestMightMatch(e, spec, m.summaries),
      );
      if (n < 3) expect(rate).toBeGreaterThan(0.05);
    });
  }

  it('reads null and NaN flags and bounds', () => {
    const spec: PartitionField[] = [{ 'source-id': 4, 'field-id': 1000, name: 'dbl', transform: 'identity' }];
    const s = (x: PartitionFieldSummary) => [x];
    expect(manifestMightMatch(f('dbl > 5'), spec, s({ containsNull: false, containsNaN: false, lower: 1, upper: 5 }))).toBe(false);
    expect(manifestMightMatch(f('dbl >= 5'), spec, s({ containsNull: false, containsNaN: false, lower: 1, upper: 5 }))).toBe(true);
    expect(manifestMightMatch(f('dbl IS NULL'), spec, s({ containsNull: false, lower: 1, upper: 5 }))).toBe(false);
    expect(manifestMightMatch(f('dbl IS NAN'), spec, s({ containsNull: false, containsNaN: false, lower: 1, upper: 5 }))).toBe(false);
    expect(manifestMightMatch(f('dbl IS NAN'), spec, s({ containsNull: false, lower: 1, upper: 5 }))).toBe(true);
    // No bounds with nulls: only null (or NaN) partitions.
    expect(manifestMightMatch(f('dbl = 1'), spec, s({ containsNull: true }))).toBe(false);
    expect(manifestMightMatch(f('dbl IS NOT NULL'), spec, s({ containsNull: true, containsNaN: false }))).toBe(false);
    expect(manifestMightMatch(f('dbl IS NOT NULL'), spec, s({ containsNull: true }))).toBe(true);
    expect(manifestMightMatch(f('dbl <> 1'), spec, s({ containsNull: false, containsNaN: true }))).toBe(true);
    expect(manifestMightMatch(f('dbl IN (0, 6)'), spec, s({ containsNull: false, containsNaN: false, lower: 1, upper: 5 }))).toBe(false);
    expect(manifestMightMatch(f('dbl = 1'), spec, undefined)).toBe(true);
    expect(manifestMightMatch(f('dbl = 1'), spec, [undefined])).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------
// Delta

const physicalNames = new Map<number, string>(columns.map((c) => [c.id, `col-${c.id}`]));
physicalNames.set(13, 'col-13');
const pathOf = (id: number) => (id === 14 ? ['col-13', 'col-14'] : physicalNames.has(id) ? [physicalNames.get(id)!] : undefined);

/** Stats as Spark writes them: timestamps cut to milliseconds, strings cut to 3 characters. */
function sparkStats(rows: readonly Row[]): string {
  const min: Record<string, unknown> = {};
  const max: Record<string, unknown> = {};
  const nulls: Record<string, unknown> = {};
  const floorMs = (v: bigint) => (v >= 0n ? v / 1000n : -((-v + 999n) / 1000n)) * 1000n;
  for (const c of columns) {
    const values = rows.map((row) => row.get(c.id) ?? null);
    const target = (o: Record<string, unknown>) => (c.id === 14 ? ((o['col-13'] ??= {}) as Record<string, unknown>) : o);
    target(nulls)[pathOf(c.id)!.at(-1)!] = values.filter((v) => v === null).length;
    const { min: lo, max: hi } = minMax(c.type, values);
    if (lo === undefined || hi === undefined) continue;
    const put = (o: Record<string, unknown>, v: unknown) => (target(o)[pathOf(c.id)!.at(-1)!] = v);
    switch (c.type) {
      case 'string':
        put(min, Array.from(lo as string).slice(0, 3).join(''));
        put(max, Array.from(hi as string).slice(0, 3).join(''));
        break;
      case 'timestamp':
      case 'timestamptz': {
        const text = (v: bigint) => formatTimestamp(floorMs(v)).slice(0, 23) + (c.type === 'timestamptz' ? 'Z' : '');
        put(min, text(lo as bigint));
        put(max, text(hi as bigint));
        break;
      }
      case 'double':
      case 'float':
        if (values.some(isNaNValue)) break; // Spark's max is NaN, which JSON cannot hold
        if (Number.isFinite(lo) && Number.isFinite(hi)) [put(min, lo), put(max, hi)];
        break;
      case 'date':
        put(min, formatDate(lo as number));
        put(max, formatDate(hi as number));
        break;
      case 'decimal(9, 2)':
        put(min, Number(lo));
        put(max, Number(hi));
        break;
      case 'int':
      case 'long':
        put(min, lo);
        put(max, hi);
        break;
    }
  }
  return stringifyJson({ numRecords: rows.length, minValues: min, maxValues: max, nullCount: nulls });
}

function ourStats(rows: readonly Row[], r: Rng): string {
  const m = binaryMetrics(rows, r);
  return deltaStats({ 'record-count': rows.length, 'null-value-counts': m.nullCounts, 'lower-bounds': m.lower, 'upper-bounds': m.upper }, schema, physicalNames);
}

/** Delta files: rows split by the identity partition column `i`, then into files. */
function deltaFiles(r: Rng, statsOf: (rows: readonly Row[], r: Rng) => string) {
  const byI = new Map<string, Row[]>();
  for (const row of ROWS) {
    const k = String(row.get(2));
    if (!byI.has(k)) byI.set(k, []);
    byI.get(k)!.push(row);
  }
  return [...byI.values()].flatMap((rows) =>
    groups(rows, r).map((g) => ({ rows: g, stats: parseStats(statsOf(g, r)), partitionValues: new Map<number, LiteralValue>([[2, g[0].get(2)!]]) })),
  );
}

describe('deltaStatsMightMatch', () => {
  it('never skips a file with a matching row, with the stats this writer produces', () => {
    const rate = checkNeverWrong('deltaStatsMightMatch', 30, (r) => deltaFiles(r, ourStats), (g) => g.rows, (e, g) => deltaStatsMightMatch(e, g.stats, pathOf, g.partitionValues));
    expect(rate).toBeGreaterThan(0.3);
  });

  it('never skips a file with a matching row, with millisecond timestamps and cut strings', () => {
    const rate = checkNeverWrong('deltaStatsMightMatch', 31, (r) => deltaFiles(r, sparkStats), (g) => g.rows, (e, g) => deltaStatsMightMatch(e, g.stats, pathOf, g.partitionValues));
    expect(rate).toBeGreaterThan(0.3);
  });

  it('widens millisecond maxima, reads cut strings as prefixes, uses partition values exactly', () => {
    const stats = parseStats(
      JSON.stringify({
        numRecords: 4,
        minValues: { 'col-8': '2024-01-01T00:00:00.000Z', 'col-6': 'abc', 'col-13': { 'col-14': 3 } },
        maxValues: { 'col-8': '2024-01-01T00:00:00.000Z', 'col-6': 'abc', 'col-13': { 'col-14': 9 } },
        nullCount: { 'col-8': 0, 'col-6': 0, 'col-13': { 'col-14': 1 }, 'col-3': 4 },
      }),
    );
    const might = (text: string, pv?: Map<number, LiteralValue>) => deltaStatsMightMatch(f(text), stats, pathOf, pv);
    expect(might("ts >= '2024-01-01T00:00:00.000999Z'")).toBe(true);
    expect(might("ts >= '2024-01-01T00:00:00.001Z'")).toBe(false);
    expect(might("ts < '2024-01-01T00:00:00Z'")).toBe(true); // the minimum may have been rounded
    expect(might("ts < '2023-12-31T23:59:59.999Z'")).toBe(false);
    expect(might("s > 'abc'")).toBe(true);
    expect(might("s >= 'abczzz'")).toBe(true);
    expect(might("s > 'abd'")).toBe(false);
    expect(might("s = 'abb'")).toBe(false);
    expect(might("s <> 'abc'")).toBe(true);
    expect(might('st.x > 9')).toBe(false);
    expect(might('st.x IS NULL')).toBe(true);
    expect(might('l IS NOT NULL')).toBe(false);
    expect(might('l IS NULL')).toBe(true);
    expect(might('i = 5', new Map([[2, 5]]))).toBe(true);
    expect(might('i = 5', new Map([[2, 6]]))).toBe(false);
    expect(might('i = 5', new Map([[2, null]]))).toBe(false);
    expect(might('i IS NULL', new Map([[2, null]]))).toBe(true);
    expect(deltaStatsMightMatch(f('i = 5'), parseStats('{"numRecords":0}'), pathOf)).toBe(false);
    expect(deltaStatsMightMatch(f('i = 5'), undefined, pathOf)).toBe(true);
  });
});
