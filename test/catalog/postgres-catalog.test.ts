import { execFile } from 'node:child_process';
import { existsSync, promises as fs } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TableIdentifier } from '../../src/catalog/catalog.ts';
import { openSqlCatalog } from '../../src/catalog/open-sql-catalog.ts';
import { metadataFileVersion } from '../../src/catalog/metadata-files.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { serializeTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { errorOf, repoRoot } from '../helpers.ts';
import { freePort } from '../servers/ports.ts';
import { type PostgresServer, postgresMissing, startPostgres } from '../servers/postgres.ts';
import { appendUpdates, catalogContract, sampleMetadata } from './catalog-contract.ts';

const missing = postgresMissing();
// Without PostgreSQL these tests skip, except in CI, where a missing server is a failure.
const skip = missing !== undefined && !process.env.CI;
if (skip) console.warn(`test/catalog/postgres-catalog.test.ts: PostgreSQL tests skipped: ${missing}`);

const t = (ns: string[], name: string): TableIdentifier => ({ namespace: ns, name });

async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-pg-catalog-'));
}

/** Runs statements on a database directly, as another engine (Spark, Trino, PyIceberg) would see it. */
async function withClient<T>(uri: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: uri });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe.skipIf(skip)(`SqlCatalog on PostgreSQL${skip ? ` (skipped: ${missing})` : ''}`, () => {
  let server: PostgresServer;
  let databases = 0;
  /** A database of its own, for tests that look at the whole of it. */
  const freshDatabase = () => server.createDatabase(`t${++databases}`);

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  // Every contract test gets a catalog name of its own in one database: that is also what keeps
  // the catalogs of one database apart.
  let contractRuns = 0;
  catalogContract('SqlCatalog on PostgreSQL', async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri: server.uri(), name: `contract-${++contractRuns}`, warehouse: { store, rootUri: store.root } });
    return {
      catalog,
      cleanup: async () => {
        await catalog.close();
        await deltaRegistry.close();
        await fs.rm(dir, { recursive: true, force: true });
      },
    };
  });

  it('writes the tables, columns and rows of the JDBC catalog, scoped by catalog_name', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    const other = await openSqlCatalog({ uri: uri.replace(/^postgresql:/, 'postgres:'), name: 'other', warehouse: { store, rootUri: `${store.root}/other` } });
    try {
      await catalog.createNamespace(['sales', 'eu'], { owner: 'ops' });
      const created = await catalog.createTable(t(['sales', 'eu'], 'orders'), sampleMetadata());
      const r = await catalog.commitTable(t(['sales', 'eu'], 'orders'), { requirements: [], updates: [{ action: 'set-properties', updates: { a: '1' } }] });
      if (r.status !== 'committed') throw new Error('commit failed');
      expect(await other.catalog.namespaceExists(['sales', 'eu'])).toBe(false);
      await other.catalog.createNamespace(['sales', 'eu']);
      expect(await other.catalog.listTables(['sales', 'eu'])).toEqual([]);

      await withClient(uri, async (c) => {
        const columns = async (table: string) =>
          (
            await c.query(
              `SELECT column_name, data_type, character_maximum_length AS len, is_nullable FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
              [table],
            )
          ).rows.map((x) => [x.column_name, x.data_type, x.len, x.is_nullable]);
        const primaryKey = async (table: string) =>
          (
            await c.query(
              `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
               WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
              [table],
            )
          ).rows.map((x) => x.attname);
        expect(await columns('iceberg_tables')).toEqual([
          ['catalog_name', 'character varying', 255, 'NO'],
          ['table_namespace', 'character varying', 255, 'NO'],
          ['table_name', 'character varying', 255, 'NO'],
          ['metadata_location', 'character varying', 1000, 'YES'],
          ['previous_metadata_location', 'character varying', 1000, 'YES'],
        ]);
        expect(await primaryKey('iceberg_tables')).toEqual(['catalog_name', 'table_namespace', 'table_name']);
        expect(await columns('iceberg_namespace_properties')).toEqual([
          ['catalog_name', 'character varying', 255, 'NO'],
          ['namespace', 'character varying', 255, 'NO'],
          // A primary key column is NOT NULL in PostgreSQL, as in every JDBC catalog database.
          ['property_key', 'character varying', 255, 'NO'],
          ['property_value', 'character varying', 1000, 'YES'],
        ]);
        expect(await primaryKey('iceberg_namespace_properties')).toEqual(['catalog_name', 'namespace', 'property_key']);
        expect((await c.query('SELECT * FROM iceberg_tables')).rows).toEqual([
          {
            catalog_name: 'twinlake',
            table_namespace: 'sales.eu',
            table_name: 'orders',
            metadata_location: r.metadataLocation,
            previous_metadata_location: created.metadataLocation,
          },
        ]);
        expect((await c.query('SELECT * FROM iceberg_namespace_properties ORDER BY catalog_name, property_key')).rows).toEqual([
          { catalog_name: 'other', namespace: 'sales.eu', property_key: 'exists', property_value: 'true' },
          { catalog_name: 'twinlake', namespace: 'sales.eu', property_key: 'exists', property_value: 'true' },
          { catalog_name: 'twinlake', namespace: 'sales.eu', property_key: 'owner', property_value: 'ops' },
        ]);
        // Delta-only tables live in a table of their own, where Iceberg readers never look.
        expect((await c.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)).rows.map((x) => x.table_name)).toEqual([
          'iceberg_namespace_properties',
          'iceberg_tables',
          'twinlake_delta_tables',
        ]);
      });
      expect(await catalog.loadNamespaceProperties(['sales', 'eu'])).toEqual({ owner: 'ops' });
      expect(catalog.dbPath).toBe(`postgresql://twinlake@127.0.0.1:${server.port}/t${databases}`);
    } finally {
      await catalog.close();
      await deltaRegistry.close();
      await other.catalog.close();
      await other.deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a database in the JDBC V1 layout: views stay hidden, new rows are marked TABLE', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const foreign = `file://${dir}/legacy/t/metadata/00003-9b1c2d3e-aaaa-bbbb-cccc-000000000000.metadata.json`;
    await store.put('legacy/t/metadata/00003-9b1c2d3e-aaaa-bbbb-cccc-000000000000.metadata.json', serializeTableMetadata({ ...sampleMetadata(), location: `file://${dir}/legacy/t` }));
    await withClient(uri, async (c) => {
      await c.query(`CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL,
        metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5), PRIMARY KEY (catalog_name, table_namespace, table_name))`);
      await c.query(`CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL, namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255),
        property_value VARCHAR(1000), PRIMARY KEY (catalog_name, namespace, property_key))`);
      await c.query(`INSERT INTO iceberg_tables VALUES ('twinlake', 'legacy', 't', $1, NULL, NULL), ('twinlake', 'legacy', 'a_view', 'file:///x/view.metadata.json', NULL, 'VIEW')`, [foreign]);
    });
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    try {
      expect(await catalog.listTables(['legacy'])).toEqual([t(['legacy'], 't')]);
      expect(await catalog.tableExists(t(['legacy'], 'a_view'))).toBe(false);
      expect((await errorOf(catalog.dropTable(t(['legacy'], 'a_view')))).kind).toBe('not-found');
      const r = await catalog.commitTable(t(['legacy'], 't'), { requirements: [], updates: [{ action: 'set-properties', updates: { x: 'y' } }] });
      expect(r.status === 'committed' && r.metadataLocation).toBe(`file://${dir}/legacy/t/metadata/v4.metadata.json`);
      await catalog.createTable(t(['legacy'], 'fresh'), sampleMetadata());
      const rows = await withClient(uri, async (c) => (await c.query('SELECT table_name, iceberg_type, previous_metadata_location FROM iceberg_tables ORDER BY table_name')).rows);
      expect(rows).toEqual([
        { table_name: 'a_view', iceberg_type: 'VIEW', previous_metadata_location: null },
        { table_name: 'fresh', iceberg_type: 'TABLE', previous_metadata_location: null },
        { table_name: 't', iceberg_type: null, previous_metadata_location: foreign },
      ]);
    } finally {
      await catalog.close();
      await deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  /**
   * Another committer's UPDATE holds the row's lock, uncommitted; ours waits on it. At READ
   * COMMITTED PostgreSQL then re-checks our WHERE against the row as the other transaction left it:
   * committed, our expected metadata_location no longer matches and we lose; rolled back, we win.
   */
  for (const outcome of ['COMMIT', 'ROLLBACK'] as const) {
    it(`re-checks the compare-and-swap against a concurrent commit that ends with ${outcome}`, async () => {
      const uri = await freshDatabase();
      const dir = await tempDir();
      const store = new LocalStore(dir);
      const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
      const other = new pg.Client({ connectionString: uri });
      await other.connect();
      // pg_stat_activity is read as of a transaction's start, so it is watched from outside theirs.
      const watcher = new pg.Client({ connectionString: uri });
      await watcher.connect();
      try {
        await catalog.createNamespace(['ns']);
        const created = await catalog.createTable(t(['ns'], 'race'), sampleMetadata());
        const theirs = `file://${dir}/ns/race/metadata/v9.metadata.json`;
        await store.put('ns/race/metadata/v9.metadata.json', serializeTableMetadata({ ...created.metadata, properties: { by: 'them' } }));
        await other.query('BEGIN');
        const held = await other.query(
          `UPDATE iceberg_tables SET metadata_location = $1, previous_metadata_location = $2 WHERE catalog_name = 'twinlake' AND table_namespace = 'ns' AND table_name = 'race' AND metadata_location = $2`,
          [theirs, created.metadataLocation],
        );
        expect(held.rowCount).toBe(1);

        const ours = catalog.commitTable(t(['ns'], 'race'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'us' } }] });
        // Our UPDATE is waiting for their row lock (not merely not yet sent).
        const deadline = Date.now() + 5_000;
        for (;;) {
          const waiting = await watcher.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE iceberg_tables%'`);
          if (waiting.rowCount === 1) break;
          if (Date.now() > deadline) throw new Error(`the catalog never waited for the row lock: ${JSON.stringify((await watcher.query('SELECT state, wait_event_type, query FROM pg_stat_activity')).rows)}`);
          await new Promise((r) => setTimeout(r, 20));
        }
        await other.query(outcome);
        const result = await ours;
        const after = await catalog.loadTable(t(['ns'], 'race'));
        if (outcome === 'COMMIT') {
          expect(result.status).toBe('conflict');
          if (result.status === 'conflict') expect(result.reason).toContain(theirs);
          expect(after.metadataLocation).toBe(theirs);
          expect(after.metadata.properties).toEqual({ by: 'them' });
          // The loser's metadata file is gone again.
          expect(existsSync(path.join(dir, 'ns/race/metadata/v2.metadata.json'))).toBe(false);
        } else {
          expect(result.status).toBe('committed');
          expect(after.metadataLocation).toBe(`file://${dir}/ns/race/metadata/v2.metadata.json`);
          expect(after.metadata.properties).toEqual({ by: 'us' });
        }
      } finally {
        await other.end();
        await watcher.end();
        await catalog.close();
        await deltaRegistry.close();
        await fs.rm(dir, { recursive: true, force: true });
      }
    });
  }

  it('reports a commit whose connection was lost before COMMIT as not made, and removes its file', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    const holder = new pg.Client({ connectionString: uri });
    await holder.connect();
    const admin = new pg.Client({ connectionString: uri });
    await admin.connect();
    try {
      await catalog.createNamespace(['ns']);
      const created = await catalog.createTable(t(['ns'], 'cut'), sampleMetadata());
      // Hold the row so our UPDATE waits, then end our connection from the server's side.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM iceberg_tables WHERE table_name = 'cut' FOR UPDATE`);
      const ours = errorOf(catalog.commitTable(t(['ns'], 'cut'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'us' } }] }));
      const deadline = Date.now() + 20_000;
      for (;;) {
        const { rowCount } = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE iceberg_tables%'`);
        if (rowCount === 1) break;
        if (Date.now() > deadline) throw new Error('the commit never waited for the row lock');
        await new Promise((r) => setTimeout(r, 20));
      }
      const e = await ours;
      await holder.query('ROLLBACK');
      expect(e.kind).toBe('io');
      expect(e.message).toMatch(/^catalog: lost the connection to postgresql:\/\/twinlake@127\.0\.0\.1:\d+\/t\d+ while committing ns\.cut \(terminating connection due to administrator command\)$/);
      const after = await catalog.loadTable(t(['ns'], 'cut'));
      expect(after.metadataLocation).toBe(created.metadataLocation);
      expect(await fs.readdir(path.join(dir, 'ns/cut/metadata'))).toEqual(['v1.metadata.json', 'version-hint.text']);
      // The pool replaced the lost connection: the next commit goes through.
      expect((await catalog.commitTable(t(['ns'], 'cut'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'us' } }] })).status).toBe('committed');
    } finally {
      await holder.end();
      await admin.end();
      await catalog.close();
      await deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a commit whose connection was lost during COMMIT as of unknown outcome, keeping its file', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    // A loopback relay to the server that can cut the connection as COMMIT passes through it.
    let cutAtCommit = false;
    const relay = net.createServer((client) => {
      const upstream = net.connect(server.port, '127.0.0.1');
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      upstream.pipe(client);
      client.on('data', (chunk: Buffer) => {
        // A simple-protocol Query message ('Q') whose text is COMMIT.
        if (cutAtCommit && chunk[0] === 0x51 && chunk.includes('COMMIT\0')) {
          cutAtCommit = false;
          client.destroy();
          upstream.destroy();
          return;
        }
        upstream.write(chunk);
      });
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const relayPort = (relay.address() as net.AddressInfo).port;
    const viaRelay = uri.replace(`:${server.port}/`, `:${relayPort}/`);
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri: viaRelay, warehouse: { store, rootUri: store.root } });
    try {
      await catalog.createNamespace(['ns']);
      const created = await catalog.createTable(t(['ns'], 'cut'), sampleMetadata());
      cutAtCommit = true;
      const e = await errorOf(catalog.commitTable(t(['ns'], 'cut'), { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'us' } }] }));
      expect(cutAtCommit).toBe(false);
      expect(e.kind).toBe('commit-state-unknown');
      const written = `file://${dir}/ns/cut/metadata/v2.metadata.json`;
      expect(e.message).toMatch(new RegExp(`^sql catalog: the pointer update of ns\\.cut to ${written.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} failed and may or may not have happened: `));
      // The file the pointer may now name is kept; the server, which never saw COMMIT, kept the old pointer.
      expect(existsSync(path.join(dir, 'ns/cut/metadata/v2.metadata.json'))).toBe(true);
      expect((await catalog.loadTable(t(['ns'], 'cut'))).metadataLocation).toBe(created.metadataLocation);
    } finally {
      await catalog.close();
      await deltaRegistry.close();
      await new Promise((resolve) => relay.close(resolve));
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('loses no commit when two processes commit to one table at the same time', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    try {
      await catalog.createNamespace(['ns']);
      const created = await catalog.createTable(t(['ns'], 'shared'), sampleMetadata());
      const perProcess = 20;
      // Far enough ahead for both processes to load and connect on a busy machine.
      const startAt = Date.now() + 4000;
      // The built package, as a program that depends on twinlake would load it.
      const script = `
        const { openSqlCatalog, LocalStore } = await import(${JSON.stringify(path.join(repoRoot, 'dist/index.js'))});
        const [uri, dir, who, startAt, count] = process.argv.slice(1);
        const store = new LocalStore(dir);
        const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
        const id = { namespace: ['ns'], name: 'shared' };
        const late = Date.now() > Number(startAt);
        while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
        let conflicts = 0;
        for (let i = 0; i < Number(count); i++) {
          const snapshotId = BigInt(who) * 1000n + BigInt(i);
          for (;;) {
            // An append: a snapshot on top of the current one, required to still be current.
            const base = (await catalog.loadTable(id)).metadata;
            const parent = base['current-snapshot-id'] ?? null;
            const snapshot = { 'snapshot-id': snapshotId, 'sequence-number': base['last-sequence-number'] + 1, 'timestamp-ms': Date.now(),
              'manifest-list': base.location + '/metadata/snap-' + snapshotId + '.avro', summary: { operation: 'append' }, 'schema-id': 0 };
            if (parent !== null) snapshot['parent-snapshot-id'] = parent;
            const r = await catalog.commitTable(id, {
              requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent }],
              updates: [{ action: 'add-snapshot', snapshot }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId }],
            });
            if (r.status === 'committed') break;
            conflicts++;
          }
        }
        await catalog.close();
        await deltaRegistry.close();
        process.stdout.write(JSON.stringify({ conflicts, late }));
      `;
      const run = (who: number) =>
        new Promise<{ conflicts: number; late: boolean }>((resolve, reject) => {
          execFile(process.execPath, ['--input-type=module', '-e', script, '--', uri, dir, String(who), String(startAt), String(perProcess)], { cwd: repoRoot, timeout: 90_000 }, (err, stdout, stderr) =>
            err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(JSON.parse(stdout)),
          );
        });
      const [a, b] = await Promise.all([run(1), run(2)]);

      const final = await catalog.loadTable(t(['ns'], 'shared'));
      const snapshots = final.metadata.snapshots;
      // Every commit landed exactly once.
      const expected = [1, 2].flatMap((w) => Array.from({ length: perProcess }, (_, i) => BigInt(w * 1000 + i)));
      expect(snapshots.map((s) => s['snapshot-id']).sort((x, y) => (x < y ? -1 : 1))).toEqual(expected);
      // One chain: each snapshot's parent is the one before it, sequence numbers 1, 2, 3, …
      snapshots.forEach((s, i) => {
        expect(s['sequence-number']).toBe(i + 1);
        expect(s['parent-snapshot-id']).toBe(i === 0 ? undefined : snapshots[i - 1]!['snapshot-id']);
      });
      expect(final.metadata['current-snapshot-id']).toBe(snapshots.at(-1)!['snapshot-id']);
      // The metadata chain: every committed file, in order, starting at the creation's.
      const log = [...final.metadata['metadata-log'].map((e) => e['metadata-file']), final.metadataLocation];
      expect(log).toHaveLength(2 * perProcess + 1);
      expect(log[0]).toBe(created.metadataLocation);
      const versions = log.map(metadataFileVersion);
      for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]!);
      const files = (await fs.readdir(path.join(dir, 'ns/shared/metadata'))).filter((n) => n.endsWith('.metadata.json'));
      expect(files.sort()).toEqual(log.map((uri) => uri.slice(uri.lastIndexOf('/') + 1)).sort());
      const row = await withClient(uri, async (c) => (await c.query(`SELECT metadata_location, previous_metadata_location FROM iceberg_tables WHERE table_name = 'shared'`)).rows[0]);
      expect(row).toEqual({ metadata_location: final.metadataLocation, previous_metadata_location: log.at(-2) });
      // The two really raced: both were ready at the start, and attempts lost the compare-and-swap.
      expect([a.late, b.late]).toEqual([false, false]);
      expect(a.conflicts + b.conflicts).toBeGreaterThan(0);
    } finally {
      await catalog.close();
      await deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('loses no append when two writer processes append to one table through PostgreSQL', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const batches = 4;
    const rowsPerBatch = 5;
    const startAt = Date.now() + 3000;
    const script = `
      const { openSqlCatalog, Lakehouse, LocalStore } = await import(${JSON.stringify(path.join(repoRoot, 'dist/index.js'))});
      const [uri, dir, who, startAt, batches, rows] = process.argv.slice(1).map((v, i) => (i < 2 ? v : Number(v)));
      const store = new LocalStore(dir);
      const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
      const lake = await Lakehouse.open({ warehouse: dir, catalog, deltaRegistry, engine: { threads: 1, memoryLimit: '256MB' } });
      const table = lake.table('ns.events');
      while (Date.now() < startAt) await new Promise((r) => setTimeout(r, 1));
      for (let b = 0; b < batches; b++) {
        await table.append(Array.from({ length: rows }, (_, i) => ({ id: who * 1000 + b * 10 + i, writer: who })));
      }
      await lake.close();
      await catalog.close();
      await deltaRegistry.close();
    `;
    const run = (who: number) =>
      new Promise<void>((resolve, reject) => {
        execFile(process.execPath, ['--input-type=module', '-e', script, '--', uri, dir, String(who), String(startAt), String(batches), String(rowsPerBatch)], { cwd: repoRoot, timeout: 100_000 }, (err, _out, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(),
        );
      });
    const { catalog, deltaRegistry } = await openSqlCatalog({ uri, warehouse: { store: new LocalStore(dir), rootUri: new LocalStore(dir).root } });
    try {
      // The table exists before the race, so both writers append (creation has a race of its own).
      const lake = await Lakehouse.open({ warehouse: dir, catalog, deltaRegistry });
      await lake.table('ns.events').append([{ id: 0, writer: 0 }]);
      await Promise.all([run(1), run(2)]);
      const table = lake.table('ns.events');
      const expected = [0, ...[1, 2].flatMap((w) => Array.from({ length: batches }, (_, b) => Array.from({ length: rowsPerBatch }, (_, i) => w * 1000 + b * 10 + i)).flat())].sort((a, b) => a - b);
      await expectBothEqual(table, expected);
      // One snapshot and one Delta version per append (version 0 created the table), without a gap.
      const history = await table.history();
      expect(history.map((h) => h.operation)).toEqual(Array(1 + 2 * batches).fill('append'));
      expect(history.map((h) => h.deltaVersion).sort((a, b) => a! - b!)).toEqual(Array.from({ length: 1 + 2 * batches }, (_, v) => v + 1));
      await lake.close();
    } finally {
      await catalog.close();
      await deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  }, 150_000);

  it('holds a Twinlake table written through the library, read back in both formats', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const open = () => openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    const first = await open();
    try {
      const lake = await Lakehouse.open({ warehouse: dir, catalog: first.catalog, deltaRegistry: first.deltaRegistry });
      await lake.table('analytics.events').append([
        { id: 1, user: 'ada' },
        { id: 2, user: 'grace' },
      ]);
      await lake.table('analytics.events').append([{ id: 3, user: 'alan' }]);
      await lake.table('analytics.deltas').write([{ id: 10 }], { formats: ['delta'] });
      await lake.close();
    } finally {
      await first.catalog.close();
      await first.deltaRegistry.close();
    }

    // A second opening finds everything in PostgreSQL, nothing in a local catalog file.
    expect(existsSync(path.join(dir, 'catalog.db'))).toBe(false);
    const second = await open();
    try {
      const lake = await Lakehouse.open({ warehouse: dir, catalog: second.catalog, deltaRegistry: second.deltaRegistry });
      expect(await lake.listTables()).toEqual(['analytics.deltas', 'analytics.events']);
      await expectBothEqual(lake.table('analytics.events'), [1, 2, 3]);
      expect(ids(await lake.table('analytics.deltas').read({ format: 'delta' }))).toEqual([10]);
      const current = await second.catalog.loadTable(t(['analytics'], 'events'));
      await lake.close();

      const rows = await withClient(uri, async (c) => ({
        tables: (await c.query('SELECT * FROM iceberg_tables')).rows,
        deltas: (await c.query('SELECT * FROM twinlake_delta_tables')).rows,
      }));
      expect(rows.tables).toEqual([
        {
          catalog_name: 'twinlake',
          table_namespace: 'analytics',
          table_name: 'events',
          metadata_location: current.metadataLocation,
          previous_metadata_location: current.metadata['metadata-log'].at(-1)!['metadata-file'],
        },
      ]);
      expect(current.metadataLocation.startsWith(`file://${dir}/analytics/events/metadata/`)).toBe(true);
      expect(rows.deltas).toEqual([{ catalog_name: 'twinlake', table_namespace: 'analytics', table_name: 'deltas', location: `file://${dir}/analytics/deltas` }]);
    } finally {
      await second.catalog.close();
      await second.deltaRegistry.close();
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps Delta-only tables in the registry: once per name, per catalog, sorted', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const a = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
    const b = await openSqlCatalog({ uri, name: 'other', warehouse: { store, rootUri: store.root } });
    try {
      await a.deltaRegistry.register(t(['z'], 'last'), 'file:///w/z/last');
      await a.deltaRegistry.register(t(['a', 'b'], 'Upper'), 'file:///w/a/b/Upper');
      await a.deltaRegistry.register(t(['a', 'b'], 'lower'), 'file:///w/a/b/lower');
      // The same name at the same place again changes nothing; at another place it is refused.
      await a.deltaRegistry.register(t(['z'], 'last'), 'file:///w/z/last');
      const e = await errorOf(a.deltaRegistry.register(t(['z'], 'last'), 'file:///elsewhere'));
      expect(e.kind).toBe('already-exists');
      expect(e.message).toBe('delta registry: table z.last is already registered at file:///w/z/last');
      expect(await a.deltaRegistry.list()).toEqual([t(['a', 'b'], 'Upper'), t(['a', 'b'], 'lower'), t(['z'], 'last')]);
      expect(await a.deltaRegistry.location(t(['a', 'b'], 'lower'))).toBe('file:///w/a/b/lower');
      expect(await a.deltaRegistry.location(t(['a', 'b'], 'LOWER'))).toBeUndefined();
      expect(await b.deltaRegistry.list()).toEqual([]);
    } finally {
      for (const o of [a, b]) {
        await o.catalog.close();
        await o.deltaRegistry.close();
      }
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('opens read-only without creating anything, and refuses writes', async () => {
    const uri = await freshDatabase();
    const dir = await tempDir();
    const store = new LocalStore(dir);
    try {
      const empty = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root }, readOnly: true });
      expect(await empty.catalog.listNamespaces()).toEqual([]);
      expect(await empty.deltaRegistry.list()).toEqual([]);
      await empty.catalog.close();
      await empty.deltaRegistry.close();
      const created = await withClient(uri, async (c) => (await c.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)).rows);
      expect(created).toEqual([]);

      const writer = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root } });
      await writer.catalog.createNamespace(['ns']);
      await writer.catalog.createTable(t(['ns'], 'x'), sampleMetadata());
      await writer.catalog.close();
      await writer.deltaRegistry.close();

      const reader = await openSqlCatalog({ uri, warehouse: { store, rootUri: store.root }, readOnly: true });
      try {
        expect(await reader.catalog.listTables(['ns'])).toEqual([t(['ns'], 'x')]);
        const e = await errorOf(reader.catalog.createNamespace(['other']));
        expect(e.kind).toBe('io');
        expect(e.message).toMatch(/^sql catalog: postgresql:\/\/twinlake@127\.0\.0\.1:\d+\/t\d+ is open for reading only; cannot create namespace other$/);
        const base = (await reader.catalog.loadTable(t(['ns'], 'x'))).metadata;
        const c = await errorOf(reader.catalog.commitTable(t(['ns'], 'x'), { requirements: [], updates: appendUpdates(base, 5n) }));
        expect(c.kind).toBe('io');
        expect(c.message).toMatch(/is open for reading only; cannot commit to ns\.x$/);
        // The server refuses writes on the read-only connections too, whatever reaches it.
        const sessionReadOnly = await reader.deltaRegistry.register(t(['ns'], 'd'), `file://${dir}/ns/d`).then(() => 'written', (err: Error) => err.message);
        expect(sessionReadOnly).toMatch(/^sql catalog: cannot write to postgresql:\/\/.* while registering ns\.d: .*read-only transaction \(25006\)$/);
        // The refused commit left its table as it was, without a stray metadata file.
        expect((await reader.catalog.loadTable(t(['ns'], 'x'))).metadata.snapshots).toEqual([]);
        expect(await fs.readdir(path.join(dir, 'ns/x/metadata'))).toEqual(['v1.metadata.json', 'version-hint.text']);
      } finally {
        await reader.catalog.close();
        await reader.deltaRegistry.close();
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('says which server it cannot connect to, never with the password', async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const warehouse = { store, rootUri: store.root };
    try {
      const wrong = `postgresql://${server.user}:not-the-password-42@127.0.0.1:${server.port}/postgres`;
      const e = await errorOf(openSqlCatalog({ uri: wrong, warehouse }));
      expect(e.kind).toBe('io');
      expect(e.message).toMatch(new RegExp(`^catalog: cannot connect to postgresql://twinlake@127\\.0\\.0\\.1:${server.port}/postgres \\(authentication failed: password authentication failed for user "twinlake"\\)$`));

      const closedPort = await freePort();
      const unreachable = `postgresql://${server.user}:${server.password}@127.0.0.1:${closedPort}/postgres`;
      const u = await errorOf(openSqlCatalog({ uri: unreachable, warehouse }));
      expect(u.kind).toBe('io');
      expect(u.message).toMatch(new RegExp(`^catalog: cannot connect to postgresql://twinlake@127\\.0\\.0\\.1:${closedPort}/postgres \\(.*ECONNREFUSED.*\\)$`));

      const noDb = await errorOf(openSqlCatalog({ uri: server.uri('nowhere'), warehouse }));
      expect(noDb.message).toMatch(/^catalog: cannot connect to postgresql:\/\/twinlake@127\.0\.0\.1:\d+\/nowhere \(database "nowhere" does not exist\)$/);

      for (const [err, secret] of [
        [e, 'not-the-password-42'],
        [u, server.password],
        [noDb, server.password],
      ] as const) {
        expect(`${err.message}\n${err.stack}\n${JSON.stringify(err.context)}\n${String(err.cause ?? '')}`).not.toContain(secret);
      }
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
