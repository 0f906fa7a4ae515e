import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileUri } from '../../src/core/uri.ts';
import { tempDir } from '../helpers.ts';
import { CrashPoint } from './crash-point.ts';
import { openLake, restoreImage, saveImage } from './crash-lake.ts';

/**
 * A register that dies once the table's name is in the catalog: the table is either not
 * registered at all or registered with both formats, never left as the other engine's
 * Iceberg-only table (a register that dies cannot undo a registration it made first).
 */
describe('a register that dies after the catalog took the name', () => {
  const tmp = tempDir('twinlake-register-crash-');
  afterAll(() => tmp.cleanup());

  it('leaves the table unregistered or adopted in both formats', async () => {
    const w = { warehouse: fileUri(join(tmp.path, 'wh')), dbPath: join(tmp.path, 'catalog.db') };
    let metadataFile: string;
    {
      const { lake, close } = await openLake(w);
      await lake.table('ext.src').append([{ id: 1 }, { id: 2 }], { formats: ['iceberg'] });
      metadataFile = (await lake.catalog.loadTable({ namespace: ['ext'], name: 'src' })).metadataLocation;
      await lake.catalog.dropTable({ namespace: ['ext'], name: 'src' });
      await close();
    }
    const image = await saveImage(w);
    const count = new CrashPoint();
    const clean = await openLake(w, count);
    count.arm();
    await clean.lake.table('ns.t').register(metadataFile);
    const calls = count.disarm();
    await clean.close();
    const insert = calls.findIndex((c) => c.call === 'sql-write' && /^\s*INSERT INTO iceberg_tables/i.test(c.what));
    expect(insert).toBeGreaterThanOrEqual(0);

    // Dying at each call after the name was registered, before the register returned.
    let adopted = 0;
    for (let k = insert + 2; k <= calls.length; k++) {
      await restoreImage(w, image);
      const point = new CrashPoint();
      const dying = await openLake(w, point);
      point.arm(k);
      await dying.lake.table('ns.t').register(metadataFile).catch(() => undefined);
      await dying.close();
      const { lake, close } = await openLake(w);
      try {
        const t = lake.table('ns.t');
        if (!(await t.exists())) continue;
        expect((await t.describe()).formats, `death at call ${k} (${calls[k - 1]!.call})`).toContain('delta');
        await t.syncDelta();
        expect((await t.read({ format: 'delta' })).map((r) => Number(r.id)).sort()).toEqual([1, 2]);
        expect((await t.verify()).ok).toBe(true);
        adopted++;
      } finally {
        await close();
      }
    }
    expect(adopted).toBeGreaterThan(0);
  }, 120_000);
});
