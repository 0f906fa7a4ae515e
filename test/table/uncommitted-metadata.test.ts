import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Lakehouse } from '../../src/index.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';
import { errorOf, tempDir } from '../helpers.ts';

describe('no uncommitted metadata is visible to a reader by path', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('a crash during table creation, after v1.metadata.json and before the catalog commit, shows no rows', async () => {
    // Storage stops right after the new table's first metadata file is written, as the process
    // does when it crashes there: no catalog row, no version hint, and nothing cleaned up.
    let crashed = false;
    const stop = (store: FaultyStore) => {
      store.failWhen = (call, path) => {
        if (crashed) return true;
        if (call === 'putIfAbsent' && path.endsWith('/metadata/v1.metadata.json')) crashed = true;
        return false;
      };
      return store;
    };
    const store = stop(new FaultyStore(new LocalStore(tmp.path)));
    const io = new FileIO((uri) => {
      const { store: inner, key } = storeForLocation(uri);
      return { store: stop(new FaultyStore(inner)), key };
    });
    const catalog = new SqlCatalog({ name: 'twinlake', dbPath: join(tmp.path, 'catalog.db'), warehouse: { store, rootUri: store.root } });
    const writer = await Lakehouse.open({ warehouse: tmp.path, catalog, io, onWarning: () => {} });
    const rows = Array.from({ length: 10_000 }, (_, i) => ({ id: i }));
    try {
      await errorOf(writer.table('crash.created').append(rows));
    } finally {
      await writer.close();
      catalog.close();
    }
    expect(store.failures.length).toBeGreaterThan(0);
    expect(crashed).toBe(true);
    // The data files of the crashed write are still there (nothing cleaned up after the crash).
    expect(readdirSync(join(tmp.path, 'crash', 'created', 'data'), { recursive: true }).some((f) => String(f).endsWith('.parquet'))).toBe(true);
    const metadataDir = join(tmp.path, 'crash', 'created', 'metadata');
    expect(readdirSync(metadataDir)).toContain('v1.metadata.json');
    expect(existsSync(join(metadataDir, 'version-hint.text'))).toBe(false);

    const lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => {} });
    try {
      expect(await lake.listTables()).not.toContain('crash.created');
      const e = await errorOf(lake.readPath(join(tmp.path, 'crash', 'created')));
      expect(e.kind).toBe('not-found');
      // The next create of the same name commits its own metadata and shows only its rows.
      await lake.table('crash.created').append([{ id: 1 }]);
      expect(await lake.readPath(join(tmp.path, 'crash', 'created'))).toEqual([{ id: 1 }]);
    } finally {
      await lake.close();
    }
  });

  it('a metadata file beyond the version hint (a commit that lost or crashed) is not read by path', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => {} });
    try {
      const t = lake.table('crash.beyond');
      await t.append([{ id: 1 }]);
      await t.append([{ id: 2 }]);
      const dir = join(tmp.path, 'crash', 'beyond');
      const before = await lake.readPath(dir);
      expect(before).toHaveLength(2);
      // A leftover beyond the hint, as a lost compare-and-swap or a crash before the swap leaves
      // it; it shows other rows (those of the table's first version) than the committed metadata.
      const { copyFileSync, writeFileSync, readFileSync } = await import('node:fs');
      const hint = readFileSync(join(dir, 'metadata', 'version-hint.text'), 'utf8').trim();
      copyFileSync(join(dir, 'metadata', `v${Number(hint) - 1}.metadata.json`), join(dir, 'metadata', `v${Number(hint) + 5}.metadata.json`));
      expect(await lake.readPath(dir)).toHaveLength(2);
      // A hint naming a missing file falls back to the newest committed one, never beyond it.
      writeFileSync(join(dir, 'metadata', 'version-hint.text'), String(Number(hint) + 1));
      expect(await lake.readPath(dir)).toHaveLength(2);
    } finally {
      await lake.close();
    }
  });
});
