import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StructType } from '../../src/index.ts';
import { errorOf } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const schema: StructType = {
  type: 'struct',
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'n', required: false, type: 'int' },
    { id: 3, name: 'big', required: false, type: 'long' },
  ],
};

describe('truncate partitions at the ends of int and long', () => {
  const fx = lakehouseFixture();
  // NDJSON text keeps longs exact, which JavaScript numbers would not.
  const file = (name: string, lines: string[]) => {
    const path = join(fx.warehouse, name);
    writeFileSync(path, lines.join('\n') + '\n');
    return { path };
  };

  it('writes the extremes that fit, prunes them right, and refuses the ones whose truncation overflows, naming column and value', async () => {
    const t = fx.lake.table('edge.trunc');
    const good = [
      '{"id": 1, "n": -2147483640, "big": -9223372036854775800}',
      '{"id": 2, "n": 2147483647, "big": 9223372036854775807}',
      '{"id": 3, "n": -5, "big": -5}',
      '{"id": 4, "n": 0, "big": 0}',
      '{"id": 5, "n": null, "big": null}',
    ];
    await t.append(file('good.ndjson', good), { schema, partition: 'truncate(10, n), truncate(10, big)' });
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = (await t.read({ format })).sort((a, b) => Number(a.id) - Number(b.id));
      expect(rows.map((r) => [Number(r.id), r.n, r.big === null ? null : String(r.big)]), format).toEqual([
        [1, -2147483640, '-9223372036854775800'],
        [2, 2147483647, '9223372036854775807'],
        [3, -5, '-5'],
        [4, 0, '0'],
        [5, null, null],
      ]);
      for (const [where, ids] of [
        ['n < 0', [1, 3]],
        ['n >= 2147483640', [2]],
        ['n = -2147483640', [1]],
        ['big < -9223372036854775000', [1]],
        ['big > 9223372036854775000', [2]],
      ] as const) {
        const got = (await t.read({ format, where })).map((r) => Number(r.id)).sort((a, b) => a - b);
        expect(got, `${format}: ${where}`).toEqual(ids);
      }
    }
    const m = await t.metadata();
    const snapshots = m.snapshots!.length;

    const intError = await errorOf(t.append(file('min-int.ndjson', ['{"id": 6, "n": 1, "big": 1}', '{"id": 7, "n": -2147483648, "big": 1}']), { schema }));
    expect(intError.kind).toBe('invalid-input');
    expect(intError.message).toMatch(
      /^input \S+: partition n_trunc: column n: truncate\[10\] of int -2147483648: its truncation, -2147483650, would be below the smallest int \(-2147483648\); Iceberg Java would wrap it into the largest partition, where range filters never find it$/,
    );
    const longError = await errorOf(t.append(file('min-long.ndjson', ['{"id": 8, "n": 1, "big": -9223372036854775808}']), { schema }));
    expect(longError.message).toMatch(/: partition big_trunc: column big: truncate\[10\] of long -9223372036854775808: its truncation, -9223372036854775810, would be below the smallest long/);
    // Nothing was committed.
    expect((await t.metadata()).snapshots!.length).toBe(snapshots);
    expect((await t.read({ format: 'delta' })).length).toBe(5);
  });
});
