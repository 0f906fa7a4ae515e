import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { deltaFailingIO } from '../faults.ts';
import { tempDir } from '../helpers.ts';

describe('Delta commit failure after the Iceberg commit', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());


  it('the write succeeds with a warning; the next write repairs Delta; both formats agree', async () => {
    let failDelta = false;
    const { io, stores } = deltaFailingIO(() => failDelta);
    const warnings: string[] = [];
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: (m) => warnings.push(m) });
    try {
      const t = lake.table('faults.t');
      await t.append([{ id: 1 }, { id: 2 }]);

      failDelta = true;
      const broken = await t.append([{ id: 3 }]);
      failDelta = false;
      expect(broken.deltaCommitted).toBe(false);
      expect(broken.warnings.join('\n')).toMatch(/delta/i);
      expect(warnings.length).toBeGreaterThan(0);
      const failures = [...stores.values()].flatMap((s) => s.failures);
      expect(failures.length).toBe(2); // the commit and its one retry
      // Iceberg has the rows; Delta is one version behind.
      expect(await t.read()).toHaveLength(3);
      expect(await t.read({ format: 'delta' })).toHaveLength(2);

      const repaired = await t.append([{ id: 4 }]);
      expect(repaired.deltaCommitted).toBe(true);
      expect(repaired.deltaVersion).toBe(broken.deltaVersion! + 1);
      const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort();
      expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2, 3, 4]);
      expect(ids(await t.read())).toEqual([1, 2, 3, 4]);
      expect(ids(await t.read({ format: 'delta', version: broken.deltaVersion }))).toEqual([1, 2, 3]);
    } finally {
      await lake.close();
    }
  });

  it('sync writes the missing Delta version without writing data', async () => {
    let failDelta = false;
    const { io } = deltaFailingIO(() => failDelta);
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: () => {} });
    try {
      const t = lake.table('faults.synced');
      await t.append([{ id: 1 }]);
      failDelta = true;
      const broken = await t.append([{ id: 2 }]);
      failDelta = false;
      expect(broken.deltaCommitted).toBe(false);
      expect(await t.read({ format: 'delta' })).toHaveLength(1);
      expect(await t.syncDelta()).toEqual({ version: broken.deltaVersion, written: [broken.deltaVersion] });
      expect((await t.syncDelta()).written).toEqual([]);
      expect(await t.read({ format: 'delta' })).toHaveLength(2);
    } finally {
      await lake.close();
    }
  });
});
