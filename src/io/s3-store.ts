import { randomUUID } from 'node:crypto';
import { open, readFile, stat } from 'node:fs/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { TwinlakeError, notFound } from '../core/errors.ts';
import { loadSdk } from './cloud-sdk.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';
import { checkKey, checkPrefix, checkRange, compareKeys } from './keys.ts';

/** How to reach S3 or an S3-compatible server. One options object shares one client. */
export interface S3Options {
  region: string;
  /** For S3-compatible servers (RADOS Gateway, MinIO); omitted for AWS. */
  endpoint?: string;
  /** `http://endpoint/bucket/key` instead of `http://bucket.endpoint/key`; most servers need it. */
  forcePathStyle?: boolean;
  /** Omitted: the SDK's default chain (environment, shared config files, SSO, instance roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Attempts per request, first one included (default 4). The SDK's standard retry mode repeats
   * 5xx answers, throttling (503 SlowDown), timeouts and reset connections, with jittered
   * exponential backoff; a create-only PUT it repeats is recognised by its writer token.
   */
  maxAttempts?: number;
  /** Milliseconds to wait for a connection to the endpoint (default 10000). */
  connectionTimeout?: number;
  /** Milliseconds a request may go without a byte sent or received before it fails and is retried (the SDK's default). */
  socketTimeout?: number;
  /** Keys per ListObjectsV2 page; S3's maximum and default is 1000. */
  listPageSize?: number;
  /** putFile sends files at least this large in parts (default 16 MiB). */
  multipartThreshold?: number;
  /** Part size for multipart uploads (default 8 MiB; S3's minimum is 5 MiB except the last part). */
  partSize?: number;
}

const MiB = 1024 * 1024;
/** Attempts per request unless the options say otherwise (see S3Options.maxAttempts). */
const DEFAULT_ATTEMPTS = 4;
/** User metadata key (`x-amz-meta-twinlake-writer`) holding the id of the putIfAbsent call that created an object. */
const WRITER_TOKEN = 'twinlake-writer';
/** At most this many parts of one file are read and in flight: memory stays under 4 parts. */
const PARTS_IN_FLIGHT = 4;
/** S3 refuses multipart uploads of more parts; larger files get larger parts. */
const MAX_PARTS = 10_000;
/** AWS: "If you receive a 409 ConditionalRequestConflict, retry the request." A few times suffice. */
const CONFLICT_RETRIES = 4;

type Sdk = typeof import('@aws-sdk/client-s3');
const clients = new WeakMap<S3Options, Promise<{ sdk: Sdk; client: S3Client }>>();
/** Buckets a HeadBucket found, per options object: a missing key then costs one request, not two. */
const bucketsSeen = new WeakMap<S3Options, Set<string>>();

/**
 * The SDK is loaded on first use, so users of local tables never load it; every store made from
 * one options object shares its client and connection pool.
 */
function clientFor(options: S3Options): Promise<{ sdk: Sdk; client: S3Client }> {
  let c = clients.get(options);
  if (!c) {
    c = loadSdk('s3 store', '@aws-sdk/client-s3', () => import('@aws-sdk/client-s3')).then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        region: options.region,
        endpoint: options.endpoint,
        forcePathStyle: options.forcePathStyle,
        credentials: options.credentials,
        maxAttempts: options.maxAttempts ?? DEFAULT_ATTEMPTS,
        retryMode: 'standard',
        // Without a connection timeout a request to an endpoint that drops packets waits forever.
        requestHandler: { connectionTimeout: options.connectionTimeout ?? 10_000, socketTimeout: options.socketTimeout },
        // The SDK's default adds CRC32 flexible checksums to every upload; RADOS Gateway and other
        // S3-compatible servers reject or mishandle them. Send and check them only where S3 requires.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      }),
    }));
    c.catch(() => clients.delete(options));
    clients.set(options, c);
  }
  return c;
}

/**
 * An ObjectStore over an S3 bucket, rooted at `s3://bucket/prefix` (DESIGN.md §7). Atomicity comes
 * from S3 itself: a PUT and a completed multipart upload appear whole or not at all, and a PUT with
 * `If-None-Match: *` succeeds for exactly one writer of a new key (412 for the others).
 */
export class S3Store implements ObjectStore {
  readonly root: string;
  readonly createRetry = 'token';
  readonly bucket: string;
  /** Key prefix inside the bucket, without a trailing '/'; '' for the bucket root. */
  readonly prefix: string;

  constructor(
    where: { root: string; bucket: string; prefix: string },
    private readonly options: S3Options,
  ) {
    this.root = where.root;
    this.bucket = where.bucket;
    this.prefix = where.prefix;
  }

  async get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const key = this.key(path);
    if (range) checkRange('s3 store', range, path);
    if (range?.length === 0) {
      if (!(await this.head(path))) throw this.missing(key);
      return new Uint8Array(0);
    }
    const { sdk, client } = await clientFor(this.options);
    try {
      const res = await client.send(
        new sdk.GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range && `bytes=${range.offset}-${range.offset + range.length - 1}`,
        }),
      );
      return (await res.Body?.transformToByteArray()) ?? new Uint8Array(0);
    } catch (e) {
      // S3 answers 416 for a range starting at or after the end of an existing object.
      if (range && errorCode(e) === 'InvalidRange') return new Uint8Array(0);
      throw this.error(e, 'GetObject', key);
    }
  }

  async head(path: string): Promise<{ size: number; modified: number } | undefined> {
    const key = this.key(path);
    const { sdk, client } = await clientFor(this.options);
    try {
      const res = await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: res.ContentLength ?? 0, modified: res.LastModified?.getTime() ?? 0 };
    } catch (e) {
      // A HEAD response has no body, so a missing key and a missing bucket are both a bare 404.
      if (httpStatus(e) === 404 && errorCode(e) !== 'NoSuchBucket') {
        await this.checkBucket();
        return undefined;
      }
      throw this.error(e, 'HeadObject', key);
    }
  }

  async put(path: string, body: Uint8Array | string): Promise<void> {
    const key = this.key(path);
    const { sdk, client } = await clientFor(this.options);
    try {
      await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes(body) }));
    } catch (e) {
      throw this.error(e, 'PutObject', key);
    }
  }

  async putIfAbsent(path: string, body: Uint8Array | string, token: string = randomUUID()): Promise<boolean> {
    const key = this.key(path);
    const { sdk, client } = await clientFor(this.options);
    // The SDK retries a PUT whose answer was lost (a reset connection, a 5xx after the write); the
    // retry then finds the object this call created and gets 412. A token in the object's metadata
    // tells that apart from another writer's object (and a caller repeating the call passes the same).
    for (let attempt = 0; ; attempt++) {
      try {
        await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes(body), IfNoneMatch: '*', Metadata: { [WRITER_TOKEN]: token } }));
        return true;
      } catch (e) {
        // 412 PreconditionFailed: the key exists. A plain 409 is what some servers answer a writer
        // that lost to a concurrent create: taken as well.
        if (httpStatus(e) === 412) return this.writtenBy(key, token);
        // 409 ConditionalRequestConflict means a concurrent write to the key was still in progress,
        // not that one finished: the other writer may yet fail. AWS says retry; the retry (still
        // If-None-Match: *) gets 412 if the other writer won. Treating it as taken could leave the
        // key unwritten with every caller told it lost.
        if (errorCode(e) === 'ConditionalRequestConflict' && attempt < CONFLICT_RETRIES) {
          await sleep(50 * 2 ** attempt * (0.5 + Math.random()));
          continue;
        }
        if (httpStatus(e) === 409 && errorCode(e) !== 'ConditionalRequestConflict') return this.writtenBy(key, token);
        throw this.error(e, 'PutObject', key);
      }
    }
  }

  /** After a create-only PUT found the key taken: whether an earlier attempt of the same call took it. */
  private async writtenBy(key: string, token: string): Promise<boolean> {
    const { sdk, client } = await clientFor(this.options);
    try {
      const res = await client.send(new sdk.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return res.Metadata?.[WRITER_TOKEN] === token;
    } catch (e) {
      // Deleted since: it existed when this call tried, so this call lost.
      if (httpStatus(e) === 404) return false;
      throw this.error(e, 'HeadObject', key);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    checkPrefix('s3 store', prefix);
    const { sdk, client } = await clientFor(this.options);
    const base = this.prefix === '' ? '' : `${this.prefix}/`;
    const out: ObjectMeta[] = [];
    let token: string | undefined;
    do {
      let page;
      try {
        page = await client.send(
          new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: base + prefix, ContinuationToken: token, MaxKeys: this.options.listPageSize }),
        );
      } catch (e) {
        throw this.error(e, 'ListObjectsV2', base + prefix);
      }
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined || !o.Key.startsWith(base)) continue;
        out.push({ path: o.Key.slice(base.length), size: o.Size ?? 0, modified: o.LastModified?.getTime() ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    // General-purpose buckets list in UTF-8 byte order, but S3 Express directory buckets and some
    // compatible servers do not: sort, so every store lists alike.
    out.sort((a, b) => compareKeys(a.path, b.path));
    yield* out;
  }

  async delete(path: string): Promise<void> {
    const key = this.key(path);
    const { sdk, client } = await clientFor(this.options);
    try {
      // S3 answers 204 whether or not the key existed: idempotent as the contract asks.
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e) {
      throw this.error(e, 'DeleteObject', key);
    }
  }

  /**
   * One PUT below the multipart threshold; above it a multipart upload whose parts are read from
   * the file as they are sent, at most PARTS_IN_FLIGHT at a time, so memory stays bounded whatever
   * the file's size. S3 shows the object only when CompleteMultipartUpload succeeds; a failed
   * upload is aborted so its parts are not kept (and billed).
   */
  async putFile(path: string, localFile: string): Promise<void> {
    const key = this.key(path);
    const { size } = await stat(localFile);
    const threshold = this.options.multipartThreshold ?? 16 * MiB;
    if (size < threshold) {
      await this.put(path, new Uint8Array(await readFile(localFile)));
      return;
    }
    const { sdk, client } = await clientFor(this.options);
    const partSize = Math.max(this.options.partSize ?? 8 * MiB, Math.ceil(size / MAX_PARTS));
    const partCount = Math.ceil(size / partSize);
    let uploadId: string | undefined;
    const file = await open(localFile, 'r');
    try {
      const created = await client.send(new sdk.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }));
      uploadId = created.UploadId;
      const etags: string[] = new Array(partCount);
      let next = 0;
      const worker = async () => {
        while (next < partCount) {
          const index = next++;
          const offset = index * partSize;
          const body = new Uint8Array(Math.min(partSize, size - offset));
          const { bytesRead } = await file.read(body, 0, body.length, offset);
          if (bytesRead !== body.length) throw new Error(`${localFile} shrank while being uploaded`);
          const res = await client.send(
            new sdk.UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: index + 1, Body: body }),
          );
          etags[index] = res.ETag ?? '';
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARTS_IN_FLIGHT, partCount) }, worker));
      await client.send(
        new sdk.CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
    } catch (e) {
      if (uploadId !== undefined) {
        await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
      }
      throw this.error(e, 'PutObject', key);
    } finally {
      await file.close();
    }
  }

  /** The bucket key of a store key. */
  private key(path: string): string {
    checkKey('s3 store', path);
    return this.prefix === '' ? path : `${this.prefix}/${path}`;
  }

  private uri(key: string): string {
    return `s3://${this.bucket}/${key}`;
  }

  private missing(key: string): TwinlakeError {
    return notFound(`s3 store: no object at ${this.uri(key)}`, { bucket: this.bucket, key });
  }

  /**
   * After a bare 404 from HEAD: fails with a missing-bucket error when the bucket is missing, so a
   * misspelt bucket does not read as an empty table. Asked once per bucket and options object.
   */
  private async checkBucket(): Promise<void> {
    let seen = bucketsSeen.get(this.options);
    if (seen?.has(this.bucket)) return;
    const { sdk, client } = await clientFor(this.options);
    try {
      await client.send(new sdk.HeadBucketCommand({ Bucket: this.bucket }));
      if (!seen) bucketsSeen.set(this.options, (seen = new Set()));
      seen.add(this.bucket);
    } catch (e) {
      throw httpStatus(e) === 404 ? this.noBucket('HeadBucket', '') : this.error(e, 'HeadBucket', '');
    }
  }

  private noBucket(action: S3Action, key: string): TwinlakeError {
    const where = key === '' ? '' : ` ${this.uri(key)}`;
    return notFound(`s3 store: bucket ${JSON.stringify(this.bucket)} does not exist${this.at()} (${action}${where}: NoSuchBucket)`, { bucket: this.bucket, key });
  }

  /** An SDK error as a TwinlakeError naming the bucket, the key, the S3 error code and the fix. */
  private error(e: unknown, action: S3Action, key: string): TwinlakeError {
    if (e instanceof TwinlakeError) return e;
    const code = errorCode(e);
    const status = httpStatus(e);
    const detail = `${code}${status !== undefined ? `, HTTP ${status}` : ''}: ${e instanceof Error ? e.message : String(e)}`;
    const context = { bucket: this.bucket, key, code, status };
    const io = (message: string, retryable: boolean) => new TwinlakeError('io', `s3 store: ${message}`, context, { cause: e, retryable });
    const where = key === '' ? `bucket ${JSON.stringify(this.bucket)}` : this.uri(key);
    if (code === 'NoSuchKey') return this.missing(key);
    if (code === 'NoSuchBucket') return this.noBucket(action, key);
    if (code === 'PermanentRedirect' || status === 301 || code === 'AuthorizationHeaderMalformed' && bucketRegion(e) !== undefined) {
      const region = bucketRegion(e);
      const where = region ? `is in region ${region}` : 'is in another region';
      return io(`bucket ${JSON.stringify(this.bucket)} ${where}, not ${this.options.region}: set the S3 region${region ? ` to ${region}` : ''} (${action}: ${code === 'AuthorizationHeaderMalformed' ? code : 'PermanentRedirect'})`, false);
    }
    if (code === 'AccessDenied' || code === 'AllAccessDisabled' || status === 403 && !CREDENTIAL_CODES.has(code)) {
      return io(`access denied to ${action} on ${where}: the credentials need the ${PERMISSION[action]} permission (${detail})`, false);
    }
    if (CREDENTIAL_CODES.has(code)) return io(`the endpoint${this.at()} rejected the credentials for ${action} on ${where} (${detail})`, false);
    if (code === 'CredentialsProviderError') {
      // Where the SDK's default chain looks, in its order; the message must tell the user which
      // setting to add, not echo anything found.
      return io(
        `no credentials for ${action} on ${where}: set an access key in the storage settings, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile (credential.accessKeyId and credential.secretAccessKey, optional sessionToken; or AWS_PROFILE naming a profile). The SDK's default chain looked in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), SSO, the shared files ${process.env.AWS_SHARED_CREDENTIALS_FILE ?? '~/.aws/credentials'} and ${process.env.AWS_CONFIG_FILE ?? '~/.aws/config'}, a web identity token (AWS_WEB_IDENTITY_TOKEN_FILE), credential_process, and the container and EC2 instance metadata endpoints${process.env.AWS_EC2_METADATA_DISABLED === 'true' ? ' (disabled by AWS_EC2_METADATA_DISABLED)' : ''}`,
        false,
      );
    }
    const sysCode = (e as { code?: unknown }).code;
    if (code === 'TimeoutError' && /inactivity/.test(e instanceof Error ? e.message : '')) {
      return io(`the endpoint ${this.options.endpoint ?? `of region ${this.options.region}`} stopped answering ${action} on ${where} (TimeoutError after ${this.options.socketTimeout !== undefined ? `${this.options.socketTimeout} ms` : 'the SDK default time'} without data; socketTimeout sets the limit)`, true);
    }
    if (typeof sysCode === 'string' && NETWORK_CODES.has(sysCode) || code === 'TimeoutError') {
      return io(`cannot reach the endpoint ${this.options.endpoint ?? `of region ${this.options.region}`} for ${action} on ${where} (${typeof sysCode === 'string' ? sysCode : code})`, true);
    }
    return io(`${action} ${where} failed (${detail})`, status === undefined || status >= 500 || status === 429);
  }

  private at(): string {
    return this.options.endpoint ? ` at ${this.options.endpoint}` : ` in region ${this.options.region}`;
  }
}

type S3Action = 'GetObject' | 'HeadObject' | 'HeadBucket' | 'PutObject' | 'ListObjectsV2' | 'DeleteObject';

/** The IAM action each request needs (HEAD needs GetObject; ListObjectsV2 needs ListBucket). */
const PERMISSION: Record<S3Action, string> = {
  GetObject: 's3:GetObject',
  HeadObject: 's3:GetObject',
  HeadBucket: 's3:ListBucket',
  PutObject: 's3:PutObject',
  ListObjectsV2: 's3:ListBucket',
  DeleteObject: 's3:DeleteObject',
};

const CREDENTIAL_CODES = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'ExpiredToken', 'InvalidToken']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The region S3 says a bucket is in: the x-amz-bucket-region header of the redirect (the only
 * place a HEAD answer has), else the error body's Region (AuthorizationHeaderMalformed) or the
 * regional endpoint it names (`bucket.s3.eu-west-2.amazonaws.com`).
 */
function bucketRegion(e: unknown): string | undefined {
  const err = e as { $response?: { headers?: Record<string, string> }; Region?: unknown; Endpoint?: unknown } | null;
  const header = err?.$response?.headers?.['x-amz-bucket-region'];
  if (header) return header;
  if (typeof err?.Region === 'string' && err.Region !== '') return err.Region;
  const endpoint = typeof err?.Endpoint === 'string' ? /(?:^|\.)s3[.-]([a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com/.exec(err.Endpoint)?.[1] : undefined;
  return endpoint;
}

/** The S3 error code (`NoSuchKey`, `PreconditionFailed`): the SDK puts it in the error's name. */
function errorCode(e: unknown): string {
  const name = (e as { name?: unknown; Code?: unknown } | null)?.name;
  return typeof name === 'string' ? name : 'unknown error';
}

function httpStatus(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function bytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
