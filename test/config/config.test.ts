import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openCatalog } from '../../src/catalog/open-catalog.ts';
import { parseConfigFile } from '../../src/config/config-file.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { addSecret, redact } from '../../src/config/redact.ts';
import { resolveConfig, tableDefaultsFor } from '../../src/config/resolve-config.ts';
import { fileUri } from '../../src/core/uri.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { errorOf, tempDir, thrown } from '../helpers.ts';

/** The example of issue 11's Configuration section, as written (comments included). */
export const ISSUE_EXAMPLE = `warehouse: s3://lake/wh            # or az://container/prefix, gs://bucket/prefix, ./warehouse
storage:
  provider: s3                     # s3 | azure | gcs | local; default from the warehouse URI
  region: us-east-1
  endpoint: http://127.0.0.1:7480  # optional: S3-compatible servers, Azurite
  forcePathStyle: true             # S3 only
  account: devstoreaccount1        # Azure storage account
  credential:                      # omit to use the SDK's default chain
    accessKeyId: test              # S3;  Azure: connectionString | accountKey | a service principal
    secretAccessKey: testtesttest
catalog:
  type: sql                        # sql | glue | rest
  uri: ./warehouse-catalog.db      # sql: a SQLite file or a postgresql:// URI; rest: the server URL
  namespace: analytics             # default namespace for unqualified table names
`;

const file = '/etc/lake/twinlake.yaml';
const resolveText = (text: string, env: Record<string, string> = {}, options: Record<string, unknown> = {}) =>
  resolveConfig({ file: parseConfigFile(text, file), env, options, cwd: '/work' });

describe('config file', () => {
  it("parses the issue's example into the stores' and the catalog's options", () => {
    const c = resolveText(ISSUE_EXAMPLE);
    expect(c.warehouse).toBe('s3://lake/wh');
    expect(c.warehouseUri).toBe('s3://lake/wh');
    expect(c.provider).toBe('s3');
    expect(c.storage).toEqual({
      s3: { region: 'us-east-1', endpoint: 'http://127.0.0.1:7480', forcePathStyle: true, credentials: { accessKeyId: 'test', secretAccessKey: 'testtesttest' } },
      // The account serves az:// locations; the endpoint belongs to the provider's store.
      azure: { account: 'devstoreaccount1' },
    });
    // The SQLite path is relative to the file's folder.
    expect(c.catalog).toEqual({ type: 'sql', name: 'twinlake', uri: '/etc/lake/warehouse-catalog.db', namespace: 'analytics', region: 'us-east-1' });
    expect(c.catalogConfigured).toBe(true);
    expect(c.engine).toEqual({});
    // A table named without its namespace gets the configured one; the seed's defaults hold.
    expect(tableDefaultsFor(c, 'events')).toEqual({});
  });

  it('reads per-table settings with their defaults, in YAML and JSON alike', () => {
    const yaml = `catalog: { namespace: sales }
tables:
  orders:
    formats: [iceberg, delta]
    writeMode: merge
    keyColumns: [tenant, id]
    partition: "day(ts), region"
    schemaEvolution: false
    snapshotRetention: 36h
    compactionTarget: 512MB
  sales.returns:
    formats: delta
`;
    const json = JSON.stringify({ catalog: { namespace: 'sales' }, tables: { orders: { formats: 'iceberg,delta', writeMode: 'merge', keyColumns: 'tenant, id', partition: 'day(ts), region', schemaEvolution: false, snapshotRetention: '36h', compactionTarget: '512MB' }, 'sales.returns': { formats: ['delta'] } } });
    for (const [text, name] of [[yaml, file], [json, '/etc/lake/twinlake.json']] as const) {
      const c = resolveConfig({ file: parseConfigFile(text, name), env: {} });
      expect(tableDefaultsFor(c, 'sales.orders'), name).toEqual({
        formats: ['delta', 'iceberg'], writeMode: 'merge', keyColumns: ['tenant', 'id'], partition: 'day(ts), region', schemaEvolution: false,
        snapshotRetentionMs: 36 * 3600e3, compactionTargetBytes: 512e6,
      });
      expect(tableDefaultsFor(c, 'returns')).toEqual({ formats: ['delta'] });
    }
    expect(thrown(() => resolveText('tables:\n  a.b:\n    writeMode: merge\n')).message).toBe(`config ${file}: tables["a.b"].writeMode is merge, which needs keyColumns`);
    expect(thrown(() => resolveText('tables:\n  orders: {}\n')).message).toMatch(/^config \/etc\/lake\/twinlake\.yaml: tables\["orders"\] is not a table name: .*\(or set catalog\.namespace\)$/);
  });

  it('refuses unknown keys with the nearest one, and wrong types, naming the key path, file, line and column', () => {
    const cases: [string, string][] = [
      ['storage:\n  regoin: us-east-1\n', 'line 2, column 3: unknown key "storage.regoin" (did you mean "storage.region"?); the keys of "storage" are provider, bucket, container, prefix, region, endpoint, forcePathStyle, account, project, credential'],
      ['storage:\n  credential:\n    secretAccesKey: x\n', 'line 3, column 5: unknown key "storage.credential.secretAccesKey" (did you mean "storage.credential.secretAccessKey"?)'],
      ['catalgo:\n  type: sql\n', 'line 1, column 1: unknown key "catalgo" (did you mean "catalog"?)'],
      ['catalog:\n  type: hive\n', 'line 2, column 3: "catalog.type" must be one of sql, glue, rest, found "hive"'],
      ['storage:\n  forcePathStyle: yes\n', 'line 2, column 3: "storage.forcePathStyle" must be true or false, found "yes"'],
      ['storage: s3\n', 'line 1, column 1: "storage" must be a mapping of the keys provider, bucket, container, prefix, region, endpoint, forcePathStyle, account, project, credential, found "s3"'],
      ['threads: "4"\n', 'line 1, column 1: "threads" must be a positive whole number, found "4"'],
      ['tables:\n  a.b:\n    writeMode: upsert\n', 'line 3, column 5: tables["a.b"].writeMode must be one of append, overwrite, merge, found "upsert"'],
      ['tables:\n  a.b:\n    snapshotRetention: 7 days\n', 'line 3, column 5: tables["a.b"].snapshotRetention must be a duration such as "7d", "36h" or "2w", found "7 days"'],
      ['tables:\n  a.b:\n    keyColumn: id\n', 'line 3, column 5: unknown key tables["a.b"].keyColumn (did you mean tables["a.b"].keyColumns?); the keys of tables["a.b"] are formats, writeMode, keyColumns, partition, schemaEvolution, snapshotRetention, compactionTarget, maintenance'],
    ];
    for (const [text, message] of cases) {
      const e = thrown(() => parseConfigFile(text, file));
      expect([e.kind, e.message.startsWith(`config ${file}, ${message}`)], e.message).toEqual(['invalid-input', true]);
    }
    // JSON has no positions to give; the key path and file are named the same way.
    expect(thrown(() => parseConfigFile('{"storage": {"regoin": "x"}}', '/etc/lake/t.json')).message).toMatch(/^config \/etc\/lake\/t\.json: unknown key "storage\.regoin" \(did you mean "storage\.region"\?\)/);
  });

  it('gives the line and column of a YAML syntax error, without quoting the file', () => {
    const e = thrown(() => parseConfigFile('storage:\n  credential:\n    secretAccessKey: "s3cr3t-value\n', file));
    expect(e.message).toMatch(/^config \/etc\/lake\/twinlake\.yaml, line 4, column 1: YAML: Missing closing "quote$/);
    const indent = thrown(() => parseConfigFile('catalog:\n  type: sql\n uri: x.db\n', file));
    expect(indent.message).toBe('config /etc/lake/twinlake.yaml, line 3, column 1: YAML: All mapping items must start at the same column');
    expect(thrown(() => parseConfigFile('warehouse: a\nwarehouse: b\n', file)).message).toBe('config /etc/lake/twinlake.yaml, line 2, column 1: YAML: Map keys must be unique');
    expect(thrown(() => parseConfigFile('- a\n', file)).message).toBe('config /etc/lake/twinlake.yaml: expected a mapping such as "warehouse: ./warehouse", found a list');
  });

  it('never quotes a secret back in an error', () => {
    const e = thrown(() => parseConfigFile('storage:\n  credential:\n    secretAccessKey: [abc, def]\n', file));
    expect(e.message).toBe('config /etc/lake/twinlake.yaml, line 3, column 5: "storage.credential.secretAccessKey" must be a string (a secret), found a list');
    const env = thrown(() => resolveConfig({ env: { TWINLAKE_STORAGE_SECRET_ACCESS_KEY: 'only-the-secret' } }));
    expect(env.message).not.toContain('only-the-secret');
    expect(env.message).toBe("config: storage.credential needs both accessKeyId and secretAccessKey (or neither, for the SDK's default chain)");
  });
});

describe('precedence: option > environment > file > the SDKs\' variables > default', () => {
  const text = 'warehouse: s3://lake/wh\nstorage:\n  region: eu-west-1\ncatalog:\n  namespace: analytics\nthreads: 2\n';

  it('the environment overrides the file, an option overrides the environment', () => {
    const c = resolveText(text, { TWINLAKE_WAREHOUSE: 's3://other/wh', TWINLAKE_STORAGE_REGION: 'us-west-2', TWINLAKE_CATALOG_NAMESPACE: 'sales', TWINLAKE_STORAGE_FORCE_PATH_STYLE: 'true' });
    expect([c.warehouse, c.storage.s3?.region, c.storage.s3?.forcePathStyle, c.catalog.namespace]).toEqual(['s3://other/wh', 'us-west-2', true, 'sales']);
    const o = resolveText(text, { TWINLAKE_WAREHOUSE: 's3://other/wh', TWINLAKE_THREADS: '3' }, { warehouse: 's3://opt/wh', threads: '5' });
    expect([o.warehouse, o.engine]).toEqual(['s3://opt/wh', { threads: 5 }]);
    const entry = (key: string) => o.entries.find((e) => e.key === key);
    expect(entry('warehouse')).toEqual({ key: 'warehouse', value: 's3://opt/wh', source: 'option --warehouse' });
    expect(entry('storage.region')).toEqual({ key: 'storage.region', value: 'eu-west-1', source: `config ${file}` });
    // The engine reads its own variables: they hide the file's value and are reported as theirs.
    expect(resolveText(text, { TWINLAKE_THREADS: '3' }).engine).toEqual({});
    expect(thrown(() => resolveText(text, { TWINLAKE_STORAGE_FORCE_PATH_STYLE: 'maybe' })).message).toBe('environment: TWINLAKE_STORAGE_FORCE_PATH_STYLE must be true or false, found "maybe"');
  });

  it("the SDKs' own variables fill in only what nothing else gives", () => {
    expect(resolveText(text, { AWS_REGION: 'ap-south-1' }).storage.s3?.region).toBe('eu-west-1');
    const bare = resolveText('warehouse: s3://lake/wh\n', { AWS_REGION: 'ap-south-1' });
    expect(bare.storage.s3).toEqual({ region: 'ap-south-1' }); // no credentials: the SDK's default chain
    expect(bare.entries.find((e) => e.key === 'storage.region')?.source).toBe('environment AWS_REGION');
    const az = resolveText('warehouse: az://box/wh\nstorage:\n  account: devstoreaccount1\n', { AZURE_STORAGE_CONNECTION_STRING: 'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=k3y' });
    expect(az.storage.azure).toEqual({ account: 'devstoreaccount1', connectionString: 'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=k3y' });
    const given = resolveText('warehouse: az://box/wh\nstorage:\n  account: a\n  credential:\n    sasToken: sv=1&sig=x\n', { AZURE_STORAGE_CONNECTION_STRING: 'AccountKey=k3y' });
    expect(given.storage.azure).toEqual({ account: 'a', sasToken: 'sv=1&sig=x' });
  });

  it('builds the warehouse from provider, bucket and prefix, and refuses settings that disagree', () => {
    expect(resolveText('storage:\n  provider: s3\n  bucket: lake\n  prefix: /wh/\n').warehouse).toBe('s3://lake/wh');
    expect(resolveText('storage:\n  container: box\n  account: a\n').warehouseUri).toBe('az://box');
    expect(thrown(() => resolveText('warehouse: s3://lake/wh\nstorage:\n  provider: azure\n')).message).toBe(`config: storage.provider is azure (config ${file}), but the warehouse s3://lake/wh is an S3 location`);
    expect(thrown(() => resolveText('warehouse: s3://lake/a\nstorage:\n  provider: s3\n  bucket: lake\n  prefix: b\n')).message).toMatch(/^config: warehouse s3:\/\/lake\/a .* is not the bucket or container and prefix of storage \(s3:\/\/lake\/b\)/);
    expect(thrown(() => resolveText('warehouse: az://box/wh\nstorage:\n  credential:\n    accountKey: k3y-1\n    sasToken: sv=1\n')).message).toBe('config: storage.credential gives accountKey and sasToken; give one Azure credential');
    const principal = resolveText('warehouse: az://box/wh\nstorage:\n  account: a\n  credential:\n    tenantId: t\n    clientId: c\n    clientSecret: s3cr3t\n');
    expect(principal.storage.azure).toEqual({ account: 'a', tenantId: 't', clientId: 'c', clientSecret: 's3cr3t' });
    const gcs = resolveText('warehouse: gs://lake/wh\nstorage:\n  project: p1\n  endpoint: http://127.0.0.1:4443\n  credential:\n    keyFile: key.json\n');
    expect(gcs.storage.gcs).toEqual({ projectId: 'p1', apiEndpoint: 'http://127.0.0.1:4443', keyFilename: '/etc/lake/key.json' });
  });

  it('finds twinlake.yaml, .yml or .json in the folder, and refuses two of them', async () => {
    const tmp = tempDir();
    try {
      expect((await loadConfig({ cwd: tmp.path, env: {} })).file).toBeUndefined();
      writeFileSync(join(tmp.path, 'twinlake.yml'), 'warehouse: wh\n');
      const c = await loadConfig({ cwd: tmp.path, env: {} });
      expect([c.file, c.warehouse]).toEqual([join(tmp.path, 'twinlake.yml'), join(tmp.path, 'wh')]);
      // TWINLAKE_CONFIG names a file when no option does.
      const named = join(tmp.path, 'named.yaml');
      writeFileSync(named, 'warehouse: /abs/wh\n');
      expect((await loadConfig({ cwd: tmp.path, env: { TWINLAKE_CONFIG: named } })).warehouse).toBe('/abs/wh');
      writeFileSync(join(tmp.path, 'twinlake.json'), '{}');
      expect((await errorOf(loadConfig({ cwd: tmp.path, env: {} }))).message).toBe(`config: found twinlake.yml and twinlake.json in ${tmp.path}; keep one, or name the one to use with --config FILE`);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('openCatalog', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('opens a SQL catalog on a SQLite file of the config; Delta-only tables keep working through its registry', async () => {
    const wh = join(tmp.path, 'wh');
    mkdirSync(wh);
    const dbPath = join(tmp.path, 'elsewhere', 'cat.db');
    const opened = await openCatalog({ type: 'sql', name: 'spark_cat', uri: dbPath }, { warehouseUri: fileUri(wh) });
    const lake = await Lakehouse.open({ warehouse: wh, catalog: opened.catalog, deltaRegistry: opened.deltaRegistry });
    try {
      await lake.table('a.ice').append([{ id: 1 }]);
      await lake.table('a.del').append([{ id: 2 }], { formats: ['delta'] });
      expect(await lake.listTables()).toEqual(['a.del', 'a.ice']);
      expect(await lake.table('a.del').read()).toEqual([{ id: 2 }]);
    } finally {
      await lake.close();
      await opened.close();
    }
    // The rows carry the configured catalog name; the embedded default is untouched.
    const again = await openCatalog({ type: 'sql', name: 'spark_cat', uri: dbPath }, { warehouseUri: fileUri(wh), readOnly: true });
    expect(await again.catalog.listTables(['a'])).toEqual([{ namespace: ['a'], name: 'ice' }]);
    expect(await again.deltaRegistry?.location({ namespace: ['a'], name: 'del' })).toBe(`${fileUri(wh)}/a/del`);
    await again.close();
    const other = await openCatalog({ type: 'sql', name: 'twinlake', uri: dbPath }, { warehouseUri: fileUri(wh), readOnly: true });
    expect(await other.catalog.listNamespaces()).toEqual([]);
    await other.close();
    // Without a uri: <warehouse>/catalog.db, the Lakehouse's own default.
    const embedded = await openCatalog({ type: 'sql', name: 'twinlake' }, { warehouseUri: fileUri(wh) });
    await embedded.close();
    expect((await import('node:fs')).existsSync(join(wh, 'catalog.db'))).toBe(true);
  });

  it('refuses a REST catalog without its URL, and a Glue catalog without a region', async () => {
    const at = { warehouseUri: fileUri(tmp.path) };
    const rest = await errorOf(openCatalog({ type: 'rest', name: 'twinlake', token: 't0ken' }, at));
    expect([rest.kind, rest.message]).toEqual(['invalid-input', 'catalog: type rest needs catalog.uri (the REST catalog server URL, e.g. http://127.0.0.1:8181/iceberg)']);
    const glue = await errorOf(openCatalog({ type: 'glue', name: 'twinlake' }, at));
    expect([glue.kind, glue.message]).toEqual(['invalid-input', 'catalog: type glue needs catalog.region (the AWS region of the Glue Data Catalog)']);
    const cloud = await errorOf(openCatalog({ type: 'sql', name: 'twinlake' }, { warehouseUri: 's3://lake/wh' }));
    expect(cloud.message).toBe('catalog: the warehouse s3://lake/wh is not on local disk, so the SQL catalog needs catalog.uri (a SQLite file or a postgresql:// URI)');
  });
});

describe('redact', () => {
  it('removes registered secrets and the secret parts of URIs and connection strings', () => {
    addSecret('a-registered-secret-value');
    expect(redact('failed: a-registered-secret-value was refused')).toBe('failed: *** was refused');
    expect(redact('cannot reach postgresql://lake:pa55word@db:5432/lake?sslmode=require')).toBe('cannot reach postgresql://lake:***@db:5432/lake?sslmode=require');
    expect(redact('DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc+/=;EndpointSuffix=core.windows.net')).toBe('DefaultEndpointsProtocol=https;AccountName=a;AccountKey=***;EndpointSuffix=core.windows.net');
    expect(redact('https://a.blob.core.windows.net/c?sv=2024-01-01&sig=abcDEF%2B&se=x')).toBe('https://a.blob.core.windows.net/c?sv=2024-01-01&sig=***&se=x');
    expect(redact('postgresql://host/db?password=hunter22')).toBe('postgresql://host/db?password=***');
    expect(redact('nothing secret in s3://lake/wh/a.parquet')).toBe('nothing secret in s3://lake/wh/a.parquet');
  });
});
