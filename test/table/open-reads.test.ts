import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { Lakehouse } from '../../src/index.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/** Local storage that records every list call (a wrapper that fails nothing). */
function listingIO(): { io: FileIO; lists: string[] } {
  const lists: string[] = [];
  const stores = new Map<string, FaultyStore>();
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri);
    let wrapped = stores.get(store.root);
    if (!wrapped) {
      wrapped = new FaultyStore(store);
      wrapped.failWhen = (call, path) => (call === 'list' && lists.push(path), false);
      stores.set(store.root, wrapped);
    }
    return { store: wrapped, key };
  });
  return { io, lists };
}

describe('opening a table for a read', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('by path, follows the version hint to its metadata file without listing the metadata folder', async () => {
    const writer = await Lakehouse.open({ warehouse: tmp.path });
    const t = writer.table('open.hinted');
    for (let i = 0; i < 5; i++) await t.append([{ id: i }]);
    await writer.close();

    const { io, lists } = listingIO();
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, readOnly: true });
    try {
      const dir = join(tmp.path, 'open', 'hinted');
      const plan = await lake.planPath(dir, { format: 'iceberg' });
      expect(plan.task.files).toHaveLength(5);
      expect(await lake.readPath(dir)).toHaveLength(5);
      // The metadata folder holds a metadata file and a manifest list per commit, and more.
      expect(lists.filter((p) => /(^|\/)metadata\//.test(p))).toEqual([]);
    } finally {
      await lake.close();
    }
  });
});
