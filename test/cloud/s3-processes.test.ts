import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { repoRoot, tempDir } from '../helpers.ts';
import { ids } from '../both-formats.ts';
import { cloudServer, duckdbIdsOf, mirror, openCloudLake } from './cloud-fixture.ts';

const server = cloudServer('s3', 'test/cloud/s3-processes.test.ts');
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

/** Runs the writer script on the built library in its own process. */
function writer(job: Record<string, unknown>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot, 'test/workers/cloud-append.mjs'), JSON.stringify(job)], { cwd: repoRoot });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stderr }));
  });
}

describe.skipIf(server.skip)(`an s3:// table shared by processes and copied to disk${server.skip ? ` (skipped: ${server.missing})` : ''}`, () => {
  it('two writer processes append to one S3 table at once: every batch committed, both formats agree', async () => {
    expect(existsSync(join(repoRoot, 'dist/index.js')), 'the writers run the built library: npm run build').toBe(true);
    const fx = await openCloudLake(server);
    try {
      const t = fx.lake.table('shared.events');
      await t.append([{ id: -1, writer: 'setup', batch: -1 }]);
      const job = { warehouse: fx.warehouse, storage: server.storage, dbPath: fx.dbPath, table: 'shared.events', batches: 3, rows: 20 };
      const [a, b] = await Promise.all([writer({ ...job, writer: 'A', base: 0 }), writer({ ...job, writer: 'B', base: 1000 })]);
      expect(a, a.stderr).toMatchObject({ code: 0 });
      expect(b, b.stderr).toMatchObject({ code: 0 });
      const expected = [-1, ...range(0, 60), ...range(1000, 1060)];
      expect(ids(await t.read())).toEqual(expected);
      expect(ids(await t.read({ format: 'delta' }))).toEqual(expected);
      // One snapshot and one Delta version per batch: 1 + 2 × 3.
      const history = await t.history();
      expect(history.length).toBe(7);
      const delta = await t.files({ format: 'delta' });
      expect(delta.files.map((f) => f.path).sort()).toEqual((await t.files()).files.map((f) => f.path).sort());
      expect((await t.verify()).findings).toEqual([]);
    } finally {
      await fx.close();
    }
  });

  it("an S3 table's objects downloaded to a local folder read back equal, through our readers and DuckDB", async () => {
    const fx = await openCloudLake(server);
    const tmp = tempDir('twinlake-mirror-');
    try {
      const t = fx.lake.table('copy.orders');
      await t.append(range(0, 30).map((id) => ({ id, region: id % 3 ? 'eu' : 'us', amount: id * 1.5 })), { partition: 'region' });
      const second = await t.append(range(30, 40).map((id) => ({ id, region: 'us', amount: id * 1.5 })));
      await t.overwrite(range(100, 120).map((id) => ({ id, region: 'eu', amount: 0 })));
      const location = `${fx.warehouse}/copy/orders`;
      const copies = await mirror(fx.lake.io, location, tmp.path);
      expect(copies.size).toBeGreaterThan(5);
      const expected = (await t.read()).map((r) => [r.id, r.region, r.amount]);
      expect(expected.map((r) => r[0]).sort((a, b) => Number(a) - Number(b))).toEqual(range(100, 120));

      // The copy keeps the S3 URIs in its metadata: a FileIO maps them onto the local folder.
      const onDisk = new FileIO((uri) => storeForLocation(uri === location || uri.startsWith(`${location}/`) ? join(tmp.path, uri.slice(location.length + 1)) : uri));
      const copyLake = await Lakehouse.open({ warehouse: join(tmp.path, 'no-warehouse'), readOnly: true, io: onDisk });
      try {
        for (const format of ['iceberg', 'delta'] as const) {
          const rows = await copyLake.readPath(location, { format });
          expect(rows.map((r) => [r.id, r.region, r.amount])).toEqual(expected);
          const travel = format === 'delta' ? { version: second.deltaVersion } : { snapshotId: second.snapshotId };
          expect(ids(await copyLake.readPath(location, { format, ...travel }))).toEqual(range(0, 40));
        }
        // The engine read the copies in place: nothing was fetched into the read cache.
        expect(copyLake.readCache.bytes).toBe(0);
      } finally {
        await copyLake.close();
      }
      // DuckDB's read_parquet over the copies of the live files of each format.
      for (const live of [await t.files(), await t.files({ format: 'delta' })]) {
        expect(live.files.length).toBeGreaterThan(0);
        expect(await duckdbIdsOf(live.files.map((f) => copies.get(f.path)!))).toEqual(range(100, 120));
      }
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });
});
