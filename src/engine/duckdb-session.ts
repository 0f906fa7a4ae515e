import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBDataChunk, type DuckDBValue } from '@duckdb/node-api';
import { errorMessage, TwinlakeError, type ErrorKind } from '../core/errors.ts';
import { quoteIdent, quoteString } from '../format/parquet/duckdb-types.ts';
import { formatBytes, howToSet, resolveEngineSettings, type EngineOptions, type EngineSettings } from './engine-settings.ts';

export { quoteIdent, quoteString };

/** The engine's memory limit, threads and spill folder (see `resolveEngineSettings`). */
export type SessionOptions = EngineOptions;

/** How far a streamed query's result may run ahead of its consumer. */
const STREAM_BUFFER = '16MB';

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
 * A file the engine opened as Parquet that is not one (zeroed, overwritten, cut short): said in
 * our words, naming the file, without the SQL the engine quotes after its first line.
 */
function notParquetFile(message: string): { file: string; text: string } | undefined {
  const m = /^Invalid Input Error: (?:No magic bytes found at end of file|File) '([^']+)'(.*)$/m.exec(message);
  if (!m || (!/^Invalid Input Error: No magic bytes/.test(message) && !/too small to be a Parquet file|not a parquet file/i.test(m[2]!))) return undefined;
  const first = message.split('\n')[0]!;
  return { file: m[1]!, text: `parquet: ${m[1]}: expected a Parquet file (PAR1 at its start and end), found bytes that are not (${first})` };
}

/**
 * One in-process, in-memory DuckDB instance with one connection. Statements run one at a time, in
 * call order. The session's time zone is UTC, so naive and zoned timestamps meet at UTC.
 */
export class DuckDBSession {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly registered = new Set<string>();
  private streamBufferSet = false;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    /** What this session was opened with, after defaults and the environment were applied. */
    readonly settings: EngineSettings,
    /** This session's own spill folder (DuckDB creates it on first spill and removes it on close). */
    readonly spillDir: string,
  ) {}

  static async open(options: SessionOptions = {}): Promise<DuckDBSession> {
    const settings = resolveEngineSettings(options);
    // DuckDB names its spill files alike in every process, so each session spills into a folder
    // of its own inside the configured one. DuckDB creates only the last level of the path.
    const spillDir = join(settings.tempDir, `twinlake-spill-${randomUUID()}`);
    try {
      mkdirSync(settings.tempDir, { recursive: true });
    } catch (e) {
      throw new TwinlakeError('io', `engine: cannot create the temp folder ${settings.tempDir} (${errorMessage(e)}); choose another with ${howToSet('tempDir')}`, {}, { cause: e });
    }
    const config: Record<string, string> = {
      memory_limit: `${Math.floor(settings.memoryLimitBytes / 1024)}KiB`,
      threads: String(settings.threads),
      temp_directory: spillDir,
    };
    const instance = await DuckDBInstance.create(':memory:', config);
    const connection = await instance.connect();
    const session = new DuckDBSession(instance, connection, settings, spillDir);
    await session.run("SET TimeZone = 'UTC'");
    return session;
  }

  /**
   * An out-of-memory failure names the setting to raise and where its value came from; the
   * engine's own advice (threads, insertion order) speaks of SQL settings users cannot reach.
   */
  private outOfMemory(message: string): string {
    const s = this.settings;
    const from = { option: 'as configured', environment: 'from TWINLAKE_MEMORY_LIMIT', default: 'the default for this machine' }[s.sources.memoryLimit];
    const first = message.split('\n')[0]!.replace(/^Out of Memory Error: /, '');
    return (
      `duckdb: out of memory at the engine's memory limit of ${formatBytes(s.memoryLimitBytes)} (${from}); ` +
      `raise it with ${howToSet('memoryLimit')}, or lower the threads (${s.threads}) with ${howToSet('threads')} [${first}]`
    );
  }

  private serial<T>(sql: string, work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new TwinlakeError('internal', 'duckdb: the session is closed'));
    const next = this.queue.then(work, work).catch((e: unknown) => {
      if (e instanceof TwinlakeError) throw e;
      const message = e instanceof Error ? e.message : String(e);
      const notParquet = notParquetFile(message);
      if (notParquet) throw new TwinlakeError('data-invalid', notParquet.text, { file: notParquet.file }, { cause: e, retryable: false });
      const text = /^Out of Memory Error/.test(message) ? this.outOfMemory(message) : `duckdb: ${message}`;
      throw new TwinlakeError(kindOf(message), text, { sql: sql.length > 2000 ? `${sql.slice(0, 2000)}…` : sql }, { cause: e, retryable: false });
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

  /**
   * Runs a query and hands its result to `onChunk` one chunk at a time (about 2,048 rows), waiting
   * for each call before fetching the next: a slow consumer slows the engine instead of piling rows
   * up in memory. The session runs nothing else until the last chunk is handled. A chunk is valid
   * only during its call.
   */
  stream(sql: string, onChunk: (chunk: DuckDBDataChunk) => void | Promise<void>): Promise<void> {
    return this.serial(sql, async () => {
      if (!this.streamBufferSet) {
        // DuckDB's default buffer (about 1 MB) keeps the engine waiting on each fetch; a few MB let
        // its threads run ahead of the consumer while memory stays bounded.
        await this.connection.run(`SET streaming_buffer_size = '${STREAM_BUFFER}'`);
        this.streamBufferSet = true;
      }
      const result = await this.connection.stream(sql);
      for (;;) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) return;
        await onChunk(chunk);
      }
    });
  }

  /**
   * Lets `progress()` report. DuckDB tracks a statement's progress only while its progress bar is
   * on; it is not printed (the CLI draws its own line on a terminal) and off unless asked for.
   */
  async trackProgress(): Promise<void> {
    await this.run('SET enable_progress_bar = true');
    await this.run('SET enable_progress_bar_print = false');
  }

  /** How far the running statement is, 0..1; undefined when none runs or DuckDB cannot tell. */
  progress(): { fraction: number } | undefined {
    if (this.closed) return undefined;
    const p = this.connection.progress.percentage;
    return p < 0 ? undefined : { fraction: Math.min(1, p / 100) };
  }

  /**
   * Stops the statement running now (it fails with an interrupted error) and resolves once every
   * statement queued so far has settled: DuckDB's threads may still be finishing files after the
   * interrupt is sent, and a caller about to remove what they write must wait for them. The
   * session stays usable.
   */
  async interrupt(): Promise<void> {
    if (this.closed) return;
    const settled = this.queue;
    this.connection.interrupt();
    await settled;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
