import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { TwinlakeError, type ErrorKind } from '../core/errors.ts';
import { quoteIdent, quoteString } from '../spec/parquet/duckdb-types.ts';

export { quoteIdent, quoteString };

export interface SessionOptions {
  /** Where DuckDB spills when a query outgrows `memoryLimit`. Default: DuckDB's `.tmp`. */
  tempDir?: string;
  threads?: number;
  /** DuckDB size text, e.g. `1GB`. Default `1GB`: COPY streams, so more rarely helps. */
  memoryLimit?: string;
}

/** The kind of a DuckDB failure, from the error class DuckDB puts first in its message. */
function kindOf(message: string): ErrorKind {
  if (/^(Invalid Input|Conversion|Constraint|Out of Range) Error/.test(message)) return 'invalid-input';
  if (/^IO Error: (No files found|Cannot open file)/.test(message)) return 'not-found';
  if (/^(IO|HTTP) Error/.test(message)) return 'io';
  if (/^Out of Memory Error/.test(message)) return 'io';
  if (/^Not implemented Error/.test(message)) return 'unsupported';
  return 'internal';
}

/**
 * One in-process, in-memory DuckDB instance with one connection. Statements run one at a time, in
 * call order. The session's time zone is UTC, so naive and zoned timestamps meet at UTC.
 */
export class DuckDBSession {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly registered = new Set<string>();

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
  ) {}

  static async open(options: SessionOptions = {}): Promise<DuckDBSession> {
    const config: Record<string, string> = { memory_limit: options.memoryLimit ?? '1GB' };
    if (options.threads !== undefined) config.threads = String(options.threads);
    if (options.tempDir !== undefined) config.temp_directory = options.tempDir;
    const instance = await DuckDBInstance.create(':memory:', config);
    const connection = await instance.connect();
    const session = new DuckDBSession(instance, connection);
    await session.run("SET TimeZone = 'UTC'");
    // Partitioned writes keep one writer per partition open, so a partition becomes one file
    // instead of several when a batch spans more than DuckDB's default of 100 partitions.
    await session.run('SET partitioned_write_max_open_files = 2048');
    return session;
  }

  private serial<T>(sql: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new TwinlakeError('internal', 'duckdb: the session is closed'));
    const next = this.queue.then(work, work).catch((e: unknown) => {
      if (e instanceof TwinlakeError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      throw new TwinlakeError(kindOf(message), `duckdb: ${message}`, { sql: sql.length > 2000 ? `${sql.slice(0, 2000)}…` : sql }, { cause: e, retryable: false });
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Registers scalar functions once per session (`name` guards against registering twice). */
  registerOnce(name: string, register: (connection: DuckDBConnection) => void): void {
    if (this.registered.has(name)) return;
    register(this.connection);
    this.registered.add(name);
  }

  async run(sql: string): Promise<void> {
    await this.serial(sql, () => this.connection.run(sql));
  }

  /** Rows as plain objects in `@duckdb/node-api`'s JS form (BIGINT as bigint, maps as entry arrays). */
  all(sql: string): Promise<Record<string, unknown>[]> {
    return this.serial(sql, async () => (await this.connection.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[]);
  }

  /** Rows as DuckDB values, for callers that convert types themselves. */
  values(sql: string): Promise<{ columns: string[]; rows: DuckDBValue[][] }> {
    return this.serial(sql, async () => {
      const reader = await this.connection.runAndReadAll(sql);
      return { columns: reader.columnNames(), rows: reader.getRows() };
    });
  }

  /** Stops the statement running now (it fails with an interrupted error); the session stays usable. */
  interrupt(): void {
    if (!this.closed) this.connection.interrupt();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
