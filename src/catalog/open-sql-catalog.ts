import type { Clock } from '../core/clock.ts';
import { invalidInput } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import type { ObjectStore } from '../io/object-store.ts';
import { DeltaRegistry } from './delta-registry.ts';
import { SqlCatalog } from './sql-catalog.ts';
import { isPostgresUri, PostgresDriver } from './postgres-driver.ts';

export interface OpenSqlCatalogOptions {
  /**
   * The database: a SQLite file (a path, or a `file:` URI), or PostgreSQL
   * (`postgresql://user:password@host:port/database`, also `postgres://`; libpq's query
   * parameters such as `sslmode` apply).
   */
  uri: string;
  /** The `catalog_name` column (default `twinlake`); one database can hold several catalogs. */
  name?: string;
  /** Where new tables' folders go, and the store that holds them. */
  warehouse: { store: ObjectStore; rootUri: string };
  /** Nothing is created or written; a database without the catalog tables reads as an empty catalog. */
  readOnly?: boolean;
  clock?: Clock;
}

export interface OpenedSqlCatalog {
  catalog: SqlCatalog;
  /** Delta-only tables, in the same database. */
  deltaRegistry: DeltaRegistry;
}

/**
 * Opens the SQL catalog and the Delta-only table registry on one database, picking the driver by
 * the URI. PostgreSQL is connected to (and its tables created) before this returns, so a wrong
 * password or an unreachable server fails here with `catalog: cannot connect to …`, the password
 * left out. Close both when done; the last one closes the connection pool.
 */
export async function openSqlCatalog(options: OpenSqlCatalogOptions): Promise<OpenedSqlCatalog> {
  const { uri, name, warehouse, readOnly, clock } = options;
  if (typeof uri !== 'string' || uri.trim() === '') throw invalidInput(`sql catalog: expected a SQLite file or a postgresql:// URI, found ${JSON.stringify(uri)}`);
  if (isPostgresUri(uri)) {
    const driver = await PostgresDriver.open(uri, { readOnly });
    try {
      const catalog = new SqlCatalog({ name, driver, warehouse, readOnly, clock });
      const deltaRegistry = new DeltaRegistry(driver, catalog.name, { readOnly });
      try {
        await catalog.opened();
        await deltaRegistry.opened();
      } catch (e) {
        await catalog.close();
        await deltaRegistry.close();
        throw e;
      }
      return { catalog, deltaRegistry };
    } finally {
      // The catalog and the registry hold their own shares; this one was only for opening.
      await driver.close();
    }
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(uri) && !uri.startsWith('file:')) {
    throw invalidInput(`sql catalog: expected a SQLite file or a postgresql:// URI, found ${uri.replace(/\/\/[^@/]*@/, '//')}`);
  }
  const dbPath = uri.startsWith('file:') ? localPath(uri) : uri;
  const catalog = new SqlCatalog({ name, dbPath, warehouse, readOnly, clock });
  try {
    return { catalog, deltaRegistry: new DeltaRegistry(dbPath, catalog.name, { readOnly }) };
  } catch (e) {
    await catalog.close();
    throw e;
  }
}
