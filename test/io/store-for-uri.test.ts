import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { AzureBlobStore, type AzureOptions } from '../../src/io/azure-store.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { GcsStore } from '../../src/io/gcs-store.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { S3Store, type S3Options } from '../../src/io/s3-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { errorOf, repoRoot } from '../helpers.ts';

const S3: S3Options = { region: 'us-east-1', endpoint: 'http://127.0.0.1:1', forcePathStyle: true };
const AZURE: AzureOptions = { account: 'devstoreaccount1', accountKey: 'a2V5' };

function kindOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isTwinlakeError(e) ? e.kind : 'not a TwinlakeError';
  }
  return undefined;
}

describe('storeForLocation', () => {
  it('maps file:// URIs to a local store on the parent folder and the last segment as key', () => {
    const { store, key } = storeForLocation('file:///data/wh/ns/t/metadata/v1.metadata.json');
    expect(store).toBeInstanceOf(LocalStore);
    expect(store.root).toBe('file:///data/wh/ns/t/metadata');
    expect(key).toBe('v1.metadata.json');
    expect(store.localPath?.(key)).toBe('/data/wh/ns/t/metadata/v1.metadata.json');
  });

  it('accepts the file:/abs form other engines write, and plain absolute paths', () => {
    expect(storeForLocation('file:/data/t/x.json').store.localPath?.('x.json')).toBe('/data/t/x.json');
    const plain = storeForLocation('/data/t/x.json');
    expect(plain.key).toBe('x.json');
    expect(plain.store.localPath?.(plain.key)).toBe('/data/t/x.json');
  });

  it('resolves relative paths against the working directory', () => {
    const { store, key } = storeForLocation('some/dir/file.txt');
    expect(store.localPath?.(key)).toBe(path.resolve('some/dir/file.txt'));
  });

  it('keeps a trailing slash in the key so listings of a folder work', () => {
    const { store, key } = storeForLocation('file:///data/t/metadata/');
    expect(key).toBe('metadata/');
    expect(store.root).toBe('file:///data/t');
  });

  it('returns a key that is a suffix of the location, so FileIO lists real URIs', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-store-for-uri-'));
    try {
      const io = new FileIO(storeForLocation);
      const table = `file://${dir}/t`;
      await io.write(`${table}/metadata/v1.metadata.json`, '{}');
      await io.write(`${table}/data/a b.parquet`, 'x');
      const uris: string[] = [];
      for await (const m of io.list(`${table}/`)) uris.push(m.uri);
      expect(uris).toEqual([`${table}/data/a b.parquet`, `${table}/metadata/v1.metadata.json`]);
      expect(await io.readText(`${table}/metadata/v1.metadata.json`)).toBe('{}');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses schemes it has no store for, naming the scheme', () => {
    for (const uri of ['hdfs://nn/k', 'wasbs://c@a.blob.core.windows.net/k']) {
      expect(kindOf(() => storeForLocation(uri, { s3: S3, azure: AZURE })), uri).toBe('unsupported');
    }
    expect(() => storeForLocation('hdfs://nn/key')).toThrow(/hdfs:\/\//);
  });

  it('maps gs:// locations to a GCS store on the bucket and prefix above the key', () => {
    const gcs = { projectId: 'lake-project' };
    const { store, key } = storeForLocation('gs://lake/wh/ns/t/metadata/v1.metadata.json', { gcs });
    expect(store).toBeInstanceOf(GcsStore);
    expect(store.root).toBe('gs://lake/wh/ns/t/metadata');
    expect(key).toBe('v1.metadata.json');
    expect((store as GcsStore).bucket).toBe('lake');
    expect((store as GcsStore).prefix).toBe('wh/ns/t/metadata');
    const top = storeForLocation('gs://lake.example.com/t/', { gcs });
    expect(top.store.root).toBe('gs://lake.example.com');
    expect(top.key).toBe('t/');
    // No settings: the SDK's default chain finds the credentials and the project.
    expect(storeForLocation('gs://lake/t').store).toBeInstanceOf(GcsStore);
  });

  it('refuses gs:// locations with a bucket name GCS does not allow', () => {
    for (const bad of ['gs://A/k', 'gs://ab/k', 'gs://-lake/k', `gs://${'a'.repeat(64)}/k`, 'gs:///k', 'gs://lake//k/x']) {
      expect(kindOf(() => storeForLocation(bad, {})), bad).toBe('invalid-input');
    }
    expect(() => storeForLocation('gs://Lake/t')).toThrow(/^storage: expected a GCS bucket name .* found "Lake" in "gs:\/\/Lake\/t"$/);
  });

  it('maps s3:// and s3a:// locations to an S3 store on the bucket and prefix above the key', () => {
    const { store, key } = storeForLocation('s3://lake/wh/ns/t/metadata/v1.metadata.json', { s3: S3 });
    expect(store).toBeInstanceOf(S3Store);
    expect(store.root).toBe('s3://lake/wh/ns/t/metadata');
    expect(key).toBe('v1.metadata.json');
    expect(store.localPath?.(key)).toBeUndefined();
    expect({ bucket: (store as S3Store).bucket, prefix: (store as S3Store).prefix }).toEqual({ bucket: 'lake', prefix: 'wh/ns/t/metadata' });

    const top = storeForLocation('s3://lake/wh/', { s3: S3 });
    expect(top.key).toBe('wh/');
    expect(top.store.root).toBe('s3://lake');
    expect((top.store as S3Store).prefix).toBe('');

    const hadoop = storeForLocation('s3a://lake/t/data/a b.parquet', { s3: S3 });
    expect(hadoop.store.root).toBe('s3a://lake/t/data');
    expect((hadoop.store as S3Store).bucket).toBe('lake');
  });

  it('maps az:// locations to a Blob store on the configured account', () => {
    const { store, key } = storeForLocation('az://tables/wh/t/_delta_log/00000000000000000000.json', { azure: AZURE });
    expect(store).toBeInstanceOf(AzureBlobStore);
    expect(store.root).toBe('az://tables/wh/t/_delta_log');
    expect(key).toBe('00000000000000000000.json');
    const blob = store as AzureBlobStore;
    expect({ account: blob.account, container: blob.container, prefix: blob.prefix }).toEqual({ account: 'devstoreaccount1', container: 'tables', prefix: 'wh/t/_delta_log' });
  });

  it('maps abfss:// locations to a Blob store on the account the host names', async () => {
    const uri = 'abfss://tables@lakeacct.dfs.core.windows.net/wh/t/metadata/v2.metadata.json';
    const { store, key } = storeForLocation(uri, { azure: { accountKey: 'a2V5' } });
    const blob = store as AzureBlobStore;
    expect(store.root).toBe('abfss://tables@lakeacct.dfs.core.windows.net/wh/t/metadata');
    expect(key).toBe('v2.metadata.json');
    expect({ account: blob.account, container: blob.container, prefix: blob.prefix }).toEqual({ account: 'lakeacct', container: 'tables', prefix: 'wh/t/metadata' });
    expect(storeForLocation('abfs://tables@lakeacct.dfs.core.windows.net/k', { azure: { accountKey: 'a2V5' } }).key).toBe('k');
    // Settings for one account do not silently serve another.
    const e = await errorOf(() => storeForLocation(uri, { azure: AZURE }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toMatch(/names storage account lakeacct, but the Azure settings are for account devstoreaccount1/);
  });

  it('says which settings a cloud location needs when none were given', async () => {
    const s3 = await errorOf(() => storeForLocation('s3://lake/wh/t'));
    expect(s3.kind).toBe('invalid-input');
    expect(s3.message).toBe('storage: "s3://lake/wh/t" is an S3 location but no S3 settings were given (region, and endpoint and forcePathStyle for S3-compatible servers)');
    const az = await errorOf(() => storeForLocation('az://tables/wh/t', { s3: S3 }));
    expect(az.kind).toBe('invalid-input');
    expect(az.message).toMatch(/^storage: "az:\/\/tables\/wh\/t" is an Azure Blob location but no Azure settings were given/);
    expect((await errorOf(() => storeForLocation('az://tables/wh/t', { azure: { accountKey: 'a2V5' } }))).message).toMatch(/names no storage account/);
    expect((await errorOf(() => storeForLocation('abfss://tables@lakeacct.dfs.core.windows.net/t'))).message).toMatch(/no Azure settings were given/);
  });

  it('refuses cloud locations without a bucket or container, or with a malformed one', async () => {
    const cases: [string, RegExp][] = [
      ['s3://lake', /expected s3:\/\/bucket\/key/],
      ['s3://lake/', /expected s3:\/\/bucket\/key/],
      ['s3:///key', /expected s3:\/\/bucket\/key/],
      ['s3://Upper_Case/key', /expected an S3 bucket name .* found "Upper_Case"/],
      ['s3://lake//key', /without empty, '.' or '..' segments/],
      ['az://tables', /expected az:\/\/container\/key/],
      ['az://Tables/key', /expected an Azure container name .* found "Tables"/],
      ['abfss://tables/key', /expected abfss:\/\/container@account.dfs.core.windows.net\/key/],
    ];
    for (const [uri, message] of cases) {
      const e = await errorOf(() => storeForLocation(uri, { s3: S3, azure: AZURE }));
      expect(e.kind, uri).toBe('invalid-input');
      expect(e.message, uri).toMatch(message);
    }
  });

  it('loads no cloud SDK for local locations, and each SDK only when its store is used', async () => {
    // A resolve hook refuses the SDK packages: local work must succeed without them, and the
    // S3, Azure and GCS stores must reach for them only on their first request.
    const hook = `export async function resolve(s, c, next) { if (/^@(aws-sdk|azure|google-cloud)\\//.test(s)) throw new Error('refused ' + s); return next(s, c); }`;
    const script = `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
      const { storeForLocation } = await import(${JSON.stringify(path.join(repoRoot, 'src/io/store-for-uri.ts'))});
      const [dir] = process.argv.slice(1);
      const local = storeForLocation(dir + '/t/x.json');
      await local.store.put(local.key, 'local');
      const out = { local: new TextDecoder().decode(await local.store.get(local.key)) };
      const s3 = storeForLocation('s3://lake/t/x.json', { s3: { region: 'us-east-1', endpoint: 'http://127.0.0.1:1' } });
      const az = storeForLocation('az://lake/t/x.json', { azure: { account: 'acct', accountKey: 'a2V5' } });
      const gs = storeForLocation('gs://lake/t/x.json', { gcs: { apiEndpoint: 'http://127.0.0.1:1' } });
      out.resolved = [s3.store.root, az.store.root, gs.store.root];
      out.s3 = await s3.store.head(s3.key).then(() => 'loaded', (e) => e.message);
      out.azure = await az.store.head(az.key).then(() => 'loaded', (e) => e.message);
      out.gcs = await gs.store.head(gs.key).then(() => 'loaded', (e) => e.message);
      process.stdout.write(JSON.stringify(out));
    `;
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-store-for-uri-'));
    try {
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, '--', dir], { cwd: repoRoot, timeout: 60_000 }, (err, out, errOut) =>
          err ? reject(new Error(`child failed: ${err.message}\n${errOut}`)) : resolve(out),
        );
      });
      expect(JSON.parse(stdout)).toEqual({
        local: 'local',
        resolved: ['s3://lake/t', 'az://lake/t', 'gs://lake/t'],
        s3: expect.stringMatching(/^s3 store: cannot load @aws-sdk\/client-s3 \(refused @aws-sdk\/client-s3\); reinstall twinlake's dependencies$/),
        azure: expect.stringMatching(/^azure store: cannot load @azure\/storage-blob \(refused @azure\/storage-blob\); reinstall twinlake's dependencies$/),
        gcs: expect.stringMatching(/^gcs store: cannot load @google-cloud\/storage \(refused @google-cloud\/storage\); reinstall twinlake's dependencies$/),
      });
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses locations with no folder to root a store at', () => {
    for (const uri of ['', '/', 'file:///', 'file:///x', '/x']) expect(kindOf(() => storeForLocation(uri)), uri).toBe('invalid-input');
  });
});
