import { mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { cleanMetadata } from '../../src/maintenance/metadata-cleanup.ts';
import { listFiles, tempDir } from '../helpers.ts';

/**
 * The maintenance run log lives below the table (`_twinlake/maintenance/runs/`), where nothing
 * references it: orphan cleanup and metadata cleanup must keep it whatever its age. The log is
 * planted here as the run log writes it, so the keep rule is tested on its own.
 */

const DAY = 86400e3;

let tmp: ReturnType<typeof tempDir>;
let lake: Lakehouse;
beforeAll(async () => {
  tmp = tempDir();
  lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => {} });
});
afterAll(async () => {
  await lake.close();
  tmp.cleanup();
});

test('orphan cleanup and metadata cleanup never remove the run log', async () => {
  const t = lake.table('ops.kept');
  await t.append([{ id: 1 }]);
  await t.append([{ id: 2 }]);
  const dir = join(tmp.path, 'ops', 'kept');
  const runs = join(dir, '_twinlake', 'maintenance', 'runs');
  await mkdir(runs, { recursive: true });
  const entries = ['1767225600000-compaction-0a1b2c3d.json', '1767229200000-full_maintenance-4e5f6071.json'];
  for (const e of entries) await writeFile(join(runs, e), JSON.stringify({ id: e.slice(0, -5) }));
  // A stray file beside the table's data, as old as the log: orphan cleanup does remove that one.
  await writeFile(join(dir, 'data', 'stray.parquet'), 'not referenced');
  const old = new Date(Date.now() - 30 * DAY);
  for (const f of [...entries.map((e) => join(runs, e)), join(dir, 'data', 'stray.parquet')]) await utimes(f, old, old);

  const dry = await removeOrphans(t, { dryRun: true });
  expect(dry.files.map((f) => f.path)).toEqual(['data/stray.parquet']);
  const orphans = await removeOrphans(t, {});
  expect(orphans.files.map((f) => f.path)).toEqual(['data/stray.parquet']);
  const metadata = await cleanMetadata(t, { now: Date.now() + 365 * DAY });
  expect(metadata.files.filter((f) => f.path.startsWith('_twinlake/'))).toEqual([]);
  expect(listFiles(dir).filter((f) => f.startsWith('_twinlake/'))).toEqual(entries.map((e) => `_twinlake/maintenance/runs/${e}`));
  expect(listFiles(dir)).not.toContain('data/stray.parquet');
});
