import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';

/**
 * An empty filter or partition spec is a mistake (an unset shell variable, a lost quote), never
 * "every row" or "unpartitioned": the library refuses it before anything is read or written.
 */
describe('empty filters and partition specs', () => {
  const tmp = tempDir();
  let lake: Lakehouse;
  const tableDir = join(tmp.path, 'wh', 'e', 't');

  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh') });
    await lake.table('e.t').append([{ id: 1, region: 'us' }, { id: 2, region: 'eu' }], { partition: 'region' });
  });
  afterAll(async () => {
    await lake.close();
    tmp.cleanup();
  });

  const emptyFilter = 'filter: the filter is empty; expected a condition such as "id = 1"';
  const emptySpec = 'partition spec: the partition spec is empty; expected fields such as "day(ts), region"';

  it('delete, merge --delete-when and read --where refuse an empty filter', async () => {
    const before = listFiles(tableDir);
    for (const where of ['', '  ']) {
      const d = await errorOf(lake.table('e.t').delete(where));
      expect([d.kind, d.message]).toEqual(['invalid-input', emptyFilter]);
      const m = await errorOf(lake.table('e.t').merge([{ id: 1, region: 'us' }], { keys: ['id'], deleteWhen: where }));
      // The merge names the option and the input's columns around the parser's message.
      expect(m.kind).toBe('invalid-input');
      expect(m.message).toBe(`merge: --delete-when ${JSON.stringify(where)}: ${emptyFilter} (the input's columns: id, region)`);
      const r = await errorOf(lake.table('e.t').read({ where }));
      expect([r.kind, r.message]).toEqual(['invalid-input', emptyFilter]);
    }
    expect(listFiles(tableDir)).toEqual(before);
    expect(await lake.table('e.t').read()).toHaveLength(2);
  });

  it('a write or create refuses an empty partition spec instead of dropping the partitioning', async () => {
    const before = listFiles(tableDir);
    const w = await errorOf(lake.table('e.t').append([{ id: 3, region: 'us' }], { partition: '' }));
    expect([w.kind, w.message]).toEqual(['invalid-input', emptySpec]);
    expect(listFiles(tableDir)).toEqual(before);
    expect((await lake.table('e.t').describe()).partitionSpec).toBe('region');
    const c = await errorOf(lake.table('e.new').append([{ id: 1 }], { partition: ' ' }));
    expect(c.message).toBe(emptySpec);
    expect(await lake.listTables()).toEqual(['e.t']);
  });
});
