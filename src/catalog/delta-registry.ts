import { TwinlakeError } from '../core/errors.ts';
import { checkTableIdentifier, formatTableIdentifier, type TableIdentifier } from './catalog.ts';
import { openReadOnlyDatabase, sqlError } from './sql-catalog.ts';
import type { SqlDriver } from './sql-driver.ts';
import { SqliteDriver } from './sqlite-driver.ts';

const REGISTRY_DDL = `CREATE TABLE IF NOT EXISTS twinlake_delta_tables (
  catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL,
  table_name VARCHAR(255) NOT NULL,
  location VARCHAR(1000) NOT NULL,
  PRIMARY KEY (catalog_name, table_namespace, table_name)
)`;

/**
 * Names of Delta-only tables (`formats: [delta]`). An Iceberg catalog has no place for a table
 * without Iceberg metadata, and the Delta log is self-describing, so the registry keeps only name
 * → location, in its own table of the catalog's database (a SQLite file or PostgreSQL) where
 * Iceberg readers never look.
 */
export class DeltaRegistry {
  /** Undefined when opened read-only on a database that has no registry: no Delta-only tables. */
  private driver: SqlDriver | undefined;
  private readonly ready: Promise<void>;
  readonly dbPath: string;

  /**
   * `source`: a SQLite file (opened now, so a file that cannot be opened fails here), or an open
   * database the registry takes a share of (see openSqlCatalog).
   */
  constructor(
    source: string | SqlDriver,
    readonly catalogName = 'twinlake',
    opts: { readOnly?: boolean } = {},
  ) {
    if (typeof source !== 'string') {
      this.driver = source.share();
      this.dbPath = this.driver.where;
      this.ready = this.prepare(opts.readOnly === true);
      this.ready.catch(() => undefined);
      return;
    }
    this.dbPath = source;
    this.ready = Promise.resolve();
    if (opts.readOnly) {
      const db = openReadOnlyDatabase(source, ['twinlake_delta_tables']);
      this.driver = db ? new SqliteDriver(db, source) : undefined;
      return;
    }
    try {
      const driver = SqliteDriver.open(source);
      driver.db.exec(REGISTRY_DDL);
      this.driver = driver;
    } catch (e) {
      throw new TwinlakeError('io', `delta registry: cannot open ${source}: ${(e as Error).message}`, {}, { cause: e });
    }
  }

  private async prepare(readOnly: boolean): Promise<void> {
    const driver = this.driver!;
    try {
      if (await driver.hasTables(['twinlake_delta_tables'])) return;
      if (readOnly) {
        this.driver = undefined;
        await driver.close();
        return;
      }
      await driver.createTables([REGISTRY_DDL]);
    } catch (e) {
      throw sqlError(e, 'creating the delta registry table', driver);
    }
  }

  /** Resolves once the registry's table exists (or is found missing on a read-only open). */
  async opened(): Promise<void> {
    await this.ready;
  }

  private async open(): Promise<SqlDriver | undefined> {
    await this.ready;
    return this.driver;
  }

  /** Registers a table; registering the same name at the same location again is a no-op. */
  async register(id: TableIdentifier, location: string): Promise<void> {
    checkTableIdentifier(id);
    const ns = id.namespace.join('.');
    const driver = await this.open();
    if (!driver) throw new TwinlakeError('io', `delta registry: ${this.dbPath} is open for reading only; cannot register ${formatTableIdentifier(id)}`);
    try {
      await driver.run('INSERT INTO twinlake_delta_tables VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [this.catalogName, ns, id.name, location]);
    } catch (e) {
      throw sqlError(e, `registering ${formatTableIdentifier(id)}`, driver);
    }
    const found = await this.location(id);
    if (found !== location) {
      throw new TwinlakeError('already-exists', `delta registry: table ${formatTableIdentifier(id)} is already registered at ${found}`);
    }
  }

  async location(id: TableIdentifier): Promise<string | undefined> {
    const driver = await this.open();
    if (!driver) return undefined;
    try {
      const [row] = await driver.all<{ location: string }>(
        'SELECT location FROM twinlake_delta_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?',
        [this.catalogName, id.namespace.join('.'), id.name],
      );
      return row?.location;
    } catch (e) {
      throw sqlError(e, 'reading the delta registry', driver);
    }
  }

  /** Every registered table, sorted by namespace then name (by code point, whatever the database's collation). */
  async list(): Promise<TableIdentifier[]> {
    const driver = await this.open();
    if (!driver) return [];
    let rows: { table_namespace: string; table_name: string }[];
    try {
      rows = await driver.all('SELECT table_namespace, table_name FROM twinlake_delta_tables WHERE catalog_name = ?', [this.catalogName]);
    } catch (e) {
      throw sqlError(e, 'reading the delta registry', driver);
    }
    const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    rows.sort((a, b) => cmp(a.table_namespace, b.table_namespace) || cmp(a.table_name, b.table_name));
    return rows.map((r) => ({ namespace: r.table_namespace.split('.'), name: r.table_name }));
  }

  /** Closes the registry's share of the database (a SQLite file closes before this returns). */
  async close(): Promise<void> {
    const driver = this.driver;
    this.driver = undefined;
    await driver?.close();
  }
}
