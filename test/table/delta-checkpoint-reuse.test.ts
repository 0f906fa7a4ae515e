import { copyFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { ids } from '../both-formats.ts';
import { FaultyStore, type StoreCall } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/**
 * A Delta checkpoint is decoded once per process while its file stays the same: a second read
 * of the table (a new Lakehouse too) reads only `_last_checkpoint`, the log's tail and the
 * commits after the checkpoint; a checkpoint file that changed is decoded again.
 */
describe('reading a delta table again', () => {
  it('does not read its checkpoint again while the file is the same, and reads a changed one', async () => {
    const tmp = tempDir();
    const calls: { call: StoreCall; path: string }[] = [];
    const io = () =>
      new FileIO((uri) => {
        const { store, key } = storeForLocation(uri);
        const recording = new FaultyStore(store);
        recording.failWhen = (call, path) => (calls.push({ call, path }), false);
        return { store: recording, key };
      });
    const checkpointGets = () => calls.filter((c) => c.call === 'get' && /\.checkpoint\.parquet$/.test(c.path));
    try {
      const writer = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => undefined });
      const t = writer.table('cp.t');
      for (let i = 0; i < 11; i++) await t.append([{ id: i }]);
      await writer.close();
      const log = join(tmp.path, 'cp', 't', '_delta_log');
      expect(readdirSync(log)).toContain(`${String(10).padStart(20, '0')}.checkpoint.parquet`);

      for (let round = 0; round < 2; round++) {
        const lake = await Lakehouse.open({ warehouse: tmp.path, io: io(), readOnly: true });
        calls.length = 0;
        expect(ids(await lake.table('cp.t').read({ format: 'delta' }))).toEqual([...Array(11).keys()]);
        // The first read in the process decodes the checkpoint; the second finds it decoded.
        expect(checkpointGets(), `round ${round}`).toHaveLength(round === 0 ? 1 : 0);
        await lake.close();
      }

      // A checkpoint file that changed (here: replaced by the checkpoint of the same table written
      // again, with another modification time) is read again.
      const name = `${String(10).padStart(20, '0')}.checkpoint.parquet`;
      copyFileSync(join(log, name), join(tmp.path, 'copy.parquet'));
      await new Promise((r) => setTimeout(r, 20));
      copyFileSync(join(tmp.path, 'copy.parquet'), join(log, name));
      const lake = await Lakehouse.open({ warehouse: tmp.path, io: io(), readOnly: true });
      calls.length = 0;
      expect(ids(await lake.table('cp.t').read({ format: 'delta' }))).toEqual([...Array(11).keys()]);
      expect(checkpointGets()).toHaveLength(1);
      await lake.close();
    } finally {
      tmp.cleanup();
    }
  });
});
