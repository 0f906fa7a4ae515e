import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { ids } from '../both-formats.ts';
import { FaultyStore, type StoreCall } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/**
 * What opening a Delta table asks of the store once `_last_checkpoint` names a checkpoint: the
 * checkpoint and the commits after it are found by name, and the log is not listed (a listing
 * reads the whole `_delta_log/` folder on local disk, pages through it on S3). A hint whose
 * checkpoint is gone falls back to the listing.
 */
describe('opening a Delta log with a checkpoint', () => {
  type Call = { call: StoreCall; path: string };

  async function withTable(appends: number, f: (open: () => Promise<{ lake: Lakehouse; calls: Call[] }>, warehouse: string) => Promise<void>): Promise<void> {
    const tmp = tempDir();
    try {
      const writer = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => undefined });
      for (let i = 0; i < appends; i++) await writer.table('open.log').append([{ id: i }]);
      await writer.close();
      const opened: Lakehouse[] = [];
      try {
        await f(async () => {
          const calls: Call[] = [];
          const io = new FileIO((uri) => {
            const { store, key } = storeForLocation(uri);
            const recording = new FaultyStore(store);
            recording.failWhen = (call, path) => (calls.push({ call, path }), false);
            return { store: recording, key };
          });
          const lake = await Lakehouse.open({ warehouse: tmp.path, io, readOnly: true });
          opened.push(lake);
          return { lake, calls };
        }, tmp.path);
      } finally {
        for (const lake of opened) await lake.close();
      }
    } finally {
      tmp.cleanup();
    }
  }

  const logLists = (calls: Call[]) => calls.filter((c) => c.call === 'list' && c.path.includes('_delta_log'));

  it('reads the checkpoint and the commits after it by name, listing nothing', async () => {
    // 12 appends: version 0 creates the table, a checkpoint at 10, commits 11 and 12 after it.
    await withTable(12, async (open) => {
      const { lake, calls } = await open();
      const table = lake.table('open.log');
      const plan = await table.plan({ format: 'delta' });
      expect(plan.task.files).toHaveLength(12);
      expect(logLists(calls)).toEqual([]);
      const read = calls.filter((c) => c.call === 'get' && c.path.includes('_delta_log')).map((c) => c.path.slice(c.path.lastIndexOf('/') + 1));
      expect(read.sort()).toEqual(['00000000000000000010.checkpoint.parquet', '00000000000000000011.json', '00000000000000000012.json', '_last_checkpoint']);
      expect(ids(await table.read({ format: 'delta' }))).toEqual(Array.from({ length: 12 }, (_, i) => i));
    });
  });

  it('lists the log when a commit after the checkpoint is missing, and reports the gap', async () => {
    await withTable(14, async (open, warehouse) => {
      rmSync(join(warehouse, 'open', 'log', '_delta_log', '00000000000000000012.json'));
      const { lake, calls } = await open();
      const e = await lake.table('open.log').plan({ format: 'delta' }).then(() => undefined, (err: Error) => err);
      expect(e?.message).toMatch(/expected commit 12 between checkpoint 10 and version 14, found a gap/);
      expect(logLists(calls).length).toBeGreaterThan(0);
    });
  });

  it('lists the log when the checkpoint the hint names is gone', async () => {
    await withTable(12, async (open, warehouse) => {
      rmSync(join(warehouse, 'open', 'log', '_delta_log', '00000000000000000010.checkpoint.parquet'));
      const { lake, calls } = await open();
      const table = lake.table('open.log');
      expect(ids(await table.read({ format: 'delta' }))).toEqual(Array.from({ length: 12 }, (_, i) => i));
      expect(logLists(calls).length).toBeGreaterThan(0);
    });
  });
});
