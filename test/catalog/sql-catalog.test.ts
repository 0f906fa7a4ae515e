import Database from 'better-sqlite3';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TableIdentifier } from '../../src/catalog/catalog.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { metadataFileVersion } from '../../src/catalog/metadata-files.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { MemoryStore } from '../../src/io/memory-store.ts';
import type { ObjectStore } from '../../src/io/object-store.ts';
import { serializeTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import { appendUpdates, catalogContract, sampleMetadata } from './catalog-contract.ts';
import { errorOf, repoRoot } from '../helpers.ts';
import { HookedStore } from '../faults.ts';

const t = (ns: string[], name: string): TableIdentifier => ({ namespace: ns, name });

async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-sql-catalog-'));
}

catalogContract('SqlCatalog on LocalStore', async () => {
  const dir = await tempDir();
  const store = new LocalStore(dir);
  const catalog = new SqlCatalog({ warehouse: { store, rootUri: store.root } });
  return {
    catalog,
    cleanup: async () => {
      catalog.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
});

catalogContract('SqlCatalog on MemoryStore', async () => {
  const dir = await tempDir();
  const store = new MemoryStore('contract');
  const catalog = new SqlCatalog({ warehouse: { store, rootUri: `${store.root}/warehouse` }, dbPath: path.join(dir, 'catalog.db') });
  return {
    catalog,
    cleanup: async () => {
      catalog.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
});

async function names(store: ObjectStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const m of store.list(prefix)) out.push(m.path.slice(prefix.length));
  return out;
}


describe('SqlCatalog', () => {
  let dir: string;
  let store: LocalStore;
  let catalog: SqlCatalog;
  beforeEach(async () => {
    dir = await tempDir();
    store = new LocalStore(dir);
    catalog = new SqlCatalog({ warehouse: { store, rootUri: store.root } });
  });
  afterEach(async () => {
    catalog.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('sets and removes namespace properties in one change, keeping the JDBC exists marker', async () => {
    await catalog.createNamespace(['a'], { owner: 'ada', tier: 'gold' });
    expect(await catalog.updateNamespaceProperties(['a'], ['tier', 'nope'], { owner: 'bob', team: 'web' })).toEqual({ updated: ['owner', 'team'], removed: ['tier'], missing: ['nope'] });
    expect(await catalog.loadNamespaceProperties(['a'])).toEqual({ owner: 'bob', team: 'web' });
    expect((await errorOf(catalog.updateNamespaceProperties(['a'], ['exists'], {}))).message).toBe('sql catalog: namespace property "exists" is reserved');
    expect((await errorOf(catalog.updateNamespaceProperties(['a'], ['team'], { team: 'x' }))).message).toBe('sql catalog: namespace property "team" is both set and removed');
    expect((await errorOf(catalog.updateNamespaceProperties(['zz'], [], { k: 'v' }))).kind).toBe('not-found');
    // The namespace still reads as one other engines see: its marker row is there.
    expect(await catalog.listNamespaces()).toEqual([['a']]);
  });

  it('lays tables out as <warehouse>/<ns levels>/<table>/metadata/v<N>.metadata.json with a version hint', async () => {
    await catalog.createNamespace(['a', 'b']);
    const created = await catalog.createTable(t(['a', 'b'], 'events'), sampleMetadata());
    expect(created.metadata.location).toBe(`file://${dir}/a/b/events`);
    expect(created.metadataLocation).toBe(`file://${dir}/a/b/events/metadata/v1.metadata.json`);
    expect(await fs.readFile(path.join(dir, 'a/b/events/metadata/version-hint.text'), 'utf8')).toBe('1');

    const r = await catalog.commitTable(t(['a', 'b'], 'events'), { requirements: [], updates: [{ action: 'set-properties', updates: { k: 'v' } }] });
    expect(r.status === 'committed' && r.metadataLocation).toBe(`file://${dir}/a/b/events/metadata/v2.metadata.json`);
    expect(await fs.readFile(path.join(dir, 'a/b/events/metadata/version-hint.text'), 'utf8')).toBe('2');
    const onDisk = JSON.parse(await fs.readFile(path.join(dir, 'a/b/events/metadata/v2.metadata.json'), 'utf8'));
    expect(onDisk['table-uuid']).toBe(created.metadata['table-uuid']);
    expect(onDisk.properties).toEqual({ k: 'v' });
    expect(onDisk['metadata-log']).toEqual([{ 'timestamp-ms': created.metadata['last-updated-ms'], 'metadata-file': created.metadataLocation }]);
    expect(catalog.dbPath).toBe(path.join(dir, 'catalog.db'));
  });

  it('keeps a caller-chosen table location', async () => {
    await catalog.createNamespace(['ns']);
    const metadata = { ...sampleMetadata(), location: `file://${dir}/elsewhere/t1` };
    const created = await catalog.createTable(t(['ns'], 't1'), metadata);
    expect(created.metadataLocation).toBe(`file://${dir}/elsewhere/t1/metadata/v1.metadata.json`);
  });

  it('writes the rows and columns that JDBC and PyIceberg readers expect', async () => {
    await catalog.createNamespace(['sales', 'eu'], { owner: 'ops' });
    const created = await catalog.createTable(t(['sales', 'eu'], 'orders'), sampleMetadata());
    const r = await catalog.commitTable(t(['sales', 'eu'], 'orders'), { requirements: [], updates: [{ action: 'set-properties', updates: { a: '1' } }] });
    if (r.status !== 'committed') throw new Error('commit failed');

    const db = new Database(path.join(dir, 'catalog.db'), { readonly: true });
    try {
      const tableCols = db.prepare(`PRAGMA table_info('iceberg_tables')`).all() as { name: string; type: string; notnull: number; pk: number }[];
      expect(tableCols.map((c) => [c.name, c.type, c.notnull, c.pk])).toEqual([
        ['catalog_name', 'VARCHAR(255)', 1, 1],
        ['table_namespace', 'VARCHAR(255)', 1, 2],
        ['table_name', 'VARCHAR(255)', 1, 3],
        ['metadata_location', 'VARCHAR(1000)', 0, 0],
        ['previous_metadata_location', 'VARCHAR(1000)', 0, 0],
      ]);
      const nsCols = db.prepare(`PRAGMA table_info('iceberg_namespace_properties')`).all() as { name: string; type: string; pk: number }[];
      expect(nsCols.map((c) => [c.name, c.type, c.pk])).toEqual([
        ['catalog_name', 'VARCHAR(255)', 1],
        ['namespace', 'VARCHAR(255)', 2],
        ['property_key', 'VARCHAR(255)', 3],
        ['property_value', 'VARCHAR(1000)', 0],
      ]);
      expect(db.prepare('SELECT * FROM iceberg_tables').all()).toEqual([
        {
          catalog_name: 'twinlake',
          table_namespace: 'sales.eu',
          table_name: 'orders',
          metadata_location: r.metadataLocation,
          previous_metadata_location: created.metadataLocation,
        },
      ]);
      expect(db.prepare('SELECT * FROM iceberg_namespace_properties ORDER BY property_key').all()).toEqual([
        { catalog_name: 'twinlake', namespace: 'sales.eu', property_key: 'exists', property_value: 'true' },
        { catalog_name: 'twinlake', namespace: 'sales.eu', property_key: 'owner', property_value: 'ops' },
      ]);
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
    // The reserved marker stays in the database, not in what callers see.
    expect(await catalog.loadNamespaceProperties(['sales', 'eu'])).toEqual({ owner: 'ops' });
  });

  it('keeps catalogs of different names in one file apart', async () => {
    await catalog.createNamespace(['ns']);
    await catalog.createTable(t(['ns'], 'mine'), sampleMetadata());
    const other = new SqlCatalog({ name: 'other', warehouse: { store, rootUri: `${store.root}/other` } });
    try {
      expect(await other.namespaceExists(['ns'])).toBe(false);
      expect(await other.listNamespaces()).toEqual([]);
      await other.createNamespace(['ns']);
      expect(await other.listTables(['ns'])).toEqual([]);
    } finally {
      other.close();
    }
  });

  it('reads a catalog file in the JDBC V1 layout written by another engine', async () => {
    catalog.close();
    await fs.rm(path.join(dir, 'catalog.db'), { force: true });
    await fs.rm(path.join(dir, 'catalog.db-wal'), { force: true });
    await fs.rm(path.join(dir, 'catalog.db-shm'), { force: true });
    const legacyMetadata = { ...sampleMetadata(), location: `file://${dir}/legacy/t` };
    const foreignName = `file://${dir}/legacy/t/metadata/00003-9b1c2d3e-aaaa-bbbb-cccc-000000000000.metadata.json`;
    await store.put('legacy/t/metadata/00003-9b1c2d3e-aaaa-bbbb-cccc-000000000000.metadata.json', serializeTableMetadata(legacyMetadata));
    const raw = new Database(path.join(dir, 'catalog.db'));
    raw.exec(`
      CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
        metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), PRIMARY KEY (catalog_name, table_namespace, table_name));
      ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5);
      CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL, namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255),
        property_value VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key));
    `);
    raw.prepare(`INSERT INTO iceberg_tables VALUES ('twinlake', 'legacy', 't', ?, NULL, NULL)`).run(foreignName);
    raw.prepare(`INSERT INTO iceberg_tables VALUES ('twinlake', 'legacy', 'a_view', 'file:///x/view.metadata.json', NULL, 'VIEW')`).run();
    raw.close();

    catalog = new SqlCatalog({ warehouse: { store, rootUri: store.root } });
    // A namespace known only through its tables exists, and so does nothing else.
    expect(await catalog.namespaceExists(['legacy'])).toBe(true);
    expect(await catalog.listTables(['legacy'])).toEqual([t(['legacy'], 't')]);
    expect(await catalog.tableExists(t(['legacy'], 'a_view'))).toBe(false);
    expect((await errorOf(catalog.loadTable(t(['legacy'], 'a_view')))).kind).toBe('not-found');
    expect((await errorOf(catalog.dropTable(t(['legacy'], 'a_view')))).kind).toBe('not-found');

    const r = await catalog.commitTable(t(['legacy'], 't'), { requirements: [], updates: [{ action: 'set-properties', updates: { x: 'y' } }] });
    expect(r.status === 'committed' && r.metadataLocation).toBe(`file://${dir}/legacy/t/metadata/v4.metadata.json`);
    await catalog.createTable(t(['legacy'], 'fresh'), sampleMetadata());

    const check = new Database(path.join(dir, 'catalog.db'), { readonly: true });
    try {
      const rows = check.prepare('SELECT table_name, iceberg_type, previous_metadata_location FROM iceberg_tables ORDER BY table_name').all();
      expect(rows).toEqual([
        { table_name: 'a_view', iceberg_type: 'VIEW', previous_metadata_location: null },
        { table_name: 'fresh', iceberg_type: 'TABLE', previous_metadata_location: null },
        { table_name: 't', iceberg_type: null, previous_metadata_location: foreignName },
      ]);
    } finally {
      check.close();
    }
  });

  it('steps over a metadata file name left behind by a crashed writer', async () => {
    await catalog.createNamespace(['ns']);
    await catalog.createTable(t(['ns'], 'c'), sampleMetadata());
    await store.put('ns/c/metadata/v2.metadata.json', 'half-written garbage');
    const r = await catalog.commitTable(t(['ns'], 'c'), { requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] });
    expect(r.status === 'committed' && r.metadataLocation).toBe(`file://${dir}/ns/c/metadata/v3.metadata.json`);
    expect(new TextDecoder().decode(await store.get('ns/c/metadata/v2.metadata.json'))).toBe('half-written garbage');
    expect(await fs.readFile(path.join(dir, 'ns/c/metadata/version-hint.text'), 'utf8')).toBe('3');
  });

  it('does not reuse the metadata files of a dropped table of the same name', async () => {
    await catalog.createNamespace(['ns']);
    const first = await catalog.createTable(t(['ns'], 'r'), sampleMetadata());
    for (const k of ['a', 'b', 'c', 'd']) await catalog.commitTable(t(['ns'], 'r'), { requirements: [], updates: [{ action: 'set-properties', updates: { [k]: k } }] });
    await catalog.dropTable(t(['ns'], 'r'));
    const second = await catalog.createTable(t(['ns'], 'r'), sampleMetadata());
    expect(second.metadataLocation).toBe(`file://${dir}/ns/r/metadata/v6.metadata.json`);
    expect(second.metadata['table-uuid']).not.toBe(first.metadata['table-uuid']);
    expect(await fs.readFile(path.join(dir, 'ns/r/metadata/version-hint.text'), 'utf8')).toBe('6');
  });

  it('loses the compare-and-swap to a commit that lands first, and removes its own file', async () => {
    const shared = new MemoryStore('cas');
    const hooked = new HookedStore(shared);
    const dbPath = path.join(dir, 'cas.db');
    const a = new SqlCatalog({ warehouse: { store: hooked, rootUri: shared.root }, dbPath });
    const b = new SqlCatalog({ warehouse: { store: shared, rootUri: shared.root }, dbPath });
    try {
      await a.createNamespace(['ns']);
      await a.createTable(t(['ns'], 't'), sampleMetadata());
      hooked.beforeCreate = async () => {
        const r = await b.commitTable(t(['ns'], 't'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'b' } }] });
        expect(r.status).toBe('committed');
      };
      const lost = await a.commitTable(t(['ns'], 't'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'a' } }] });
      expect(lost.status).toBe('conflict');
      if (lost.status === 'conflict') expect(lost.reason).toMatch(/concurrent commit.*v1\.metadata\.json.*v2\.metadata\.json/);
      expect(await names(shared, 'ns/t/metadata/')).toEqual(['v1.metadata.json', 'v2.metadata.json', 'version-hint.text']);
      const now = await a.loadTable(t(['ns'], 't'));
      expect(now.metadata.properties.by).toBe('b');
    } finally {
      a.close();
      b.close();
    }
  });

  it('treats an empty list of updates as a commit that changes nothing', async () => {
    await catalog.createNamespace(['ns']);
    const created = await catalog.createTable(t(['ns'], 'n'), sampleMetadata());
    const r = await catalog.commitTable(t(['ns'], 'n'), { requirements: [{ type: 'assert-table-uuid', uuid: created.metadata['table-uuid'] }], updates: [] });
    expect(r.status === 'committed' && r.metadataLocation).toBe(created.metadataLocation);
    expect(await names(store, 'ns/n/metadata/')).toEqual(['v1.metadata.json', 'version-hint.text']);
  });

  it('reports a sequence number taken by another commit as a conflict', async () => {
    await catalog.createNamespace(['ns']);
    const created = await catalog.createTable(t(['ns'], 's'), sampleMetadata());
    expect((await catalog.commitTable(t(['ns'], 's'), { requirements: [], updates: appendUpdates(created.metadata, 1n) })).status).toBe('committed');
    const stale = await catalog.commitTable(t(['ns'], 's'), { requirements: [], updates: appendUpdates(created.metadata, 2n) });
    expect(stale.status).toBe('conflict');
  });

  it('purges the table folder only when asked', async () => {
    await catalog.createNamespace(['ns']);
    await catalog.createTable(t(['ns'], 'keep'), sampleMetadata());
    await catalog.createTable(t(['ns'], 'purge'), sampleMetadata());
    await catalog.createTable(t(['ns'], 'purge2'), sampleMetadata());
    await store.put('ns/purge/data/part-0.parquet', 'data');
    await catalog.dropTable(t(['ns'], 'keep'));
    await catalog.dropTable(t(['ns'], 'purge'), { purge: true });
    expect(await names(store, 'ns/keep/')).toEqual(['metadata/v1.metadata.json', 'metadata/version-hint.text']);
    expect(await names(store, 'ns/purge/')).toEqual([]);
    // A sibling whose name starts the same is not touched.
    expect(await names(store, 'ns/purge2/')).toEqual(['metadata/v1.metadata.json', 'metadata/version-hint.text']);
  });

  it('says which metadata file is missing when the catalog points at nothing', async () => {
    await catalog.createNamespace(['ns']);
    const created = await catalog.createTable(t(['ns'], 'm'), sampleMetadata());
    await store.delete('ns/m/metadata/v1.metadata.json');
    const e = await errorOf(catalog.loadTable(t(['ns'], 'm')));
    expect(e.kind).toBe('data-invalid');
    expect(e.message).toContain(created.metadataLocation);
    expect((await errorOf(catalog.registerTable(t(['ns'], 'm2'), created.metadataLocation))).kind).toBe('not-found');
  });

  it('needs a dbPath when the warehouse is not on local disk', async () => {
    const e = await errorOf(() => new SqlCatalog({ warehouse: { store: new MemoryStore(), rootUri: 'memory://default' } }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toMatch(/dbPath/);
  });

  it('fails with a clear io error when the database cannot be created', async () => {
    await fs.writeFile(path.join(dir, 'blocker'), 'a file, not a folder');
    const e = await errorOf(() => new SqlCatalog({ warehouse: { store, rootUri: store.root }, dbPath: path.join(dir, 'blocker', 'catalog.db') }));
    expect(e.kind).toBe('io');
    expect(e.message).toContain(path.join(dir, 'blocker', 'catalog.db'));
  });

  it('loses no commit when two processes commit to one catalog file at the same time', async () => {
    await catalog.createNamespace(['ns']);
    const created = await catalog.createTable(t(['ns'], 'shared'), sampleMetadata());
    const perProcess = 8;
    const startAt = Date.now() + 2000;
    const script = `
      const { SqlCatalog } = await import(${JSON.stringify(path.join(repoRoot, 'src/catalog/sql-catalog.ts'))});
      const { LocalStore } = await import(${JSON.stringify(path.join(repoRoot, 'src/io/local-store.ts'))});
      const [dir, who, startAt, count] = process.argv.slice(1);
      const store = new LocalStore(dir);
      const catalog = new SqlCatalog({ warehouse: { store, rootUri: store.root } });
      const id = { namespace: ['ns'], name: 'shared' };
      while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
      let conflicts = 0;
      for (let i = 0; i < Number(count); i++) {
        for (;;) {
          const r = await catalog.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { [who + i]: 'x' } }] });
          if (r.status === 'committed') break;
          conflicts++;
        }
      }
      catalog.close();
      process.stdout.write(JSON.stringify({ conflicts }));
    `;
    const run = (who: string) =>
      new Promise<{ conflicts: number }>((resolve, reject) => {
        execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, '--', dir, who, String(startAt), String(perProcess)], { cwd: repoRoot, timeout: 60_000 }, (err, stdout, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
        );
      });
    await Promise.all([run('a'), run('b')]);

    const final = await catalog.loadTable(t(['ns'], 'shared'));
    const expected = Object.fromEntries(['a', 'b'].flatMap((w) => Array.from({ length: perProcess }, (_, i) => [w + i, 'x'])));
    expect(final.metadata.properties).toEqual(expected);
    // Versions only grow; one may be skipped when a loser's file still held the next name.
    const log = [...final.metadata['metadata-log'].map((e) => e['metadata-file']), final.metadataLocation];
    expect(log).toHaveLength(2 * perProcess + 1);
    expect(log[0]).toBe(created.metadataLocation);
    const versions = log.map(metadataFileVersion);
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
    for (const uri of log) expect(uri.startsWith(`file://${dir}/ns/shared/metadata/v`)).toBe(true);
    // Files of lost attempts were removed: exactly the committed versions remain.
    const files = (await names(store, 'ns/shared/metadata/')).filter((n) => n.endsWith('.metadata.json'));
    expect(files.sort()).toEqual(log.map((uri) => uri.slice(uri.lastIndexOf('/') + 1)).sort());
    expect(await fs.readFile(path.join(dir, 'ns/shared/metadata/version-hint.text'), 'utf8')).toBe(String(versions.at(-1)));
  }, 90_000);
});

describe('metadataFileVersion', () => {
  it('reads the version of our names and of Java/PyIceberg names', () => {
    expect(metadataFileVersion('file:///w/t/metadata/v12.metadata.json')).toBe(12);
    expect(metadataFileVersion('s3://b/t/metadata/v3.gz.metadata.json')).toBe(3);
    expect(metadataFileVersion('file:///w/t/metadata/00007-1f2e3d4c-0000-4000-8000-123456789abc.metadata.json')).toBe(7);
    expect(metadataFileVersion('file:///w/t/metadata/something.json')).toBe(0);
  });
});
