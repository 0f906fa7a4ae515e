import type { ObjectMeta, ObjectStore } from '../../src/io/object-store.ts';
import type { SqlDriver, SqlRunner } from '../../src/catalog/sql-driver.ts';
import { TwinlakeError } from '../../src/core/errors.ts';

/** A storage call as the crash point counts it: store calls, and the catalog database's statements. */
export type CrashCall = 'get' | 'head' | 'list' | 'put' | 'putFile' | 'putIfAbsent' | 'delete' | 'sql-read' | 'sql-write' | 'swap' | 'commit' | 'ddl';

/** Calls that change what is stored: the ones whose crash may come before or after their effect. */
const EFFECTFUL = new Set<CrashCall>(['put', 'putFile', 'putIfAbsent', 'delete', 'sql-write', 'swap', 'commit', 'ddl']);

export const isEffectful = (call: CrashCall): boolean => EFFECTFUL.has(call);

/**
 * The death of a process at one storage call (DESIGN.md §9), shared by every store and catalog
 * database of one lakehouse. While armed it counts calls; at call `at` the process "dies": that
 * call fails (after its effect took place when `landed`, as a write whose answer was lost) and so
 * does every later call on any wrapped store or database. Unlike an ordinary failed call, no
 * cleanup the operation runs after the crash can reach storage, which is what a dead process
 * leaves behind. `onCrash` may stop the process for real (a SIGKILL at that call).
 */
export class CrashPoint {
  /** The calls counted since arming, in order: `put data/…`, `swap`. */
  readonly calls: { call: CrashCall; what: string }[] = [];
  armed = false;
  at?: number;
  landed = false;
  dead = false;
  onCrash?: () => void;

  /** Starts counting; with `at`, dies at that call. */
  arm(at?: number, landed = false): void {
    this.calls.length = 0;
    this.armed = true;
    this.at = at;
    this.landed = landed;
  }

  /** Stops counting (a clean run is over); returns the calls made. */
  disarm(): { call: CrashCall; what: string }[] {
    this.armed = false;
    return [...this.calls];
  }

  private deadError(call: CrashCall, what: string): TwinlakeError {
    return new TwinlakeError('io', `crash: the process died before ${call} ${what}`, {}, { retryable: false });
  }

  /** Runs one storage call through the crash point. */
  async run<T>(call: CrashCall, what: string, effect: () => Promise<T>): Promise<T> {
    if (this.dead) throw this.deadError(call, what);
    if (!this.armed) return effect();
    this.calls.push({ call, what });
    if (this.calls.length !== this.at) return effect();
    this.dead = true;
    if (this.landed) await effect().catch(() => undefined);
    this.onCrash?.();
    throw this.deadError(call, what);
  }
}

/** An ObjectStore whose every call goes through a crash point. */
export class CrashStore implements ObjectStore {
  constructor(
    private readonly inner: ObjectStore,
    private readonly point: CrashPoint,
  ) {}

  get root(): string {
    return this.inner.root;
  }
  /** The store's own promise for a failed create-only write, for a retry layer above. */
  get createRetry(): ObjectStore['createRetry'] {
    return this.inner.createRetry;
  }
  get(path: string, range?: { offset: number; length: number }) {
    return this.point.run('get', path, () => this.inner.get(path, range));
  }
  head(path: string) {
    return this.point.run('head', path, () => this.inner.head(path));
  }
  put(path: string, body: Uint8Array | string) {
    return this.point.run('put', path, () => this.inner.put(path, body));
  }
  putIfAbsent(path: string, body: Uint8Array | string) {
    return this.point.run('putIfAbsent', path, () => this.inner.putIfAbsent(path, body));
  }
  async putFile(path: string, localFile: string) {
    const inner = this.inner;
    return this.point.run('putFile', path, async () => {
      if (inner.putFile) return inner.putFile(path, localFile);
      const { readFile } = await import('node:fs/promises');
      await inner.put(path, new Uint8Array(await readFile(localFile)));
    });
  }
  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    // A listing is one call: its pages are read before the first entry is handed out.
    const all = await this.point.run('list', prefix, async () => {
      const out: ObjectMeta[] = [];
      for await (const m of this.inner.list(prefix)) out.push(m);
      return out;
    });
    yield* all;
  }
  delete(path: string) {
    return this.point.run('delete', path, () => this.inner.delete(path));
  }
  localPath(path: string) {
    return this.inner.localPath?.(path);
  }
}

const isRead = (sql: string) => /^\s*(SELECT|WITH|PRAGMA)\b/i.test(sql);

/**
 * A catalog database whose statements go through a crash point: reads, writes, the
 * compare-and-swap of a commit, and a transaction's COMMIT (a crash before it rolls the
 * transaction back, as the death of a process does; `landed` lets it commit first).
 */
export class CrashDriver implements SqlDriver {
  constructor(
    private readonly inner: SqlDriver,
    private readonly point: CrashPoint,
  ) {}

  get dialect() {
    return this.inner.dialect;
  }
  get where() {
    return this.inner.where;
  }
  private runner(r: SqlRunner): SqlRunner {
    return {
      all: (sql, params) => this.point.run(isRead(sql) ? 'sql-read' : 'sql-write', sql, () => r.all(sql, params)),
      run: (sql, params) => this.point.run(isRead(sql) ? 'sql-read' : 'sql-write', sql, () => r.run(sql, params)),
    };
  }
  all<T>(sql: string, params?: readonly unknown[]) {
    return this.runner(this.inner).all<T>(sql, params);
  }
  run(sql: string, params?: readonly unknown[]) {
    return this.runner(this.inner).run(sql, params);
  }
  async transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    let lostAfterCommit: Error | undefined;
    const out = await this.inner.transaction(async (tx) => {
      const result = await fn(this.runner(tx));
      // The COMMIT: dying before it rolls back; dying just after it (landed) loses only the answer.
      await this.point.run('commit', 'COMMIT', async () => undefined).catch((e: Error) => {
        if (!this.point.landed || this.point.calls.length !== this.point.at) throw e;
        lostAfterCommit = e;
      });
      return result;
    });
    if (lostAfterCommit) throw lostAfterCommit;
    return out;
  }
  swap(sql: string, params: readonly unknown[]) {
    return this.point.run('swap', sql, () => this.inner.swap(sql, params));
  }
  hasTables(names: string[]) {
    return this.point.run('sql-read', `tables ${names.join(', ')}`, () => this.inner.hasTables(names));
  }
  hasColumn(table: string, column: string) {
    return this.point.run('sql-read', `column ${table}.${column}`, () => this.inner.hasColumn(table, column));
  }
  createTables(ddl: string[]) {
    return this.point.run('ddl', 'CREATE TABLE', () => this.inner.createTables(ddl));
  }
  clean(message: string) {
    return this.inner.clean(message);
  }
  share(): SqlDriver {
    this.inner.share();
    return this;
  }
  close() {
    // A dead process's connection closes with it; closing is no storage call.
    return this.inner.close();
  }
}
