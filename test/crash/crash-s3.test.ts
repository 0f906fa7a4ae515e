import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.ts';
import { cloudServer } from '../cloud/cloud-fixture.ts';
import { callTable, crashMatrix, type CrashRun } from './crash-matrix.ts';
import { ALL_CASES } from './crash-cases.ts';

/**
 * The crash matrix on S3 (Ceph's RADOS Gateway, whose `If-None-Match: *` is real), the catalog a
 * SQLite file on local disk as a cloud warehouse's is. A point costs several seconds there (the
 * warehouse is put back object by object), so CI runs an append, a Delta-only append and a
 * sync; `TWINLAKE_CRASH_S3_ALL=1` adds a table's creation, overwrite, a merge-on-read merge, a
 * copy-on-write delete and a compaction.
 */
const S3_CASES = ['append', 'Delta-only append', 'sync', ...(process.env.TWINLAKE_CRASH_S3_ALL === '1' ? ['create', 'overwrite', 'merge merge-on-read', 'delete copy-on-write', 'compaction'] : [])];

const server = cloudServer('s3', 'crash-s3.test.ts');

describe.skipIf(server.skip)('a crash at every storage call, S3', () => {
  const tmp = tempDir('twinlake-crash-s3-');
  const runs: CrashRun[] = [];
  afterAll(() => {
    console.log(`| operation | storage calls N | effectful | points run |\n${callTable(runs)}`);
    tmp.cleanup();
  });
  let n = 0;
  for (const name of S3_CASES) {
    it(name, async () => {
      const c = ALL_CASES.find((x) => x.name === name)!;
      const run = await crashMatrix({ warehouse: await server.newWarehouse(), storage: server.storage, dbPath: join(tmp.path, `catalog-${n++}.db`) }, c);
      runs.push(run);
      expect(run.points).toBeGreaterThanOrEqual(2 * run.effectful);
    }, 600_000);
  }
});
