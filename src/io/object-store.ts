/**
 * The storage contract every backend implements (DESIGN.md §7). Paths are keys relative to the
 * store's root, `/`-separated, never starting with `/`. One contract test suite
 * (`test/io/object-store-contract.ts`) checks every MUST on every backend.
 */
export interface ObjectMeta {
  path: string;
  size: number;
  /** Last modification, epoch milliseconds. */
  modified: number;
}

export interface ObjectStore {
  /** The URI of the store's root (`file:///abs/dir`, `s3://bucket/prefix`), no trailing slash. */
  readonly root: string;
  /** MUST throw a TwinlakeError of kind `not-found` when the path does not exist. */
  get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array>;
  /** undefined when the path does not exist. */
  head(path: string): Promise<{ size: number; modified: number } | undefined>;
  /** MAY overwrite. A reader never sees a partially written object. */
  put(path: string, body: Uint8Array | string): Promise<void>;
  /**
   * Atomic create-only write. MUST return false when the path exists and MUST never overwrite;
   * exactly one of several concurrent callers for one path gets true. `token` names the call
   * across its attempts (see `createRetry`): a store that records it MUST return true when the
   * object it finds was created with the same token.
   */
  putIfAbsent(path: string, body: Uint8Array | string, token?: string): Promise<boolean>;
  /**
   * Whether a failed putIfAbsent may be repeated (RetryingStore): `atomic` when a call that failed
   * created nothing; `token` when a repeat with the same token recognises an object an earlier
   * attempt created. Undefined: a repeat could take this call's own object for another writer's.
   */
  readonly createRetry?: 'atomic' | 'token';
  /** Every object whose path starts with `prefix`, sorted by path. */
  list(prefix: string): AsyncIterable<ObjectMeta>;
  /**
   * Optional: the store's own unfinished writes under `prefix` — temporary files a writer makes
   * before moving them into place, which `list` never shows (they are no objects) and which a
   * killed writer leaves behind. Only orphan cleanup looks at them; stores without any omit it.
   */
  listTemporary?(prefix: string): AsyncIterable<ObjectMeta>;
  /**
   * Optional: stores a finished local file under `path`, as put would store its bytes (a reader
   * never sees part of it), and may consume the local file (move it rather than copy). Without
   * it, FileIO.putFile reads the file and puts its bytes.
   */
  putFile?(path: string, localFile: string): Promise<void>;
  /** Idempotent: deleting a missing path succeeds. */
  delete(path: string): Promise<void>;
  /**
   * For stores on local disk: the absolute local path of a key, so the engine can write data files
   * in place. Other stores return undefined and the engine writes through a temporary file.
   */
  localPath?(path: string): string | undefined;
}
