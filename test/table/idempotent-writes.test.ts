import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse, type Catalog } from '../../src/index.ts';
import { parseCommit } from '../../src/format/delta/actions.ts';
import { deltaFailingIO } from '../faults.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';

const batch = [{ id: 1, v: 'a' }, { id: 2, v: 'b' }, { id: 3, v: 'c' }];
const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);


/** The catalog of `lake`, with `before` run ahead of each of its first commits: a concurrent writer. */
function interleaved(inner: Catalog, before: (n: number) => Promise<void>, times: number): Catalog {
  let n = 0;
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'commitTable') {
        return async (...args: Parameters<Catalog['commitTable']>) => {
          if (n < times) await before(n++);
          return target.commitTable(...args);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function deltaTxns(warehouse: string, table: string, version: number): unknown[] {
  const file = join(warehouse, ...table.split('.'), '_delta_log', `${String(version).padStart(20, '0')}.json`);
  return parseCommit(readFileSync(file, 'utf8'), file).flatMap((a) => ('txn' in a ? [a.txn] : []));
}

describe('idempotent writes (txn: application id + batch version)', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('the same batch written three times, the first stopping between the Iceberg and the Delta commit, is in both formats once', async () => {
    let failDelta = false;
    const lake = await Lakehouse.open({ warehouse: tmp.path, io: deltaFailingIO(() => failDelta).io, onWarning: () => {} });
    try {
      const t = lake.table('txn.three');
      await t.append([{ id: 0, v: 'seed' }]);
      const txn = { appId: 'ingest-7', version: 42 };
      failDelta = true;
      const first = await t.append(batch, { txn });
      failDelta = false;
      expect(first.txn).toEqual({ appId: 'ingest-7', version: 42n, status: 'committed' });
      expect(first.deltaCommitted).toBe(false);
      expect(ids(await t.read({ format: 'delta' }))).toEqual([0]);

      // The pipeline does not know whether the batch landed, and writes it again, twice.
      const second = await t.append(batch, { txn });
      const third = await t.append(batch, { txn });
      for (const again of [second, third]) {
        expect(again.txn).toEqual({ appId: 'ingest-7', version: 42n, status: 'already-committed', latestVersion: 42n });
        expect([again.files, again.rows, again.bytes]).toEqual([0, 0, 0]);
        expect(again.snapshotId).toBe(first.snapshotId);
        expect(again.deltaVersion).toBe(first.deltaVersion);
      }
      expect(ids(await t.read())).toEqual([0, 1, 2, 3]);
      expect(ids(await t.read({ format: 'delta' }))).toEqual([0, 1, 2, 3]);
      expect(await t.history()).toHaveLength(2);

      // The Iceberg snapshot names the batch; the Delta version mirroring it carries the txn action.
      const snapshot = (await t.metadata()).snapshots.at(-1)!;
      expect(snapshot.summary['twinlake.txn.app-id']).toBe('ingest-7');
      expect(snapshot.summary['twinlake.txn.version']).toBe('42');
      expect(deltaTxns(tmp.path, 'txn.three', first.deltaVersion!)).toContainEqual({ appId: 'ingest-7', version: 42, lastUpdated: snapshot['timestamp-ms'] });

      // A newer batch commits; an older one is a no-op too.
      expect((await t.append([{ id: 4, v: 'd' }], { txn: { appId: 'ingest-7', version: 43 } })).txn?.status).toBe('committed');
      const older = await t.append([{ id: 5, v: 'e' }], { txn: { appId: 'ingest-7', version: 41n } });
      expect(older.txn).toMatchObject({ status: 'already-committed', latestVersion: 43n });
      // Another application's versions are its own.
      expect((await t.append([{ id: 6, v: 'f' }], { txn: { appId: 'ingest-8', version: 1 } })).txn?.status).toBe('committed');
      for (const format of ['iceberg', 'delta'] as const) expect(ids(await t.read({ format }))).toEqual([0, 1, 2, 3, 4, 6]);
    } finally {
      await lake.close();
    }
  });

  it('a lost Delta version with a txn is derived again byte for byte from the Iceberg snapshot', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('txn.rederive');
      await t.append(batch, { txn: { appId: 'etl', version: 7 } });
      const file = join(tmp.path, 'txn', 'rederive', '_delta_log', `${'1'.padStart(20, '0')}.json`);
      const before = readFileSync(file);
      rmSync(file);
      expect((await t.syncDelta()).written).toEqual([1]);
      expect(readFileSync(file)).toEqual(before);
      const snapshot = (await t.metadata()).snapshots[0]!;
      expect(deltaTxns(tmp.path, 'txn.rederive', 1)).toContainEqual({ appId: 'etl', version: 7, lastUpdated: snapshot['timestamp-ms'] });
    } finally {
      await lake.close();
    }
  });

  it('two writers racing with the same batch: exactly one commits, the other finds it on its retry', async () => {
    const setup = await Lakehouse.open({ warehouse: tmp.path });
    await setup.table('txn.race').append([{ id: 0, v: 'seed' }]);
    await setup.close();
    const a = await Lakehouse.open({ warehouse: tmp.path });
    const shared = await Lakehouse.open({ warehouse: tmp.path });
    // B has checked the table and encoded its files when A commits the same batch.
    const b = await Lakehouse.open({
      warehouse: tmp.path,
      catalog: interleaved(shared.catalog, async () => void (await a.table('txn.race').append(batch, { txn: { appId: 'stream-1', version: 5 } })), 1),
    });
    try {
      const won = await b.table('txn.race').append(batch, { txn: { appId: 'stream-1', version: 5 } });
      expect(won.txn?.status).toBe('already-committed');
      expect(won.files).toBe(0);
      // Four more writers at once with the next batch: one commits it.
      const writers = await Promise.all([0, 1, 2, 3].map(() => Lakehouse.open({ warehouse: tmp.path })));
      const results = await Promise.all(writers.map((l) => l.table('txn.race').append([{ id: 9, v: 'next' }], { txn: { appId: 'stream-1', version: 6 } })));
      await Promise.all(writers.map((l) => l.close()));
      expect(results.map((r) => r.txn?.status).sort()).toEqual(['already-committed', 'already-committed', 'already-committed', 'committed']);
      const t = a.table('txn.race');
      for (const format of ['iceberg', 'delta'] as const) expect(ids(await t.read({ format }))).toEqual([0, 1, 2, 3, 9]);
      expect(await t.history()).toHaveLength(3);
      // Only the committed files are in the table's folder: the losers removed theirs.
      const data = listFiles(join(tmp.path, 'txn', 'race', 'data'));
      expect(data).toHaveLength((await t.files()).files.length);
    } finally {
      await Promise.all([a.close(), b.close(), shared.close()]);
    }
  });

  it('merges carry the batch too: a merge replayed changes nothing', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('txn.merge');
      await t.append(batch);
      const change = [{ id: 2, v: 'B' }, { id: 9, v: 'new' }];
      const first = await t.merge(change, { keys: ['id'], txn: { appId: 'cdc', version: 100 } });
      expect([first.txn?.status, first.inserted, first.updated]).toEqual(['committed', 1, 1]);
      // The same change again, with the table changed by someone else in between.
      await t.merge([{ id: 2, v: 'other' }], { keys: ['id'] });
      const again = await t.merge(change, { keys: ['id'], txn: { appId: 'cdc', version: 100 } });
      expect(again.txn?.status).toBe('already-committed');
      expect([again.inserted, again.updated, again.deleted, again.files]).toEqual([0, 0, 0, 0]);
      for (const format of ['iceberg', 'delta'] as const) {
        const rows = (await t.read({ format })).sort((x, y) => Number(x.id) - Number(y.id));
        expect(rows.map((r) => `${r.id}:${r.v}`)).toEqual(['1:a', '2:other', '3:c', '9:new']);
      }
      expect(deltaTxns(tmp.path, 'txn.merge', first.deltaVersion!)).toContainEqual(expect.objectContaining({ appId: 'cdc', version: 100 }));
    } finally {
      await lake.close();
    }
  });

  it('a Delta-only table keeps the batch in its txn actions', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('txn.delta');
      const first = await t.append(batch, { formats: ['delta'], txn: { appId: 'job', version: 1 } });
      expect(first.txn?.status).toBe('committed');
      const again = await t.append(batch, { txn: { appId: 'job', version: 1 } });
      expect(again.txn).toEqual({ appId: 'job', version: 1n, status: 'already-committed', latestVersion: 1n });
      expect(again.deltaVersion).toBe(first.deltaVersion);
      expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2, 3]);
      expect(deltaTxns(tmp.path, 'txn.delta', first.deltaVersion!)).toContainEqual(expect.objectContaining({ appId: 'job', version: 1 }));
    } finally {
      await lake.close();
    }
  });

  it('refuses a bad txn before writing anything', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('txn.bad');
      expect((await errorOf(t.append(batch, { txn: { appId: '', version: 1 } }))).message).toMatch(/^txn: expected a non-empty application id/);
      expect((await errorOf(t.append(batch, { txn: { appId: 'a', version: -1 } }))).message).toMatch(/^txn: expected the batch version to be a whole number from 0 to 9223372036854775807, found -1/);
      expect((await errorOf(t.append(batch, { txn: { appId: 'a', version: 1.5 } }))).kind).toBe('invalid-input');
      expect(await t.exists()).toBe(false);
    } finally {
      await lake.close();
    }
  });
});
