import { generateKeyPairSync, randomBytes, verify as cryptoVerify } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { GcsStore, type GcsOptions } from '../../src/io/gcs-store.ts';
import type { ObjectMeta } from '../../src/io/object-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { errorOf, tempDir } from '../helpers.ts';
import { type GcsDouble, startGcsDouble } from '../servers/gcs-double.ts';
import { freePort } from '../servers/ports.ts';
import { expectFileIoAt, objectStoreContract } from './object-store-contract.ts';

// No GCS emulator that honours ifGenerationMatch runs here: these tests run GcsStore, on the real
// SDK, against a loopback test double of the GCS JSON API (test/servers/gcs-double.ts). They prove
// the requests the SDK sends and how GcsStore reads the answers GCS documents, not GCS itself.

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function collect(it: AsyncIterable<ObjectMeta>): Promise<string[]> {
  const out: string[] = [];
  for await (const m of it) out.push(m.path);
  return out;
}

describe('GcsStore against a GCS JSON API test double', () => {
  let gcs: GcsDouble;
  let options: GcsOptions;
  let buckets = 0;

  beforeAll(async () => {
    gcs = await startGcsDouble();
    options = { apiEndpoint: gcs.endpoint, projectId: 'twinlake-test' };
  });
  afterAll(async () => {
    await gcs?.stop();
  });

  function newBucket(): string {
    const bucket = `t-${process.pid}-${buckets++}`;
    gcs.createBucket(bucket);
    return bucket;
  }

  function storeAt(bucket: string, prefix: string, opts: GcsOptions = options): GcsStore {
    return new GcsStore({ root: prefix === '' ? `gs://${bucket}` : `gs://${bucket}/${prefix}`, bucket, prefix }, opts);
  }

  /** The requests for objects of one bucket since `from`, as `METHOD uploadType name ifGenerationMatch`. */
  function uploadsTo(bucket: string, from: number): { type: string | null; name: string | null; ifGenerationMatch: string | null }[] {
    return gcs.requests
      .slice(from)
      .filter((r) => r.method === 'POST' && r.path === `/upload/storage/v1/b/${bucket}/o`)
      .map((r) => ({ type: r.query.get('uploadType'), name: r.query.get('name'), ifGenerationMatch: r.query.get('ifGenerationMatch') }));
  }

  // Under a prefix, with neighbours that share its first characters: the store sees only its own.
  objectStoreContract('GcsStore (GCS test double)', async () => {
    const bucket = newBucket();
    const admin = storeAt(bucket, '');
    for (const name of ['wh/tx/neighbour', 'wh/t', 'outside']) await admin.put(name, 'x');
    return { store: storeAt(bucket, 'wh/t'), cleanup: async () => {} };
  });

  it('sends ifGenerationMatch=0 on putIfAbsent, and no precondition on put', async () => {
    // The double enforces the precondition, but a lax server would not: this checks the request
    // itself, so a store that forgot the precondition fails here whatever the server does.
    const bucket = newBucket();
    const store = storeAt(bucket, 'wh');
    const from = gcs.requests.length;
    expect(await store.putIfAbsent('t/_delta_log/00000000000000000000.json', 'c0')).toBe(true);
    expect(await store.putIfAbsent('t/_delta_log/00000000000000000000.json', 'c0 again')).toBe(false);
    await store.put('t/metadata/version-hint.text', '1');
    expect(uploadsTo(bucket, from)).toEqual([
      { type: 'multipart', name: 'wh/t/_delta_log/00000000000000000000.json', ifGenerationMatch: '0' },
      { type: 'multipart', name: 'wh/t/_delta_log/00000000000000000000.json', ifGenerationMatch: '0' },
      { type: 'multipart', name: 'wh/t/metadata/version-hint.text', ifGenerationMatch: null },
    ]);
    expect(text(await store.get('t/_delta_log/00000000000000000000.json'))).toBe('c0');
  });

  it('tells a retried putIfAbsent that its own lost-answer attempt won, and a second writer that it lost', async () => {
    // The first upload is stored but its answer is lost; the SDK retries it (the precondition
    // makes it idempotent) and the retry gets 412. Reading that 412 as "taken" would tell the
    // writer whose object is there that it lost.
    const bucket = newBucket();
    const store = storeAt(bucket, 'wh');
    const from = gcs.requests.length;
    gcs.loseResponses(1);
    expect(await store.putIfAbsent('t/_delta_log/00000000000000000001.json', 'mine')).toBe(true);
    expect(uploadsTo(bucket, from).map((u) => u.ifGenerationMatch)).toEqual(['0', '0']);
    expect(await store.putIfAbsent('t/_delta_log/00000000000000000001.json', 'someone else')).toBe(false);
    expect(text(await store.get('t/_delta_log/00000000000000000001.json'))).toBe('mine');
  });

  it('works at the bucket root too', async () => {
    const store = storeAt(newBucket(), '');
    expect(store.root).toMatch(/^gs:\/\/t-/);
    await store.put('a/b.json', '{}');
    expect(await store.putIfAbsent('a/b.json', 'no')).toBe(false);
    expect(await collect(store.list(''))).toEqual(['a/b.json']);
  });

  it('lists across pages, following pageToken, in order', async () => {
    const bucket = newBucket();
    const store = storeAt(bucket, 'p', { ...options, listPageSize: 3 });
    const keys = Array.from({ length: 11 }, (_, i) => `k/${String(10 - i).padStart(2, '0')}.json`);
    await Promise.all(keys.map((k) => store.put(k, k)));
    await store.put('l/outside', 'x');
    const from = gcs.requests.length;
    expect(await collect(store.list('k/'))).toEqual([...keys].sort());
    const lists = gcs.requests.slice(from).filter((r) => r.path === `/storage/v1/b/${bucket}/o`);
    expect(lists.map((r) => [r.query.get('prefix'), r.query.get('maxResults'), r.query.has('pageToken')])).toEqual([
      ['p/k/', '3', false],
      ['p/k/', '3', true],
      ['p/k/', '3', true],
      ['p/k/', '3', true],
    ]);
    expect(await collect(store.list(''))).toEqual([...keys].sort().concat('l/outside'));
  });

  it('uploads a large file as a resumable upload, one chunk per request, and reads it back byte for byte', async () => {
    const bucket = newBucket();
    const chunkSize = 256 * 1024;
    const store = storeAt(bucket, 'big', { ...options, resumableThreshold: 512 * 1024, chunkSize });
    const dir = tempDir();
    try {
      const body = randomBytes(5 * chunkSize + 123);
      const file = join(dir.path, 'f.parquet');
      await writeFile(file, body);
      const from = gcs.requests.length;
      await store.putFile('data/f.parquet', file);
      const chunks = gcs.requests.slice(from).filter((r) => r.method === 'PUT').map((r) => r.headers['content-range']);
      expect(chunks).toEqual([
        ...Array.from({ length: 5 }, (_, i) => `bytes ${i * chunkSize}-${(i + 1) * chunkSize - 1}/*`),
        `bytes ${5 * chunkSize}-${body.length - 1}/${body.length}`,
      ]);
      expect(uploadsTo(bucket, from)).toEqual([{ type: 'resumable', name: 'big/data/f.parquet', ifGenerationMatch: null }]);
      const got = await store.get('data/f.parquet');
      expect(Buffer.compare(Buffer.from(got), body)).toBe(0);
      expect(Buffer.from(await store.get('data/f.parquet', { offset: chunkSize - 3, length: 6 }))).toEqual(body.subarray(chunkSize - 3, chunkSize + 3));
      // Below the threshold: one request.
      await writeFile(file, 'small');
      const before = gcs.requests.length;
      await store.putFile('data/small.parquet', file);
      expect(uploadsTo(bucket, before)).toEqual([{ type: 'multipart', name: 'big/data/small.parquet', ifGenerationMatch: null }]);
      expect(text(await store.get('data/small.parquet'))).toBe('small');
    } finally {
      dir.cleanup();
    }
  });

  it('resolves gs:// locations through storeForLocation and FileIO', async () => {
    const bucket = newBucket();
    const io = new FileIO((uri) => storeForLocation(uri, { gcs: options }));
    await expectFileIoAt(io, `gs://${bucket}/wh/ns/t`);
  });

  it('names a missing bucket in every operation', async () => {
    const store = storeAt('no-such-bucket', 'wh');
    for (const op of [() => store.get('k'), () => store.put('k', 'x'), () => store.putIfAbsent('k', 'x'), () => store.head('k'), () => collect(store.list(''))]) {
      const e = await errorOf(op);
      expect(e.kind).toBe('not-found');
      expect(e.message).toMatch(new RegExp(`^gcs store: bucket "no-such-bucket" does not exist at ${gcs.endpoint} \\((get|create|list) .*: notFound\\)$`));
    }
  });

  it('names a missing object by its gs:// URI', async () => {
    const bucket = newBucket();
    const e = await errorOf(storeAt(bucket, 'wh').get('t/metadata/v9.metadata.json'));
    expect(e.kind).toBe('not-found');
    expect(e.message).toBe(`gcs store: no object at gs://${bucket}/wh/t/metadata/v9.metadata.json`);
  });

  it('says which permission is missing when access is denied', async () => {
    // A second double, whose principal lacks every object permission (GCS's 403 body and reason).
    const denied = await startGcsDouble();
    try {
      denied.createBucket('lake');
      for (const p of ['storage.objects.create', 'storage.objects.get', 'storage.objects.list', 'storage.objects.delete']) denied.deny(p);
      const store = storeAt('lake', 'wh', { apiEndpoint: denied.endpoint, projectId: 'p' });
      const put = await errorOf(store.put('t/y.json', 'y'));
      expect(put.kind).toBe('io');
      expect(put.retryable).toBe(false);
      expect(put.message).toBe('gcs store: access denied to create gs://lake/wh/t/y.json: the credentials need the storage.objects.create permission, e.g. the Storage Object User role (forbidden, HTTP 403)');
      expect((await errorOf(store.putIfAbsent('t/y.json', 'y'))).message).toMatch(/^gcs store: access denied to create .* storage\.objects\.create permission/);
      expect((await errorOf(store.get('t/x.json'))).message).toMatch(/^gcs store: access denied to get gs:\/\/lake\/wh\/t\/x\.json: the credentials need the storage\.objects\.get permission/);
      expect((await errorOf(store.get('t/x.json', { offset: 0, length: 4 }))).message).toMatch(/storage\.objects\.get permission.*\(forbidden, HTTP 403\)$/);
      expect((await errorOf(store.head('t/x.json'))).message).toMatch(/storage\.objects\.get permission/);
      expect((await errorOf(collect(store.list('t/')))).message).toMatch(/^gcs store: access denied to list objects named gs:\/\/lake\/wh\/t\/\*: the credentials need the storage\.objects\.list permission/);
      expect((await errorOf(store.delete('t/x.json'))).message).toMatch(/^gcs store: access denied to delete .* storage\.objects\.delete permission/);
    } finally {
      await denied.stop();
    }
  });
});

describe('GcsStore errors without a server', () => {
  it('says the endpoint cannot be reached, as a retryable io error', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const store = new GcsStore({ root: 'gs://lake/wh', bucket: 'lake', prefix: 'wh' }, { apiEndpoint: endpoint, projectId: 'p', maxAttempts: 1 });
    for (const op of [() => store.put('t/x.json', 'x'), () => store.get('t/x.json')]) {
      const e = await errorOf(op);
      expect(e.kind).toBe('io');
      expect(e.retryable).toBe(true);
      expect(e.message).toMatch(new RegExp(`^gcs store: cannot reach the endpoint ${endpoint} to (create|get) gs://lake/wh/t/x.json \\(ECONNREFUSED\\)$`));
    }
  });

  it('says where the SDK looked for credentials when the default chain finds none', async () => {
    // The SDK sends the request anyway when the default chain finds nothing, and reports the
    // missing credentials only when the service answers 401: a double that wants credentials
    // stands in for GCS (useAuthWithCustomEndpoint, or the SDK skips credentials for it).
    const server = await startGcsDouble({ requireAuth: true });
    const saved = { ...process.env };
    const dir = tempDir();
    try {
      server.createBucket('lake');
      for (const k of Object.keys(process.env)) if (/^(GOOGLE_|GCLOUD_|CLOUDSDK_|GCE_)/.test(k)) delete process.env[k];
      // An empty home (no gcloud application-default file) and no metadata server probe.
      Object.assign(process.env, { HOME: dir.path, CLOUDSDK_CONFIG: join(dir.path, 'gcloud'), METADATA_SERVER_DETECTION: 'none' });
      const store = new GcsStore({ root: 'gs://lake', bucket: 'lake', prefix: '' }, { apiEndpoint: server.endpoint, useAuthWithCustomEndpoint: true, projectId: 'p', maxAttempts: 1 });
      for (const [op, verb] of [[() => store.put('k', 'x'), 'create'], [() => store.get('k'), 'get']] as const) {
        const e = await errorOf(op);
        expect(e.kind).toBe('io');
        expect(e.retryable).toBe(false);
        expect(e.message).toBe(
          `gcs store: no credentials for ${verb} gs://lake/k: set keyFilename or credentials (a service account key) in the storage settings, or GOOGLE_APPLICATION_CREDENTIALS to a key file, or run \`gcloud auth application-default login\` (the SDK looked in GOOGLE_APPLICATION_CREDENTIALS, ${dir.path}/gcloud/application_default_credentials.json and the metadata server, disabled by METADATA_SERVER_DETECTION=none)`,
        );
      }
    } finally {
      process.env = saved;
      dir.cleanup();
      await server.stop();
    }
  });

  it('signs requests with the service account key given as credentials or as a key file', async () => {
    // Outside googleapis.com the auth library signs its own token with the key (no token
    // exchange), so the double can check the request was signed by exactly this key.
    const server = await startGcsDouble({ requireAuth: true });
    const dir = tempDir();
    try {
      server.createBucket('lake');
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const key = { type: 'service_account', client_email: 'writer@twinlake-test.iam.gserviceaccount.com', private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), universe_domain: 'twinlake.test' };
      const keyFilename = join(dir.path, 'key.json');
      await writeFile(keyFilename, JSON.stringify(key));
      const common = { apiEndpoint: server.endpoint, useAuthWithCustomEndpoint: true, universeDomain: 'twinlake.test', projectId: 'p', maxAttempts: 1 };
      for (const [i, opts] of [{ ...common, credentials: key }, { ...common, keyFilename }].entries()) {
        const store = new GcsStore({ root: 'gs://lake', bucket: 'lake', prefix: '' }, opts);
        const from = server.requests.length;
        expect(await store.putIfAbsent(`k${i}`, 'x')).toBe(true);
        const [header, payload, signature] = String(server.requests[from].headers.authorization).replace(/^Bearer /, '').split('.');
        expect(JSON.parse(Buffer.from(payload, 'base64url').toString()).iss).toBe(key.client_email);
        expect(cryptoVerify('sha256', Buffer.from(`${header}.${payload}`), publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
      }
      server.deny('storage.objects.get', key.client_email);
      const e = await errorOf(new GcsStore({ root: 'gs://lake', bucket: 'lake', prefix: '' }, { ...common, keyFilename }).get('k0'));
      expect(e.message).toBe('gcs store: access denied to get gs://lake/k0: the credentials need the storage.objects.get permission, e.g. the Storage Object User role (forbidden, HTTP 403)');
    } finally {
      dir.cleanup();
      await server.stop();
    }
  });

  it('says what is wrong with a key file or key it cannot use, without repeating the key', async () => {
    const at = (opts: GcsOptions) => new GcsStore({ root: 'gs://lake', bucket: 'lake', prefix: '' }, { apiEndpoint: 'http://127.0.0.1:1', maxAttempts: 1, ...opts });
    const missing = await errorOf(at({ keyFilename: '/nonexistent/twinlake-key.json' }).put('x', 'x'));
    expect(missing.kind).toBe('invalid-input');
    expect(missing.message).toBe('gcs store: cannot read the key file "/nonexistent/twinlake-key.json" given as keyFilename (ENOENT)');
    const bad = await errorOf(at({ credentials: { client_email: 'writer@p.iam.gserviceaccount.com', private_key: 'c2VjcmV0LWtleS1tYXRlcmlhbA==' } }).get('x'));
    expect(bad.kind).toBe('invalid-input');
    expect(bad.message).toBe("gcs store: expected credentials with a service account key's client_email and PEM private_key, found no PEM private_key");
    expect(bad.message).not.toContain('c2VjcmV0');
  });
});
