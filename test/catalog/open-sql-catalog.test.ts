import Database from 'better-sqlite3';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqlCatalog } from '../../src/catalog/open-sql-catalog.ts';
import { redactedUri } from '../../src/catalog/postgres-driver.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { errorOf } from '../helpers.ts';
import { sampleMetadata } from './catalog-contract.ts';

describe('openSqlCatalog', () => {
  let dir: string;
  let store: LocalStore;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-open-sql-'));
    store = new LocalStore(dir);
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  for (const form of ['a path', 'a file: URI'] as const) {
    it(`opens a SQLite file given as ${form}, the catalog and the Delta registry in it`, async () => {
      const file = path.join(dir, 'sub', 'lake.db');
      const uri = form === 'a path' ? file : `file://${file}`;
      const { catalog, deltaRegistry } = await openSqlCatalog({ uri, name: 'prod', warehouse: { store, rootUri: store.root } });
      try {
        await catalog.createNamespace(['ns']);
        await catalog.createTable({ namespace: ['ns'], name: 'ice' }, sampleMetadata());
        await deltaRegistry.register({ namespace: ['ns'], name: 'dl' }, `${store.root}/ns/dl`);
        expect(catalog.dbPath).toBe(file);
        expect(await deltaRegistry.list()).toEqual([{ namespace: ['ns'], name: 'dl' }]);
      } finally {
        await catalog.close();
        await deltaRegistry.close();
      }
      const db = new Database(file, { readonly: true });
      try {
        expect(db.prepare('SELECT catalog_name, table_name FROM iceberg_tables').all()).toEqual([{ catalog_name: 'prod', table_name: 'ice' }]);
        expect(db.prepare('SELECT catalog_name, table_name, location FROM twinlake_delta_tables').all()).toEqual([
          { catalog_name: 'prod', table_name: 'dl', location: `${store.root}/ns/dl` },
        ]);
      } finally {
        db.close();
      }
    });
  }

  it('refuses a URI of another database, without its password', async () => {
    const e = await errorOf(openSqlCatalog({ uri: 'mysql://root:hunter2@db:3306/lake', warehouse: { store, rootUri: store.root } }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toBe('sql catalog: expected a SQLite file or a postgresql:// URI, found mysql://db:3306/lake');
    expect((await errorOf(openSqlCatalog({ uri: ' ', warehouse: { store, rootUri: store.root } }))).kind).toBe('invalid-input');
  });
});

describe('redactedUri', () => {
  it('shows user, host, port and database, never a password', () => {
    expect(redactedUri('postgresql://ada:s3cret@db.example.com:6543/lake')).toBe('postgresql://ada@db.example.com:6543/lake');
    expect(redactedUri('postgres://ada:s3cret@db/lake')).toBe('postgresql://ada@db:5432/lake');
    expect(redactedUri('postgresql://ada:p%40ss@db/lake?sslmode=require&password=other')).toBe('postgresql://ada@db:5432/lake?sslmode=require');
    expect(redactedUri('postgresql:///lake?host=/var/run/postgresql')).toBe('postgresql://localhost:5432/lake?host=/var/run/postgresql');
  });
});
