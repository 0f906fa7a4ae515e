import { internal } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import { statsValueAt, type DeltaStats } from '../delta/stats.ts';
import { projectInclusive, transformResultType, type PredicateOp as TransformOp } from '../iceberg/transforms.ts';
import type { IcebergType, PartitionField, PartitionSpec, PartitionTuple } from '../iceberg/types.ts';
import { and, or, rewriteNot, type BoundExpr, type BoundPredicate } from './bind.ts';
import { deltaBound, type FileMetrics, type PartitionFieldSummary } from './decode.ts';
import type { PredicateOp } from './parser.ts';
import { compareValues, isNaNValue, predicateOnValue } from './values.ts';

export { evaluateRow } from './values.ts';
export { toDuckDBSql } from './to-duckdb-sql.ts';

/**
 * Pruning evaluators (spec §Scan Planning). Each answers for a group of rows it cannot see — a
 * data file, a partition, a manifest — whether any row might satisfy the filter: `true` means
 * "might match, read it", `false` means "no row can match, skip it". A `false` must never be wrong;
 * a `true` may be. Every evaluator works on the filter with NOTs pushed down (`rewriteNot`), where
 * a leaf that cannot be true for any row makes its AND false and leaves its OR to the other side.
 */

/** What is known about one column (or partition field) across a group of rows. */
interface ColumnFacts {
  mayHaveNull: boolean;
  allNull: boolean;
  mayHaveNaN: boolean;
  /** Every value is null or NaN, so no comparison can hold. */
  allNullOrNaN: boolean;
  /** ≤ every non-null, non-NaN value. */
  lower?: LiteralValue;
  /** ≥ every non-null, non-NaN value; with `upperIsPrefix`, a prefix of such a value. */
  upper?: LiteralValue;
  upperIsPrefix?: boolean;
}

const isFloat = (type: IcebergType) => type === 'float' || type === 'double';

function usableBound(type: IcebergType, v: LiteralValue | undefined): LiteralValue | undefined {
  // NaN bounds (some ORC writers) say nothing; engines disagree on UUID order, so its bounds are unused.
  if (v === null || v === undefined || isNaNValue(v) || type === 'uuid') return undefined;
  return v;
}

function leafMightMatch(p: BoundPredicate, f: ColumnFacts): boolean {
  const type = p.ref.type;
  const cmp = (a: LiteralValue, b: LiteralValue) => compareValues(type, a, b);
  const lower = usableBound(type, f.lower);
  const upper = usableBound(type, f.upper);
  switch (p.op) {
    case 'is-null': return f.mayHaveNull;
    case 'not-null': return !f.allNull;
    case 'is-nan': return f.mayHaveNaN;
    case 'not-nan': return !f.allNullOrNaN;
    case 'not-eq':
    case 'not-in': {
      // Only a column holding one value (and no NaN, which differs from everything) can fail `<>`.
      if (f.allNull) return false;
      if (f.mayHaveNaN || lower === undefined || upper === undefined || f.upperIsPrefix || cmp(lower, upper) !== 0) return true;
      return p.op === 'not-eq' ? cmp(lower, p.value!) !== 0 : !p.values!.some((v) => cmp(lower, v) === 0);
    }
  }
  if (f.allNullOrNaN) return false;
  const allAbove = (lit: LiteralValue) => lower !== undefined && cmp(lower, lit) > 0;
  const allAtOrAbove = (lit: LiteralValue) => lower !== undefined && cmp(lower, lit) >= 0;
  const allBelow = (lit: LiteralValue, orEqual: boolean) => {
    if (upper === undefined) return false;
    if (f.upperIsPrefix) {
      // Every value's prefix is ≤ the cut maximum: below `lit` when the cut sorts before it and
      // is not a prefix of it.
      return typeof upper === 'string' && typeof lit === 'string' && cmp(upper, lit) < 0 && !lit.startsWith(upper);
    }
    return orEqual ? cmp(upper, lit) <= 0 : cmp(upper, lit) < 0;
  };
  switch (p.op) {
    case 'lt': return !allAtOrAbove(p.value!);
    case 'lt-eq': return !allAbove(p.value!);
    case 'gt': return !allBelow(p.value!, true);
    case 'gt-eq': return !allBelow(p.value!, false);
    case 'eq': return !allAbove(p.value!) && !allBelow(p.value!, false);
    case 'in': return p.values!.some((v) => !allAbove(v) && !allBelow(v, false));
  }
}

/** Evaluates a NOT-free filter bottom-up with `leaf` for predicates. */
function visit(e: BoundExpr, leaf: (p: BoundPredicate) => boolean): boolean {
  switch (e.kind) {
    case 'true': return true;
    case 'false': return false;
    case 'pred': return leaf(e);
    case 'and': return visit(e.left, leaf) && visit(e.right, leaf);
    case 'or': return visit(e.left, leaf) || visit(e.right, leaf);
    case 'not': throw internal('filter: NOT left after rewriteNot');
  }
}

const rewritten = new WeakMap<BoundExpr, BoundExpr>();

function notFree(e: BoundExpr): BoundExpr {
  let out = rewritten.get(e);
  if (!out) {
    out = rewriteNot(e);
    rewritten.set(e, out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Iceberg data files: column metrics

function metricFacts(p: BoundPredicate, m: FileMetrics): ColumnFacts {
  const id = p.ref.id;
  const count = (map: Map<number, number> | undefined) => {
    const v = map?.get(id);
    return v === undefined || v === null ? undefined : Number(v);
  };
  const values = count(m.valueCounts);
  const nulls = count(m.nullCounts);
  const nans = count(m.nanCounts);
  const allNull = values !== undefined && nulls !== undefined && values === nulls;
  const allNaN = values !== undefined && nans !== undefined && (nans === values || (nulls !== undefined && nulls + nans === values));
  return {
    mayHaveNull: nulls === undefined || nulls > 0,
    allNull,
    mayHaveNaN: isFloat(p.ref.type) && nans !== 0 && !allNull,
    allNullOrNaN: allNull || allNaN,
    lower: m.lowerBounds?.get(id),
    upper: m.upperBounds?.get(id),
  };
}

/**
 * Whether a data file might hold rows matching the filter, judged by its column metrics (value,
 * null and NaN counts, lower and upper bounds), as Iceberg's inclusive metrics evaluation does.
 * Missing metrics mean "might". String and binary bounds may be truncated; they still bound.
 */
export function rowsMightMatch(bound: BoundExpr, metrics: FileMetrics): boolean {
  if (metrics.recordCount === 0) return false;
  if (metrics.recordCount !== undefined && metrics.recordCount < 0) return true;
  return visit(notFree(bound), (p) => leafMightMatch(p, metricFacts(p, metrics)));
}

// ---------------------------------------------------------------------------------------------
// Partitions: the filter projected through each partition field's transform

const TO_TRANSFORM_OP: Record<PredicateOp, TransformOp> = {
  eq: '=',
  'not-eq': '!=',
  lt: '<',
  'lt-eq': '<=',
  gt: '>',
  'gt-eq': '>=',
  in: 'in',
  'not-in': 'not-in',
  'is-null': 'is-null',
  'not-null': 'not-null',
  'is-nan': 'is-nan',
  'not-nan': 'not-nan',
};
const FROM_TRANSFORM_OP = new Map<string, PredicateOp>(Object.entries(TO_TRANSFORM_OP).map(([k, v]) => [v, k as PredicateOp]));

type SpecLike = PartitionSpec | readonly PartitionField[];
const fieldsOf = (spec: SpecLike): readonly PartitionField[] => (Array.isArray(spec) ? spec : (spec as PartitionSpec).fields);

/**
 * The filter over partition values: each predicate becomes the AND of its inclusive projections
 * through every partition field of its column (e.g. `ts >= X` → `ts_day >= day(X) AND ts_hour >=
 * hour(X)`), or true where no field projects it. A projected predicate's `ref.id` is the partition
 * field's position in the spec.
 */
function projectFilter(e: BoundExpr, fields: readonly PartitionField[]): BoundExpr {
  switch (e.kind) {
    case 'and': return and(projectFilter(e.left, fields), projectFilter(e.right, fields));
    case 'or': return or(projectFilter(e.left, fields), projectFilter(e.right, fields));
    case 'pred': {
      let out: BoundExpr = { kind: 'true' };
      fields.forEach((pf, i) => {
        if (pf['source-id'] !== e.ref.id || typeof e.ref.type !== 'string') return;
        const literal = e.op === 'in' || e.op === 'not-in' ? e.values : e.value;
        const r = projectInclusive(pf.transform, e.ref.type, TO_TRANSFORM_OP[e.op], literal);
        const op = r && FROM_TRANSFORM_OP.get(r.op);
        if (!r || !op) return;
        const ref = { id: i, name: pf.name, type: transformResultType(pf.transform, e.ref.type) };
        out = and(out, { kind: 'pred', op, ref, value: r.value, values: r.values });
      });
      return out;
    }
    default: return e;
  }
}

/** Projections are computed once per filter and spec (the same `fields` array), not per file. */
const projections = new WeakMap<BoundExpr, WeakMap<readonly PartitionField[], BoundExpr>>();

function projected(bound: BoundExpr, fields: readonly PartitionField[]): BoundExpr {
  const e = notFree(bound);
  let bySpec = projections.get(e);
  if (!bySpec) projections.set(e, (bySpec = new WeakMap()));
  let out = bySpec.get(fields);
  if (!out) {
    out = projectFilter(e, fields);
    bySpec.set(fields, out);
  }
  return out;
}

/**
 * Whether a data file with this partition tuple (values keyed by partition field name, in
 * `LiteralValue` form) might hold matching rows. Fields with unknown transforms, void fields and
 * values missing from the tuple never prune.
 */
export function partitionMightMatch(bound: BoundExpr, spec: SpecLike, partition: PartitionTuple): boolean {
  const fields = fieldsOf(spec);
  return visit(projected(bound, fields), (p) => {
    const v = partition[fields[p.ref.id].name];
    return v === undefined || predicateOnValue(p, v as LiteralValue) === true;
  });
}

function summaryFacts(p: BoundPredicate, s: PartitionFieldSummary): ColumnFacts {
  const noBounds = s.lower === undefined || s.lower === null || s.upper === undefined || s.upper === null;
  const nanPossible = isFloat(p.ref.type) && s.containsNaN !== false;
  // spec §Manifest Lists: bounds are null exactly when every value is null or NaN.
  const allNull = noBounds && s.containsNull && !nanPossible;
  return {
    mayHaveNull: s.containsNull,
    allNull,
    mayHaveNaN: nanPossible && !allNull,
    allNullOrNaN: noBounds && (s.containsNull || s.containsNaN === true),
    lower: s.lower,
    upper: s.upper,
  };
}

/**
 * Whether a manifest might list matching files, judged by its partition summaries (one per field
 * of the spec it was written with; undefined entries and a missing list never prune).
 */
export function manifestMightMatch(bound: BoundExpr, spec: SpecLike, summaries: readonly (PartitionFieldSummary | undefined)[] | undefined): boolean {
  if (!summaries) return true;
  const fields = fieldsOf(spec);
  return visit(projected(bound, fields), (p) => {
    const s = summaries[p.ref.id];
    return s === undefined || leafMightMatch(p, summaryFacts(p, s));
  });
}

// ---------------------------------------------------------------------------------------------
// Delta: per-file stats and partition values

function deltaFacts(p: BoundPredicate, stats: DeltaStats, path: readonly string[]): ColumnFacts {
  const raw = statsValueAt(stats.nullCount, path);
  const nulls = typeof raw === 'number' || typeof raw === 'bigint' ? Number(raw) : undefined;
  // With wide bounds (tightBounds false) only 0 and numRecords carry meaning; these are the two used.
  const allNull = stats.numRecords !== undefined && nulls === stats.numRecords;
  const lo = deltaBound(p.ref.type, statsValueAt(stats.minValues, path), 'min');
  const hi = deltaBound(p.ref.type, statsValueAt(stats.maxValues, path), 'max');
  return {
    mayHaveNull: nulls === undefined || nulls > 0,
    allNull,
    mayHaveNaN: isFloat(p.ref.type) && !allNull,
    allNullOrNaN: allNull,
    lower: lo?.value,
    upper: hi?.value,
    upperIsPrefix: hi?.prefix,
  };
}

/**
 * Whether a Delta file might hold matching rows, by its partition values (exact, keyed by field ID)
 * and its `stats` (PROTOCOL.md §Per-file Statistics; keyed by physical names, found through
 * `physicalPathOf`). Timestamp stats are milliseconds and string maxima may be cut; both are read
 * so that they still bound the data.
 */
export function deltaStatsMightMatch(
  bound: BoundExpr,
  stats: DeltaStats | undefined,
  physicalPathOf: (fieldId: number) => readonly string[] | undefined,
  partitionValues?: Map<number, LiteralValue>,
): boolean {
  if (stats?.numRecords === 0) return false;
  return visit(notFree(bound), (p) => {
    if (partitionValues?.has(p.ref.id)) return predicateOnValue(p, partitionValues.get(p.ref.id)) === true;
    const path = stats && physicalPathOf(p.ref.id);
    return !path || leafMightMatch(p, deltaFacts(p, stats!, path));
  });
}
