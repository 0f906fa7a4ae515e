import { errorMessage, TwinlakeError } from '../core/errors.ts';

/**
 * The two databases the SQL catalog and the Delta registry run on, behind one small interface, so
 * the statements and the rules around them are written once (sql-catalog.ts, delta-registry.ts).
 * Statements use `?` placeholders and SQL that SQLite and PostgreSQL both accept; the few things
 * that differ (schema introspection, locks, how a compare-and-swap is committed, error codes) are
 * methods of each driver: sqlite-driver.ts (better-sqlite3) and postgres-driver.ts (pg).
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
