import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorOf, listFiles } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

describe('null and the string "null" as partition values', () => {
  const fx = lakehouseFixture();
  const regions = [null, 'null', 'NULL', '__HIVE_DEFAULT_PARTITION__', 'eu'];
  const rows = Array.from({ length: 50 }, (_, i) => ({ id: i, region: regions[i % regions.length] }));
  const idsWhere = (f: (r: (typeof rows)[number]) => boolean) => rows.filter(f).map((r) => r.id);

  it('land in different folders, keep null as null in both formats, and prune each on its own', async () => {
    const t = fx.lake.table('nulls.orders');
    await t.append(rows, { partition: 'region' });
    const dir = join(fx.warehouse, 'nulls', 'orders');
    expect(readdirSync(join(dir, 'data')).sort()).toEqual([
      'region=%5F_HIVE_DEFAULT_PARTITION__',
      'region=NULL',
      'region=__HIVE_DEFAULT_PARTITION__',
      'region=eu',
      'region=null',
    ]);

    // Delta: partitionValues null for null, the text itself for every string (paths are URI-encoded).
    const adds = readFileSync(join(dir, '_delta_log', '00000000000000000001.json'), 'utf8')
      .split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((a) => a.add).map((a) => a.add);
    const byFolder = Object.fromEntries(adds.map((a) => [decodeURIComponent(a.path).split('/')[1], Object.values(a.partitionValues)[0]]));
    expect(byFolder).toEqual({
      'region=__HIVE_DEFAULT_PARTITION__': null,
      'region=null': 'null',
      'region=NULL': 'NULL',
      'region=%5F_HIVE_DEFAULT_PARTITION__': '__HIVE_DEFAULT_PARTITION__',
      'region=eu': 'eu',
    });

    for (const format of ['iceberg', 'delta'] as const) {
      const all = await t.read({ format });
      expect(all.map((r) => [r.id, r.region]).sort((a, b) => Number(a[0]) - Number(b[0])), format).toEqual(rows.map((r) => [r.id, r.region]));
      for (const [where, expected] of [
        ['region IS NULL', idsWhere((r) => r.region === null)],
        ["region = 'null'", idsWhere((r) => r.region === 'null')],
        ["region = '__HIVE_DEFAULT_PARTITION__'", idsWhere((r) => r.region === '__HIVE_DEFAULT_PARTITION__')],
        ['region IS NOT NULL', idsWhere((r) => r.region !== null)],
      ] as const) {
        const plan = await t.plan({ format, where });
        const got = (await t.read({ format, where })).map((r) => Number(r.id)).sort((a, b) => a - b);
        expect(got, `${format}: ${where}`).toEqual(expected);
        expect(plan.task.files.length, `${format}: ${where}`).toBe(where === 'region IS NOT NULL' ? 4 : 1);
      }
    }
  });

  it('an empty string in an identity partition of a table that keeps Delta is refused, and the table is left as it was', async () => {
    const t = fx.lake.table('nulls.empties');
    await t.append([{ id: 1, region: 'eu' }], { partition: 'region' });
    const dir = join(fx.warehouse, 'nulls', 'empties');
    const before = listFiles(dir);
    const e = await errorOf(t.append([{ id: 2, region: '' }, { id: 3, region: 'us' }]));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toMatch(/^partition region: a row has an empty string in identity partition column region; Delta reads it back as null/);
    expect(listFiles(dir)).toEqual(before);
    expect((await t.read()).map((r) => r.id)).toEqual([1]);
  });
});
