import { GlueClient, UpdateTableCommand, GetTableCommand } from '@aws-sdk/client-glue';
import { promises as fs } from 'node:fs';
import { createServer } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TableIdentifier } from '../../src/catalog/catalog.ts';
import { GlueCatalog, type GlueCatalogOptions } from '../../src/catalog/glue-catalog.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { GlueDouble } from '../servers/glue-double.ts';
import { errorOf } from '../helpers.ts';
import { appendUpdates, catalogContract, sampleMetadata } from './catalog-contract.ts';
import { HookedStore } from '../faults.ts';

// Every test here runs against the Glue TEST DOUBLE (test/servers/glue-double.ts), not AWS Glue.

const REGION = 'us-east-1';
const KEY_ID = 'AKIDGLUEDOUBLE';
const SECRET = 'glue-double-secret-do-not-print';
const credentials = { accessKeyId: KEY_ID, secretAccessKey: SECRET };
const t = (ns: string[], name: string): TableIdentifier => ({ namespace: ns, name });

interface Setup {
  double: GlueDouble;
  dir: string;
  store: LocalStore;
  catalog(options?: Partial<GlueCatalogOptions>): GlueCatalog;
  cleanup(): Promise<void>;
}

async function setup(doubleOptions: { pageSize?: number } = {}): Promise<Setup> {
  const double = await GlueDouble.start({ accessKeyId: KEY_ID, ...doubleOptions });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-glue-catalog-'));
  const store = new LocalStore(dir);
  const made: GlueCatalog[] = [];
  return {
    double,
    dir,
    store,
    catalog: (options = {}) => {
      const c = new GlueCatalog({ region: REGION, endpoint: double.endpoint, credentials, warehouse: { store, rootUri: store.root }, ...options });
      made.push(c);
      return c;
    },
    cleanup: async () => {
      for (const c of made) await c.close();
      await double.stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

// Pages of 2, so listing databases and tables follows NextToken.
catalogContract(
  'GlueCatalog on the Glue test double',
  async () => {
    const s = await setup({ pageSize: 2 });
    return { catalog: s.catalog({ createDatabases: true }), cleanup: s.cleanup };
  },
  { nestedNamespaces: false },
);

describe('GlueCatalog on the Glue test double', () => {
  let s: Setup;
  beforeEach(async () => {
    s = await setup();
  });
  afterEach(async () => {
    await s.cleanup();
  });

  it('writes the Glue table as Iceberg readers expect it, and moves previous_metadata_location on commit', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const catalog = s.catalog();
    const created = await catalog.createTable(t(['analytics'], 'events'), sampleMetadata());
    let glue = s.double.table(REGION, 'analytics', 'events')!;
    expect(glue.TableType).toBe('EXTERNAL_TABLE');
    expect(glue.Parameters).toEqual({ table_type: 'ICEBERG', metadata_location: created.metadataLocation });
    expect(glue.StorageDescriptor?.Location).toBe(created.metadata.location);
    expect(glue.StorageDescriptor?.Location).toBe(`${s.store.root}/analytics/events`);
    expect(glue.StorageDescriptor?.Columns).toEqual([
      { Name: 'id', Type: 'bigint', Parameters: { 'iceberg.field.id': '1', 'iceberg.field.optional': 'false', 'iceberg.field.current': 'true' } },
      { Name: 'name', Type: 'string', Parameters: { 'iceberg.field.id': '2', 'iceberg.field.optional': 'true', 'iceberg.field.current': 'true' } },
    ]);

    const r = await catalog.commitTable(t(['analytics'], 'events'), { requirements: [], updates: appendUpdates(created.metadata, 7n) });
    expect(r.status).toBe('committed');
    if (r.status !== 'committed') return;
    glue = s.double.table(REGION, 'analytics', 'events')!;
    expect(glue.VersionId).toBe('1');
    expect(glue.Parameters).toEqual({ table_type: 'ICEBERG', metadata_location: r.metadataLocation, previous_metadata_location: created.metadataLocation });
    expect(r.metadataLocation).toMatch(/\/metadata\/v2\.metadata\.json$/);
    // The metadata file Glue names is the one loadTable reads, and path readers find it by the hint.
    expect((await catalog.loadTable(t(['analytics'], 'events'))).metadataLocation).toBe(r.metadataLocation);
    expect(await fs.readFile(path.join(s.dir, 'analytics/events/metadata/version-hint.text'), 'utf8')).toBe('2');
    // SkipArchive by default: no archived Glue versions pile up per commit.
    expect(s.double.archived.size).toBe(0);
    const update = s.double.calls.find((c) => c.op === 'UpdateTable')!;
    expect(update.body).toMatchObject({ DatabaseName: 'analytics', VersionId: '0', SkipArchive: true });
  });

  it('keeps the parameters others set on the Glue table across commits', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const catalog = s.catalog();
    const created = await catalog.createTable(t(['analytics'], 'events'), sampleMetadata());
    const glue = s.double.table(REGION, 'analytics', 'events')!;
    glue.Parameters = { ...glue.Parameters, owner_team: 'growth' };
    glue.Description = 'click events';
    await catalog.commitTable(t(['analytics'], 'events'), { requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] });
    const after = s.double.table(REGION, 'analytics', 'events')!;
    expect(after.Parameters?.owner_team).toBe('growth');
    expect(after.Description).toBe('click events');
    expect(after.Parameters?.previous_metadata_location).toBe(created.metadataLocation);
  });

  it('lets exactly one of two catalogs committing from the same base win, through Glue VersionId', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const id = t(['analytics'], 'events');
    const a = s.catalog();
    const b = s.catalog();
    const base = (await a.createTable(id, sampleMetadata())).metadata;
    // No requirement: only Glue's VersionId check can stop the second commit.
    const results = await Promise.all([
      a.commitTable(id, { requirements: [], updates: appendUpdates(base, 1n) }),
      b.commitTable(id, { requirements: [], updates: appendUpdates(base, 2n) }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['committed', 'conflict']);
    const lost = results.find((r) => r.status === 'conflict')!;
    if (lost.status === 'conflict') expect(lost.reason).toMatch(/changed by a concurrent commit.*at Glue version 0.*at version 1/);
    const updates = s.double.calls.filter((c) => c.op === 'UpdateTable');
    expect(updates.map((c) => c.error ?? 'ok').sort()).toEqual(['ConcurrentModificationException', 'ok']);
    const won = results.find((r) => r.status === 'committed')!;
    if (won.status !== 'committed') return;
    const loaded = await a.loadTable(id);
    expect(loaded.metadataLocation).toBe(won.metadataLocation);
    expect(loaded.metadata.snapshots).toHaveLength(1);
    // The loser's metadata file is gone; the winner's and the first one stay.
    const files = (await fs.readdir(path.join(s.dir, 'analytics/events/metadata'))).filter((f) => f.endsWith('.metadata.json')).sort();
    expect(files).toEqual(['v1.metadata.json', 'v2.metadata.json']);
  });

  it('returns a conflict when another tool moved the Glue table between load and commit', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const id = t(['analytics'], 'events');
    const hooked = new HookedStore(s.store);
    const catalog = s.catalog({ warehouse: { store: hooked, rootUri: s.store.root } });
    const created = await catalog.createTable(id, sampleMetadata());
    const other = new GlueClient({ region: REGION, endpoint: s.double.endpoint, credentials });
    try {
      // While the commit writes its metadata file (after it read the Glue table), another tool
      // updates the table with the VersionId it read.
      hooked.beforeCreate = async () => {
        const { Table } = await other.send(new GetTableCommand({ DatabaseName: 'analytics', Name: 'events' }));
        await other.send(
          new UpdateTableCommand({
            DatabaseName: 'analytics',
            VersionId: Table!.VersionId,
            TableInput: { Name: 'events', TableType: 'EXTERNAL_TABLE', Parameters: { ...Table!.Parameters, comment: 'edited elsewhere' } },
          }),
        );
      };
      const r = await catalog.commitTable(id, { requirements: [], updates: appendUpdates(created.metadata, 5n) });
      expect(r.status).toBe('conflict');
      const glue = s.double.table(REGION, 'analytics', 'events')!;
      expect(glue.Parameters).toEqual({ table_type: 'ICEBERG', metadata_location: created.metadataLocation, comment: 'edited elsewhere' });
      expect(glue.VersionId).toBe('1');
      expect(await fs.readdir(path.join(s.dir, 'analytics/events/metadata'))).not.toContain('v2.metadata.json');
      // The next attempt builds on the table as the other tool left it.
      const again = await catalog.commitTable(id, { requirements: [], updates: appendUpdates(created.metadata, 5n) });
      expect(again.status).toBe('committed');
      expect(s.double.table(REGION, 'analytics', 'events')!.Parameters?.comment).toBe('edited elsewhere');
    } finally {
      other.destroy();
    }
  });

  it('takes a commit whose response was lost, and whose retry Glue refused as a concurrent change, as committed', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const id = t(['analytics'], 'events');
    const catalog = s.catalog();
    const created = await catalog.createTable(id, sampleMetadata());
    s.double.loseResponses('UpdateTable');
    const r = await catalog.commitTable(id, { requirements: [], updates: appendUpdates(created.metadata, 9n) });
    const updates = s.double.calls.filter((c) => c.op === 'UpdateTable');
    // The first attempt was applied and its answer lost; the SDK's retry met the moved VersionId.
    expect(updates.map((c) => c.error ?? 'applied')).toEqual(['applied', 'ConcurrentModificationException']);
    expect(r.status).toBe('committed');
    if (r.status !== 'committed') return;
    expect(s.double.table(REGION, 'analytics', 'events')!.Parameters?.metadata_location).toBe(r.metadataLocation);
    expect((await catalog.loadTable(id)).metadata['current-snapshot-id']).toBe(9n);
  });

  it("sends another account's catalog ID with every call, and names the account when its database is missing", async () => {
    const catalog = s.catalog({ catalogId: '210987654321' });
    expect((await errorOf(catalog.createNamespace(['analytics']))).message).toContain('Glue database analytics does not exist in region us-east-1 of account 210987654321;');
    s.double.createDatabase(REGION, 'analytics');
    const created = await catalog.createTable(t(['analytics'], 'events'), sampleMetadata());
    await catalog.commitTable(t(['analytics'], 'events'), { requirements: [], updates: appendUpdates(created.metadata, 1n) });
    expect(await catalog.listTables(['analytics'])).toEqual([t(['analytics'], 'events')]);
    expect(s.double.calls.length).toBeGreaterThan(5);
    expect(s.double.calls.filter((c) => c.body.CatalogId !== '210987654321')).toEqual([]);
  });

  it('keeps to names Glue keeps: one-level namespaces, lower-case names', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const catalog = s.catalog({ createDatabases: true });
    const deep = await errorOf(catalog.createTable(t(['analytics', 'eu'], 'events'), sampleMetadata()));
    expect(deep.kind).toBe('unsupported');
    expect(deep.message).toBe(
      'glue catalog: namespace analytics.eu has 2 levels, but a Glue database is one name and does not nest: use a one-level namespace such as analytics',
    );
    const upper = await errorOf(catalog.createTable(t(['analytics'], 'Events'), sampleMetadata()));
    expect(upper.kind).toBe('invalid-input');
    expect(upper.message).toBe('glue catalog: "Events" cannot be a Glue table name: Glue and Athena take lower-case letters, digits and _ (at most 255); use events');
    expect((await errorOf(catalog.createNamespace(['Sales']))).message).toMatch(/"Sales" cannot be a Glue database name.*; use sales$/);
    // Glue folds names to lower case: `Events` must not find `events`.
    await catalog.createTable(t(['analytics'], 'events'), sampleMetadata());
    expect(await catalog.tableExists(t(['analytics'], 'Events'))).toBe(false);
    expect((await errorOf(catalog.loadTable(t(['analytics'], 'Events')))).kind).toBe('not-found');
    expect(s.double.calls.some((c) => c.body.Name === 'Events')).toBe(false);
  });

  it('refuses Glue tables that are not Iceberg tables, and databases that still hold one', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const raw = new GlueClient({ region: REGION, endpoint: s.double.endpoint, credentials });
    const { CreateTableCommand } = await import('@aws-sdk/client-glue');
    await raw.send(new CreateTableCommand({ DatabaseName: 'analytics', TableInput: { Name: 'csv_logs', TableType: 'EXTERNAL_TABLE', Parameters: { classification: 'csv' } } }));
    raw.destroy();
    const catalog = s.catalog({ createDatabases: true });
    expect(await catalog.tableExists(t(['analytics'], 'csv_logs'))).toBe(false);
    expect(await catalog.listTables(['analytics'])).toEqual([]);
    const e = await errorOf(catalog.loadTable(t(['analytics'], 'csv_logs')));
    expect(e.kind).toBe('unsupported');
    expect(e.message).toBe('glue catalog: Glue table analytics.csv_logs is not an Iceberg table (Parameters.table_type is missing, expected "ICEBERG")');
    // DeleteDatabase would delete the CSV table with it.
    const drop = await errorOf(catalog.dropNamespace(['analytics']));
    expect(drop.kind).toBe('invalid-input');
    expect(drop.message).toContain('csv_logs');
    expect(s.double.databases(REGION)).toEqual(['analytics']);
  });
});

describe('GlueCatalog errors users meet (against the Glue test double)', () => {
  let s: Setup;
  const seen: string[] = [];
  beforeEach(async () => {
    s = await setup();
  });
  afterEach(async () => {
    await s.cleanup();
  });

  const message = async (p: Promise<unknown>) => {
    const e = await errorOf(p);
    seen.push(e.message, JSON.stringify(e.context));
    return e;
  };

  it('names the missing Glue database, the region, and what to do: "Iceberg catalog not found"', async () => {
    const catalog = s.catalog();
    const e = await message(catalog.createNamespace(['analytics']));
    expect(e.kind).toBe('not-found');
    expect(e.message).toBe(
      'glue catalog: Iceberg catalog not found: Glue database analytics does not exist in region us-east-1; ' +
        'create the Glue database analytics in region us-east-1 (aws glue create-database --region us-east-1 --database-input Name=analytics), ' +
        'or check the catalog region if the database is in another one',
    );
    // Without createDatabases nothing is created.
    expect(s.double.calls.some((c) => c.op === 'CreateDatabase')).toBe(false);
    expect(s.double.databases(REGION)).toEqual([]);
    const load = await message(catalog.loadTable(t(['analytics'], 'events')));
    expect(load.message).toMatch(/^glue catalog: Iceberg catalog not found: Glue database analytics does not exist in region us-east-1 \(looking for table analytics\.events\); create/);
    const create = await message(catalog.createTable(t(['analytics'], 'events'), sampleMetadata()));
    expect(create.message).toContain('Iceberg catalog not found: Glue database analytics does not exist in region us-east-1');
  });

  it('says which region it looked in when the database is in another one', async () => {
    s.double.createDatabase('eu-west-1', 'analytics');
    const wrong = s.catalog({ region: 'us-east-1' });
    const e = await message(wrong.loadTable(t(['analytics'], 'events')));
    expect(e.kind).toBe('not-found');
    expect(e.message).toContain('Glue database analytics does not exist in region us-east-1');
    expect(e.message).toContain('or check the catalog region if the database is in another one');
    // The same catalog in the database's region finds it.
    const right = s.catalog({ region: 'eu-west-1' });
    await right.createTable(t(['analytics'], 'events'), sampleMetadata());
    expect(await right.tableExists(t(['analytics'], 'events'))).toBe(true);
    expect(await wrong.tableExists(t(['analytics'], 'events'))).toBe(false);
  });

  it('names the IAM permission a denied call needs, and leaves the table as it was', async () => {
    s.double.createDatabase(REGION, 'analytics');
    const catalog = s.catalog();
    const id = t(['analytics'], 'events');
    const created = await catalog.createTable(id, sampleMetadata());

    s.double.deny('UpdateTable');
    const update = await message(catalog.commitTable(id, { requirements: [], updates: appendUpdates(created.metadata, 3n) }));
    expect(update.kind).toBe('io');
    expect(update.message).toMatch(
      /^glue catalog: access denied to UpdateTable on table analytics\.events in region us-east-1: the credentials need the glue:UpdateTable permission \(AccessDeniedException, HTTP 400: User: arn:aws:iam::\d+:user\/tester is not authorized to perform: glue:UpdateTable/,
    );
    expect((await catalog.loadTable(id)).metadataLocation).toBe(created.metadataLocation);
    // The refused commit's metadata file is not left behind.
    expect((await fs.readdir(path.join(s.dir, 'analytics/events/metadata'))).filter((f) => f.endsWith('.metadata.json'))).toEqual(['v1.metadata.json']);

    s.double.deny('GetTable');
    expect((await message(catalog.loadTable(id))).message).toMatch(/^glue catalog: access denied to GetTable on table analytics\.events in region us-east-1: the credentials need the glue:GetTable permission/);
    s.double.allow('GetTable');

    s.double.deny('CreateTable');
    expect((await message(catalog.createTable(t(['analytics'], 'other'), sampleMetadata()))).message).toMatch(
      /^glue catalog: access denied to CreateTable on table analytics\.other in region us-east-1: the credentials need the glue:CreateTable permission/,
    );
    const left: string[] = [];
    for await (const o of s.store.list('analytics/other/')) left.push(o.path);
    expect(left).toEqual([]);

    s.double.deny('GetDatabase');
    expect((await message(catalog.namespaceExists(['analytics']))).message).toMatch(/the credentials need the glue:GetDatabase permission/);
  });

  it('says the endpoint rejected the credentials, without printing them', async () => {
    const catalog = s.catalog({ credentials: { accessKeyId: 'AKIDSOMEONEELSE', secretAccessKey: SECRET } });
    const e = await message(catalog.listNamespaces());
    expect(e.kind).toBe('io');
    expect(e.message).toBe(
      `glue catalog: Glue at ${s.double.endpoint} rejected the credentials for GetDatabases on the catalog in region us-east-1 (UnrecognizedClientException, HTTP 400: The security token included in the request is invalid.)`,
    );
  });

  it('says there are no credentials and where they can come from', async () => {
    const saved = { ...process.env };
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-glue-nocreds-'));
    for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
    // The SDK's default chain with nothing to find, and no instance metadata service to wait for.
    Object.assign(process.env, { AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'none'), AWS_CONFIG_FILE: path.join(dir, 'none'), AWS_EC2_METADATA_DISABLED: 'true' });
    try {
      const catalog = s.catalog({ credentials: undefined });
      const e = await message(catalog.tableExists(t(['analytics'], 'events')));
      expect(e.kind).toBe('io');
      expect(e.message).toMatch(
        /^glue catalog: no AWS credentials for GetTable on table analytics\.events in region us-east-1: set a credential in the catalog settings, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance or task role applies \(/,
      );
      expect(s.double.calls).toEqual([]);
    } finally {
      process.env = saved;
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('names the endpoint it cannot reach', async () => {
    const port = await closedPort();
    const catalog = s.catalog({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 2 });
    const e = await message(catalog.loadTable(t(['analytics'], 'events')));
    expect(e.kind).toBe('io');
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(`glue catalog: cannot reach the Glue endpoint http://127.0.0.1:${port} (region us-east-1) for GetTable on table analytics.events in region us-east-1 (ECONNREFUSED)`);
  });

  it('never puts the secret key in a message', () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const text of seen) expect(text).not.toContain(SECRET);
  });
});


/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
