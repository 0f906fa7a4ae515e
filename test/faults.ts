import type { ObjectMeta, ObjectStore } from '../src/io/object-store.ts';
import { TwinlakeError } from '../src/core/errors.ts';
import { FileIO } from '../src/io/file-io.ts';
import { storeForLocation } from '../src/io/store-for-uri.ts';

export type StoreCall = 'get' | 'head' | 'put' | 'putIfAbsent' | 'list' | 'delete';

/**
 * An ObjectStore that fails the calls a test chooses (DESIGN.md §9), to prove that a failure at
 * any step loses nothing and leaves both formats readable.
 */
export class FaultyStore implements ObjectStore {
  /** Return true to make a call fail. */
  failWhen: (call: StoreCall, path: string) => boolean = () => false;
  readonly failures: { call: StoreCall; path: string }[] = [];

  constructor(private readonly inner: ObjectStore) {}

  get root(): string {
    return this.inner.root;
  }

  private check(call: StoreCall, path: string): void {
    if (this.failWhen(call, path)) {
      this.failures.push({ call, path });
      throw new TwinlakeError('io', `injected failure: ${call} ${path}`);
    }
  }

  async get(path: string, range?: { offset: number; length: number }) {
    this.check('get', path);
    return this.inner.get(path, range);
  }
  async head(path: string) {
    this.check('head', path);
    return this.inner.head(path);
  }
  async put(path: string, body: Uint8Array | string) {
    this.check('put', path);
    return this.inner.put(path, body);
  }
  async putIfAbsent(path: string, body: Uint8Array | string) {
    this.check('putIfAbsent', path);
    return this.inner.putIfAbsent(path, body);
  }
  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    this.check('list', prefix);
    yield* this.inner.list(prefix);
  }
  async delete(path: string) {
    this.check('delete', path);
    return this.inner.delete(path);
  }
  localPath(path: string) {
    return this.inner.localPath?.(path);
  }
}

/**
 * Local storage whose Delta log writes fail while `failing()` says so: a stop between the Iceberg
 * and the Delta commit. `stores` holds the faulty store of each root, for counting failures.
 */
export function deltaFailingIO(failing: () => boolean): { io: FileIO; stores: Map<string, FaultyStore> } {
  const stores = new Map<string, FaultyStore>();
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri);
    let faulty = stores.get(store.root);
    if (!faulty) {
      const f = new FaultyStore(store);
      f.failWhen = (call, path) => failing() && (call === 'putIfAbsent' || call === 'put') && `${f.root}/${path}`.includes('/_delta_log/');
      faulty = f;
      stores.set(store.root, faulty);
    }
    return { store: faulty, key };
  });
  return { io, stores };
}

/** Passes every call through, and runs `beforeCreate` once before the next putIfAbsent. */
export class HookedStore implements ObjectStore {
  beforeCreate?: (path: string) => Promise<void>;
  constructor(private readonly inner: ObjectStore) {}
  get root() {
    return this.inner.root;
  }
  get(p: string, r?: { offset: number; length: number }) {
    return this.inner.get(p, r);
  }
  head(p: string) {
    return this.inner.head(p);
  }
  put(p: string, b: Uint8Array | string) {
    return this.inner.put(p, b);
  }
  async putIfAbsent(p: string, b: Uint8Array | string) {
    const hook = this.beforeCreate;
    this.beforeCreate = undefined;
    if (hook) await hook(p);
    return this.inner.putIfAbsent(p, b);
  }
  list(prefix: string): AsyncIterable<ObjectMeta> {
    return this.inner.list(prefix);
  }
  delete(p: string) {
    return this.inner.delete(p);
  }
}
