import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { TwinlakeError } from '../core/errors.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';

/**
 * Retries the storage calls that failed for a passing reason — a busy or interrupted file, a
 * throttled or unavailable service, a reset connection, a timeout — with jittered exponential
 * backoff (DESIGN.md §7). The one place for this: the cloud SDKs retry their own requests
 * (configured in their stores), and this covers what they do not — the local disk's EAGAIN and
 * EBUSY, and a request the SDK gave up on.
 *
 * Only what is safe to repeat is repeated. Reads, listings, deletes and overwriting puts are
 * idempotent. A create-only write is repeated with the same writer token, so a first attempt that
 * did create the object (its answer lost) is recognised as this call's, never taken for another
 * writer's: a store that records tokens says so by `createRetry: 'token'`; one whose failed create
 * left nothing (`'atomic'`) needs none. Any other store's create-only write is not repeated.
 */
export interface RetryOptions {
  /** Attempts per call, the first one included (default 4). */
  attempts?: number;
  /** The first wait, in milliseconds; each next one doubles, up to `maxDelayMs` (defaults 50, 2000). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** For tests: how to wait, and the random source of the jitter. */
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const DEFAULTS = { attempts: 4, baseDelayMs: 50, maxDelayMs: 2000 };

/** Local and network error codes, and service error codes, that say "try again". */
const TRANSIENT_CODES = new Set([
  'EAGAIN',
  'EBUSY',
  'EINTR',
  'EMFILE',
  'ENFILE',
  'ETIMEDOUT',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EAI_AGAIN',
  'TimeoutError',
  'RequestTimeout',
  'SlowDown',
  'Throttling',
  'ThrottlingException',
  'RequestThrottled',
  'TooManyRequests',
  'InternalError',
  'ServiceUnavailable',
  'ServerBusy',
  'OperationTimedOut',
  'REQUEST_SEND_ERROR',
]);

/** Whether a storage failure is a passing one: an `io` error with a transient code or an HTTP 408, 429 or 5xx. */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof TwinlakeError) || e.kind !== 'io') return false;
  const { code, status } = e.context as { code?: unknown; status?: unknown };
  if (typeof status === 'number' && (status >= 500 || status === 429 || status === 408)) return true;
  const causeCode = (e.cause as { code?: unknown } | null | undefined)?.code;
  return (typeof code === 'string' && TRANSIENT_CODES.has(code)) || (typeof causeCode === 'string' && TRANSIENT_CODES.has(causeCode));
}

export class RetryingStore implements ObjectStore {
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;

  constructor(
    readonly inner: ObjectStore,
    options: RetryOptions = {},
  ) {
    this.attempts = Math.max(1, options.attempts ?? DEFAULTS.attempts);
    this.baseDelayMs = options.baseDelayMs ?? DEFAULTS.baseDelayMs;
    this.maxDelayMs = options.maxDelayMs ?? DEFAULTS.maxDelayMs;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
  }

  get root(): string {
    return this.inner.root;
  }

  get createRetry(): ObjectStore['createRetry'] {
    return this.inner.createRetry;
  }

  get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    return this.retry(() => this.inner.get(path, range));
  }

  head(path: string): Promise<{ size: number; modified: number } | undefined> {
    return this.retry(() => this.inner.head(path));
  }

  put(path: string, body: Uint8Array | string): Promise<void> {
    return this.retry(() => this.inner.put(path, body));
  }

  putIfAbsent(path: string, body: Uint8Array | string, token?: string): Promise<boolean> {
    const how = this.inner.createRetry;
    if (how === undefined) return this.inner.putIfAbsent(path, body, token);
    const same = token ?? randomUUID();
    return this.retry(() => this.inner.putIfAbsent(path, body, how === 'token' ? same : undefined));
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    // Every store gathers a listing whole before the first entry (to sort it): repeating the
    // whole listing repeats nothing a caller has seen.
    yield* await this.retry(async () => {
      const out: ObjectMeta[] = [];
      for await (const m of this.inner.list(prefix)) out.push(m);
      return out;
    });
  }

  delete(path: string): Promise<void> {
    return this.retry(() => this.inner.delete(path));
  }

  get listTemporary(): ObjectStore['listTemporary'] {
    const inner = this.inner;
    return inner.listTemporary && ((prefix) => inner.listTemporary!(prefix));
  }

  get putFile(): ObjectStore['putFile'] {
    const inner = this.inner;
    if (!inner.putFile) return undefined;
    return async (path, localFile) => {
      // A store may consume the local file (the local store renames it in): when an attempt
      // moved it but lost its answer (the folder's fsync failed after the rename), a repeat
      // finds no local file, and the object of the file's size under `path` is that attempt's.
      const size = await stat(localFile).then(
        (s) => s.size,
        () => undefined,
      );
      let attempt = 0;
      return this.retry(async () => {
        if (attempt++ > 0 && size !== undefined && !(await stat(localFile).then(() => true, () => false)) && (await inner.head(path))?.size === size) return;
        return inner.putFile!(path, localFile);
      });
    };
  }

  localPath(path: string): string | undefined {
    return this.inner.localPath?.(path);
  }

  private async retry<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (e) {
        if (!isTransient(e)) throw e;
        if (attempt >= this.attempts) {
          const err = e as TwinlakeError;
          throw new TwinlakeError(err.kind, `${err.message} (still failing after ${this.attempts} attempts)`, err.context, { cause: e, retryable: err.retryable });
        }
        // Jitter: writers that failed together do not retry together.
        const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
        await this.sleep(Math.round(cap * (0.5 + this.random() / 2)));
      }
    }
  }
}
