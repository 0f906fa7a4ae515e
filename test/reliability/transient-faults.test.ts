import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwinlakeError } from '../../src/core/errors.ts';
import { fileUri } from '../../src/core/uri.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import type { ObjectMeta, ObjectStore } from '../../src/io/object-store.ts';
import { RetryingStore, isTransient } from '../../src/io/retrying-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';

/**
 * Each storage call of a write failing once for a passing reason is retried with backoff and the
 * write succeeds; a failure that persists fails the write with a clear error and leaves the table
 * as it was. Local disk here (busy and interrupted files, through the retry layer); the cloud
 * stores against real servers through a faulty proxy in transient-cloud.test.ts.
 */

/** The passing failures of a local disk, as the local store reports them. */
const LOCAL_FAULTS = ['EBUSY', 'EAGAIN', 'EINTR', 'ETIMEDOUT'] as const;

/** Counts every storage call (of every store) and fails the ones `failing` picks. */
class Calls {
  n = 0;
  failing: (n: number) => (typeof LOCAL_FAULTS)[number] | undefined = () => undefined;
  readonly failed: string[] = [];
  check(call: string, path: string): void {
    const code = this.failing(++this.n);
    if (code === undefined) return;
    this.failed.push(`${call} ${path} ${code}`);
    throw new TwinlakeError('io', `local store: cannot ${call} ${path}: ${code}`, { path, code });
  }
}

/** A store that fails the calls `calls` picks, below the retry layer (where the disk would). */
class FlakyStore implements ObjectStore {
  constructor(
    private readonly inner: ObjectStore,
    private readonly calls: Calls,
  ) {}
  get root() {
    return this.inner.root;
  }
  get createRetry() {
    return this.inner.createRetry;
  }
  async get(p: string, r?: { offset: number; length: number }) {
    this.calls.check('get', p);
    return this.inner.get(p, r);
  }
  async head(p: string) {
    this.calls.check('head', p);
    return this.inner.head(p);
  }
  async put(p: string, b: Uint8Array | string) {
    this.calls.check('put', p);
    return this.inner.put(p, b);
  }
  async putFile(p: string, f: string) {
    this.calls.check('putFile', p);
    return this.inner.putFile!(p, f);
  }
  async putIfAbsent(p: string, b: Uint8Array | string, token?: string) {
    this.calls.check('putIfAbsent', p);
    return this.inner.putIfAbsent(p, b, token);
  }
  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    this.calls.check('list', prefix);
    yield* this.inner.list(prefix);
  }
  async delete(p: string) {
    this.calls.check('delete', p);
    return this.inner.delete(p);
  }
  localPath(p: string) {
    return this.inner.localPath?.(p);
  }
}

const tmp = tempDir();
const calls = new Calls();
const waits: number[] = [];
const retry = { sleep: async (ms: number) => void waits.push(ms), random: () => 0.5 };
let lake: Lakehouse;
let catalog: SqlCatalog;

beforeAll(async () => {
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri);
    return { store: new RetryingStore(new FlakyStore(store, calls), retry), key };
  });
  catalog = new SqlCatalog({ dbPath: join(tmp.path, 'catalog.db'), warehouse: { store: new RetryingStore(new FlakyStore(new LocalStore(tmp.path), calls), retry), rootUri: fileUri(tmp.path) } });
  lake = await Lakehouse.open({ warehouse: tmp.path, io, catalog, onWarning: () => undefined });
});
afterAll(async () => {
  await lake.close();
  catalog.close();
  tmp.cleanup();
});

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

/** Creates a table with one append, then appends again and reads: the operation under test. */
async function writeCommitRead(name: string): Promise<number[]> {
  const t = lake.table(name);
  await t.append([{ id: 1 }, { id: 2 }]);
  await t.append([{ id: 3 }]);
  return ids(await t.read());
}

describe('transient faults on local disk', () => {
  it('the retry layer repeats only passing failures, with jittered exponential backoff', async () => {
    const inner = new LocalStore(tmp.path);
    let left = 3;
    const flaky: ObjectStore = Object.assign(Object.create(inner), {
      get: async (p: string) => {
        if (left-- > 0) throw new TwinlakeError('io', `local store: cannot read ${p}: EBUSY`, { path: p, code: 'EBUSY' });
        return new Uint8Array([1]);
      },
    });
    const slept: number[] = [];
    const store = new RetryingStore(flaky, { attempts: 4, baseDelayMs: 100, maxDelayMs: 250, sleep: async (ms) => void slept.push(ms), random: () => 1 });
    expect(await store.get('x')).toEqual(new Uint8Array([1]));
    expect(slept).toEqual([100, 200, 250]); // doubling, capped
    // Not passing: a full disk, a missing object, a refused permission are never repeated.
    expect(isTransient(new TwinlakeError('io', 'x', { code: 'ENOSPC' }))).toBe(false);
    expect(isTransient(new TwinlakeError('not-found', 'x'))).toBe(false);
    expect(isTransient(new TwinlakeError('io', 'x', { code: 'AccessDenied', status: 403 }))).toBe(false);
    expect(isTransient(new TwinlakeError('io', 'x', { code: 'SlowDown', status: 503 }))).toBe(true);
    expect(isTransient(new TwinlakeError('io', 'x', { code: 'unknown error', status: 500 }))).toBe(true);
  });

  it('every storage call of a create, append and read failing once: retried, and the operation succeeds', async () => {
    calls.failing = () => undefined;
    const start = calls.n;
    expect(await writeCommitRead('ok.count')).toEqual([1, 2, 3]);
    const total = calls.n - start;
    expect(total).toBeGreaterThan(10);
    for (let k = 1; k <= total; k++) {
      const at = calls.n + k;
      const code = LOCAL_FAULTS[k % LOCAL_FAULTS.length]!;
      calls.failing = (n) => (n === at ? code : undefined);
      const failedBefore = calls.failed.length;
      const waited = waits.length;
      const name = `once.t${k}`;
      expect(await writeCommitRead(name), `call ${k} failing once with ${code}`).toEqual([1, 2, 3]);
      calls.failing = () => undefined;
      expect(calls.failed.length).toBe(failedBefore + 1);
      expect(waits.length).toBe(waited + 1); // one retry, after a backoff
      expect(ids(await lake.table(name).read({ format: 'delta' }))).toEqual([1, 2, 3]);
    }
  });

  it('a failure that persists fails the write, says so, and leaves the table as it was', async () => {
    calls.failing = () => undefined;
    const t = lake.table('stuck.t');
    await t.append([{ id: 1 }]);
    const dir = join(tmp.path, 'stuck', 't');
    // Each kind of call a commit makes, failing every time: the data file, a manifest, the
    // metadata file (create-only), the Delta commit (create-only, after the Iceberg commit).
    for (const [what, match] of [
      ['data file', /^putFile .*\.parquet/],
      ['manifest', /^put .*-m0\.avro/],
      ['metadata file', /^putIfAbsent .*\.metadata\.json/],
    ] as const) {
      const before = listFiles(dir);
      const rows = ids(await t.read());
      let current = '';
      const check = calls.check.bind(calls);
      calls.check = (call, path) => {
        current = `${call} ${path}`;
        check(call, path);
      };
      calls.failing = () => (match.test(current) ? 'EBUSY' : undefined);
      try {
        const e = await errorOf(t.append([{ id: 2 }]));
        expect(e.message, what).toMatch(/EBUSY \(still failing after 4 attempts\)/);
      } finally {
        calls.failing = () => undefined;
        calls.check = check;
      }
      expect(listFiles(dir), what).toEqual(before);
      expect(ids(await t.read())).toEqual(rows);
      expect(ids(await t.read({ format: 'delta' }))).toEqual(rows);
    }
    // And once it passes, the next write works.
    await t.append([{ id: 2 }]);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
  });
});
