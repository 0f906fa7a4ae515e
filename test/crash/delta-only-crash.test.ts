import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileUri } from '../../src/core/uri.ts';
import { errorOf, tempDir } from '../helpers.ts';
import { ids } from '../both-formats.ts';
import { CrashPoint } from './crash-point.ts';
import { openLake } from './crash-lake.ts';

/**
 * A Delta-only table's first write commits its Delta log, then registers the name; a death in
 * between leaves a log the catalog does not know. A later write by name of a two-format table
 * there would start Iceberg on top of that log, and the formats would disagree: it is refused,
 * and a Delta-only write continues the log.
 */
describe('a Delta-only first write that died before its name was registered', () => {
  const tmp = tempDir('twinlake-delta-only-crash-');
  afterAll(() => tmp.cleanup());

  it('is continued by a Delta-only write and never covered by a two-format table', async () => {
    const w = { warehouse: fileUri(join(tmp.path, 'wh')), dbPath: join(tmp.path, 'catalog.db') };
    const point = new CrashPoint();
    const dying = await openLake(w, point);
    // A clean run finds the call that commits Delta version 0.
    point.arm();
    await dying.lake.table('ns.d').append([{ id: 1 }], { formats: ['delta'] });
    const calls = point.disarm();
    await dying.close();
    const commit = calls.findIndex((c) => c.call === 'putIfAbsent' && c.what.includes('_delta_log/00000000000000000000.json'));
    expect(commit).toBeGreaterThanOrEqual(0);

    // The same write in a fresh warehouse, dying there.
    const w2 = { warehouse: fileUri(join(tmp.path, 'wh2')), dbPath: join(tmp.path, 'catalog2.db') };
    const p2 = new CrashPoint();
    const second = await openLake(w2, p2);
    p2.arm(commit + 1, true);
    await second.lake.table('ns.d').append([{ id: 1 }], { formats: ['delta'] }).catch(() => undefined);
    expect(p2.dead).toBe(true);
    await second.close();

    const { lake, close } = await openLake(w2);
    try {
      const t = lake.table('ns.d');
      expect(await t.exists()).toBe(false);
      const refused = await errorOf(t.append([{ id: 2 }]));
      expect(refused.message).toMatch(/^table ns\.d: its folder \S+ already holds a Delta log \(version 0\) of a table the catalog does not know; write it as a Delta-only table/);
      expect(await t.exists()).toBe(false);
      await t.append([{ id: 2 }], { formats: ['delta'] });
      expect((await t.describe()).formats).toEqual(['delta']);
      expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
    } finally {
      await close();
    }
  }, 120_000);

  it('a dropped two-format table leaves its metadata beside its log: a new table at its name replaces both', async () => {
    const w = { warehouse: fileUri(join(tmp.path, 'wh3')), dbPath: join(tmp.path, 'catalog3.db') };
    const { lake, close } = await openLake(w);
    try {
      await lake.table('ns.t').append([{ id: 1 }, { id: 2 }]);
      await lake.catalog.dropTable({ namespace: ['ns'], name: 't' });
      await lake.table('ns.t').append([{ id: 3 }]);
      expect(ids(await lake.table('ns.t').read({ format: 'iceberg' }))).toEqual([3]);
      expect(ids(await lake.table('ns.t').read({ format: 'delta' }))).toEqual([3]);
      expect(ids(await lake.readPath(join(tmp.path, 'wh3', 'ns', 't'), { format: 'delta' }))).toEqual([3]);
    } finally {
      await close();
    }
  }, 120_000);
});
