import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import type { Catalog } from '../../src/catalog/catalog.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { TwinlakeError } from '../../src/core/errors.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';
import { fileUri } from '../../src/core/uri.ts';
import { errorOf, tempDir } from '../helpers.ts';

/**
 * A catalog whose pointer update happened but whose caller hears `commit-state-unknown` (the
 * answer was lost): the files the commit named belong to the table now and must stay.
 */
describe('a commit whose outcome is unknown', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  async function open(name: string): Promise<{ lake: Lakehouse; failNext: () => void; inner: SqlCatalog }> {
    const dir = join(tmp.path, name);
    const inner = new SqlCatalog({ name: 'twinlake', dbPath: join(dir, 'catalog.db'), warehouse: { store: new LocalStore(dir), rootUri: fileUri(dir) } });
    let fail = false;
    const catalog = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'commitTable') {
          return async (...args: Parameters<Catalog['commitTable']>) => {
            const result = await target.commitTable(...args);
            if (fail && result.status === 'committed') {
              fail = false;
              throw new TwinlakeError('commit-state-unknown', 'sql catalog: injected: the pointer moved but the answer was lost');
            }
            return result;
          };
        }
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Catalog;
    const lake = await Lakehouse.open({ warehouse: dir, catalog, onWarning: () => undefined });
    return { lake, failNext: () => (fail = true), inner };
  }

  const parquetUnder = (dir: string): string[] => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.parquet'));

  it('keeps the files of an append, and the table stays readable', async () => {
    const { lake, failNext, inner } = await open('append');
    try {
      const t = lake.table('ns.t');
      await t.append([{ id: 1 }]);
      failNext();
      const e = await errorOf(t.append([{ id: 2 }, { id: 3 }]));
      expect(e).toMatchObject({ kind: 'commit-state-unknown' });
      expect(parquetUnder(join(tmp.path, 'append', 'ns', 't', 'data'))).toHaveLength(2);
      expect((await t.read()).map((r) => Number(r.id)).sort()).toEqual([1, 2, 3]);
    } finally {
      await lake.close();
      inner.close();
    }
  });

  it('keeps the files of a Delta-only write whose commit file was written but not confirmed', async () => {
    const dir = join(tmp.path, 'delta');
    let fail = false;
    // The commit file lands, then the store reports that it cannot tell whether it did.
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      const faulty = new FaultyStore(store);
      faulty.putIfAbsent = async (path, body) => {
        const won = await store.putIfAbsent(path, body);
        if (fail && won && `${faulty.root}/${path}`.includes('/_delta_log/')) {
          fail = false;
          throw new TwinlakeError('commit-state-unknown', 'injected: the commit file was written but the answer was lost');
        }
        return won;
      };
      return { store: faulty, key };
    });
    const lake = await Lakehouse.open({ warehouse: dir, io, onWarning: () => undefined });
    try {
      const t = lake.table('ns.d');
      await t.append([{ id: 1 }], { formats: ['delta'] });
      fail = true;
      const e = await errorOf(t.append([{ id: 2 }]));
      expect(e).toMatchObject({ kind: 'commit-state-unknown' });
      expect(parquetUnder(join(dir, 'ns', 'd'))).toHaveLength(2);
      expect((await t.read()).map((r) => Number(r.id)).sort()).toEqual([1, 2]);
    } finally {
      await lake.close();
    }
  });

  it('keeps the delete files of a merge-on-read delete', async () => {
    const { lake, failNext, inner } = await open('delete');
    try {
      const t = lake.table('ns.t');
      await t.append([{ id: 1 }, { id: 2 }, { id: 3 }], { properties: { 'format-version': '2', 'write.delete.mode': 'merge-on-read' } });
      failNext();
      const e = await errorOf(t.delete('id = 2'));
      expect(e).toMatchObject({ kind: 'commit-state-unknown' });
      expect(parquetUnder(join(tmp.path, 'delete', 'ns', 't', 'data')).filter((f) => f.endsWith('-deletes.parquet'))).toHaveLength(1);
      expect((await t.read()).map((r) => Number(r.id)).sort()).toEqual([1, 3]);
    } finally {
      await lake.close();
      inner.close();
    }
  });
});
