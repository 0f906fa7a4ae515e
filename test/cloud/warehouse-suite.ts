import { Writable } from 'node:stream';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { errorOf, ndjson, tempDir } from '../helpers.ts';
import { FaultyStore } from '../faults.ts';
import { ids } from '../both-formats.ts';
import { type CloudServer, cloudCatalog, expectCloudBothEqual, objectsUnder, openCloudLake } from './cloud-fixture.ts';

const rowsOf = (from: number, to: number, extra: (i: number) => Record<string, unknown> = () => ({})) =>
  Array.from({ length: to - from }, (_, k) => ({ id: from + k, name: `n${from + k}`, region: (from + k) % 2 ? 'eu' : 'us', ...extra(from + k) }));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);

/** The table operations on a cloud warehouse, through the library; `server` is started by the test file. */
export function cloudWarehouseSuite(server: CloudServer): void {
  const scratch = () => tempDir('twinlake-cloud-scratch-');

  it('refuses a cloud warehouse without a catalog, and creates nothing in the bucket on open', async () => {
    const warehouse = await server.newWarehouse();
    const e = await errorOf(Lakehouse.open({ warehouse, storage: server.storage }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toBe(
      `warehouse: the cloud warehouse ${warehouse} needs a catalog (a SQLite file, a postgresql:// URI, Glue or REST); the embedded catalog file lives only in a local warehouse`,
    );
    const tmp = tempDir();
    const catalog = cloudCatalog(warehouse, server.storage, join(tmp.path, 'c.db'));
    const badBound = await errorOf(Lakehouse.open({ warehouse, storage: server.storage, catalog, readCacheBytes: -1 }));
    expect(badBound.message).toBe('lakehouse: readCacheBytes expects a whole number of bytes (0 or more), found -1');
    const unreachable = await errorOf(Lakehouse.open({ warehouse, catalog }));
    expect(unreachable.kind).toBe('invalid-input');
    expect(unreachable.message).toMatch(new RegExp(`^storage: "${warehouse}" is an (S3|Azure Blob) location but no (S3|Azure) settings were given`));
    const lake = await Lakehouse.open({ warehouse: `${warehouse}/`, storage: server.storage, catalog });
    expect(lake.warehouse).toBe(warehouse);
    expect(await objectsUnder(lake.io, warehouse)).toEqual([]);
    expect(lake.table('ns.t')).toBeDefined();
    await lake.close();
    catalog.close();
    tmp.cleanup();
  });

  it('writes, appends and overwrites; both formats agree, time travel and read by path work', async () => {
    const fx = await openCloudLake(server);
    const tmp = scratch();
    try {
      const t = fx.lake.table('sales.orders');
      const first = await t.append(rowsOf(0, 50));
      expect(first.rows).toBe(50);
      const location = `${fx.warehouse}/sales/orders`;
      expect((await t.describe()).location).toBe(location);
      const keys = await objectsUnder(fx.lake.io, location);
      expect(keys.filter((k) => k.startsWith('data/') && k.endsWith('.parquet')).length).toBe(first.files);
      expect(keys.some((k) => k.startsWith('_delta_log/00000000000000000000.json'))).toBe(true);
      expect(keys.some((k) => k.startsWith('metadata/') && k.endsWith('.metadata.json'))).toBe(true);
      await expectCloudBothEqual(t, fx.lake.io, range(0, 50), tmp.path);

      const second = await t.append({ path: await fileOf(tmp.path, 'more.ndjson', rowsOf(50, 80)) });
      await expectCloudBothEqual(t, fx.lake.io, range(0, 80), tmp.path);
      const over = await t.overwrite(rowsOf(100, 110));
      await expectCloudBothEqual(t, fx.lake.io, range(100, 110), tmp.path);

      // Time travel by snapshot and by Delta version: the files replaced stay readable.
      expect(ids(await t.read({ snapshotId: first.snapshotId }))).toEqual(range(0, 50));
      expect(ids(await t.read({ version: second.deltaVersion, format: 'delta' }))).toEqual(range(0, 80));
      expect(ids(await t.read({ version: over.deltaVersion, format: 'delta' }))).toEqual(range(100, 110));
      expect(await t.count({ snapshotId: second.snapshotId })).toBe(80);

      // A table by its location, without the catalog.
      expect(ids(await fx.lake.readPath(location))).toEqual(range(100, 110));
      expect(ids(await fx.lake.readPath(location, { format: 'delta' }))).toEqual(range(100, 110));
      expect((await fx.lake.describePath(location)).formats).toEqual(['delta', 'iceberg']);
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });

  it('writes a partitioned table into partition folders of the bucket', async () => {
    const fx = await openCloudLake(server);
    const tmp = scratch();
    try {
      const t = fx.lake.table('sales.parts');
      await t.append(rowsOf(0, 40), { partition: 'region, bucket(4, id)' });
      const data = (await objectsUnder(fx.lake.io, `${fx.warehouse}/sales/parts/data`)).filter((k) => k.endsWith('.parquet'));
      expect(data.length).toBeGreaterThan(2);
      expect(data.every((k) => /^region=(eu|us)\/id_bucket=[0-3]\//.test(k))).toBe(true);
      await expectCloudBothEqual(t, fx.lake.io, range(0, 40), tmp.path);
      expect(ids(await t.read({ where: "region = 'eu'" }))).toEqual(range(0, 40).filter((i) => i % 2 === 1));
      expect(ids(await t.read({ where: "region = 'eu'", format: 'delta' }))).toEqual(range(0, 40).filter((i) => i % 2 === 1));
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });

  for (const strategy of ['copy-on-write', 'merge-on-read'] as const) {
    it(`merges and deletes (${strategy}); verify finds no drift and sync has nothing to do`, async () => {
      const fx = await openCloudLake(server);
      const tmp = scratch();
      try {
        const t = fx.lake.table('sales.m');
        await t.append(rowsOf(0, 30), strategy === 'merge-on-read' ? { properties: { 'write.merge.mode': 'merge-on-read', 'write.delete.mode': 'merge-on-read' } } : {});
        const merged = await t.merge([...rowsOf(25, 35, () => ({ name: 'new' }))], { keys: ['id'], strategy });
        expect([merged.inserted, merged.updated]).toEqual([5, 5]);
        expect(merged.strategy).toBe(strategy);
        if (strategy === 'merge-on-read') expect(merged.deleteFiles).toBeGreaterThan(0);
        const rows = await t.read();
        expect(ids(rows)).toEqual(range(0, 35));
        expect(rows.filter((r) => r.name === 'new').map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(range(25, 35));
        expect(ids(await t.read({ format: 'delta' }))).toEqual(range(0, 35));

        const deleted = await t.delete('id < 10', { strategy });
        expect(deleted.deleted).toBe(10);
        expect(ids(await t.read())).toEqual(range(10, 35));
        expect(ids(await t.read({ format: 'delta' }))).toEqual(range(10, 35));
        // A second merge on a table with deletes reads the deletes it carries over.
        await t.merge([{ id: 12, name: 'again', region: 'us' }], { keys: ['id'], strategy });
        expect((await t.read({ where: 'id = 12' }))[0]!.name).toBe('again');
        await expectCloudBothEqual(t, fx.lake.io, range(10, 35), tmp.path);

        const v = await t.verify();
        expect(v.findings).toEqual([]);
        expect(v.ok).toBe(true);
        const s = await t.syncDelta();
        expect(ids(await t.read({ format: 'delta' }))).toEqual(range(10, 35));
        expect(s.written).toEqual([]);
      } finally {
        tmp.cleanup();
        await fx.close();
      }
    });
  }

  it('verify names a damaged Delta commit in the bucket and --repair rewrites it from its snapshot', async () => {
    const fx = await openCloudLake(server);
    const tmp = scratch();
    try {
      const t = fx.lake.table('sales.fix');
      await t.append(rowsOf(0, 10));
      await t.append(rowsOf(10, 20));
      const commit = `${fx.warehouse}/sales/fix/_delta_log/00000000000000000001.json`;
      await fx.lake.io.write(commit, 'not json at all\n');
      const v = await t.verify();
      expect(v.ok).toBe(false);
      expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-unparsable', file: '_delta_log/00000000000000000001.json' }));
      const r = await t.verify({ repair: true });
      expect(r.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-unparsable', repaired: expect.stringMatching(/^rewrote .* from iceberg snapshot \d+$/) }));
      expect(r.ok).toBe(true);
      expect((await fx.lake.io.readText(commit)).startsWith('{')).toBe(true);
      await expectCloudBothEqual(t, fx.lake.io, range(0, 20), tmp.path);
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });

  it('streams an export of many files in groups, equal to a read, within the read cache bound', async () => {
    const fx = await openCloudLake(server, { readCacheBytes: 1 });
    try {
      const t = fx.lake.table('sales.many');
      // One batch per commit, one file each: 10 files, more than one group.
      for (let b = 0; b < 10; b++) await t.append(rowsOf(b * 10, b * 10 + 10));
      expect((await t.files()).files.length).toBe(10);
      const chunks: Buffer[] = [];
      const sink = new Writable({ write: (c, _e, done) => (chunks.push(c), done()) });
      await t.export(sink, { output: 'json' });
      const exported = Buffer.concat(chunks).toString().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      // In the read's order (file by file), every row once.
      expect(exported.map((r) => Number(r.id))).toEqual((await t.read()).map((r) => Number(r.id)));
      expect(ids(exported)).toEqual(range(0, 100));
      const limited: Buffer[] = [];
      await t.export(new Writable({ write: (c, _e, done) => (limited.push(c), done()) }), { output: 'csv', limit: 42 });
      const lines = Buffer.concat(limited).toString().trim().split('\n');
      expect(lines[0]).toBe('id,name,region');
      expect(lines.length).toBe(43);
      // Nothing in use after the export: the cache is back within its bound of one byte.
      expect(fx.lake.readCache.bytes).toBeLessThanOrEqual(1);
    } finally {
      await fx.close();
    }
  });

  it('adds Parquet files already in the bucket, reading only their footers', async () => {
    const fx = await openCloudLake(server);
    const tmp = scratch();
    try {
      const t = fx.lake.table('sales.adopted');
      await t.append(rowsOf(0, 5));
      const location = `${fx.warehouse}/sales/adopted`;
      // Files another writer put below the table (no field IDs: matched by name).
      const db = await DuckDBInstance.create(':memory:');
      const conn = await db.connect();
      for (const [n, from] of [[1, 100], [2, 200]] as const) {
        const local = join(tmp.path, `part-${n}.parquet`);
        await conn.run(`COPY (SELECT (${from} + i)::BIGINT AS id, 'n' || i AS name, 'us' AS region FROM range(50) t(i)) TO '${local}' (FORMAT parquet)`);
        await fx.lake.io.putFile(`${location}/imported/part-${n}.parquet`, local);
      }
      conn.closeSync();
      const r = await t.addFiles([`${location}/imported/*.parquet`]);
      expect([r.files, r.rows]).toEqual([2, 100]);
      // Only the footers were fetched (ranged reads into sparse files): nothing went into the read cache.
      expect(fx.lake.readCache.bytes).toBe(0);
      const expected = [...range(0, 5), ...range(100, 150), ...range(200, 250)];
      await expectCloudBothEqual(t, fx.lake.io, expected, tmp.path);
      expect(ids(await t.read({ where: 'id >= 200' }))).toEqual(range(200, 250));
      const again = await errorOf(t.addFiles([`${location}/imported/part-1.parquet`]));
      expect(again.message).toBe(`add-files sales.adopted: ${location}/imported/part-1.parquet: already a live file of the table; a file is added once`);
      const none = await errorOf(t.addFiles([`${location}/imported/nothing-*.parquet`]));
      expect(none.message).toBe(`add-files sales.adopted: ${location}/imported/nothing-*.parquet: no file matches`);
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });

  it('a failed write (bad input, a failed upload, a lost commit) leaves the table as it was and no new object', async () => {
    const fx = await openCloudLake(server);
    const tmp = scratch();
    try {
      const t = fx.lake.table('sales.fail');
      await t.append(rowsOf(0, 10), { partition: 'bucket(8, id)', properties: { 'commit.retry.num-retries': '0' } });
      const dataDir = `${fx.warehouse}/sales/fail/data`;
      const before = await objectsUnder(fx.lake.io, `${fx.warehouse}/sales/fail`);
      const snapshot = (await t.history())[0];

      // Bad input: a malformed record after good ones.
      const bad = join(tmp.path, 'bad.ndjson');
      await writeFile(bad, ndjson(rowsOf(10, 20)) + '{"id": 21, "name": \n');
      const e = await errorOf(t.append({ path: bad }));
      expect(e.kind).toBe('invalid-input');
      expect(await objectsUnder(fx.lake.io, `${fx.warehouse}/sales/fail`)).toEqual(before);

      // A failed upload: the second data file of a batch cannot be stored.
      const wrapped = new Map<string, FaultyStore>();
      let puts = 0;
      const io = new FileIO((uri) => {
        const { store, key } = storeForLocation(uri, server.storage);
        let faulty = wrapped.get(store.root);
        if (!faulty) {
          faulty = new FaultyStore(store);
          // A store is rooted at a location's folder: data files are the puts below data/.
          faulty.failWhen = (call) => call === 'put' && `${store.root}/`.includes('/sales/fail/data/') && ++puts === 2;
          wrapped.set(store.root, faulty);
        }
        return { store: faulty, key };
      });
      const tmpCat = tempDir();
      const catalog = cloudCatalog(fx.warehouse, server.storage, fx.dbPath);
      const faultyLake = await Lakehouse.open({ warehouse: fx.warehouse, storage: server.storage, catalog, io });
      try {
        const f = await errorOf(faultyLake.table('sales.fail').append(rowsOf(20, 60), { partition: 'bucket(8, id)' }));
        expect(f.message).toContain('injected failure');
      } finally {
        await faultyLake.close();
        catalog.close();
        tmpCat.cleanup();
      }
      expect(puts).toBeGreaterThanOrEqual(2);
      expect(await objectsUnder(fx.lake.io, `${fx.warehouse}/sales/fail`)).toEqual(before);

      // A lost commit: every attempt loses to a rival (no retries on this table).
      const losing = new Proxy(cloudCatalog(fx.warehouse, server.storage, fx.dbPath), {
        get: (target, prop, receiver) => (prop === 'commitTable' ? async () => ({ status: 'conflict', reason: 'a rival commit won' }) : Reflect.get(target, prop, receiver)),
      });
      const losingLake = await Lakehouse.open({ warehouse: fx.warehouse, storage: server.storage, catalog: losing });
      try {
        const lost = await errorOf(losingLake.table('sales.fail').append(rowsOf(60, 90), { partition: 'bucket(8, id)' }));
        expect(lost.kind).toBe('commit-conflict');
      } finally {
        await losingLake.close();
        (losing as unknown as { close(): void }).close();
      }
      // Nothing of the lost attempt stays: no data file, no manifest, no metadata file.
      expect(await objectsUnder(fx.lake.io, `${fx.warehouse}/sales/fail`)).toEqual(before);
      expect(await objectsUnder(fx.lake.io, dataDir)).toEqual(before.filter((k) => k.startsWith('data/')).map((k) => k.slice(5)));
      expect((await t.history())[0]).toEqual(snapshot);
      await expectCloudBothEqual(t, fx.lake.io, range(0, 10), tmp.path);
    } finally {
      tmp.cleanup();
      await fx.close();
    }
  });
}

async function fileOf(dir: string, name: string, rows: unknown[]): Promise<string> {
  const p = join(dir, name);
  await writeFile(p, ndjson(rows));
  return p;
}
