import { describe, expect, test } from 'vitest';
import { deltaStats, deltaStatsGeneric, type DeltaStatsInput } from '../../../src/format/parquet/stats.ts';
import { toBinary } from '../../../src/format/iceberg/single-value.ts';
import type { NestedField, StructType } from '../../../src/format/iceberg/types.ts';
import { parseStats } from '../../../src/format/delta/stats.ts';
import { rng as mulberry32 } from '../expressions/random-filters.ts';

/**
 * The compiled Delta stats encoder (`deltaStats`) against the generic one that builds the objects
 * and stringifies them (`deltaStatsGeneric`): the same text for random bounds of every type
 * (wrong lengths, invalid UTF-8, timestamps far from 1970 and longs past 2^53 included), nested
 * structs, lists and maps, missing counts, and physical names a JS object would reorder.
 */

function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  return { next, int, pick, chance: (p: number) => next() < p, bytes: (n: number) => Uint8Array.from({ length: n }, () => int(0, 255)) };
}
type R = ReturnType<typeof rng>;

const PRIMITIVES = ['boolean', 'int', 'long', 'float', 'double', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'string', 'uuid', 'binary', 'fixed[4]', 'decimal(9,2)', 'decimal(38,5)'];

const NAMES = ['id', 'a b', 'ünï', '"q"', 'x\\y', '\u0001ctl', 'ts', 'n', 'emoji😀', 'name'];
const ODD_NAMES = ['0', '12', '__proto__', '007'];

function struct(r: R, ids: { next: number }, depth: number, odd: boolean): StructType {
  const used = new Set<string>();
  const fields: NestedField[] = [];
  for (let k = r.int(1, 5); k > 0; k--) {
    let name = r.pick(odd && r.chance(0.3) ? ODD_NAMES : NAMES);
    while (used.has(name)) name += '_';
    used.add(name);
    const id = ids.next++;
    const roll = r.next();
    const type =
      depth < 2 && roll < 0.15
        ? struct(r, ids, depth + 1, odd)
        : roll < 0.2
          ? { type: 'list' as const, 'element-id': ids.next++, element: 'long', 'element-required': false }
          : roll < 0.25
            ? { type: 'map' as const, 'key-id': ids.next++, 'value-id': ids.next++, key: 'string', value: 'int', 'value-required': false }
            : r.pick(PRIMITIVES);
    fields.push({ id, name, required: false, type });
  }
  return { type: 'struct', fields };
}

/** A bound of a type in its Iceberg binary form, or noise. */
function bound(r: R, type: string): Uint8Array {
  if (r.chance(0.05)) return r.bytes(r.int(0, 9));
  const micros = () => r.pick([BigInt(r.int(-(2 ** 31), 2 ** 31)) * BigInt(r.int(0, 2 ** 22)), 1704153600000000n + BigInt(r.int(-999, 999)), 2n ** 62n, -(2n ** 62n), 253402300799999999n, -62135596800000000n, 0n, -1n]);
  switch (type) {
    case 'boolean':
      return toBinary(type, r.chance(0.5));
    case 'int':
      return toBinary(type, r.int(-(2 ** 31), 2 ** 31 - 1));
    case 'date':
      return toBinary(type, r.int(-800000, 800000));
    case 'long':
      return toBinary(type, r.pick([BigInt(r.int(-1000, 1000)), 2n ** 53n + 1n, -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), BigInt(r.int(0, 2 ** 31)) * 2n ** 21n]));
    case 'float':
      return toBinary(type, r.pick([Math.fround(r.next() * 1e6 - 5e5), -0, NaN, Infinity]));
    case 'double':
      return toBinary(type, r.pick([(r.next() - 0.5) * 10 ** r.int(-300, 300), -0, NaN, -Infinity]));
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
      return toBinary(type, micros());
    case 'string':
      return r.chance(0.1) ? Uint8Array.from([0xc3, 0x28]) : toBinary(type, Array.from({ length: r.int(0, 20) }, () => r.pick(['a', 'é', '"', '\\', '\n', '中', '😀', 'Z', '\u0000'])).join(''));
    case 'uuid':
    case 'fixed[4]':
    case 'binary':
      return r.bytes(type === 'uuid' ? 16 : 4);
    case 'decimal(9,2)':
      return toBinary(type, `${r.int(-9999999, 9999999)}.${String(r.int(0, 99)).padStart(2, '0')}`);
    default:
      return toBinary(type, `${r.int(-99999999, 99999999)}${r.int(0, 9999999999)}.${String(r.int(0, 99999)).padStart(5, '0')}`);
  }
}

function leaves(s: StructType): { id: number; type: string }[] {
  return s.fields.flatMap((f) => (typeof f.type === 'string' ? [{ id: f.id, type: f.type }] : f.type.type === 'struct' ? leaves(f.type) : []));
}

function metrics(r: R, s: StructType): DeltaStatsInput {
  const lower = new Map<number, Uint8Array>();
  const upper = new Map<number, Uint8Array>();
  const nulls = new Map<number, number>();
  for (const leaf of leaves(s)) {
    if (r.chance(0.8)) lower.set(leaf.id, bound(r, leaf.type));
    if (r.chance(0.8)) upper.set(leaf.id, bound(r, leaf.type));
    if (r.chance(0.8)) nulls.set(leaf.id, r.pick([0, 3, r.int(0, 2 ** 40)]));
  }
  const out: DeltaStatsInput = { 'record-count': r.pick([0, 3, r.int(0, 2 ** 45)]) };
  if (r.chance(0.9)) out['lower-bounds'] = lower;
  if (r.chance(0.9)) out['upper-bounds'] = upper;
  if (r.chance(0.9)) out['null-value-counts'] = nulls;
  return out;
}

describe('compiled Delta stats encoder', () => {
  test('the same stats text as the generic encoder over random schemas and bounds', () => {
    let compared = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const r = rng(seed);
      const schema = struct(r, { next: 1 }, 0, seed % 5 === 0);
      // Physical names differ from the logical ones for some columns (column mapping).
      const physical = new Map(schema.fields.filter(() => r.chance(0.3)).map((f) => [f.id, `col-${f.id}-${r.pick(NAMES)}`] as [number, string]));
      for (let k = 0; k < 20; k++) {
        const m = metrics(r, schema);
        for (const opts of [{}, { tightBounds: false }, { tightBounds: true }]) {
          const fast = deltaStats(m, schema, physical, opts);
          expect(fast, `seed ${seed}`).toBe(deltaStatsGeneric(m, schema, physical, opts));
          compared++;
        }
        // And it is stats a Delta reader parses.
        expect(parseStats(deltaStats(m, schema, physical)).numRecords).toBe(m['record-count']);
      }
    }
    expect(compared).toBe(150 * 20 * 3);
  });

  test('timestamps: milliseconds, the maximum rounded up, over the whole range the fast path takes and past it', () => {
    const schema: StructType = { type: 'struct', fields: [{ id: 1, name: 'ts', required: false, type: 'timestamptz' }, { id: 2, name: 'lt', required: false, type: 'timestamp' }] };
    const at = (micros: bigint) => ({
      'record-count': 1,
      'lower-bounds': new Map([[1, toBinary('timestamptz', micros)], [2, toBinary('timestamp', micros)]]),
      'upper-bounds': new Map([[1, toBinary('timestamptz', micros)], [2, toBinary('timestamp', micros)]]),
    });
    const edge = 2n ** 53n;
    for (const micros of [0n, -1n, 1n, 999n, -999n, 1000n, -1001n, 1704153600000001n, edge - 1n, edge, -edge, -edge - 1n, 253402300799999999n, -62135596800000000n, -62135596800000001n]) {
      expect(deltaStats(at(micros), schema, new Map())).toBe(deltaStatsGeneric(at(micros), schema, new Map()));
    }
    expect(JSON.parse(deltaStats(at(1704153600000001n), schema, new Map())).maxValues).toEqual({ ts: '2024-01-02T00:00:00.001Z', lt: '2024-01-02T00:00:00.001' });
  });
});
