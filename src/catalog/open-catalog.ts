import { invalidInput, unsupported } from '../core/errors.ts';
import { isUri, localPath } from '../core/uri.ts';
import { LocalStore } from '../io/local-store.ts';
import { storeForLocation, type StorageOptions } from '../io/store-for-uri.ts';
import type { Catalog } from './catalog.ts';
import { DeltaRegistry } from './delta-registry.ts';
import { SqlCatalog } from './sql-catalog.ts';

/** Which catalog a warehouse registers its tables in: the `catalog` section of a config file. */
export interface CatalogConfig {
  type: 'sql' | 'glue' | 'rest';
  /** sql: a SQLite file or a `postgresql://` URI (default `<warehouse>/catalog.db`); rest: the server URL. */
  uri?: string;
  /** sql: the `catalog_name` of the catalog's rows; Spark's and Trino's JDBC catalogs must use the same name. */
  name: string;
  /** The namespace of table names given without one. */
  namespace?: string;
  /** glue: the AWS region. */
  region?: string;
  /** rest: the warehouse asked of the server; glue: the catalog ID (the AWS account). */
  warehouse?: string;
  /** rest: a bearer token. */
  token?: string;
  /** glue: AWS keys (default the SDK's chain); rest: OAuth2 client credentials. */
  credential?: { accessKeyId?: string; secretAccessKey?: string; sessionToken?: string; clientId?: string; clientSecret?: string };
}

/** The embedded default: the SQLite catalog in `<warehouse>/catalog.db`. */
export const DEFAULT_CATALOG: CatalogConfig = { type: 'sql', name: 'twinlake' };

export interface OpenedCatalog {
  catalog: Catalog;
  /** Delta-only tables' names, kept beside the SQL catalog's tables; other catalogs have none yet. */
  deltaRegistry?: DeltaRegistry;
  /** Closes what was opened (the catalog and the registry). */
  close(): Promise<void>;
}

/**
 * Opens the catalog a config names, for the warehouse at `warehouseUri`. This is the one place a
 * catalog type becomes a catalog: `sql` on a SQLite file works (the embedded default is the
 * Lakehouse's own, `<warehouse>/catalog.db`); `sql` on PostgreSQL, `glue` and `rest` are not
 * built yet and fail with `unsupported`, naming the type.
 */
export async function openCatalog(config: CatalogConfig, opts: { warehouseUri: string; storage?: StorageOptions; readOnly?: boolean }): Promise<OpenedCatalog> {
  const readOnly = opts.readOnly === true;
  if (config.type === 'glue' || config.type === 'rest') {
    throw unsupported(`catalog: type ${config.type} is not supported yet (supported: sql with a SQLite file)`, { type: config.type });
  }
  if (config.type !== 'sql') throw invalidInput(`catalog: expected type sql, glue or rest, found ${JSON.stringify(config.type)}`);
  const uri = config.uri;
  // The URI is not quoted: it may hold a password.
  if (uri !== undefined && /^postgres(ql)?:\/\//i.test(uri)) throw unsupported('catalog: type sql on a postgresql:// URI is not supported yet (supported: a SQLite file)', { type: 'sql' });
  if (uri !== undefined && isUri(uri) && !uri.startsWith('file:')) {
    throw invalidInput(`catalog: type sql expects a SQLite file path or a postgresql:// URI, found a ${uri.split(':')[0]}: URI`);
  }
  const local = opts.warehouseUri.startsWith('file:');
  const dbPath = uri !== undefined ? (uri.startsWith('file:') ? localPath(uri) : uri) : local ? `${localPath(opts.warehouseUri)}/catalog.db` : undefined;
  if (dbPath === undefined) {
    throw invalidInput(`catalog: the warehouse ${opts.warehouseUri} is not on local disk, so the SQL catalog needs catalog.uri (a SQLite file or a postgresql:// URI)`);
  }
  // As the Lakehouse's embedded default does for a local warehouse: a store rooted at the warehouse.
  const store = local ? new LocalStore(localPath(opts.warehouseUri)) : storeForLocation(opts.warehouseUri, opts.storage).store;
  const catalog = new SqlCatalog({ name: config.name, dbPath, warehouse: { store, rootUri: opts.warehouseUri }, readOnly });
  let deltaRegistry: DeltaRegistry;
  try {
    deltaRegistry = new DeltaRegistry(dbPath, config.name, { readOnly });
  } catch (e) {
    await catalog.close();
    throw e;
  }
  return {
    catalog,
    deltaRegistry,
    close: async () => {
      deltaRegistry.close();
      await catalog.close();
    },
  };
}
