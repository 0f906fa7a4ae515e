import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringifyJson } from '../../src/core/json.ts';
import { commitPath, parseCommit } from '../../src/format/delta/actions.ts';
import { snapshotVersion } from '../../src/table/delta/delta-projection.ts';
import { systemClock } from '../../src/core/clock.ts';
import { joinUri } from '../../src/core/uri.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { currentSchema, currentSnapshot } from '../../src/format/iceberg/table-metadata.ts';
import { readManifestList } from '../../src/table/commit/manifest-io.ts';
import type { DataFile, TableMetadata } from '../../src/format/iceberg/types.ts';
import { appendFiles } from '../../src/table/commit/table-actions.ts';
import { Transaction } from '../../src/table/commit/transaction.ts';
import { finishDelta } from '../../src/table/delta/delta-sync.ts';
import type { TableContext } from '../../src/table/table-context.ts';
import { encodeFrom } from '../../src/table/write/batch.ts';
import { planSchema } from '../../src/table/write/schema-plan.ts';
import { expectBothEqual, identOf, ids } from '../both-formats.ts';
import { FaultyStore, type StoreCall } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/**
 * What one commit asks of the store: the files it just wrote are not read back (the manifest
 * list and manifests by the next snapshot, the manifest merge and the Delta version mirroring
 * the snapshot), and the Delta head this process wrote is known without reading it. Every call
 * of a FileIO is recorded through a FaultyStore that fails nothing.
 */
describe('the store calls of a commit', () => {
  type Call = { call: StoreCall; path: string };

  function recordingIO(calls: Call[]): FileIO {
    return new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      const recording = new FaultyStore(store);
      recording.failWhen = (call, path) => (calls.push({ call, path }), false);
      return { store: recording, key };
    });
  }

  const avroGets = (calls: Call[]) => calls.filter((c) => c.call === 'get' && c.path.endsWith('.avro'));
  const deltaCommitGets = (calls: Call[]) => calls.filter((c) => c.call === 'get' && /_delta_log\/\d{20}\.json$/.test(c.path));

  async function withLake<T>(f: (lake: Lakehouse, calls: Call[], warehouse: string) => Promise<T>): Promise<T> {
    const tmp = tempDir();
    const calls: Call[] = [];
    const lake = await Lakehouse.open({ warehouse: tmp.path, io: recordingIO(calls), onWarning: () => undefined });
    try {
      return await f(lake, calls, tmp.path);
    } finally {
      await lake.close();
      tmp.cleanup();
    }
  }

  function contextOf(lake: Lakehouse, name: string): TableContext {
    const ident = identOf(name);
    return { catalog: lake.catalog, io: lake.io, ident, location: joinUri(lake.warehouse, ...ident.namespace, ident.name), session: () => lake.session(), clock: systemClock, warn: () => undefined };
  }

  async function filesOf(ctx: TableContext, metadata: TableMetadata, first: number): Promise<DataFile[]> {
    const plan = planSchema(ctx, metadata, currentSchema(metadata), {});
    return (await encodeFrom(ctx, plan, { sql: `SELECT ${first}::BIGINT AS id UNION ALL SELECT ${first + 1}::BIGINT`, displayName: 'test' })).dataFiles;
  }

  it('reads back no Avro file it wrote and no Delta head it wrote, over 21 appends (manifest merges and checkpoints among them)', async () => {
    await withLake(async (lake, calls) => {
      await lake.table('io.appends').append([{ id: 0 }, { id: 1 }]);
      const ctx = contextOf(lake, 'io.appends');
      for (let i = 1; i <= 21; i++) {
        const base = await lake.catalog.loadTable(ctx.ident);
        const files = await filesOf(ctx, base.metadata, 2 * i);
        calls.length = 0;
        const outcome = await new Transaction(ctx, [appendFiles(ctx, files)]).commit(base);
        if (outcome.status !== 'committed') throw new Error(`append ${i}: ${outcome.status}`);
        expect(avroGets(calls), `iceberg commit ${i}`).toEqual([]);
        calls.length = 0;
        const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot!, (m) => {
          throw new Error(m);
        });
        expect(delta.deltaCommitted).toBe(true);
        expect(avroGets(calls), `delta version ${i}`).toEqual([]);
        const version = delta.deltaVersion!;
        if (version % 10 !== 0) {
          expect(deltaCommitGets(calls), `delta version ${i}`).toEqual([]);
          expect(calls.filter((c) => c.call === 'list'), `delta version ${i}`).toEqual([]);
        } else if (version > 10) {
          // A checkpoint (timed apart from the commit) replays from the one before it: only the
          // commits since then are read, and the log is not listed.
          const read = deltaCommitGets(calls).map((c) => Number(c.path.slice(-25, -5)));
          expect(Math.min(...read), `checkpoint ${version}`).toBe(version - 9);
          expect(calls.filter((c) => c.call === 'list'), `checkpoint ${version}`).toEqual([]);
        }
      }
      const metadata = (await lake.catalog.loadTable(ctx.ident)).metadata;
      // A commit merged the small manifests (read from memory above): the list stays short.
      const manifests = await readManifestList(lake.io, currentSnapshot(metadata)!['manifest-list']);
      expect(manifests.length).toBeLessThan(10);
      expect(metadata.snapshots).toHaveLength(22);
      await expectBothEqual(lake.table('io.appends'), Array.from({ length: 44 }, (_, i) => i));
    });
  });

  it('writes the Delta version a snapshot handed over its files for as its manifests on disk project it', async () => {
    await withLake(async (lake, _calls, warehouse) => {
      const table = lake.table('io.kinds');
      const rows = (n: number) =>
        Array.from({ length: 4 }, (_, i) => ({ id: n + i, region: ['eu', 'us'][i % 2], name: i === 3 ? null : `n${n + i} ü`, ts: `2024-0${1 + (i % 3)}-0${1 + i}T01:02:03.456789Z`, amount: (n + i) * 1.5 }));
      await table.append(rows(0), { partition: 'region' });
      await table.append(rows(10));
      await table.overwrite(rows(20));
      await table.append(rows(30));
      const metadata = (await lake.catalog.loadTable(identOf('io.kinds'))).metadata;
      // A FileIO of its own: nothing this process wrote is known to it.
      const fresh = new FileIO((uri) => storeForLocation(uri));
      for (const snapshot of metadata.snapshots) {
        const version = Number(snapshot.summary['delta-version']);
        const onDisk = parseCommit(readFileSync(join(warehouse, 'io', 'kinds', commitPath(version)), 'utf8'), commitPath(version));
        const fromManifests = await snapshotVersion(fresh, metadata, snapshot, version);
        expect(stringifyJson(onDisk), `version ${version}`).toBe(stringifyJson(fromManifests));
      }
      await expectBothEqual(table, [20, 21, 22, 23, 30, 31, 32, 33]);
    });
  });

  it('a write checks the tail of the Delta log without listing it once a checkpoint is there', async () => {
    await withLake(async (lake, calls) => {
      const table = lake.table('io.tail');
      for (let i = 0; i < 12; i++) await table.append([{ id: i }]);
      calls.length = 0;
      await table.append([{ id: 12 }]);
      expect(calls.filter((c) => c.call === 'list' && c.path.includes('_delta_log'))).toEqual([]);
      // The commits after the checkpoint at 10 are what the check reads.
      const read = new Set(deltaCommitGets(calls).map((c) => Number(c.path.slice(-25, -5))));
      expect([...read].sort((a, b) => a - b)).toEqual([10, 11, 12]);
      await expectBothEqual(table, Array.from({ length: 13 }, (_, i) => i));
    });
  });

  it('reads the Delta head when another process wrote it, and stays gap-free', async () => {
    await withLake(async (lake, calls, warehouse) => {
      const table = lake.table('io.shared');
      await table.append([{ id: 0 }]);
      await table.append([{ id: 1 }]);
      const other = await Lakehouse.open({ warehouse, onWarning: () => undefined });
      try {
        await other.table('io.shared').append([{ id: 2 }]);
      } finally {
        await other.close();
      }
      const ctx = contextOf(lake, 'io.shared');
      const base = await lake.catalog.loadTable(ctx.ident);
      const files = await filesOf(ctx, base.metadata, 3);
      const outcome = await new Transaction(ctx, [appendFiles(ctx, files)]).commit(base);
      if (outcome.status !== 'committed') throw new Error(outcome.status);
      calls.length = 0;
      const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot!, (m) => {
        throw new Error(m);
      });
      expect(delta.deltaVersion).toBe(4);
      // The head (version 3) is the other process's: read to learn what it mirrors.
      expect(deltaCommitGets(calls).map((c) => c.path.slice(-25))).toEqual(['00000000000000000003.json']);
      expect(ids(await table.read({ format: 'delta' }))).toEqual([0, 1, 2, 3, 4]);
      await expectBothEqual(table, [0, 1, 2, 3, 4]);
    });
  });
});
