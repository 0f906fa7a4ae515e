import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import * as nodePath from 'node:path';
import { errorMessage, TwinlakeError } from '../core/errors.ts';

/**
 * The two databases the SQL catalog and the Delta registry run on, behind one small interface, so
 * the statements and the rules around them are written once (sql-catalog.ts, delta-registry.ts).
 * Statements use `?` placeholders and SQL that SQLite and PostgreSQL both accept; the few things
 * that differ (schema introspection, locks, how a compare-and-swap is committed, error codes) are
 * methods here.
 */
export interface SqlRunner {
  all<T>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a statement and returns how many rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

export interface SqlDriver extends SqlRunner {
  readonly dialect: 'sqlite' | 'postgresql';
  /** Where the database is, for messages: a file path, or the URI without its password. */
  readonly where: string;
  /** Statements in one transaction that holds the database's write lock; rolled back when `fn` throws. */
  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T>;
  /**
   * Runs one UPDATE as its own committed transaction and returns its row count: the catalog's
   * compare-and-swap. Throws `SwapFailure` saying whether the update certainly did not happen.
   */
  swap(sql: string, params: readonly unknown[]): Promise<number>;
  /** Whether all these tables exist. */
  hasTables(names: string[]): Promise<boolean>;
  hasColumn(table: string, column: string): Promise<boolean>;
  /** Runs DDL that creates missing tables, safely against another process doing the same. */
  createTables(ddl: string[]): Promise<void>;
  /** A message with every trace of the connection's password removed. */
  clean(message: string): string;
  /** A second owner of this connection: each owner calls close(), the last one closes it. */
  share(): SqlDriver;
  close(): Promise<void>;
}

/** A failed compare-and-swap; `applied: false` means the pointer certainly did not move. */
export class SwapFailure extends Error {
  constructor(
    readonly applied: false | 'unknown',
    readonly error: unknown,
  ) {
    super(errorMessage(error), { cause: error });
  }
}

export const BUSY_TIMEOUT_MS = 10_000;

/** A unique or primary key violation: another writer inserted the same key first. */
export function isConstraintError(e: unknown): boolean {
  const cause = e instanceof TwinlakeError ? e.cause : e;
  const code = errorCode(cause);
  return code.startsWith('SQLITE_CONSTRAINT') || code === '23505';
}

export function errorCode(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

// ---- SQLite

/**
 * One better-sqlite3 connection. Its calls are synchronous, but the catalog's code awaits between
 * statements, so operations are queued: a transaction's statements never interleave with another
 * operation's on the shared connection (which would put them inside, or roll them back with, it).
 */
export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite';
  readonly where: string;
  private readonly statements = new Map<string, Database.Statement>();
  private queue: Promise<unknown> = Promise.resolve();
  private owners = 1;

  constructor(readonly db: Database.Database, where: string) {
    this.where = where;
  }

  /** Opens (creating) a catalog file for writing: WAL, and full syncs so a committed swap survives power loss. */
  static open(dbPath: string): SqliteDriver {
    if (dbPath !== ':memory:') mkdirSync(nodePath.dirname(nodePath.resolve(dbPath)), { recursive: true });
    const db = new Database(dbPath, { timeout: BUSY_TIMEOUT_MS });
    try {
      // WAL lets readers in other processes (Spark, PyIceberg, a second twinlake) work during a commit.
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
    } catch (e) {
      db.close();
      throw e;
    }
    return new SqliteDriver(db, dbPath);
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  private readonly direct: SqlRunner = {
    all: async <T>(sql: string, params: readonly unknown[] = []) => this.statement(sql).all(...params) as T[],
    run: async (sql: string, params: readonly unknown[] = []) => this.statement(sql).run(...params).changes,
  };

  private queued<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.queue.then(fn);
    this.queue = result.catch(() => undefined);
    return result;
  }

  all<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.queued(() => this.statement(sql).all(...params) as T[]);
  }

  run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return this.queued(() => this.statement(sql).run(...params).changes);
  }

  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.queued(async () => {
      // IMMEDIATE takes the write lock up front, so the checks inside see what the writes change.
      this.statement('BEGIN IMMEDIATE').run();
      try {
        const out = await fn(this.direct);
        this.statement('COMMIT').run();
        return out;
      } catch (e) {
        if (this.db.inTransaction) this.statement('ROLLBACK').run();
        throw e;
      }
    });
  }

  swap(sql: string, params: readonly unknown[]): Promise<number> {
    return this.queued(() => {
      try {
        return this.statement(sql).run(...params).changes;
      } catch (e) {
        // SQLite gave up waiting for the write lock, so the UPDATE did not run; any other failure
        // (a full disk, an I/O error) may have come after the change reached the file.
        throw new SwapFailure(/^SQLITE_(BUSY|LOCKED)/.test(errorCode(e)) ? false : 'unknown', e);
      }
    });
  }

  async hasTables(names: string[]): Promise<boolean> {
    for (const t of names) {
      if ((await this.all(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, [t])).length === 0) return false;
    }
    return true;
  }

  async hasColumn(table: string, column: string): Promise<boolean> {
    return (await this.all(`SELECT 1 FROM pragma_table_info(?) WHERE name = ?`, [table, column])).length > 0;
  }

  async createTables(ddl: string[]): Promise<void> {
    await this.queued(() => this.db.exec(ddl.join(';\n')));
  }

  clean(message: string): string {
    return message;
  }

  share(): SqlDriver {
    this.owners++;
    return this;
  }

  async close(): Promise<void> {
    // Synchronous up to here, so callers that do not await (tests, older code) still close the file.
    if (--this.owners > 0) return;
    if (this.db.open) this.db.close();
  }
}

// ---- PostgreSQL

type PgPool = import('pg').Pool;
type PgClient = import('pg').PoolClient;

/**
 * A pool of connections to PostgreSQL through `pg`, loaded on first use so SQLite users never load
 * it. Transactions run at READ COMMITTED whatever the server's default: there an UPDATE that waited
 * for another transaction's lock re-checks its WHERE against the row that transaction committed,
 * which is what makes the compare-and-swap pick exactly one winner.
 */
export class PostgresDriver implements SqlDriver {
  readonly dialect = 'postgresql';
  private readonly texts = new Map<string, string>();
  private owners = 1;
  private closed?: Promise<void>;

  private constructor(
    private readonly pool: PgPool,
    readonly where: string,
    private readonly password: string,
  ) {}

  /** Connects (checking the server, the database and the credentials now, not at the first query). */
  static async open(uri: string, opts: { readOnly?: boolean; poolSize?: number } = {}): Promise<PostgresDriver> {
    const where = redactedUri(uri);
    const password = passwordOf(uri);
    let pg: typeof import('pg');
    try {
      pg = (await import('pg')).default as unknown as typeof import('pg');
    } catch (e) {
      throw new TwinlakeError('unsupported', `catalog: the PostgreSQL catalog needs the npm package pg, which cannot be loaded (${errorMessage(e)})`);
    }
    const pool = new pg.Pool({
      connectionString: uri,
      max: opts.poolSize ?? 4,
      connectionTimeoutMillis: BUSY_TIMEOUT_MS,
      idleTimeoutMillis: 10_000,
      // An idle pool does not keep a finished program alive.
      allowExitOnIdle: true,
      application_name: 'twinlake',
    });
    // A connection that drops while idle in the pool is replaced later; it must not crash the process.
    pool.on('error', () => undefined);
    // Writes on a read-only open fail in the server, before anything changes. A client runs its
    // queries in order, so this comes before any statement of ours (and keeps the URI's own options).
    if (opts.readOnly) pool.on('connect', (client) => void client.query('SET default_transaction_read_only = on').catch(() => undefined));
    const driver = new PostgresDriver(pool, where, password);
    const client = await driver.connect();
    client.release();
    return driver;
  }

  /** A pooled connection; failing to get one is a connection error that names the server. */
  private async connect(): Promise<PgClient> {
    try {
      return await this.pool.connect();
    } catch (e) {
      throw new TwinlakeError('io', `catalog: cannot connect to ${this.where} (${this.clean(connectReason(e))})`, { uri: this.where, code: errorCode(e) }, { retryable: true });
    }
  }

  /** Messages of the server and of `pg` never hold the password; this makes sure of it. */
  clean(message: string): string {
    return this.password ? message.split(this.password).join('***') : message;
  }

  /** `?` placeholders become `$1`, `$2`, … (the statements hold no `?` inside literals). */
  private text(sql: string): string {
    let t = this.texts.get(sql);
    if (t === undefined) {
      let n = 0;
      t = sql.replace(/\?/g, () => `$${++n}`);
      this.texts.set(sql, t);
    }
    return t;
  }

  private runner(client: PgClient): SqlRunner {
    return {
      all: async <T>(sql: string, params: readonly unknown[] = []) => (await client.query(this.text(sql), [...params])).rows as T[],
      run: async (sql: string, params: readonly unknown[] = []) => (await client.query(this.text(sql), [...params])).rowCount ?? 0,
    };
  }

  private async withClient<T>(fn: (client: PgClient) => Promise<T>): Promise<T> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      return await fn(client);
    } catch (e) {
      // A connection that failed mid-query is dropped, not handed to the next caller.
      if (isConnectionError(e)) broken = e as Error;
      throw e;
    } finally {
      client.release(broken);
    }
  }

  all<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.withClient((c) => this.runner(c).all<T>(sql, params));
  }

  run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return this.withClient((c) => this.runner(c).run(sql, params));
  }

  transaction<T>(fn: (tx: SqlRunner) => Promise<T>): Promise<T> {
    return this.withClient(async (client) => {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      try {
        const out = await fn(this.runner(client));
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw e;
      }
    });
  }

  async swap(sql: string, params: readonly unknown[]): Promise<number> {
    let client: PgClient;
    try {
      client = await this.connect();
    } catch (e) {
      throw new SwapFailure(false, e);
    }
    let broken: Error | undefined;
    let committing = false;
    try {
      await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
      const changed = (await client.query(this.text(sql), [...params])).rowCount ?? 0;
      if (changed !== 1) {
        await client.query('ROLLBACK');
        return 0;
      }
      committing = true;
      await client.query('COMMIT');
      return changed;
    } catch (e) {
      broken = e as Error;
      // Until COMMIT is sent, the server rolls the transaction back however the connection ends.
      // An error the server answered COMMIT with also means it did not commit; a connection lost
      // while COMMIT was under way leaves it open whether it did.
      throw new SwapFailure(!committing || !isConnectionError(e) ? false : 'unknown', e);
    } finally {
      client.release(broken);
    }
  }

  async hasTables(names: string[]): Promise<boolean> {
    // to_regclass follows the search_path, as the unqualified names in the statements do.
    const rows = await this.all<{ n: string }>(`SELECT COUNT(to_regclass(t)) AS n FROM unnest(?::text[]) AS t`, [names]);
    return Number(rows[0]?.n) === names.length;
  }

  async hasColumn(table: string, column: string): Promise<boolean> {
    const rows = await this.all(`SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(?) AND attname = ? AND NOT attisdropped`, [table, column]);
    return rows.length > 0;
  }

  async createTables(ddl: string[]): Promise<void> {
    // Two processes creating the same table at once can collide in the system catalogs even with
    // IF NOT EXISTS; a transaction-scoped advisory lock makes the second wait and find them.
    await this.transaction(async (tx) => {
      await tx.all(`SELECT pg_advisory_xact_lock(?)`, [CREATE_TABLES_LOCK]);
      for (const statement of ddl) await tx.run(statement);
    });
  }

  share(): SqlDriver {
    this.owners++;
    return this;
  }

  close(): Promise<void> {
    if (--this.owners > 0) return Promise.resolve();
    this.closed ??= this.pool.end().catch(() => undefined);
    return this.closed;
  }
}

/** An arbitrary fixed key for the advisory lock around table creation. */
const CREATE_TABLES_LOCK = '7385730218';

/**
 * The connection failed rather than the server answering with an error: SQLSTATE class 08
 * (connection exception) or 57P (the server shut down), Node's socket errors (ECONNRESET, …), or
 * pg's own errors without a code ("Connection terminated unexpectedly").
 */
export function isConnectionError(e: unknown): boolean {
  if (e instanceof TwinlakeError) return false;
  const code = errorCode(e);
  return code === '' || /^(08|57P)/.test(code) || /^E[A-Z]+$/.test(code);
}

export function isPostgresUri(uri: string): boolean {
  return /^postgres(ql)?:\/\//i.test(uri);
}

/** `postgresql://user@host:port/db`: the URI as messages show it, without a password anywhere. */
export function redactedUri(uri: string): string {
  try {
    const u = new URL(uri);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    const params = [...u.searchParams].filter(([k]) => !/^pass(word)?$/i.test(k)).map(([k, v]) => `${k}=${v}`);
    return `postgresql://${user}${u.hostname || 'localhost'}:${u.port || '5432'}${u.pathname}${params.length ? '?' + params.join('&') : ''}`;
  } catch {
    return 'postgresql://(an unreadable URI)';
  }
}

function passwordOf(uri: string): string {
  try {
    const u = new URL(uri);
    return decodeURIComponent(u.password) || u.searchParams.get('password') || '';
  } catch {
    return '';
  }
}

function connectReason(e: unknown): string {
  const code = errorCode(e);
  const message = errorMessage(e);
  if (code === '28P01' || code === '28000') return `authentication failed: ${message}`;
  if (code === '3D000') return message;
  if (/timeout/i.test(message)) return `no answer within ${BUSY_TIMEOUT_MS / 1000} s`;
  return message || code;
}
