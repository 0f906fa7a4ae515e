import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AzureBlobStore, type AzureOptions, azureCredential } from '../../src/io/azure-store.ts';
import { FileIO } from '../../src/io/file-io.ts';
import type { ObjectMeta } from '../../src/io/object-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { errorOf, repoRoot, tempDir } from '../helpers.ts';
import { type Azurite, azuriteMissing, startAzurite } from '../servers/azurite.ts';
import { LOOPBACK_TLS, startEntraDouble } from '../servers/entra-double.ts';
import { startLossyProxy } from '../servers/lossy-proxy.ts';
import { freePort } from '../servers/ports.ts';
import { expectFileIoAt, objectStoreContract } from './object-store-contract.ts';

const missing = azuriteMissing();
// Without the emulator the Azure tests skip, except in CI, where a missing emulator is a failure.
const skip = missing !== undefined && !process.env.CI;
if (skip) console.warn(`test/io/azure-store.test.ts: Azure tests skipped: ${missing}`);

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function collect(it: AsyncIterable<ObjectMeta>): Promise<string[]> {
  const out: string[] = [];
  for await (const m of it) out.push(m.path);
  return out;
}

describe.skipIf(skip)(`AzureBlobStore on Azurite${skip ? ` (skipped: ${missing})` : ''}`, () => {
  let azurite: Azurite;
  let service: BlobServiceClient;
  let options: AzureOptions;
  let containers = 0;

  beforeAll(async () => {
    if (missing) throw new Error(`CI is set, so the Azure tests must run, but ${missing}`);
    azurite = await startAzurite();
    options = { account: azurite.account, endpoint: azurite.endpoint, accountKey: azurite.accountKey };
    service = BlobServiceClient.fromConnectionString(azurite.connectionString);
  });
  afterAll(async () => {
    await azurite?.stop();
  });

  /** A fresh container per test; the emulator keeps everything in memory and is stopped after the file. */
  async function newContainer(): Promise<string> {
    const name = `t-${process.pid}-${containers++}`;
    await service.getContainerClient(name).create();
    return name;
  }

  function sasFor(container: string, permissions: string): string {
    return generateBlobSASQueryParameters(
      { containerName: container, permissions: ContainerSASPermissions.parse(permissions), expiresOn: new Date(Date.now() + 3_600_000) },
      new StorageSharedKeyCredential(azurite.account, azurite.accountKey),
    ).toString();
  }

  function storeAt(container: string, prefix: string, opts: AzureOptions = options): AzureBlobStore {
    const root = prefix === '' ? `az://${container}` : `az://${container}/${prefix}`;
    return new AzureBlobStore({ root, account: azurite.account, container, prefix }, opts);
  }

  // Under a prefix, with neighbours that share its first characters: the store sees only its own.
  objectStoreContract('AzureBlobStore', async () => {
    const container = await newContainer();
    for (const name of ['wh/tx/neighbour', 'wh/t', 'outside']) await service.getContainerClient(container).getBlockBlobClient(name).upload('x', 1);
    return { store: storeAt(container, 'wh/t'), cleanup: async () => {} };
  }, { noncharacterKeys: false });

  it('tells a retried putIfAbsent that its own lost-answer attempt won, and a second writer that it lost', async () => {
    // The first create-only Put Blob reaches Azurite and creates the blob, but its answer is lost
    // (a loopback proxy drops the connection); the SDK retries and the retry gets 409
    // BlobAlreadyExists. Reading that as "taken" would tell the writer whose blob is there it lost.
    const container = await newContainer();
    const proxy = await startLossyProxy(azurite.endpoint);
    try {
      const store = storeAt(container, 'wh', { ...options, endpoint: `${proxy.endpoint}/${azurite.account}` });
      const key = 't/_delta_log/00000000000000000001.json';
      proxy.loseNext(1, (req) => req.method === 'PUT' && req.headers['if-none-match'] === '*');
      expect(await store.putIfAbsent(key, 'mine')).toBe(true);
      expect(proxy.log.filter((l) => l.startsWith('PUT')).map((l) => l.split(' ')[2])).toEqual(['lost', '409']);
      expect(await store.putIfAbsent(key, 'someone else')).toBe(false);
      expect(text(await store.get(key))).toBe('mine');
    } finally {
      await proxy.stop();
    }
  });

  it('authenticates with a connection string as well as an account key', async () => {
    const container = await newContainer();
    const store = storeAt(container, '', { connectionString: azurite.connectionString });
    await store.put('a/b.json', '{}');
    expect(await store.putIfAbsent('a/b.json', 'no')).toBe(false);
    expect(await collect(storeAt(container, '').list(''))).toEqual(['a/b.json']);
  });

  it('lists across List Blobs pages, in order', async () => {
    const store = storeAt(await newContainer(), 'p', { ...options, listPageSize: 3 });
    const keys = Array.from({ length: 11 }, (_, i) => `k/${String(10 - i).padStart(2, '0')}.json`);
    await Promise.all(keys.map((k) => store.put(k, k)));
    await store.put('l/outside', 'x');
    expect(await collect(store.list('k/'))).toEqual([...keys].sort());
    expect(await collect(store.list(''))).toEqual([...keys].sort().concat('l/outside'));
  });

  it('uploads a large file as blocks and reads it back byte for byte', async () => {
    const container = await newContainer();
    const MiB = 1024 * 1024;
    const store = storeAt(container, 'big', { ...options, blockThreshold: 4 * MiB, blockSize: 1 * MiB });
    const dir = tempDir();
    try {
      const body = randomBytes(5 * MiB + 123);
      const file = join(dir.path, 'f.parquet');
      await writeFile(file, body);
      await store.putFile('data/f.parquet', file);
      const got = await store.get('data/f.parquet');
      expect(Buffer.compare(Buffer.from(got), body)).toBe(0);
      expect(Buffer.from(await store.get('data/f.parquet', { offset: MiB - 3, length: 6 }))).toEqual(body.subarray(MiB - 3, MiB + 3));
      // Put Block List: the blob is made of the staged blocks (a single Put Blob has none).
      const blob = service.getContainerClient(container).getBlockBlobClient('big/data/f.parquet');
      expect((await blob.getBlockList('committed')).committedBlocks?.length).toBe(6);
      await writeFile(file, 'small');
      await store.putFile('data/small.parquet', file);
      expect(text(await store.get('data/small.parquet'))).toBe('small');
      const small = service.getContainerClient(container).getBlockBlobClient('big/data/small.parquet');
      expect((await small.getBlockList('committed')).committedBlocks ?? []).toEqual([]);
    } finally {
      dir.cleanup();
    }
  });

  it('resolves az:// locations through storeForLocation and FileIO', async () => {
    const container = await newContainer();
    const io = new FileIO((uri) => storeForLocation(uri, { azure: options }));
    const table = `az://${container}/wh/ns/t`;
    await expectFileIoAt(io, table);
  });

  it('names a missing container in every operation', async () => {
    const store = storeAt('no-such-container', 'wh');
    for (const op of [() => store.get('k'), () => store.put('k', 'x'), () => store.putIfAbsent('k', 'x'), () => store.head('k'), () => collect(store.list(''))]) {
      const e = await errorOf(op);
      expect(e.kind).toBe('not-found');
      expect(e.message).toMatch(/^azure store: container "no-such-container" does not exist in account devstoreaccount1 \((read|write|list) .*: ContainerNotFound\)$/);
    }
  });

  it('names a missing blob with its container and account', async () => {
    const container = await newContainer();
    const e = await errorOf(storeAt(container, 'wh').get('t/v9.metadata.json'));
    expect(e.kind).toBe('not-found');
    expect(e.message).toBe(`azure store: no blob "wh/t/v9.metadata.json" in container "${container}" of account devstoreaccount1`);
  });

  it('says which permission is missing when a read-only credential writes', async () => {
    const container = await newContainer();
    await storeAt(container, '').put('t/x.json', 'x');
    const sas = generateBlobSASQueryParameters(
      { containerName: container, permissions: ContainerSASPermissions.parse('rl'), expiresOn: new Date(Date.now() + 3_600_000) },
      new StorageSharedKeyCredential(azurite.account, azurite.accountKey),
    ).toString();
    const reader = storeAt(container, '', { account: azurite.account, endpoint: azurite.endpoint, sasToken: sas });
    expect(text(await reader.get('t/x.json'))).toBe('x');
    const e = await errorOf(reader.put('t/y.json', 'y'));
    expect(e.kind).toBe('io');
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(
      new RegExp(`^azure store: access denied to write blob "t/y.json" in container "${container}" of account devstoreaccount1: the credential needs the Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write permission, e.g. the Storage Blob Data Contributor role \\(AuthorizationPermissionMismatch, HTTP 403\\)$`),
    );
    expect((await errorOf(reader.delete('t/x.json'))).message).toMatch(/^azure store: access denied to delete blob "t\/x.json" .*blobs\/delete permission/);
    const writer = storeAt(container, '', { account: azurite.account, endpoint: azurite.endpoint, sasToken: sasFor(container, 'cw') });
    expect((await errorOf(writer.get('t/x.json'))).message).toMatch(/^azure store: access denied to read blob "t\/x.json" .*blobs\/read permission/);
    expect((await errorOf(collect(writer.list('t/')))).message).toMatch(/^azure store: access denied to list blobs named "t\/"\* .*blobs\/read permission/);
  });

  it('says the account rejected the credential when the key is wrong', async () => {
    const container = await newContainer();
    const wrong = storeAt(container, '', { ...options, accountKey: Buffer.from('not the key').toString('base64') });
    const e = await errorOf(wrong.put('x', 'x'));
    expect(e.kind).toBe('io');
    expect(e.message).toMatch(/^azure store: the account devstoreaccount1 rejected the credential for write blob "x" .*\(AuthorizationFailure|AuthenticationFailed/);
  });
});

describe('AzureBlobStore errors without a server', () => {
  it('says the endpoint cannot be reached, as a retryable io error', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}/devstoreaccount1`;
    const store = new AzureBlobStore({ root: 'az://tables/wh', account: 'devstoreaccount1', container: 'tables', prefix: 'wh' }, { endpoint, accountKey: 'a2V5', maxAttempts: 1 });
    const e = await errorOf(store.put('t/x.json', 'x'));
    expect(e.kind).toBe('io');
    expect(e.retryable).toBe(true);
    expect(e.message).toMatch(new RegExp(`^azure store: cannot reach the endpoint ${endpoint} to write blob "wh/t/x.json" in container "tables" of account devstoreaccount1 \\((ECONNREFUSED|REQUEST_SEND_ERROR)\\)$`));
  });

  it('goes to the default chain of @azure/identity when the settings give no credential, and says where it looked', async () => {
    const saved = { ...process.env };
    const dir = tempDir();
    try {
      for (const k of Object.keys(process.env)) if (/^(AZURE_|IDENTITY_|MSI_|IMDS_)/.test(k)) delete process.env[k];
      process.env.HOME = dir.path;
      const store = new AzureBlobStore({ root: 'az://tables', account: 'acct', container: 'tables', prefix: '' }, { account: 'acct', maxAttempts: 1 });
      const e = await errorOf(store.put('x', 'x'));
      expect(e.kind).toBe('io');
      expect(e.retryable).toBe(false);
      expect(e.message).toBe(
        'azure store: no credentials for write blob "x" in container "tables" of account acct: set connectionString, accountKey, sasToken or a service principal (tenantId, clientId, clientSecret) in the storage settings, or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or sign in with `az login` (the default chain of @azure/identity looked in the environment, workload and managed identity, Visual Studio Code, the Azure CLI, Azure PowerShell and the Azure Developer CLI)',
      );
    } finally {
      process.env = saved;
      dir.cleanup();
    }
  }, 30_000);
});

describe.skipIf(skip)(`AzureBlobStore as a service principal: Azurite over HTTPS, tokens from an Entra token endpoint test double${skip ? ` (skipped: ${missing})` : ''}`, () => {
  it('gets a client-credentials token for Azure Storage with the tenant, client and secret, and reads and writes with it', async () => {
    const tls = LOOPBACK_TLS;
    const principal = { tenantId: 'tenant-0001', clientId: 'client-0001', clientSecret: 'principal-secret-value' };
    const azurite = await startAzurite({ https: tls });
    const entra = await startEntraDouble(tls, principal);
    try {
      // A child process, so that it trusts the loopback certificate (NODE_EXTRA_CA_CERTS is read at start).
      const script = `
        const { BlobServiceClient } = await import('@azure/storage-blob');
        const { AzureBlobStore } = await import(${JSON.stringify(join(repoRoot, 'src/io/azure-store.ts'))});
        const c = JSON.parse(process.argv[1]);
        await BlobServiceClient.fromConnectionString(c.connectionString).getContainerClient('tables').create();
        const at = (secret) => new AzureBlobStore({ root: 'az://tables/wh', account: c.account, container: 'tables', prefix: 'wh' },
          { account: c.account, endpoint: c.endpoint, tenantId: c.tenantId, clientId: c.clientId, clientSecret: secret, authorityHost: c.authorityHost, maxAttempts: 1 });
        const store = at(c.clientSecret);
        const out = {};
        await store.put('t/a.json', 'written with a token');
        out.created = await store.putIfAbsent('t/b.json', 'b');
        out.again = await store.putIfAbsent('t/b.json', 'b again');
        out.read = new TextDecoder().decode(await store.get('t/a.json'));
        out.listed = [];
        for await (const m of store.list('t/')) out.listed.push(m.path);
        out.wrong = await at('not-the-secret-value').put('t/c.json', 'c').then(() => 'written', (e) => ({ kind: e.kind, message: e.message }));
        process.stdout.write(JSON.stringify(out));
      `;
      const config = { ...principal, account: azurite.account, endpoint: azurite.endpoint, connectionString: azurite.connectionString, authorityHost: entra.authorityHost };
      const stdout = await new Promise<string>((resolve, reject) => {
        execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, JSON.stringify(config)], { cwd: repoRoot, timeout: 60_000, env: { ...process.env, NODE_EXTRA_CA_CERTS: tls.certFile } }, (err, out, errOut) =>
          err ? reject(new Error(`child failed: ${err.message}\n${errOut}`)) : resolve(out),
        );
      });
      const out = JSON.parse(stdout);
      expect(out).toMatchObject({ created: true, again: false, read: 'written with a token', listed: ['t/a.json', 't/b.json'] });
      // The token came from a client-credentials request for Azure Storage naming this principal.
      const first = entra.tokenRequests[0];
      expect([first.get('grant_type'), first.get('client_id'), first.get('client_secret'), first.get('scope')]).toEqual(['client_credentials', 'client-0001', 'principal-secret-value', 'https://storage.azure.com/.default']);
      expect(out.wrong.kind).toBe('io');
      expect(out.wrong.message).toMatch(/^azure store: cannot get a Microsoft Entra token for client client-0001 in tenant tenant-0001 to write blob "wh\/t\/c.json" in container "tables" of account devstoreaccount1: check the service principal's tenantId, clientId and clientSecret, and authorityHost \(.*AADSTS7000215/);
      expect(out.wrong.message).not.toContain('not-the-secret-value');
    } finally {
      await entra.stop();
      await azurite.stop();
    }
  }, 60_000);
});

describe('Azure credentials from the settings', () => {
  it('takes exactly one credential, or none for the default chain', () => {
    expect(azureCredential({ connectionString: 'UseDevelopmentStorage=true' }, 'a')).toEqual({ kind: 'connection-string', connectionString: 'UseDevelopmentStorage=true' });
    expect(azureCredential({ accountKey: 'a2V5' }, 'a')).toEqual({ kind: 'account-key', accountKey: 'a2V5' });
    expect(azureCredential({ sasToken: 'sv=1&sig=2' }, 'a')).toEqual({ kind: 'sas', sasToken: 'sv=1&sig=2' });
    expect(azureCredential({ tenantId: 't', clientId: 'c', clientSecret: 's' }, 'a')).toEqual({ kind: 'service-principal', tenantId: 't', clientId: 'c', clientSecret: 's' });
    expect(azureCredential({ account: 'a', endpoint: 'https://a.blob.core.windows.net' }, 'a')).toEqual({ kind: 'default-chain' });
  });

  it('refuses two credentials and part of a service principal, naming what is there and what is missing but no secret', async () => {
    const two = await errorOf(() => azureCredential({ accountKey: 'c2VjcmV0LWtleQ==', sasToken: 'sv=1&sig=secret-sig' }, 'acct'));
    expect(two.kind).toBe('invalid-input');
    expect(two.message).toBe('azure store: expected one credential for account "acct", found accountKey and sasToken');
    const part = await errorOf(() => azureCredential({ tenantId: 't', clientSecret: 'very-secret' }, 'acct'));
    expect(part.kind).toBe('invalid-input');
    expect(part.message).toBe('azure store: expected a service principal\'s tenantId, clientId and clientSecret for account "acct", found no clientId');
    // The store reports the same mistake on its first request.
    const store = new AzureBlobStore({ root: 'az://tables', account: 'acct', container: 'tables', prefix: '' }, { clientId: 'c', clientSecret: 'very-secret' });
    const e = await errorOf(store.put('x', 'x'));
    expect(e.message).toBe('azure store: expected a service principal\'s tenantId, clientId and clientSecret for account "acct", found no tenantId');
    for (const m of [two.message, part.message, e.message]) expect(m).not.toMatch(/secret-|c2VjcmV0|very-secret/);
  });

  it('refuses a connection string the SDK cannot use without repeating it', async () => {
    for (const connectionString of ['AccountName=acct;AccountKey=c2VjcmV0LWtleQ==', 'not-a-connection-string-c2VjcmV0']) {
      const store = new AzureBlobStore({ root: 'az://tables', account: 'acct', container: 'tables', prefix: '' }, { connectionString });
      const e = await errorOf(store.put('x', 'x'));
      expect(e.kind).toBe('invalid-input');
      expect(e.message).toMatch(/^azure store: expected a connection string of the form AccountName=…;AccountKey=…;BlobEndpoint=… \(or with SharedAccessSignature=…\) for account "acct", found one the SDK cannot use \(.+\)$/);
      expect(e.message).not.toContain('c2VjcmV0');
    }
  });
});
