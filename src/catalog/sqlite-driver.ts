import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import * as nodePath from 'node:path';
import { BUSY_TIMEOUT_MS, errorCode, SwapFailure, type SqlDriver, type SqlRunner } from './sql-driver.ts';

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
