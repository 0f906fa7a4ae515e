import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import type { ObjectMeta } from '../../src/io/object-store.ts';
import { S3Store, type S3Options } from '../../src/io/s3-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { errorOf, tempDir } from '../helpers.ts';
import { startLossyProxy } from '../servers/lossy-proxy.ts';
import { freePort } from '../servers/ports.ts';
import { type RadosGateway, radosGatewayMissing, startRadosGateway } from '../servers/radosgw.ts';
import { expectFileIoAt, objectStoreContract } from './object-store-contract.ts';

const missing = radosGatewayMissing();
// Without the server the S3 tests skip, except in CI, where a missing server is a failure.
const skip = missing !== undefined && !process.env.CI;
if (skip) console.warn(`test/io/s3-store.test.ts: S3 tests skipped: ${missing}`);

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function collect(it: AsyncIterable<ObjectMeta>): Promise<string[]> {
  const out: string[] = [];
  for await (const m of it) out.push(m.path);
  return out;
}

describe.skipIf(skip)(`S3Store on RADOS Gateway${skip ? ` (skipped: ${missing})` : ''}`, () => {
  let rgw: RadosGateway;
  let admin: S3Client;
  let options: S3Options;
  let buckets = 0;

  beforeAll(async () => {
    if (missing) throw new Error(`CI is set, so the S3 tests must run, but ${missing}`);
    rgw = await startRadosGateway();
    const credentials = { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey };
    options = { region: 'us-east-1', endpoint: rgw.endpoint, forcePathStyle: true, credentials };
    admin = new S3Client({ ...options, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  });
  afterAll(async () => {
    admin?.destroy();
    await rgw?.stop();
  });

  /** A fresh bucket per test; the whole cluster is RAM-only and thrown away after the file. */
  async function newBucket(): Promise<string> {
    const bucket = `t-${process.pid}-${buckets++}`;
    await admin.send(new CreateBucketCommand({ Bucket: bucket }));
    return bucket;
  }

  function storeAt(bucket: string, prefix: string, opts: S3Options = options): S3Store {
    return new S3Store({ root: prefix === '' ? `s3://${bucket}` : `s3://${bucket}/${prefix}`, bucket, prefix }, opts);
  }

  // Under a prefix, with neighbours that share its first characters: the store sees only its own.
  objectStoreContract('S3Store', async () => {
    const bucket = await newBucket();
    for (const Key of ['wh/tx/neighbour', 'wh/t', 'outside']) await admin.send(new PutObjectCommand({ Bucket: bucket, Key, Body: 'x' }));
    return { store: storeAt(bucket, 'wh/t'), cleanup: async () => {} };
  });

  it('tells a retried putIfAbsent that its own lost-answer attempt won, and a second writer that it lost', async () => {
    // The first conditional PUT reaches the gateway and creates the object, but its answer is lost
    // (a loopback proxy drops the connection); the SDK retries and the retry gets 412. Reading that
    // 412 as "taken" would tell the writer whose commit is in place that it lost.
    const bucket = await newBucket();
    const proxy = await startLossyProxy(rgw.endpoint);
    try {
      const store = storeAt(bucket, 'wh', { ...options, endpoint: proxy.endpoint });
      const key = 't/_delta_log/00000000000000000001.json';
      proxy.loseNext(1, (req) => req.method === 'PUT' && req.headers['if-none-match'] === '*');
      expect(await store.putIfAbsent(key, 'mine')).toBe(true);
      expect(proxy.log.filter((l) => l.startsWith('PUT')).map((l) => l.split(' ')[2])).toEqual(['lost', '412']);
      expect(await store.putIfAbsent(key, 'someone else')).toBe(false);
      expect(text(await store.get(key))).toBe('mine');
    } finally {
      await proxy.stop();
    }
  });

  it('works at the bucket root too', async () => {
    const store = storeAt(await newBucket(), '');
    expect(store.root).toMatch(/^s3:\/\/t-/);
    await store.put('a/b.json', '{}');
    expect(await store.putIfAbsent('a/b.json', 'no')).toBe(false);
    expect(await collect(store.list(''))).toEqual(['a/b.json']);
  });

  it('lists across ListObjectsV2 pages, in order', async () => {
    const bucket = await newBucket();
    const store = storeAt(bucket, 'p', { ...options, listPageSize: 3 });
    const keys = Array.from({ length: 11 }, (_, i) => `k/${String(10 - i).padStart(2, '0')}.json`);
    await Promise.all(keys.map((k) => store.put(k, k)));
    await store.put('l/outside', 'x');
    expect(await collect(store.list('k/'))).toEqual([...keys].sort());
    expect(await collect(store.list(''))).toEqual([...keys].sort().concat('l/outside'));
  });

  it('uploads a large file in parts and reads it back byte for byte', async () => {
    const bucket = await newBucket();
    const MiB = 1024 * 1024;
    const store = storeAt(bucket, 'big', { ...options, multipartThreshold: 5 * MiB, partSize: 5 * MiB });
    const dir = tempDir();
    try {
      const body = randomBytes(13 * MiB + 123);
      const file = join(dir.path, 'f.parquet');
      await writeFile(file, body);
      await store.putFile('data/f.parquet', file);
      const got = await store.get('data/f.parquet');
      expect(got.length).toBe(body.length);
      expect(Buffer.compare(Buffer.from(got), body)).toBe(0);
      expect(Buffer.from(await store.get('data/f.parquet', { offset: 5 * MiB - 3, length: 6 }))).toEqual(body.subarray(5 * MiB - 3, 5 * MiB + 3));
      // A multipart object's ETag is the hash of its part hashes, suffixed with the part count.
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'big/data/f.parquet' }));
      expect(head.ETag).toMatch(/-3"?$/);
      // Below the threshold: one PUT, a plain ETag.
      await writeFile(file, 'small');
      await store.putFile('data/small.parquet', file);
      expect(text(await store.get('data/small.parquet'))).toBe('small');
      const small = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: 'big/data/small.parquet' }));
      expect(small.ETag).not.toMatch(/-\d+"?$/);
    } finally {
      dir.cleanup();
    }
  });

  it('resolves s3:// locations through storeForLocation and FileIO', async () => {
    const bucket = await newBucket();
    const io = new FileIO((uri) => storeForLocation(uri, { s3: options }));
    const table = `s3://${bucket}/wh/ns/t`;
    await expectFileIoAt(io, table);
  });

  it('names a missing bucket in every operation', async () => {
    const store = storeAt('no-such-bucket', 'wh');
    for (const op of [() => store.get('k'), () => store.put('k', 'x'), () => store.putIfAbsent('k', 'x'), () => store.head('k'), () => collect(store.list(''))]) {
      const e = await errorOf(op);
      expect(e.kind).toBe('not-found');
      expect(e.message).toMatch(new RegExp(`^s3 store: bucket "no-such-bucket" does not exist at ${rgw.endpoint} \\(\\w+.*NoSuchBucket\\)$`));
    }
  });

  it('names a missing object by its s3:// URI', async () => {
    const store = storeAt(await newBucket(), 'wh');
    const e = await errorOf(store.get('t/metadata/v9.metadata.json'));
    expect(e.kind).toBe('not-found');
    expect(e.message).toMatch(/^s3 store: no object at s3:\/\/t-[\d-]+\/wh\/t\/metadata\/v9.metadata.json$/);
  });

  it('says which permission is missing when access is denied', async () => {
    const bucket = await newBucket();
    await storeAt(bucket, '').put('t/x.json', 'x');
    const other = storeAt(bucket, '', { ...options, credentials: rgw.addUser('other') });
    const put = await errorOf(other.put('t/y.json', 'y'));
    expect(put.kind).toBe('io');
    expect(put.retryable).toBe(false);
    expect(put.message).toMatch(new RegExp(`^s3 store: access denied to PutObject on s3://${bucket}/t/y.json: the credentials need the s3:PutObject permission \\(AccessDenied, HTTP 403`));
    expect((await errorOf(other.get('t/x.json'))).message).toMatch(/GetObject on .* s3:GetObject permission \(AccessDenied/);
    expect((await errorOf(collect(other.list('t/')))).message).toMatch(/ListObjectsV2 on .* s3:ListBucket permission \(AccessDenied/);
    expect((await errorOf(other.delete('t/x.json'))).message).toMatch(new RegExp(`^s3 store: access denied to DeleteObject on s3://${bucket}/t/x.json: the credentials need the s3:DeleteObject permission \\(AccessDenied`));
    // HEAD has no body to name the error: the 403 alone still names the permission.
    expect((await errorOf(other.head('t/x.json'))).message).toMatch(new RegExp(`^s3 store: access denied to HeadObject on s3://${bucket}/t/x.json: the credentials need the s3:GetObject permission`));
  });

  it('says the endpoint rejected the credentials when the secret is wrong', async () => {
    const bucket = await newBucket();
    const wrong = storeAt(bucket, '', { ...options, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: 'not-the-secret' } });
    const e = await errorOf(wrong.put('x', 'x'));
    expect(e.kind).toBe('io');
    expect(e.message).toMatch(new RegExp(`^s3 store: the endpoint at ${rgw.endpoint} rejected the credentials for PutObject on s3://${bucket}/x \\(SignatureDoesNotMatch, HTTP 403`));
    expect(e.message).not.toContain('not-the-secret');
  });

  it('uses the SDK default chain when the settings give no keys (here: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)', async () => {
    const bucket = await newBucket();
    const saved = { ...process.env };
    const dir = tempDir();
    try {
      for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
      Object.assign(process.env, {
        HOME: dir.path,
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_CONFIG_FILE: join(dir.path, 'none'),
        AWS_SHARED_CREDENTIALS_FILE: join(dir.path, 'none'),
        AWS_ACCESS_KEY_ID: rgw.accessKeyId,
        AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey,
      });
      const { credentials: _, ...withoutKeys } = options;
      const store = storeAt(bucket, 'wh', withoutKeys);
      expect(await store.putIfAbsent('t/a.json', 'from the environment')).toBe(true);
      expect(text(await store.get('t/a.json'))).toBe('from the environment');
      // The keys really came from the environment: another user's keys there are another user.
      process.env.AWS_ACCESS_KEY_ID = rgw.addUser('env-other').accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = 'env-other-secret-0123456789';
      const other = storeAt(bucket, 'wh', { ...withoutKeys });
      expect((await errorOf(other.get('t/a.json'))).message).toMatch(/access denied to GetObject .* s3:GetObject permission/);
    } finally {
      process.env = saved;
      dir.cleanup();
    }
  });
});

describe('S3Store errors without a server', () => {
  it('says the endpoint cannot be reached, as a retryable io error', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const store = new S3Store({ root: 's3://lake/wh', bucket: 'lake', prefix: 'wh' }, { region: 'us-east-1', endpoint, forcePathStyle: true, maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    const e = await errorOf(store.put('t/x.json', 'x'));
    expect(e.kind).toBe('io');
    expect(e.retryable).toBe(true);
    expect(e.message).toBe(`s3 store: cannot reach the endpoint ${endpoint} for PutObject on s3://lake/wh/t/x.json (ECONNREFUSED)`);
  });

  it('fails a request the endpoint stops answering after socketTimeout, as a retryable io error (a loopback server that never answers)', async () => {
    const server = createServer(() => {
      // Takes the request and never answers.
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const store = new S3Store({ root: 's3://lake', bucket: 'lake', prefix: '' }, { region: 'us-east-1', endpoint, forcePathStyle: true, maxAttempts: 1, socketTimeout: 300, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
      const started = Date.now();
      const e = await errorOf(store.get('k'));
      expect(Date.now() - started).toBeLessThan(5000);
      expect(e.kind).toBe('io');
      expect(e.retryable).toBe(true);
      expect(e.message).toBe(`s3 store: the endpoint ${endpoint} stopped answering GetObject on s3://lake/k (TimeoutError after 300 ms without data; socketTimeout sets the limit)`);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 10_000);

  it('names the region a bucket is in when S3 answers PermanentRedirect (a loopback server sending the redirect S3 sends)', async () => {
    // A test double, not an S3 emulator: it answers every request as S3 answers a request sent to
    // the wrong region, with the bucket's region in x-amz-bucket-region.
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(301, { 'content-type': 'application/xml', 'x-amz-bucket-region': 'eu-west-2' });
      res.end(req.method === 'HEAD' ? undefined : '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>lake.s3.eu-west-2.amazonaws.com</Endpoint><Bucket>lake</Bucket></Error>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const store = new S3Store({ root: 's3://lake', bucket: 'lake', prefix: '' }, { region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
      for (const op of [() => store.put('k', 'x'), () => store.head('k'), () => store.get('k')]) {
        const e = await errorOf(op);
        expect(e.kind).toBe('io');
        expect(e.retryable).toBe(false);
        expect(e.message).toMatch(/^s3 store: bucket "lake" is in region eu-west-2, not us-east-1: set the S3 region to eu-west-2 \((PutObject|HeadObject|GetObject): PermanentRedirect\)$/);
      }
    } finally {
      server.close();
    }
  });

  it('says where the default chain looked and which settings to add when it finds no credentials', async () => {
    const saved = { ...process.env };
    const dir = tempDir();
    try {
      for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
      const files = { credentials: join(dir.path, 'no-credentials'), config: join(dir.path, 'no-config') };
      Object.assign(process.env, { HOME: dir.path, AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: files.config, AWS_SHARED_CREDENTIALS_FILE: files.credentials });
      const store = new S3Store({ root: 's3://lake', bucket: 'lake', prefix: '' }, { region: 'us-east-1', endpoint: 'http://127.0.0.1:1', forcePathStyle: true, maxAttempts: 1 });
      const e = await errorOf(store.get('k'));
      expect(e.kind).toBe('io');
      expect(e.retryable).toBe(false);
      expect(e.message).toBe(
        `s3 store: no credentials for GetObject on s3://lake/k: set an access key in the storage settings, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (credential.accessKeyId and credential.secretAccessKey, optional sessionToken; or AWS_PROFILE naming a profile). The SDK's default chain looked in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), SSO, the shared files ${files.credentials} and ${files.config}, a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE), credential_process, and the container and EC2 instance metadata endpoints (disabled by AWS_EC2_METADATA_DISABLED)`,
      );
    } finally {
      process.env = saved;
      dir.cleanup();
    }
  });

  it('names the region from the error body when the answer has no x-amz-bucket-region header (a loopback test double)', async () => {
    // A test double, not an S3 emulator: PUT gets the 301 S3 sends, without the header; GET gets
    // the 400 AuthorizationHeaderMalformed S3 answers a request signed for the wrong region.
    const server = createServer((req, res) => {
      req.resume();
      if (req.method === 'PUT') {
        res.writeHead(301, { 'content-type': 'application/xml' });
        res.end('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>lake.s3.ap-southeast-2.amazonaws.com</Endpoint><Bucket>lake</Bucket></Error>');
      } else {
        res.writeHead(400, { 'content-type': 'application/xml' });
        res.end("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region 'us-east-1' is wrong; expecting 'ap-southeast-2'</Message><Region>ap-southeast-2</Region></Error>");
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const port = (server.address() as { port: number }).port;
      const store = new S3Store({ root: 's3://lake', bucket: 'lake', prefix: '' }, { region: 'us-east-1', endpoint: `http://127.0.0.1:${port}`, forcePathStyle: true, maxAttempts: 1, credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
      expect((await errorOf(store.put('k', 'x'))).message).toBe('s3 store: bucket "lake" is in region ap-southeast-2, not us-east-1: set the S3 region to ap-southeast-2 (PutObject: PermanentRedirect)');
      expect((await errorOf(store.get('k'))).message).toBe('s3 store: bucket "lake" is in region ap-southeast-2, not us-east-1: set the S3 region to ap-southeast-2 (GetObject: AuthorizationHeaderMalformed)');
    } finally {
      server.close();
    }
  });

  it('says where to put credentials when the default chain finds none', async () => {
    const saved = { ...process.env };
    const dir = tempDir();
    try {
      for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
      Object.assign(process.env, { AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: join(dir.path, 'none'), AWS_SHARED_CREDENTIALS_FILE: join(dir.path, 'none') });
      const store = new S3Store({ root: 's3://lake', bucket: 'lake', prefix: '' }, { region: 'us-east-1', endpoint: 'http://127.0.0.1:1', forcePathStyle: true, maxAttempts: 1 });
      const e = await errorOf(store.put('k', 'x'));
      expect(e.kind).toBe('io');
      expect(e.retryable).toBe(false);
      expect(e.message).toMatch(/^s3 store: no credentials for PutObject on s3:\/\/lake\/k: set an access key in the storage settings, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile/);
    } finally {
      process.env = saved;
      dir.cleanup();
    }
  });
});
