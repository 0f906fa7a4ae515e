import { describe, expect, test } from 'vitest';
import { AvroWriter } from '../../../src/format/iceberg/avro.ts';
import { rng } from '../expressions/random-filters.ts';

/** Avro's zig-zag varint of a long (Avro spec §Binary Encoding), spelled out as the reference. */
function varint(n: bigint): number[] {
  let z = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return out;
}

describe('AvroWriter longs', () => {
  test('bigints, repeated and not, between other values and across buffer growth, are their varints', () => {
    const next = rng(3);
    const pool = [0n, -1n, 2n ** 62n + 12345n, -(2n ** 63n), 2n ** 63n - 1n, 0x3fffffffn, 0x40000000n, -0x40000001n, 7n];
    const w = new AvroWriter(64);
    const expected: number[] = [];
    for (let k = 0; k < 20000; k++) {
      const n = next() < 0.7 ? pool[Math.floor(next() * pool.length)]! : BigInt(Math.floor(next() * 2 ** 31)) * BigInt(Math.floor(next() * 2 ** 31)) * (next() < 0.5 ? -1n : 1n);
      w.bigLong(n);
      expected.push(...varint(n));
      if (next() < 0.2) {
        const x = Math.floor(next() * 2 ** 40) - 2 ** 39;
        w.long(x);
        expected.push(...varint(BigInt(x)));
      }
      if (next() < 0.01) {
        expect([...w.view()]).toEqual(expected);
        w.reset();
        expected.length = 0;
      }
    }
    expect([...w.view()]).toEqual(expected);
  });
});
