import { existsSync, readFileSync } from 'node:fs';
import { rng } from './expressions/random-filters.ts';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { RoaringBitmap64 } from '../../src/format/roaring.ts';
import { testdata } from '../helpers.ts';

const TWO_32 = 2 ** 32;

function roundTrip(positions: number[]): { back: RoaringBitmap64; bytes: Uint8Array } {
  const bytes = RoaringBitmap64.of(positions).serialize();
  return { back: RoaringBitmap64.deserialize(bytes), bytes };
}

const sortedUnique = (xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);

describe('RoaringBitmap64', () => {
  it('holds an empty set as a zero bucket count', () => {
    const { back, bytes } = roundTrip([]);
    expect([...bytes]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(back.cardinality).toBe(0);
    expect([...back.values()]).toEqual([]);
  });

  it('writes the standard array layout byte for byte (cookie 12346, key/cardinality-1, offsets, sorted u16)', () => {
    const bytes = RoaringBitmap64.of([3, 4, 7, 11, 18, 29]).serialize();
    // 1 bucket; key 0; cookie 12346; 1 container; key 0 card-1 5; offset 16; values.
    const want = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 5, 0, 16, 0, 0, 0, 3, 0, 4, 0, 7, 0, 11, 0, 18, 0, 29, 0];
    expect([...bytes]).toEqual(want);
  });

  it('round-trips array, bitmap and run containers, each chosen where it is smallest', () => {
    const random = rng(7);
    const sparse = Array.from({ length: 300 }, () => Math.floor(random() * 65536)); // container 0: array
    const dense = Array.from({ length: 20000 }, () => 65536 + Math.floor(random() * 65536)); // container 1: bitmap
    const runs = Array.from({ length: 50000 }, (_, i) => 2 * 65536 + 1000 + i); // container 2: one run
    const mixed = [...sparse, ...dense, ...runs];
    const { back, bytes } = roundTrip(mixed);
    expect([...back.values()].map(Number)).toEqual(sortedUnique(mixed));
    const layout = RoaringBitmap64.layout(bytes);
    expect(layout).toHaveLength(1);
    expect(layout[0]!.containers.map((c) => [c.key, c.kind])).toEqual([
      [0, 'array'],
      [1, 'bitmap'],
      [2, 'run'],
    ]);
    expect(layout[0]!.containers[1]!.cardinality).toBe(new Set(dense).size);
    expect(layout[0]!.containers[2]!.cardinality).toBe(50000);
    // A run container makes the cookie 12347 with the container count in its high half.
    expect(new DataView(bytes.buffer).getUint32(12, true)).toBe(12347 | (2 << 16));
  });

  it('writes the offset header with runs once there are 4 or more containers, and reads it back', () => {
    const positions = [0, 1, 2, 3, 65536 * 1 + 5, 65536 * 2 + 9, 65536 * 3, 65536 * 3 + 1, 65536 * 3 + 2, 65536 * 3 + 3, 65536 * 4 + 100];
    const { back, bytes } = roundTrip(positions);
    expect([...back.values()].map(Number)).toEqual(positions);
    const kinds = RoaringBitmap64.layout(bytes)[0]!.containers.map((c) => c.kind);
    expect(kinds).toEqual(['run', 'array', 'array', 'run', 'array']);
    // Corrupting an offset is caught: the reader checks each container starts where it says.
    const bad = bytes.slice();
    const offsetsStart = 12 + 4 + 1 + 4 * 5; // bucket head, cookie, run flags, descriptive header
    bad[offsetsStart] = bad[offsetsStart]! + 2;
    expect(() => RoaringBitmap64.deserialize(bad)).toThrow(/container 0 expected at offset/);
  });

  it('keeps 64-bit positions whose high 32 bits are not 0, in unsigned key order', () => {
    const positions = [5n, BigInt(TWO_32) + 7n, 3n * BigInt(TWO_32), 3n * BigInt(TWO_32) + 65536n, (1n << 62n) + 1n, 0x7fffffff_ffffffffn];
    const b = RoaringBitmap64.of([...positions].reverse());
    const bytes = b.serialize();
    const back = RoaringBitmap64.deserialize(bytes);
    expect([...back.values()]).toEqual(positions);
    expect(RoaringBitmap64.layout(bytes).map((l) => l.key)).toEqual([0, 1, 3, 2 ** 30, 0x7fffffff]);
    expect(back.has(BigInt(TWO_32) + 7n)).toBe(true);
    expect(back.has(7)).toBe(false);
    expect(back.has(TWO_32 + 7)).toBe(true);
    expect(() => b.add(-1)).toThrow(/non-negative/);
    expect(() => b.add(1n << 63n)).toThrow(/2\^63/);
  });

  it('matches a plain set model over random operations', () => {
    const random = rng(42);
    for (let round = 0; round < 30; round++) {
      const model = new Set<number>();
      const b = new RoaringBitmap64();
      const spread = [100, 70000, 5_000_000, 3 * TWO_32][round % 4]!;
      let newlyAdded = 0;
      for (let i = 0; i < 1000; i++) {
        const start = Math.floor(random() * spread);
        const len = random() < 0.05 ? Math.floor(random() * 3000) : 1;
        for (let p = start; p < start + len; p++) {
          if (b.add(p)) newlyAdded++;
          model.add(p);
        }
      }
      expect(newlyAdded).toBe(model.size);
      expect(b.cardinality).toBe(model.size);
      const back = RoaringBitmap64.deserialize(b.serialize());
      expect([...back.values()].map(Number)).toEqual([...model].sort((x, y) => x - y));
      for (let i = 0; i < 200; i++) {
        const p = Math.floor(random() * spread);
        expect(back.has(p)).toBe(model.has(p));
      }
      // Runs cover the set exactly and never touch each other.
      let last = -2n;
      let count = 0n;
      for (const [s, e] of back.ranges()) {
        expect(s > last).toBe(true);
        count += e - s;
        last = e;
      }
      expect(Number(count)).toBe(model.size);
    }
  });

  it('addAll merges two sets', () => {
    const a = RoaringBitmap64.of([1, 5, 100000]);
    a.addAll(RoaringBitmap64.of([5, 6, TWO_32 + 1]));
    expect([...a.values()].map(Number)).toEqual([1, 5, 6, 100000, TWO_32 + 1]);
  });

  it('fails loudly on malformed bytes', () => {
    const good = RoaringBitmap64.of([1, 2, 3, 1000, 70000]).serialize();
    const kind = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return isTwinlakeError(e, 'data-invalid') ? (e as Error).message : `other: ${e}`;
      }
      return 'no error';
    };
    expect(kind(() => RoaringBitmap64.deserialize(good.subarray(0, good.length - 1)))).toMatch(/^roaring: expected 2 more bytes/);
    expect(kind(() => RoaringBitmap64.deserialize(new Uint8Array([...good, 0])))).toMatch(/^roaring: expected \d+ bytes, found/);
    const badCookie = good.slice();
    badCookie[12] = 0x99;
    expect(kind(() => RoaringBitmap64.deserialize(badCookie))).toMatch(/^roaring: expected cookie 12346 or 12347/);
    const negativeKey = good.slice();
    negativeKey[11] = 0x80;
    expect(kind(() => RoaringBitmap64.deserialize(negativeKey))).toMatch(/bucket keys below 2\^31/);
    const unsorted = RoaringBitmap64.of([1, 2]).serialize();
    unsorted[unsorted.length - 2] = 0; // second value 2 → 0, below the first
    expect(kind(() => RoaringBitmap64.deserialize(unsorted))).toMatch(/not strictly ascending/);
  });

  const dvFiles = [
    ['delta-golden/log-replay-dv-key-cases/deletion_vector_d12e7d16-e46d-48c9-8a71-b222c26dfc3b.bin'],
    ['delta-golden/log-replay-dv-key-cases/deletion_vector_37d10da3-70a1-4730-bc58-3b44f9617505.bin'],
    ['delta-golden/log-replay-dv-key-cases/deletion_vector_3d8a467a-2fbd-4d35-8e3a-775894a30576.bin'],
  ];
  it.skipIf(!existsSync(join(testdata, 'delta-golden')))('decodes and re-encodes byte for byte the bitmaps Spark wrote (../shared/testdata)', () => {
    const seen = new Set<string>();
    for (const [rel] of dvFiles) {
      const file = new Uint8Array(readFileSync(join(testdata, rel!)));
      // version byte, big-endian size, magic, bitmap, CRC: the bitmap is bytes [9, 5 + size).
      const size = new DataView(file.buffer).getUint32(1, false);
      const bitmapBytes = file.subarray(9, 5 + size);
      const b = RoaringBitmap64.deserialize(bitmapBytes);
      const positions = [...b.values()].map(Number);
      // The three DELETEs of id 0, 7 and 14 (ids equal positions in its one file).
      expect([[0], [0, 7], [0, 7, 14]].map(String)).toContain(String(positions));
      seen.add(String(positions));
      expect([...b.serialize()]).toEqual([...bitmapBytes]);
    }
    expect(seen.size).toBe(3);
  });
});
