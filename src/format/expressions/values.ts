import type { LiteralValue } from '../scan-task.ts';
import { compareUtf8, decimalParams, decimalToUnscaled } from '../iceberg/single-value.ts';
import type { IcebergType } from '../iceberg/types.ts';
import type { BoundExpr, BoundPredicate } from './bind.ts';

/**
 * Value order and row-level truth, the reference semantics every pruning evaluator must agree
 * with: a filter selects a row when it is true; SQL three-valued logic (`null` = unknown); floats
 * compare as IEEE 754 (NaN matches only `<>`, `NOT IN` and `IS NAN`).
 */

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/**
 * Orders two non-null values of one Iceberg type: strings by code point (the order of their UTF-8
 * bytes, as the spec orders string bounds), binary by unsigned bytes, decimals numerically at the
 * type's scale, numbers and bigints numerically (mixed is fine). NaN must be handled by the caller.
 */
export function compareValues(type: IcebergType, a: LiteralValue, b: LiteralValue): number {
  if (typeof a === 'string' && typeof b === 'string') {
    if (type === 'string') return compareUtf8(a, b);
    const dec = typeof type === 'string' ? decimalParams(type) : undefined;
    if (dec) {
      const x = decimalToUnscaled(a, dec.scale);
      const y = decimalToUnscaled(b, dec.scale);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  throw new TypeError(`filter: cannot compare ${typeof a} with ${typeof b} for ${JSON.stringify(type)}`);
}

export function isNaNValue(v: LiteralValue | undefined): boolean {
  return typeof v === 'number' && Number.isNaN(v);
}

/** The truth of one predicate for one value: true, false, or null (unknown). */
export function predicateOnValue(p: BoundPredicate, v: LiteralValue | undefined): boolean | null {
  const missing = v === null || v === undefined;
  if (p.op === 'is-null') return missing;
  if (p.op === 'not-null') return !missing;
  if (missing) return null;
  const nan = isNaNValue(v);
  if (p.op === 'is-nan') return nan;
  if (p.op === 'not-nan') return !nan;
  if (nan) return p.op === 'not-eq' || p.op === 'not-in';
  const cmp = (x: LiteralValue) => compareValues(p.ref.type, v, x);
  switch (p.op) {
    case 'eq': return cmp(p.value!) === 0;
    case 'not-eq': return cmp(p.value!) !== 0;
    case 'lt': return cmp(p.value!) < 0;
    case 'lt-eq': return cmp(p.value!) <= 0;
    case 'gt': return cmp(p.value!) > 0;
    case 'gt-eq': return cmp(p.value!) >= 0;
    case 'in': return p.values!.some((x) => cmp(x) === 0);
    case 'not-in': return !p.values!.some((x) => cmp(x) === 0);
  }
}

/** A row's truth under the filter: true selects the row; false and null (unknown) do not. */
export function evaluateRow(e: BoundExpr, valueOf: (fieldId: number) => LiteralValue | undefined): boolean | null {
  switch (e.kind) {
    case 'true': return true;
    case 'false': return false;
    case 'pred': return predicateOnValue(e, valueOf(e.ref.id));
    case 'not': {
      const r = evaluateRow(e.child, valueOf);
      return r === null ? null : !r;
    }
    case 'and': {
      const l = evaluateRow(e.left, valueOf);
      if (l === false) return false;
      const r = evaluateRow(e.right, valueOf);
      if (r === false) return false;
      return l === null || r === null ? null : true;
    }
    case 'or': {
      const l = evaluateRow(e.left, valueOf);
      if (l === true) return true;
      const r = evaluateRow(e.right, valueOf);
      if (r === true) return true;
      return l === null || r === null ? null : false;
    }
  }
}
