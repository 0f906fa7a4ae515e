import { invalidInput } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import { LocalStore } from '../io/local-store.ts';
import { storeForLocation, type StorageOptions } from '../io/store-for-uri.ts';
import type { Catalog } from './catalog.ts';
import type { DeltaRegistry } from './delta-registry.ts';
import { GlueCatalog } from './glue-catalog.ts';
import { openSqlCatalog } from './open-sql-catalog.ts';
import { RestCatalog } from './rest-catalog.ts';

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
 * catalog type becomes a catalog: `sql` on a SQLite file or PostgreSQL (openSqlCatalog picks the
 * driver by URI), `glue` on the region's Glue Data Catalog, `rest` on an Iceberg REST catalog
 * server (its `/v1/config` is read on first use).
 */
export async function openCatalog(config: CatalogConfig, opts: { warehouseUri: string; storage?: StorageOptions; readOnly?: boolean }): Promise<OpenedCatalog> {
  const readOnly = opts.readOnly === true;
  if (config.type === 'rest') {
    if (config.uri === undefined) throw invalidInput('catalog: type rest needs catalog.uri (the REST catalog server URL, e.g. http://127.0.0.1:8181/iceberg)');
    const { clientId, clientSecret } = config.credential ?? {};
    const catalog = new RestCatalog({
      uri: config.uri,
      ...(config.token !== undefined ? { token: config.token } : {}),
      ...(clientId !== undefined && clientSecret !== undefined ? { credential: { clientId, clientSecret } } : {}),
      ...(config.warehouse !== undefined ? { warehouse: config.warehouse } : {}),
    });
    return { catalog, close: async () => undefined };
  }
  if (config.type !== 'sql' && config.type !== 'glue') throw invalidInput(`catalog: expected type sql, glue or rest, found ${JSON.stringify(config.type)}`);
  const local = opts.warehouseUri.startsWith('file:');
  const uri = config.type === 'glue' ? undefined : config.uri ?? (local ? `${localPath(opts.warehouseUri)}/catalog.db` : undefined);
  if (config.type === 'sql' && uri === undefined) {
    throw invalidInput(`catalog: the warehouse ${opts.warehouseUri} is not on local disk, so the SQL catalog needs catalog.uri (a SQLite file or a postgresql:// URI)`);
  }
  // As the Lakehouse's embedded default does for a local warehouse: a store rooted at the warehouse.
  const store = local ? new LocalStore(localPath(opts.warehouseUri)) : storeForLocation(opts.warehouseUri, opts.storage).store;
  const warehouse = { store, rootUri: opts.warehouseUri };
  if (config.type === 'glue') {
    const region = config.region ?? opts.storage?.s3?.region;
    if (region === undefined) throw invalidInput('catalog: type glue needs catalog.region (the AWS region of the Glue Data Catalog)');
    const { accessKeyId, secretAccessKey, sessionToken } = config.credential ?? {};
    const catalog = new GlueCatalog({
      region,
      warehouse,
      ...(config.uri !== undefined ? { endpoint: config.uri } : {}),
      ...(config.warehouse !== undefined ? { catalogId: config.warehouse } : {}),
      ...(accessKeyId !== undefined && secretAccessKey !== undefined ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken !== undefined ? { sessionToken } : {}) } } : {}),
    });
    return { catalog, close: () => catalog.close() };
  }
  const { catalog, deltaRegistry } = await openSqlCatalog({ uri: uri!, name: config.name, warehouse, readOnly });
  return {
    catalog,
    deltaRegistry,
    close: async () => {
      await deltaRegistry.close();
      await catalog.close();
    },
  };
}
