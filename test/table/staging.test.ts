import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/**
 * The engine's output is staged under the engine's temp folder (`--temp-dir`), where the user
 * said there is room, and moved into the table through the store like every other file.
 */
describe('staged data files', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('are staged under the engine temp folder and go into the table through the store', async () => {
    const engineTemp = join(tmp.path, 'engine-temp');
    const seen: { path: string; stagingFolders: string[] }[] = [];
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      const faulty = new FaultyStore(store);
      faulty.failWhen = (call, path) => {
        const full = `${faulty.root}/${path}`;
        if (call === 'put' && full.includes('/data/')) {
          seen.push({ path: full, stagingFolders: readdirSync(engineTemp).filter((n) => n.startsWith('twinlake-staging-')) });
        }
        return false;
      };
      return { store: faulty, key };
    });
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh'), io, engine: { tempDir: engineTemp }, onWarning: () => undefined });
    try {
      const t = lake.table('ns.t');
      const result = await t.append(
        Array.from({ length: 30 }, (_, i) => ({ id: i, d: i % 3 })),
        { partition: 'd' },
      );
      expect(result.files).toBe(3);
      // Every data file went through the store while its staging folder lay under the engine's temp folder.
      expect(seen.map((s) => s.path.replace(/.*\/data\//, '').split('/')[0]).sort()).toEqual(['d=0', 'd=1', 'd=2']);
      for (const s of seen) expect(s.stagingFolders).toHaveLength(1);
      expect((await t.read()).length).toBe(30);
      // And the staging folder is gone afterwards.
      expect(readdirSync(engineTemp).filter((n) => n.startsWith('twinlake-staging-'))).toEqual([]);
    } finally {
      await lake.close();
    }
  });
});
