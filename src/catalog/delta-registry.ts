import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import * as nodePath from 'node:path';
import { TwinlakeError } from '../core/errors.ts';
import { checkTableIdentifier, formatTableIdentifier, type TableIdentifier } from './catalog.ts';
import { openReadOnlyDatabase } from './sql-catalog.ts';

/**
 * Names of Delta-only tables (`formats: [delta]`). An Iceberg catalog has no place for a table
 * without Iceberg metadata, and the Delta log is self-describing, so the registry keeps only name
 * → location, in its own table of the catalog file where Iceberg readers never look.
 */
export class DeltaRegistry {
  /** Undefined when opened read-only on a file that has no registry: no Delta-only tables. */
  private readonly db: Database.Database | undefined;

  constructor(
    readonly dbPath: string,
    readonly catalogName = 'twinlake',
    opts: { readOnly?: boolean } = {},
  ) {
    if (opts.readOnly) {
      this.db = openReadOnlyDatabase(dbPath, ['twinlake_delta_tables']);
      return;
    }
    try {
      if (dbPath !== ':memory:') mkdirSync(nodePath.dirname(nodePath.resolve(dbPath)), { recursive: true });
      this.db = new Database(dbPath, { timeout: 10_000 });
      this.db.pragma('journal_mode = WAL');
      this.db.exec(`CREATE TABLE IF NOT EXISTS twinlake_delta_tables (
        catalog_name VARCHAR(255) NOT NULL,
        table_namespace VARCHAR(255) NOT NULL,
        table_name VARCHAR(255) NOT NULL,
        location VARCHAR(1000) NOT NULL,
        PRIMARY KEY (catalog_name, table_namespace, table_name)
      )`);
    } catch (e) {
      throw new TwinlakeError('io', `delta registry: cannot open ${dbPath}: ${(e as Error).message}`, {}, { cause: e });
    }
  }

  /** Registers a table; registering the same name at the same location again is a no-op. */
  register(id: TableIdentifier, location: string): void {
    checkTableIdentifier(id);
    const ns = id.namespace.join('.');
    if (!this.db) throw new TwinlakeError('io', `delta registry: ${this.dbPath} is open for reading only; cannot register ${formatTableIdentifier(id)}`);
    this.db.prepare('INSERT OR IGNORE INTO twinlake_delta_tables VALUES (?, ?, ?, ?)').run(this.catalogName, ns, id.name, location);
    const found = this.location(id);
    if (found !== location) {
      throw new TwinlakeError('already-exists', `delta registry: table ${formatTableIdentifier(id)} is already registered at ${found}`);
    }
  }

  location(id: TableIdentifier): string | undefined {
    if (!this.db) return undefined;
    const row = this.db
      .prepare('SELECT location FROM twinlake_delta_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?')
      .get(this.catalogName, id.namespace.join('.'), id.name) as { location: string } | undefined;
    return row?.location;
  }

  list(): TableIdentifier[] {
    if (!this.db) return [];
    const rows = this.db
      .prepare('SELECT table_namespace, table_name FROM twinlake_delta_tables WHERE catalog_name = ? ORDER BY 1, 2')
      .all(this.catalogName) as { table_namespace: string; table_name: string }[];
    return rows.map((r) => ({ namespace: r.table_namespace.split('.'), name: r.table_name }));
  }

  close(): void {
    this.db?.close();
  }
}
