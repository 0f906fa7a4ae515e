import { existsSync, readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { runMaintenance } from '../../src/maintenance/maintain.ts';
import { expectBothEqual } from '../both-formats.ts';
import { tempDir } from '../helpers.ts';

/**
 * Files compaction replaced are freed once nothing retained reads them: no retained snapshot lists
 * them live (the entries that mark them deleted are no reference) and no retained Delta version adds
 * them (a remove is no reference either). Before, a deleted entry counted as a reference, so they stayed for
 * as long as a later snapshot carried the manifest that deleted them: for ever, in a table that is
 * only appended to after a compaction.
 */

const DAY = 86400e3;
let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

/** Every file of the table's folder aged to `ms` ago (orphan cleanup's window looks at file times). */
function ageFiles(root: string, ms: number): void {
  const t = (Date.now() - ms) / 1000;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else utimesSync(p, t, t);
    }
  };
  walk(root);
}

async function compactedTable() {
  dir = tempDir();
  const clock = { offset: 0, nowMs: () => Date.now() + clock.offset };
  const lake = await Lakehouse.open({ warehouse: join(dir.path, 'wh'), clock, onWarning: () => {} });
  const t = lake.table('ns.t');
  for (let i = 0; i < 3; i++) await t.append([{ id: i }]);
  const root = join(dir.path, 'wh', 'ns', 't');
  const originals = readdirSync(join(root, 'data'));
  expect(originals).toHaveLength(3);
  await runMaintenance(t, 'compaction', {});
  await t.append([{ id: 3 }]);
  return { lake, t, clock, root, originals };
}

describe('orphan cleanup after compaction', () => {
  test('files a compaction replaced are freed once their snapshots expire, though a later snapshot carries the manifest marking them deleted', async () => {
    const { lake, t, clock, root, originals } = await compactedTable();
    ageFiles(root, 30 * DAY);
    clock.offset = 30 * DAY;
    await runMaintenance(t, 'snapshot_expiry', { retention: DAY });
    const r = await runMaintenance(t, 'orphan_cleanup', {});
    expect(r.operation === 'orphan_cleanup' && r.files.filter((f) => f.kind === 'data').map((f) => f.path.replace(/^data\//, '')).sort()).toEqual([...originals].sort());
    for (const f of originals) expect(existsSync(join(root, 'data', f))).toBe(false);
    await expectBothEqual(t, [0, 1, 2, 3]);
    expect((await t.verify()).ok).toBe(true);
    await lake.close();
  });

  test('while a retained snapshot or Delta version still reads them, they stay, and are freed with the last one', async () => {
    const { lake, t, clock, root, originals } = await compactedTable();
    ageFiles(root, 30 * DAY);
    // Within the retention: the snapshots before the compaction are kept, and with them their files.
    clock.offset = DAY;
    await runMaintenance(t, 'snapshot_expiry', { retention: 7 * DAY });
    await runMaintenance(t, 'orphan_cleanup', {});
    for (const f of originals) expect(existsSync(join(root, 'data', f)), f).toBe(true);
    const oldest = (await t.history()).at(-1)!;
    expect((await t.read({ snapshotId: oldest.snapshotId })).map((r) => Number(r.id))).toEqual([0]);
    expect((await t.read({ format: 'delta', version: oldest.deltaVersion! })).map((r) => Number(r.id))).toEqual([0]);
    // Past it: expired in both formats (the Delta log is cut with them), then freed.
    clock.offset = 10 * DAY;
    await runMaintenance(t, 'snapshot_expiry', { retention: 7 * DAY });
    const r = await runMaintenance(t, 'orphan_cleanup', {});
    expect(r.operation === 'orphan_cleanup' && r.files.filter((f) => f.kind === 'data')).toHaveLength(3);
    for (const f of originals) expect(existsSync(join(root, 'data', f)), f).toBe(false);
    await expectBothEqual(t, [0, 1, 2, 3]);
    expect((await t.verify()).ok).toBe(true);
    await lake.close();
  });
});
