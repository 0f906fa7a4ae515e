import { describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { partitionKeys } from '../../src/engine/partition-keys.ts';
import { hashLong } from '../../src/format/iceberg/murmur3.ts';
import type { PartitionSpec, Schema } from '../../src/format/iceberg/types.ts';

const fx = duckdbFixture();

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'l', required: false, type: 'long' },
    { id: 2, name: 'i', required: false, type: 'int' },
    { id: 3, name: 'd', required: false, type: 'date' },
    { id: 4, name: 'ts', required: false, type: 'timestamptz' },
  ],
};

const spec = (n: number): PartitionSpec => ({
  'spec-id': 0,
  fields: [
    { 'field-id': 1000, 'source-id': 1, name: 'l_bucket', transform: `bucket[${n}]` },
    { 'field-id': 1001, 'source-id': 2, name: 'i_bucket', transform: `bucket[${n}]` },
    { 'field-id': 1002, 'source-id': 3, name: 'd_bucket', transform: `bucket[${n}]` },
    { 'field-id': 1003, 'source-id': 4, name: 'ts_bucket', transform: `bucket[${n}]` },
  ],
});

const bucket = (v: bigint, n: number) => (hashLong(v) & 0x7fffffff) % n;

describe('bucket keys of integers, dates and timestamps', () => {
  // Run without registerPartitionFunctions: the engine computes these buckets on its own.
  it('match the spec hash (Appendix B) at the edges of each type and for many values', async () => {
    const longs = [0n, 1n, -1n, 34n, 2n ** 31n - 1n, -(2n ** 31n), 2n ** 32n, 2n ** 63n - 1n, -(2n ** 63n), 1234567890123456789n, -987654321n];
    for (let i = 0; i < 200; i++) longs.push(BigInt(i) * 48_271n ** 3n * (i % 2 ? -1n : 1n));
    const ints = [0, 1, -1, 34, 2 ** 31 - 1, -(2 ** 31), 123456, -7];
    const days = [0, 1, -1, 17_000, -719_162, 2_932_896];
    const micros = [0n, 1n, -1n, 1_735_689_600_123_456n, -62_135_596_800_000_000n];
    const rows = Math.max(longs.length, ints.length, days.length, micros.length);
    const at = <T>(xs: T[], r: number) => (r < xs.length ? xs[r]! : null);
    const values = Array.from({ length: rows }, (_, r) => {
      const [l, i, d, ts] = [at(longs, r), at(ints, r), at(days, r), at(micros, r)];
      return `((${l ?? 'NULL'})::BIGINT, (${i ?? 'NULL'})::INTEGER, ${d === null ? 'NULL::DATE' : `DATE '1970-01-01' + ${d}`}, ${ts === null ? 'NULL::TIMESTAMPTZ' : `make_timestamptz(${ts})`})`;
    });
    for (const n of [16, 7, 1000]) {
      const keys = partitionKeys(spec(n), schema, new Map());
      const got = await fx.session.all(`SELECT ${keys.map((k) => `${k.sql} AS ${k.alias}`).join(', ')} FROM (VALUES ${values.join(', ')}) AS t(l, i, d, ts)`);
      got.forEach((row, r) => {
        const expected = [at(longs, r), at(ints, r), at(days, r), at(micros, r)].map((v) => (v === null ? null : bucket(BigInt(v), n)));
        expect(keys.map((k) => (row[k.alias] === null ? null : Number(row[k.alias]))), `row ${r}, bucket[${n}]`).toEqual(expected);
      });
    }
  });
});
