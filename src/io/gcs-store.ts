import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { constants } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '@google-cloud/storage';
import { TwinlakeError, invalidInput, notFound } from '../core/errors.ts';
import { loadSdk } from './cloud-sdk.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';
import { checkKey, checkPrefix, checkRange, compareKeys } from './keys.ts';

/** How to reach Google Cloud Storage. One options object shares one client. */
export interface GcsOptions {
  /** The project billed for requests; omitted: the one the credentials name. */
  projectId?: string;
  /** A service account key file (JSON). Omitted with `credentials`: the SDK's default chain. */
  keyFilename?: string;
  /** A service account key's fields (`client_email`, `private_key`), instead of a key file. */
  credentials?: { client_email: string; private_key: string; [field: string]: unknown };
  /**
   * Another endpoint than `https://storage.googleapis.com` (a private endpoint, a test server).
   * The SDK sends requests to a custom endpoint without credentials unless
   * `useAuthWithCustomEndpoint` is set.
   */
  apiEndpoint?: string;
  useAuthWithCustomEndpoint?: boolean;
  /** The Google Cloud universe (default `googleapis.com`; a Trusted Partner Cloud names its own, as its keys do). */
  universeDomain?: string;
  /** Attempts per request, first one included (the SDK's default: 4); 1 turns retries off. */
  maxAttempts?: number;
  /** Milliseconds before one HTTP request is abandoned (the SDK's default: 60000). */
  timeout?: number;
  /** Objects per list page; GCS's maximum and default is 1000. */
  listPageSize?: number;
  /** putFile sends files at least this large as a resumable upload (default 16 MiB). */
  resumableThreshold?: number;
  /** Bytes per request of a resumable upload, a multiple of 256 KiB (default 8 MiB): the memory one upload holds. */
  chunkSize?: number;
}

const MiB = 1024 * 1024;
/** Custom metadata key holding the id of the putIfAbsent call that created an object. */
const WRITER_TOKEN = 'twinlake-writer';

type Sdk = typeof import('@google-cloud/storage');
const clients = new WeakMap<GcsOptions, Promise<Storage>>();

/** The SDK is loaded on first use, so users of local tables never load it. */
function clientFor(options: GcsOptions): Promise<Storage> {
  let c = clients.get(options);
  if (!c) {
    c = checkCredentials(options).then(() => loadSdk('gcs store', '@google-cloud/storage', () => import('@google-cloud/storage') as Promise<Sdk>)).then(
      (sdk) =>
        new sdk.Storage({
          projectId: options.projectId,
          keyFilename: options.keyFilename,
          credentials: options.credentials,
          apiEndpoint: options.apiEndpoint,
          useAuthWithCustomEndpoint: options.useAuthWithCustomEndpoint,
          universeDomain: options.universeDomain,
          timeout: options.timeout,
          retryOptions: {
            // The SDK reads maxRetries 0 as "unset" (its default, 3): one attempt is autoRetry off.
            ...(options.maxAttempts === undefined ? {} : options.maxAttempts <= 1 ? { autoRetry: false } : { maxRetries: options.maxAttempts - 1 }),
            // Every write here may be retried: put replaces the whole object with the same bytes,
            // putIfAbsent carries its precondition, deletes are idempotent. Besides, with the
            // default (retry only preconditioned writes) File.save turns autoRetry off on the
            // shared client the first time it uploads without a precondition, which would stop
            // retries of every later request.
            idempotencyStrategy: sdk.IdempotencyStrategy.RetryAlways,
          },
        }),
    );
    c.catch(() => clients.delete(options));
    clients.set(options, c);
  }
  return c;
}

/**
 * Settings mistakes the SDK would report late and obscurely (a missing key file as a failed
 * upload, a malformed key as a destroyed stream), said up front without repeating the key.
 */
async function checkCredentials(options: GcsOptions): Promise<void> {
  if (options.keyFilename !== undefined) {
    await access(options.keyFilename, constants.R_OK).catch((e: unknown) => {
      const code = (e as { code?: unknown }).code;
      throw invalidInput(`gcs store: cannot read the key file ${JSON.stringify(options.keyFilename)} given as keyFilename (${typeof code === 'string' ? code : String(e)})`);
    });
  }
  const key = options.credentials;
  if (key !== undefined) {
    const problems = [
      typeof key.client_email !== 'string' || key.client_email === '' ? 'no client_email' : undefined,
      typeof key.private_key !== 'string' || !/-----BEGIN (RSA )?PRIVATE KEY-----/.test(key.private_key) ? 'no PEM private_key' : undefined,
    ].filter((p) => p !== undefined);
    if (problems.length > 0) throw invalidInput(`gcs store: expected credentials with a service account key's client_email and PEM private_key, found ${problems.join(' and ')}`);
  }
}

/**
 * An ObjectStore over a GCS bucket, rooted at `gs://bucket/prefix` (DESIGN.md §7). GCS makes every
 * upload (single request or resumable) visible only once it is finalized, whole; an upload with
 * `ifGenerationMatch=0` succeeds only when no live object has the name, so exactly one of several
 * concurrent creators wins and the others get 412.
 */
export class GcsStore implements ObjectStore {
  readonly root: string;
  readonly bucket: string;
  /** Object name prefix inside the bucket, without a trailing '/'; '' for the bucket root. */
  readonly prefix: string;

  constructor(
    where: { root: string; bucket: string; prefix: string },
    private readonly options: GcsOptions,
  ) {
    this.root = where.root;
    this.bucket = where.bucket;
    this.prefix = where.prefix;
  }

  async get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const name = this.name(path);
    if (range) checkRange('gcs store', range, path);
    if (range?.length === 0) {
      if (!(await this.head(path))) throw this.missing(name);
      return new Uint8Array(0);
    }
    const file = await this.file(name);
    try {
      // `end` is inclusive, as in an HTTP Range header.
      const [data] = await file.download(range ? { start: range.offset, end: range.offset + range.length - 1 } : {});
      return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    } catch (e) {
      // GCS answers 416 for a range starting at or after the end of an existing object.
      if (range && statusOf(e) === 416) return new Uint8Array(0);
      throw this.error(e, 'get', name);
    }
  }

  async head(path: string): Promise<{ size: number; modified: number } | undefined> {
    const name = this.name(path);
    const file = await this.file(name);
    try {
      const [meta] = await file.getMetadata();
      return { size: Number(meta.size ?? 0), modified: meta.updated ? Date.parse(meta.updated) : 0 };
    } catch (e) {
      if (statusOf(e) === 404 && !isNoBucket(e)) return undefined;
      throw this.error(e, 'get', name);
    }
  }

  async put(path: string, body: Uint8Array | string): Promise<void> {
    const name = this.name(path);
    const file = await this.file(name);
    try {
      // One request (multipart upload of metadata and bytes); a copy, so the caller may reuse its buffer.
      await file.save(Buffer.from(bytes(body)), { resumable: false });
    } catch (e) {
      throw this.error(e, 'create', name);
    }
  }

  async putIfAbsent(path: string, body: Uint8Array | string): Promise<boolean> {
    const name = this.name(path);
    const file = await this.file(name);
    // Generation 0 names no live object: the upload succeeds only if the name is free. With the
    // precondition set the SDK counts the upload as idempotent and retries it on transient errors,
    // so a 412 may answer the retry of an attempt that created the object but lost its answer.
    // A token in the object's metadata tells that apart from another writer's object.
    const token = randomUUID();
    try {
      await file.save(Buffer.from(bytes(body)), { resumable: false, metadata: { metadata: { [WRITER_TOKEN]: token } }, preconditionOpts: { ifGenerationMatch: 0 } });
      return true;
    } catch (e) {
      if (statusOf(e) !== 412) throw this.error(e, 'create', name);
    }
    try {
      const [meta] = await file.getMetadata();
      return meta.metadata?.[WRITER_TOKEN] === token;
    } catch (e) {
      // Deleted since: it existed when this writer tried, so this writer lost.
      if (statusOf(e) === 404 && !isNoBucket(e)) return false;
      throw this.error(e, 'get', name);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    checkPrefix('gcs store', prefix);
    const base = this.prefix === '' ? '' : `${this.prefix}/`;
    const bucket = (await clientFor(this.options)).bucket(this.bucket);
    const out: ObjectMeta[] = [];
    let pageToken: string | undefined;
    do {
      let files, next;
      try {
        [files, next] = await bucket.getFiles({ prefix: base + prefix, autoPaginate: false, maxResults: this.options.listPageSize, pageToken });
      } catch (e) {
        throw this.error(e, 'list', base + prefix);
      }
      for (const f of files) {
        if (!f.name.startsWith(base)) continue;
        const meta = f.metadata;
        out.push({ path: f.name.slice(base.length), size: Number(meta.size ?? 0), modified: meta.updated ? Date.parse(meta.updated) : 0 });
      }
      pageToken = (next as { pageToken?: string } | null)?.pageToken;
    } while (pageToken);
    // GCS lists in UTF-8 byte order already; sorting keeps every store alike whatever a server does.
    out.sort((a, b) => compareKeys(a.path, b.path));
    yield* out;
  }

  async delete(path: string): Promise<void> {
    const name = this.name(path);
    const file = await this.file(name);
    try {
      await file.delete({ ignoreNotFound: true });
    } catch (e) {
      // ignoreNotFound also hides a missing bucket: deleting from one finds nothing to delete.
      throw this.error(e, 'delete', name);
    }
  }

  /**
   * One request below the threshold; above it a resumable upload that sends the file `chunkSize`
   * bytes per request, read from disk as it goes, so one upload holds about one chunk in memory
   * whatever the file's size. GCS shows the object only when the last chunk finalizes it.
   */
  async putFile(path: string, localFile: string): Promise<void> {
    const name = this.name(path);
    const { size } = await stat(localFile);
    if (size < (this.options.resumableThreshold ?? 16 * MiB)) {
      await this.put(path, new Uint8Array(await readFile(localFile)));
      return;
    }
    const file = await this.file(name);
    try {
      await pipeline(createReadStream(localFile, { highWaterMark: MiB }), file.createWriteStream({ resumable: true, chunkSize: this.options.chunkSize ?? 8 * MiB, validation: 'crc32c' }));
    } catch (e) {
      throw this.error(e, 'create', name);
    }
  }

  private async file(name: string) {
    return (await clientFor(this.options)).bucket(this.bucket).file(name);
  }

  /** The object name of a store key. */
  private name(path: string): string {
    checkKey('gcs store', path);
    return this.prefix === '' ? path : `${this.prefix}/${path}`;
  }

  private uri(name: string): string {
    return `gs://${this.bucket}/${name}`;
  }

  private missing(name: string): TwinlakeError {
    return notFound(`gcs store: no object at ${this.uri(name)}`, { bucket: this.bucket, name });
  }

  /** An SDK error as a TwinlakeError naming the bucket, the object, the GCS reason and the fix. */
  private error(e: unknown, op: GcsOp, name: string): TwinlakeError {
    if (e instanceof TwinlakeError) return e;
    const status = statusOf(e);
    const reason = reasonOf(e);
    const context = { bucket: this.bucket, name, status, reason };
    const where = op === 'list' ? `objects named ${this.uri(name)}*` : this.uri(name);
    const detail = `${reason ?? 'error'}${status !== undefined ? `, HTTP ${status}` : ''}`;
    const io = (message: string, retryable: boolean) => new TwinlakeError('io', `gcs store: ${message}`, context, { cause: e, retryable });
    if (status === 404 && isNoBucket(e)) {
      return notFound(`gcs store: bucket ${JSON.stringify(this.bucket)} does not exist${this.at()} (${op} ${where}: notFound)`, context);
    }
    if (status === 404 && op === 'get') return this.missing(name);
    if (status === 403) {
      return io(`access denied to ${op} ${where}: the credentials need the ${PERMISSION[op]} permission, e.g. the Storage Object User role (${detail})`, false);
    }
    const message = messageOf(e);
    // The SDK sends a request without credentials when its default chain finds none; GCS answers
    // 401 to an anonymous caller, which the SDK reports as the chain's failure (uploads) or as is.
    if (/Could not load the default credentials/.test(message) || status === 401 && /^Anonymous caller/.test(message)) {
      return io(
        `no credentials for ${op} ${where}: set keyFilename or credentials (a service account key) in the storage settings, or GOOGLE_APPLICATION_CREDENTIALS to a key file, or run \`gcloud auth application-default login\` (the SDK looked in GOOGLE_APPLICATION_CREDENTIALS, ${adcFile()} and the metadata server${process.env.METADATA_SERVER_DETECTION === 'none' ? ', disabled by METADATA_SERVER_DETECTION=none' : ''})`,
        false,
      );
    }
    if (status === 401) return io(`the endpoint${this.at()} rejected the credentials for ${op} ${where} (${detail})`, false);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) {
      // The failed request may be the token exchange rather than the storage endpoint: name the
      // server the SDK could not reach, as its message says it (`request to URL failed`).
      const url = /request to (\S+) failed/.exec(message)?.[1];
      const target = url ? new URL(url).origin : (this.options.apiEndpoint ?? 'https://storage.googleapis.com');
      return io(`cannot reach the endpoint ${target} to ${op} ${where} (${code})`, true);
    }
    return io(`cannot ${op} ${where} (${detail}: ${message.split('\n')[0]})`, status === undefined || status >= 500 || status === 429);
  }

  private at(): string {
    return this.options.apiEndpoint ? ` at ${this.options.apiEndpoint}` : '';
  }
}

type GcsOp = 'get' | 'create' | 'list' | 'delete';

/** The IAM permission each operation needs (an overwriting put also needs storage.objects.delete). */
const PERMISSION: Record<GcsOp, string> = {
  get: 'storage.objects.get',
  create: 'storage.objects.create',
  list: 'storage.objects.list',
  delete: 'storage.objects.delete',
};

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Where gcloud keeps application-default credentials, as google-auth-library looks for them. */
function adcFile(): string {
  const config = process.env.CLOUDSDK_CONFIG;
  return config ? `${config}/application_default_credentials.json` : '~/.config/gcloud/application_default_credentials.json';
}

function statusOf(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'number') return code;
  // A failed download puts the response body in the message and keeps the status as a string.
  return typeof code === 'string' && /^\d{3}$/.test(code) ? Number(code) : undefined;
}

/** GCS's reason (`notFound`, `forbidden`, `conditionNotMet`), from the error or a download's JSON body. */
function reasonOf(e: unknown): string | undefined {
  const errors = (e as { errors?: { reason?: unknown }[] } | null)?.errors;
  const reason = errors?.[0]?.reason ?? bodyOf(e)?.error?.errors?.[0]?.reason;
  return typeof reason === 'string' ? reason : undefined;
}

function messageOf(e: unknown): string {
  const fromBody = bodyOf(e)?.error?.message;
  if (typeof fromBody === 'string') return fromBody;
  return e instanceof Error ? e.message : String(e);
}

function bodyOf(e: unknown): { error?: { message?: unknown; errors?: { reason?: unknown }[] } } | undefined {
  const message = e instanceof Error ? e.message : undefined;
  if (!message?.startsWith('{')) return undefined;
  try {
    return JSON.parse(message);
  } catch {
    return undefined;
  }
}

/** GCS answers both a missing object and a missing bucket with 404 notFound; only the message differs. */
function isNoBucket(e: unknown): boolean {
  return /bucket does not exist/i.test(messageOf(e));
}

function bytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body;
}
