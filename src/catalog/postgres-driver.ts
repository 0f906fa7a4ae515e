import { errorMessage, TwinlakeError } from '../core/errors.ts';
import { BUSY_TIMEOUT_MS, errorCode, SwapFailure, type SqlDriver, type SqlRunner } from './sql-driver.ts';

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
    // A connection that drops must not crash the process: idle in the pool it is replaced later;
    // in use, the query under way fails with the error, which is where it is handled.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
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
