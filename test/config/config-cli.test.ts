import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, listFiles, ndjson, tempDir, type CliResult } from '../helpers.ts';

describe('twinlake with a config file', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());
  const input = (name: string, rows: unknown[]) => {
    const path = join(tmp.path, name);
    writeFileSync(path, ndjson(rows));
    return path;
  };

  it("uses a table's settings from twinlake.yaml for its writes unless an option says otherwise", () => {
    const dir = join(tmp.path, 'project');
    mkdirSync(dir);
    writeFileSync(join(dir, 'twinlake.yaml'), `warehouse: ./lake
catalog:
  namespace: sales            # for table names without one
tables:
  orders:
    formats: [iceberg]
    writeMode: merge
    keyColumns: [id]
    partition: region
    schemaEvolution: false
`);
    const run = (...args: string[]) => cli(args, { cwd: dir });
    const first = run('write', 'orders', '--input', input('o1.ndjson', [{ id: 1, region: 'us', amount: 10 }, { id: 2, region: 'eu', amount: 20 }]));
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^created sales\.orders \(merge\)/);
    const second = run('write', 'orders', '--input', input('o2.ndjson', [{ id: 1, region: 'us', amount: 11 }, { id: 3, region: 'us', amount: 30 }]));
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/merged +1 inserted, 1 updated, 0 deleted/);
    const d = parseJson(run('describe', 'orders', '--json').stdout) as { name: string; location: string; formats: string[]; partitionSpec: string; properties: Record<string, string> };
    expect([d.name, d.formats, d.partitionSpec, d.properties['twinlake.schema-evolution.enabled']]).toEqual(['sales.orders', ['iceberg'], 'region', 'false']);
    expect(d.location).toBe(`file://${join(dir, 'lake', 'sales', 'orders')}`);
    const rows = () => run('read', 'sales.orders').stdout.trim().split('\n').map((l) => parseJson(l) as { id: number; amount: number }).sort((a, b) => a.id - b.id || a.amount - b.amount);
    expect(rows().map((r) => [r.id, r.amount])).toEqual([[1, 11], [2, 20], [3, 30]]);
    // An option beats the file: --mode append adds the record again instead of merging it.
    const appended = run('write', 'orders', '--input', input('o3.ndjson', [{ id: 3, region: 'us', amount: 31 }]), '--mode', 'append');
    expect(appended.code, appended.stderr).toBe(0);
    expect(rows().map((r) => [r.id, r.amount])).toEqual([[1, 11], [2, 20], [3, 30], [3, 31]]);
    // Another table of the warehouse gets none of it.
    expect(run('write', 'other', '--input', input('x.ndjson', [{ id: 1 }])).stdout).toMatch(/^created sales\.other \(append\)/);
    expect(parseJson(run('describe', 'sales.other', '--json').stdout).formats).toEqual(['delta', 'iceberg']);
  });

  it("resolves a relative catalog.uri against the file's folder; the environment overrides it, an option the environment", () => {
    const conf = join(tmp.path, 'conf');
    const elsewhere = join(tmp.path, 'elsewhere');
    mkdirSync(conf);
    mkdirSync(elsewhere);
    const file = join(conf, 'lake.yml');
    writeFileSync(file, 'warehouse: wh\ncatalog:\n  type: sql\n  uri: meta/catalog.sqlite\n  name: spark_catalog\n');
    const w = cli(['--config', file, 'write', 'a.t', '--input', input('a.ndjson', [{ id: 1 }])], { cwd: elsewhere });
    expect(w.code, w.stderr).toBe(0);
    expect(listFiles(join(conf, 'meta'))).toContain('catalog.sqlite');
    expect(listFiles(join(conf, 'wh')).some((f) => f.startsWith('a/t/metadata/'))).toBe(true);
    expect(listFiles(join(conf, 'wh'))).not.toContain('catalog.db');
    expect(listFiles(elsewhere)).toEqual([]);
    expect(cli(['--config', file, 'tables'], { cwd: elsewhere }).stdout.trim()).toBe('a.t');
    const report = cli(['--config', file, 'config', '--json'], { cwd: elsewhere });
    const entries = (parseJson(report.stdout) as { entries: { key: string; value: string; source: string }[] }).entries;
    expect(entries.find((e) => e.key === 'catalog.uri')).toEqual({ key: 'catalog.uri', value: join(conf, 'meta', 'catalog.sqlite'), source: `config ${file}` });

    // TWINLAKE_CATALOG_URI beats the file (relative to the current folder); --warehouse beats TWINLAKE_WAREHOUSE.
    const env = { TWINLAKE_CATALOG_URI: 'env.sqlite', TWINLAKE_WAREHOUSE: join(tmp.path, 'env-wh') };
    expect(cli(['--config', file, 'write', 'b.t', '--input', input('b.ndjson', [{ id: 2 }])], { cwd: elsewhere, env }).code).toBe(0);
    expect(listFiles(elsewhere)).toContain('env.sqlite');
    expect(listFiles(join(tmp.path, 'env-wh')).some((f) => f.startsWith('b/t/metadata/'))).toBe(true);
    expect(cli(['--config', file, 'tables'], { cwd: elsewhere, env }).stdout.trim()).toBe('b.t');
    const optWh = join(tmp.path, 'opt-wh');
    expect(cli(['--config', file, 'write', 'c.t', '--input', input('c.ndjson', [{ id: 3 }]), '--warehouse', optWh], { cwd: elsewhere, env }).code).toBe(0);
    expect(listFiles(optWh).some((f) => f.startsWith('c/t/metadata/'))).toBe(true);
    expect(cli(['--config', file, 'tables'], { cwd: elsewhere, env }).stdout.trim().split('\n')).toEqual(['b.t', 'c.t']);
  });

  it('reports errors in the file with the key path, the nearest key, and YAML line and column; nothing is created', () => {
    const dir = join(tmp.path, 'bad');
    mkdirSync(dir);
    for (const [text, message] of [
      ['catalog:\n  namspace: x\n', 'config twinlake.yaml, line 2, column 3: unknown key "catalog.namspace" (did you mean "catalog.namespace"?); the keys of "catalog" are type, uri, name, namespace, region, warehouse, token, credential'],
      ['storage:\n  region: [us]\n', 'config twinlake.yaml, line 2, column 3: "storage.region" must be a string, found ["us"]'],
      ['warehouse: ./a\n  storage: x\n', 'config twinlake.yaml, line 1, column 12: YAML: Nested mappings are not allowed in compact mappings'],
    ]) {
      writeFileSync(join(dir, 'twinlake.yaml'), text);
      const r = cli(['--config', 'twinlake.yaml', 'write', 'a.b', '--input', input('q.ndjson', [{ id: 1 }])], { cwd: dir });
      expect([r.code, r.stderr]).toEqual([3, `twinlake: ${message}\n`]);
    }
    expect(listFiles(dir)).toEqual(['twinlake.yaml']);
  });
});

describe('secrets never appear in what twinlake prints', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());
  const SECRETS = {
    s3Secret: 'S3-SECRET-wJalrXUtnFEMIK7MDENG',
    sessionToken: 'S3-SESSION-FwoGZXIvYXdzEJr',
    accountKey: 'AZURE-ACCOUNT-KEY-Eby8vdM02xNOcqF',
    sasToken: 'AZURE-SAS-SIG-2f8a9b',
    storageClientSecret: 'AZURE-CLIENT-SECRET-Qx7',
    catalogToken: 'CATALOG-TOKEN-eyJhbGciOiJ',
    catalogClientSecret: 'CATALOG-CLIENT-SECRET-9f8e',
    catalogAwsSecret: 'GLUE-SECRET-bPxRfiCYEX',
    pgPassword: 'PG-PASSWORD-hunter22',
    envS3Secret: 'ENV-S3-SECRET-a8Kq2',
    sdkS3Secret: 'SDK-S3-SECRET-z7Pw1',
  };
  const config = join(tmp.path, 'twinlake.yaml');
  writeFileSync(config, `warehouse: ./wh
storage:
  region: us-east-1
  endpoint: http://127.0.0.1:1      # nothing listens: reads of s3:// paths fail
  forcePathStyle: true
  credential:
    accessKeyId: AKIDEXAMPLE
    secretAccessKey: ${SECRETS.s3Secret}
    sessionToken: ${SECRETS.sessionToken}
catalog:
  type: sql
  uri: ./catalog.db
  token: ${SECRETS.catalogToken}
  credential:
    accessKeyId: AKIDGLUE
    secretAccessKey: ${SECRETS.catalogAwsSecret}
    clientId: lake-client
    clientSecret: ${SECRETS.catalogClientSecret}
`);
  const data = join(tmp.path, 'in.ndjson');
  writeFileSync(data, ndjson([{ id: 1, name: 'a' }]));
  const leaks = (runs: CliResult[]) =>
    runs.flatMap((r, i) => Object.entries(SECRETS).filter(([, s]) => `${r.stdout}\n${r.stderr}`.includes(s)).map(([name]) => `run ${i}: ${name}`));

  it('in a run that succeeds', () => {
    const run = (...args: string[]) => cli(args, { cwd: tmp.path, env: { AZURE_STORAGE_KEY: SECRETS.accountKey } });
    const runs = [
      run('config'),
      run('config', '--json'),
      run('write', 'a.t', '--input', data),
      run('write', 'a.t', '--input', data, '--json'),
      run('describe', 'a.t'),
      run('describe', 'a.t', '--json'),
      run('tables', '--long'),
      run('history', 'a.t'),
      run('verify', 'a.t'),
      run('engine'),
      run('write', '--help'),
    ];
    for (const r of runs.slice(0, -1)) expect(r.code, r.stderr).toBe(0);
    expect(runs[0]!.stdout).toMatch(/storage\.credential\.secretAccessKey +\*\*\* +\(config /);
    expect(runs[0]!.stdout).toMatch(/catalog\.token +\*\*\* +\(config /);
    expect(leaks(runs)).toEqual([]);
  });

  it('in runs that fail: in the file, in the environment, in a store and in the catalog', () => {
    const run = (args: string[], env: Record<string, string> = {}, cwd = tmp.path) => cli(args, { cwd, env });
    const badYaml = join(tmp.path, 'bad');
    mkdirSync(badYaml);
    writeFileSync(join(badYaml, 'twinlake.yaml'), `storage:\n  credential:\n    secretAccessKey: "${SECRETS.s3Secret}\n`);
    const wrongType = join(tmp.path, 'wrong');
    mkdirSync(wrongType);
    writeFileSync(join(wrongType, 'twinlake.json'), JSON.stringify({ storage: { credential: { connectionString: { AccountKey: SECRETS.accountKey } } } }));
    const az = join(tmp.path, 'az');
    mkdirSync(az);
    writeFileSync(join(az, 'twinlake.yaml'), `warehouse: az://box/wh\nstorage:\n  account: devstoreaccount1\n  credential:\n    connectionString: "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${SECRETS.accountKey};BlobEndpoint=http://127.0.0.1:1/devstoreaccount1"\n`);
    const runs = [
      run(['read', 's3://lake/wh/t']), // the store cannot be reached
      run(['write', 'a.t', '--input', data], { TWINLAKE_CATALOG_URI: `postgresql://lake:${SECRETS.pgPassword}@127.0.0.1:1/lake` }),
      run(['write', 'a.t', '--input', data], { TWINLAKE_CATALOG_URI: `postgresql://lake@127.0.0.1:1/lake?password=${SECRETS.pgPassword}` }),
      run(['tables'], { TWINLAKE_CATALOG_TYPE: 'rest', TWINLAKE_CATALOG_URI: 'http://127.0.0.1:1' }),
      run(['tables'], {}, badYaml),
      run(['tables'], {}, wrongType),
      run(['tables'], { TWINLAKE_STORAGE_SAS_TOKEN: `sv=2024&sig=${SECRETS.sasToken}` }, az),
      run(['tables'], {}, az),
      run(['config'], { TWINLAKE_STORAGE_TENANT_ID: 't', TWINLAKE_STORAGE_CLIENT_ID: 'c', TWINLAKE_STORAGE_CLIENT_SECRET: SECRETS.storageClientSecret }, az),
      run(['read', 's3://lake/wh/t'], { TWINLAKE_STORAGE_SECRET_ACCESS_KEY: SECRETS.envS3Secret, AWS_SECRET_ACCESS_KEY: SECRETS.sdkS3Secret }),
      // A SAS URL given as a table path: the store's error quotes the location, signature and all.
      run(['read', `https://acct.blob.core.windows.net/box/t?sv=2024-01-01&sig=${SECRETS.sasToken}`]),
    ];
    expect(runs.map((r) => r.code)).toEqual([6, 6, 6, 3, 3, 3, 3, runs[7]!.code, 3, 6, 7]);
    expect(runs[10]!.stderr).toContain('sig=***');
    expect(runs[7]!.code).not.toBe(0);
    expect(runs[1]!.stderr).toMatch(/^twinlake: catalog: cannot connect to postgresql:\/\/lake@127\.0\.0\.1:1\/lake \(/);
    // This folder's file gives the REST catalog a token and a client secret (to prove neither leaks).
    expect(runs[3]!.stderr).toBe('twinlake: rest catalog: give a token or a credential, not both\n');
    expect(runs[4]!.stderr).toMatch(/^twinlake: config .*twinlake\.yaml, line 4, column 1: YAML: Missing closing "quote\n$/);
    expect(leaks(runs)).toEqual([]);
  });
});
