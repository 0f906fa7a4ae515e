import { MetadataFiles, metadataFileVersion } from './metadata-files.ts';
import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import * as nodePath from 'node:path';
import { systemClock, type Clock } from '../core/clock.ts';
import { errorMessage, invalidInput, isTwinlakeError, notFound, TwinlakeError } from '../core/errors.ts';
import { localPath, relativeTo } from '../core/uri.ts';
import type { ObjectStore } from '../io/object-store.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { applyUpdates, checkRequirements } from '../format/iceberg/updates.ts';
import {
  checkNamespace,
  checkTableIdentifier,
  formatTableIdentifier,
  type Catalog,
  type CommitOptions,
  type CommitResult,
  type LoadTableResult,
  type TableCommit,
  type TableIdentifier,
} from './catalog.ts';
import { isConnectionError } from './postgres-driver.ts';
import { BUSY_TIMEOUT_MS, errorCode, isConstraintError, SwapFailure, type SqlDriver, type SqlRunner } from './sql-driver.ts';
import { SqliteDriver } from './sqlite-driver.ts';

export interface SqlCatalogOptions {
  /** The `catalog_name` column; one database can hold several catalogs. */
  name?: string;
  /** The SQLite file; defaults to `<warehouse>/catalog.db` for a warehouse on local disk. */
  dbPath?: string;
  /**
   * An open database instead of `dbPath` (a PostgreSQL pool: see openSqlCatalog); the catalog
   * takes a share of it and creates its tables on first use.
   */
  driver?: SqlDriver;
  /** Where table folders go (`<rootUri>/<ns levels>/<table>`), and the store that holds them. */
  warehouse: { store: ObjectStore; rootUri: string };
  clock?: Clock;
  /**
   * Open the database for reading only (commands that only read): nothing is created, and a
   * warehouse on a read-only mount, or one the user may only read, works. A commit then fails
   * with an `io` error.
   */
  readOnly?: boolean;
}

/**
 * An Iceberg catalog in a SQL database — a SQLite file or PostgreSQL — with the tables of Iceberg's
 * JDBC catalog and PyIceberg's SqlCatalog, so Spark, Trino and PyIceberg open the same database.
 * The tables are created with the JDBC catalog's original ("V0") DDL, which is also what PyIceberg
 * creates. Java's "V1" schema only adds a nullable `iceberg_type` column (NULL reads as a table);
 * when a database already has it, views are left alone and new rows are marked 'TABLE'.
 *
 * A commit writes a new metadata file with a create-only write, then swaps the table's pointer with
 * one compare-and-swap UPDATE, exactly as the JDBC catalog does; the UPDATE changing no row means a
 * concurrent commit won.
 */
export class SqlCatalog implements Catalog {
  private readonly files: MetadataFiles;
  readonly name: string;
  /** The SQLite file, or the PostgreSQL URI without its password. */
  readonly dbPath: string;
  private readonly store: ObjectStore;
  private readonly warehouseUri: string;
  private readonly clock: Clock;
  private driver: SqlDriver;
  private readonly ready: Promise<CatalogStatements>;
  private readonly readOnly: boolean;

  constructor(options: SqlCatalogOptions) {
    this.name = options.name ?? 'twinlake';
    if (this.name === '' || this.name.length > 255) {
      throw invalidInput(`sql catalog: expected a catalog name of 1 to 255 characters, found ${JSON.stringify(this.name)}`);
    }
    this.store = options.warehouse.store;
    this.files = new MetadataFiles(this.store, 'sql catalog');
    this.warehouseUri = options.warehouse.rootUri.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    this.readOnly = options.readOnly === true;
    if (this.warehouseUri !== this.store.root && relativeTo(this.store.root, this.warehouseUri) === undefined) {
      throw invalidInput(`sql catalog: expected the warehouse ${this.warehouseUri} inside its store ${this.store.root}`);
    }
    if (options.driver) {
      this.driver = options.driver.share();
      this.dbPath = this.driver.where;
      this.ready = this.prepareTables(options.readOnly === true);
      // Until a call awaits it, a failure here must not be reported as unhandled.
      this.ready.catch(() => undefined);
      return;
    }
    if (options.dbPath !== undefined) this.dbPath = options.dbPath;
    else if (this.warehouseUri.startsWith('file:')) this.dbPath = nodePath.join(localPath(this.warehouseUri), 'catalog.db');
    else throw invalidInput(`sql catalog: a dbPath is needed when the warehouse ${this.warehouseUri} is not on local disk`);
    // SQLite opens synchronously, so a file that cannot be opened fails here, in the constructor.
    const db = options.readOnly ? (openReadOnlyDatabase(this.dbPath, CATALOG_TABLES) ?? emptyCatalogDatabase()) : openDatabase(this.dbPath);
    this.driver = new SqliteDriver(db, this.dbPath);
    this.ready = Promise.resolve(this.sqlite('preparing statements', () => catalogStatements(sqliteHasColumn(db, 'iceberg_tables', 'iceberg_type'))));
  }

  /** Resolves once the catalog's tables exist (or are found missing on a read-only open); fails as the first call would. */
  async opened(): Promise<void> {
    await this.ready;
  }

  /** Closes this catalog's share of the database (a SQLite file closes before this returns). */
  close(): Promise<void> {
    return this.driver.close();
  }

  /** `<warehouse>/<namespace levels>/<table>`. */
  defaultTableLocation(id: TableIdentifier): string {
    checkTableIdentifier(id);
    return [this.warehouseUri, ...id.namespace, id.name].join('/');
  }

  // ---- namespaces

  async listNamespaces(parent: string[] = []): Promise<string[][]> {
    if (parent.length > 0) await this.requireNamespace(parent);
    const children = new Set<string>();
    for (const ns of await this.allNamespaces(this.driver)) {
      const levels = ns.split('.');
      if (levels.length > parent.length && parent.every((p, i) => levels[i] === p)) children.add(levels[parent.length]!);
    }
    return [...children].sort().map((c) => [...parent, c]);
  }

  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    checkNamespace(namespace);
    this.requireWritable(`create namespace ${namespace.join('.')}`);
    for (const [k, v] of Object.entries(properties)) {
      if (k === EXISTS_PROPERTY) throw invalidInput(`sql catalog: namespace property ${JSON.stringify(k)} is reserved`);
      if (typeof v !== 'string') throw invalidInput(`sql catalog: namespace property ${JSON.stringify(k)} must be a string, found ${typeof v}`);
    }
    const ns = namespace.join('.');
    const sql = await this.ready;
    try {
      await this.query(`creating namespace ${ns}`, () =>
        this.driver.transaction(async (tx) => {
          if (await this.namespaceExistsNow(tx, namespace)) {
            throw new TwinlakeError('already-exists', `sql catalog: namespace ${ns} already exists`, { namespace });
          }
          // Java's JDBC catalog always writes this marker; PyIceberg writes it when there are no other properties.
          for (const [k, v] of Object.entries({ ...properties, [EXISTS_PROPERTY]: 'true' })) await tx.run(sql.insertProperty, [this.name, ns, k, v]);
        }),
      );
    } catch (e) {
      // Another process created it between our check and our insert.
      if (isConstraintError(e)) throw new TwinlakeError('already-exists', `sql catalog: namespace ${ns} already exists`, { namespace });
      throw e;
    }
  }

  async namespaceExists(namespace: string[]): Promise<boolean> {
    checkNamespace(namespace);
    return this.namespaceExistsNow(this.driver, namespace);
  }

  async loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>> {
    await this.requireNamespace(namespace);
    const sql = await this.ready;
    const rows = await this.query('reading namespace properties', () =>
      this.driver.all<{ property_key: string; property_value: string | null }>(sql.properties, [this.name, namespace.join('.')]),
    );
    const out: Record<string, string> = {};
    for (const r of rows) if (r.property_key !== EXISTS_PROPERTY && r.property_value !== null) out[r.property_key] = r.property_value;
    return out;
  }

  /**
   * Sets and removes a namespace's properties in one transaction (the REST catalog's properties
   * update): `updated` the keys set, `removed` the removals that were there, `missing` those that
   * were not. A key both set and removed is refused, as is the reserved `exists` marker.
   */
  async updateNamespaceProperties(namespace: string[], removals: string[], updates: Record<string, string>): Promise<{ updated: string[]; removed: string[]; missing: string[] }> {
    checkNamespace(namespace);
    const ns = namespace.join('.');
    this.requireWritable(`change the properties of namespace ${ns}`);
    for (const k of [...removals, ...Object.keys(updates)]) {
      if (k === EXISTS_PROPERTY) throw invalidInput(`sql catalog: namespace property ${JSON.stringify(k)} is reserved`);
    }
    const both = removals.find((k) => Object.hasOwn(updates, k));
    if (both !== undefined) throw invalidInput(`sql catalog: namespace property ${JSON.stringify(both)} is both set and removed`);
    const sql = await this.ready;
    return this.query(`changing the properties of namespace ${ns}`, () =>
      this.driver.transaction(async (tx) => {
        if (!(await this.namespaceExistsNow(tx, namespace))) throw notFound(`sql catalog: namespace ${ns} does not exist`, { namespace });
        const held = new Set((await tx.all<{ property_key: string }>(sql.properties, [this.name, ns])).map((r) => r.property_key));
        if (!held.has(EXISTS_PROPERTY)) {
          // A namespace known only through its tables gets the marker Java's JDBC catalog writes.
          await tx.run(sql.insertProperty, [this.name, ns, EXISTS_PROPERTY, 'true']);
        }
        const removed: string[] = [];
        const missing: string[] = [];
        for (const k of removals) {
          if (held.has(k)) {
            await tx.run(sql.deleteProperty, [this.name, ns, k]);
            removed.push(k);
          } else missing.push(k);
        }
        for (const [k, v] of Object.entries(updates)) {
          await tx.run(held.has(k) ? sql.updateProperty : sql.insertProperty, held.has(k) ? [v, this.name, ns, k] : [this.name, ns, k, v]);
        }
        return { updated: Object.keys(updates), removed, missing };
      }),
    );
  }

  async dropNamespace(namespace: string[]): Promise<void> {
    checkNamespace(namespace);
    this.requireWritable(`drop namespace ${namespace.join('.')}`);
    const ns = namespace.join('.');
    const sql = await this.ready;
    await this.query(`dropping namespace ${ns}`, () =>
      this.driver.transaction(async (tx) => {
        if (!(await this.namespaceExistsNow(tx, namespace))) throw notFound(`sql catalog: namespace ${ns} does not exist`, { namespace });
        const [tables] = await tx.all<{ n: number | string }>(sql.countInNamespace, [this.name, ns]);
        const n = Number(tables?.n ?? 0);
        if (n > 0) throw invalidInput(`sql catalog: namespace ${ns} is not empty: it holds ${n} table(s)`, { namespace });
        const child = (await this.allNamespaces(tx)).find((other) => other.startsWith(ns + '.'));
        if (child !== undefined) throw invalidInput(`sql catalog: namespace ${ns} is not empty: it holds namespace ${child}`, { namespace });
        await tx.run(sql.deleteNamespace, [this.name, ns]);
      }),
    );
  }

  // ---- tables

  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    await this.requireNamespace(namespace);
    const sql = await this.ready;
    const rows = await this.query('listing tables', () => this.driver.all<{ table_name: string }>(sql.listTables, [this.name, namespace.join('.')]));
    // Sorted here, by code point, so every database orders names alike whatever its collation.
    return rows.map((r) => r.table_name).sort(byCodePoint).map((name) => ({ namespace: [...namespace], name }));
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    checkTableIdentifier(id);
    return (await this.pointer(id)) !== undefined;
  }

  async loadTable(id: TableIdentifier): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    const metadataLocation = await this.requirePointer(id);
    return { metadataLocation, metadata: await this.files.read(metadataLocation, id) };
  }

  async metadataLocation(id: TableIdentifier): Promise<string> {
    checkTableIdentifier(id);
    return this.requirePointer(id);
  }

  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    this.requireWritable(`create ${formatTableIdentifier(id)}`);
    await this.requireNamespace(id.namespace);
    if ((await this.pointer(id)) !== undefined) throw alreadyExists(id);
    const sql = await this.ready;
    const located = metadata.location ? metadata : { ...metadata, location: this.defaultTableLocation(id) };
    const written = await this.files.write(located, 1);
    try {
      await this.query(`registering ${formatTableIdentifier(id)}`, () => this.driver.run(sql.insertTable, [this.name, id.namespace.join('.'), id.name, written.uri]));
    } catch (e) {
      await this.files.deleteQuietly(written.uri);
      throw isConstraintError(e) ? alreadyExists(id) : e;
    }
    await this.files.resetHint(written.uri, written.version);
    return { metadataLocation: written.uri, metadata: written.metadata };
  }

  async registerTable(id: TableIdentifier, metadataLocation: string): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    this.requireWritable(`register ${formatTableIdentifier(id)}`);
    await this.requireNamespace(id.namespace);
    if ((await this.pointer(id)) !== undefined) throw alreadyExists(id);
    const sql = await this.ready;
    const metadata = await this.files.read(metadataLocation);
    try {
      await this.query(`registering ${formatTableIdentifier(id)}`, () => this.driver.run(sql.insertTable, [this.name, id.namespace.join('.'), id.name, metadataLocation]));
    } catch (e) {
      throw isConstraintError(e) ? alreadyExists(id) : e;
    }
    return { metadataLocation, metadata };
  }

  async commitTable(id: TableIdentifier, commit: TableCommit, options: CommitOptions = {}): Promise<CommitResult> {
    checkTableIdentifier(id);
    this.requireWritable(`commit to ${formatTableIdentifier(id)}`);
    const current = await this.requirePointer(id);
    const base = await this.files.read(current, id);
    let next: TableMetadata;
    try {
      checkRequirements(base, commit.requirements);
      if (commit.updates.length === 0) return { status: 'committed', metadataLocation: current, metadata: base };
      // applyUpdates reports updates that no longer fit the current metadata (a taken sequence number) as conflicts too.
      next = applyUpdates(base, commit.updates, { nowMs: this.clock.nowMs(), previousMetadataLocation: current });
    } catch (e) {
      if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', reason: e.message };
      throw e;
    }
    const sql = await this.ready;
    const hintBefore = this.files.hintBefore(next);
    // The swap comes only once the metadata file and every file it names are durable.
    const written = await this.files.writeForCommit(next, metadataFileVersion(current) + 1, options.durable);
    if ('status' in written) return written;

    let changed: number;
    try {
      changed = await this.driver.swap(sql.swap, [written.uri, current, this.name, id.namespace.join('.'), id.name, current]);
    } catch (e) {
      const failure = e instanceof SwapFailure ? e : new SwapFailure('unknown', e);
      if (failure.applied === false) {
        // The UPDATE certainly did not happen (a lock wait gave up, the connection failed first).
        await this.files.deleteQuietly(written.uri);
        throw sqlError(failure.error, `committing ${formatTableIdentifier(id)}`, this.driver);
      }
      throw new TwinlakeError(
        'commit-state-unknown',
        `sql catalog: the pointer update of ${formatTableIdentifier(id)} to ${written.uri} failed and may or may not have happened: ${this.driver.clean(errorMessage(failure.error))} (${errorCode(failure.error) || 'no code'} in ${this.driver.where})`,
        { table: formatTableIdentifier(id), metadataLocation: written.uri },
        { cause: failure.error },
      );
    }
    if (changed === 0) {
      await this.files.deleteQuietly(written.uri);
      const now = await this.pointer(id);
      return {
        status: 'conflict',
        reason: `sql catalog: table ${formatTableIdentifier(id)} was changed by a concurrent commit: expected metadata ${current}, found ${now ?? 'no table'}`,
      };
    }
    const hint = this.files.advanceHint(() => this.pointer(id), undefined, hintBefore);
    if (options.deferFollowUp) return { status: 'committed', metadataLocation: written.uri, metadata: written.metadata, followUp: hint };
    await hint;
    return { status: 'committed', metadataLocation: written.uri, metadata: written.metadata };
  }

  async dropTable(id: TableIdentifier, options: { purge?: boolean } = {}): Promise<void> {
    checkTableIdentifier(id);
    this.requireWritable(`drop ${formatTableIdentifier(id)}`);
    const current = await this.requirePointer(id);
    let purgeLocation: string | undefined;
    if (options.purge) {
      const metadata = await this.files.read(current, id).catch(() => undefined);
      const location = metadata?.location ?? current.replace(/\/metadata\/[^/]+$/, '');
      purgeLocation = location;
    }
    const sql = await this.ready;
    const changed = await this.query(`dropping ${formatTableIdentifier(id)}`, () => this.driver.run(sql.dropTable, [this.name, id.namespace.join('.'), id.name]));
    if (changed === 0) throw notFound(`sql catalog: table ${formatTableIdentifier(id)} does not exist`, { table: formatTableIdentifier(id) });
    if (purgeLocation !== undefined) await this.files.purge(purgeLocation);
  }

  // ---- internals

  /**
   * Creates the catalog tables unless they exist and picks the statements for the layout found.
   * A read-only open of a database without them sees an empty catalog, as a SQLite file that does
   * not exist does.
   */
  private async prepareTables(readOnly: boolean): Promise<CatalogStatements> {
    return this.query('creating the catalog tables', async () => {
      if (!(await this.driver.hasTables(CATALOG_TABLES))) {
        if (readOnly) {
          const where = this.driver.where;
          await this.driver.close();
          this.driver = new SqliteDriver(emptyCatalogDatabase(), where);
          return catalogStatements(false);
        }
        await this.driver.createTables(CATALOG_DDL);
      }
      return catalogStatements(await this.driver.hasColumn('iceberg_tables', 'iceberg_type'));
    });
  }

  /** A read-only open refuses every change before it writes a file (a metadata file would be an orphan). */
  private requireWritable(what: string): void {
    if (this.readOnly) throw new TwinlakeError('io', `sql catalog: ${this.dbPath} is open for reading only; cannot ${what}`, { dbPath: this.dbPath }, { retryable: false });
  }

  private sqlite<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw sqlError(e, what, this.driver);
    }
  }

  private async query<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw sqlError(e, what, this.driver);
    }
  }

  private async allNamespaces(r: SqlRunner): Promise<string[]> {
    const sql = await this.ready;
    const rows = await this.query('listing namespaces', () => r.all<{ ns: string }>(sql.allNamespaces, [this.name, this.name]));
    return rows.map((row) => row.ns);
  }

  /** A namespace exists when it has properties or tables, or when a namespace below it does. */
  private async namespaceExistsNow(r: SqlRunner, namespace: string[]): Promise<boolean> {
    const ns = namespace.join('.');
    return (await this.allNamespaces(r)).some((other) => other === ns || other.startsWith(ns + '.'));
  }

  private async requireNamespace(namespace: string[]): Promise<void> {
    checkNamespace(namespace);
    if (!(await this.namespaceExistsNow(this.driver, namespace))) {
      throw notFound(`sql catalog: namespace ${namespace.join('.')} does not exist`, { namespace });
    }
  }

  private async pointer(id: TableIdentifier): Promise<string | undefined> {
    const sql = await this.ready;
    const [row] = await this.query('reading a table', () =>
      this.driver.all<{ metadata_location: string | null }>(sql.getTable, [this.name, id.namespace.join('.'), id.name]),
    );
    return row?.metadata_location ?? undefined;
  }

  private async requirePointer(id: TableIdentifier): Promise<string> {
    const location = await this.pointer(id);
    if (location === undefined) {
      throw notFound(`sql catalog: table ${formatTableIdentifier(id)} does not exist`, { table: formatTableIdentifier(id) });
    }
    return location;
  }

}

const EXISTS_PROPERTY = 'exists';
const CATALOG_TABLES = ['iceberg_tables', 'iceberg_namespace_properties'];

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function openDatabase(dbPath: string): Database.Database {
  let db: Database.Database | undefined;
  try {
    db = SqliteDriver.open(dbPath).db;
    db.exec(CATALOG_DDL.join(';\n'));
    return db;
  } catch (e) {
    db?.close();
    throw sqlError(e, 'opening the catalog database', { where: dbPath, dialect: 'sqlite', clean: (m) => m });
  }
}

/** A catalog without tables: what a read-only open of a warehouse without a catalog file sees. */
function emptyCatalogDatabase(): Database.Database {
  const db = new Database(':memory:');
  db.exec(CATALOG_DDL.join(';\n'));
  return db;
}

/**
 * Opens a SQLite file for reading only, or undefined when it does not exist or lacks `tables`.
 * A WAL database normally needs its `-shm` file, which a reader creates next to the database; in
 * a folder it cannot write (a read-only mount) SQLite then refuses to open it (SQLITE_CANTOPEN).
 * Without a `-wal` file every commit is in the main file, so a private in-memory copy of it, marked
 * as a rollback-journal database (header bytes 18-19, SQLite file format §1.3), reads the same.
 */
export function openReadOnlyDatabase(dbPath: string, tables: string[]): Database.Database | undefined {
  if (!existsSync(dbPath)) return undefined;
  const hasTables = (db: Database.Database) =>
    tables.every((t) => db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(t) !== undefined);
  let db: Database.Database | undefined;
  try {
    db = new Database(dbPath, { readonly: true, fileMustExist: true, timeout: BUSY_TIMEOUT_MS });
    if (hasTables(db)) return db;
    db.close();
    return undefined;
  } catch (e) {
    db?.close();
    // CANTOPEN on a read-only mount, READONLY_DIRECTORY in a folder this user may not write.
    if (!/^SQLITE_(CANTOPEN|READONLY)/.test(sqliteCode(e)) || walHasFrames(dbPath)) throw sqlError(e, 'opening the catalog database for reading', { where: dbPath, dialect: 'sqlite', clean: (m) => m });
  }
  try {
    const copy = consistentCopy(dbPath);
    if (copy.length >= 20 && copy[18] === 2) copy[18] = copy[19] = 1;
    const memory = new Database(copy, { readonly: true });
    if (hasTables(memory)) return memory;
    memory.close();
    return undefined;
  } catch (e) {
    throw sqlError(e, 'opening the catalog database for reading', { where: dbPath, dialect: 'sqlite', clean: (m) => m });
  }
}

/**
 * Whether the database's `-wal` file holds frames (commits not yet in the main file). An empty one
 * is what a reader or writer that closed cleanly may leave (SQLite truncates rather than deletes
 * it in some modes): it holds nothing, so the main file alone is the database.
 */
function walHasFrames(dbPath: string): boolean {
  try {
    return statSync(`${dbPath}-wal`).size > 0;
  } catch {
    return false;
  }
}

/**
 * The main file read whole while no commit changed it: the header's file change counter (bytes
 * 24-27, SQLite file format §1.3.7) and the size are the same before and after the read and the
 * WAL stayed empty; otherwise a concurrent writer got in between, and it is read again.
 */
function consistentCopy(dbPath: string): Buffer {
  const counter = (b: Buffer) => (b.length >= 28 ? b.readUInt32BE(24) : -1);
  for (let attempt = 0; ; attempt++) {
    const before = statSync(dbPath);
    const copy = Buffer.from(readFileSync(dbPath));
    const after = statSync(dbPath);
    const header = Buffer.alloc(28);
    const fd = openSync(dbPath, 'r');
    try {
      readSync(fd, header, 0, 28, 0);
    } finally {
      closeSync(fd);
    }
    const still = before.size === copy.length && after.size === copy.length && after.mtimeMs === before.mtimeMs && counter(header) === counter(copy);
    if (still && !walHasFrames(dbPath)) return copy;
    if (attempt >= 20) {
      throw new TwinlakeError('io', `sql catalog: ${dbPath} kept changing while it was read for a read-only open (a writer is committing); try again`, { path: dbPath }, { retryable: true });
    }
    // A writer holding frames in the WAL cannot be read without the -shm file: say so.
    if (walHasFrames(dbPath)) throw new TwinlakeError('io', `sql catalog: ${dbPath} has commits in its -wal file, which a read-only open without a writable folder cannot read; open it once with write access, or try again once the writer is done`, { path: dbPath });
  }
}

/** The DDL of Iceberg's JdbcUtil (V0) and PyIceberg's SqlCatalog models; SQLite and PostgreSQL read it alike. */
const CATALOG_DDL = [
  `CREATE TABLE IF NOT EXISTS iceberg_tables (
      catalog_name VARCHAR(255) NOT NULL,
      table_namespace VARCHAR(255) NOT NULL,
      table_name VARCHAR(255) NOT NULL,
      metadata_location VARCHAR(1000),
      previous_metadata_location VARCHAR(1000),
      PRIMARY KEY (catalog_name, table_namespace, table_name)
    )`,
  `CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
      catalog_name VARCHAR(255) NOT NULL,
      namespace VARCHAR(255) NOT NULL,
      property_key VARCHAR(255),
      property_value VARCHAR(1000),
      PRIMARY KEY (catalog_name, namespace, property_key)
    )`,
];

function sqliteHasColumn(db: Database.Database, table: string, column: string): boolean {
  return db.prepare(`SELECT 1 FROM pragma_table_info(?) WHERE name = ?`).get(table, column) !== undefined;
}

type CatalogStatements = ReturnType<typeof catalogStatements>;

/** Every statement of the catalog, in SQL both databases run (placeholders are `?`). */
function catalogStatements(hasType: boolean) {
  // In Java's V1 schema NULL means a table written before views existed.
  const onlyTables = hasType ? ` AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)` : '';
  const key = 'catalog_name = ? AND table_namespace = ? AND table_name = ?';
  return {
    getTable: `SELECT metadata_location FROM iceberg_tables WHERE ${key}${onlyTables}`,
    listTables: `SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?${onlyTables}`,
    insertTable: hasType
      ? `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, NULL, 'TABLE')`
      : `INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)`,
    swap: `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE ${key} AND metadata_location = ?${onlyTables}`,
    dropTable: `DELETE FROM iceberg_tables WHERE ${key}${onlyTables}`,
    countInNamespace: `SELECT COUNT(*) AS n FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?`,
    allNamespaces: `SELECT table_namespace AS ns FROM iceberg_tables WHERE catalog_name = ? UNION SELECT namespace AS ns FROM iceberg_namespace_properties WHERE catalog_name = ?`,
    properties: `SELECT property_key, property_value FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?`,
    insertProperty: `INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES (?, ?, ?, ?)`,
    deleteNamespace: `DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?`,
    updateProperty: `UPDATE iceberg_namespace_properties SET property_value = ? WHERE catalog_name = ? AND namespace = ? AND property_key = ?`,
    deleteProperty: `DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ? AND property_key = ?`,
  };
}

function alreadyExists(id: TableIdentifier): TwinlakeError {
  return new TwinlakeError('already-exists', `sql catalog: table ${formatTableIdentifier(id)} already exists`, { table: formatTableIdentifier(id) });
}

function sqliteCode(e: unknown): string {
  return errorCode(e);
}

function isBusyError(e: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(e));
}

/** A database failure as a TwinlakeError naming the database (never a password) and what was under way. */
export function sqlError(e: unknown, what: string, db: Pick<SqlDriver, 'where' | 'dialect' | 'clean'>): unknown {
  if (e instanceof TwinlakeError || isConstraintError(e)) return e;
  const where = db.where;
  const code = errorCode(e);
  const message = db.clean(errorMessage(e));
  if (db.dialect === 'postgresql') {
    // SQLSTATE classes: 25 read-only transaction, 42501 no privilege, 40 rolled back (serialization, deadlock), 08 and
    // Node's E* codes: the connection failed.
    if (code === '25006' || code === '42501') {
      return new TwinlakeError('io', `sql catalog: cannot write to ${where} while ${what}: ${message} (${code})`, { uri: where, code }, { cause: e, retryable: false });
    }
    if (code.startsWith('40') || code === '55P03' || code === '57014') {
      return new TwinlakeError('io', `sql catalog: ${where} gave up ${what}: ${message} (${code}); try again`, { uri: where, code }, { cause: e, retryable: true });
    }
    if (isConnectionError(e)) {
      return new TwinlakeError('io', `catalog: lost the connection to ${where} while ${what} (${message || code})`, { uri: where, code }, { cause: e, retryable: true });
    }
    return new TwinlakeError('io', `sql catalog: ${what} in ${where} failed: ${message} (${code})`, { uri: where, code }, { cause: e });
  }
  if (isBusyError(e)) {
    return new TwinlakeError('io', `sql catalog: ${where} stayed locked by another connection for ${BUSY_TIMEOUT_MS / 1000} s while ${what}`, { dbPath: where, code }, { cause: e, retryable: true });
  }
  // SQLite reports its own codes; creating the folder beforehand reports Node's.
  if (/^SQLITE_(READONLY|CANTOPEN|PERM|AUTH)/.test(code) || /^(EACCES|EROFS|EPERM|ENOTDIR|EEXIST)$/.test(code)) {
    return new TwinlakeError('io', `sql catalog: cannot use ${where} while ${what}: the file or its folder is not writable (${code || message})`, { dbPath: where, code }, { cause: e, retryable: false });
  }
  return new TwinlakeError('io', `sql catalog: ${what} in ${where} failed: ${message}`, { dbPath: where, code }, { cause: e });
}
