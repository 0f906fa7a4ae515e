import { afterAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Lakehouse } from '../../src/index.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/** Local storage that records every list and get call (a wrapper that fails nothing). */
function listingIO(): { io: FileIO; lists: string[]; gets: string[] } {
  const lists: string[] = [];
  const gets: string[] = [];
  const stores = new Map<string, FaultyStore>();
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri);
    let wrapped = stores.get(store.root);
    if (!wrapped) {
      wrapped = new FaultyStore(store);
      wrapped.failWhen = (call, path) => (call === 'list' ? lists.push(path) : call === 'get' && gets.push(path), false);
      stores.set(store.root, wrapped);
    }
    return { store: wrapped, key };
  });
  return { io, lists, gets };
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

  it('through Delta, finds the checkpoint _last_checkpoint names and reads only the commits after it, listing nothing', async () => {
    const writer = await Lakehouse.open({ warehouse: tmp.path });
    const t = writer.table('open.delta');
    for (let i = 0; i < 23; i++) await t.append([{ id: i }]);
    await writer.close();
    const dir = join(tmp.path, 'open', 'delta');
    const checkpoint = JSON.parse(readFileSync(join(dir, '_delta_log', '_last_checkpoint'), 'utf8')).version as number;
    const newest = Math.max(...readdirSync(join(dir, '_delta_log')).filter((f) => /^\d{20}\.json$/.test(f)).map((f) => Number(f.slice(0, 20))));
    expect(checkpoint).toBeGreaterThanOrEqual(20);

    const { io, lists, gets } = listingIO();
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, readOnly: true });
    try {
      const plan = await lake.table('open.delta').plan({ format: 'delta' });
      expect(plan.deltaVersion).toBe(newest);
      expect(plan.task.files).toHaveLength(23);
      expect(await lake.table('open.delta').count({ format: 'delta' })).toBe(23);
    } finally {
      await lake.close();
    }
    // The checkpoint and the commits after it are found by name: the log is not listed at all
    // (before, one block of versions at a time, never the whole log).
    expect(lists.filter((p) => p.includes('_delta_log/'))).toEqual([]);
    const commitsRead = gets.filter((p) => /_delta_log\/\d{20}\.json$/.test(p)).map((p) => Number(p.slice(-25, -5)));
    expect(commitsRead.length).toBeGreaterThan(0);
    for (const v of commitsRead) expect(v).toBeGreaterThanOrEqual(checkpoint);
  });
});
