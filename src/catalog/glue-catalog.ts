import type { Column, Database as GlueDatabase, GlueClient, Table as GlueTable, TableInput } from '@aws-sdk/client-glue';
import { systemClock, type Clock } from '../core/clock.ts';
import { errorMessage, invalidInput, isTwinlakeError, notFound, TwinlakeError, unsupported } from '../core/errors.ts';
import { relativeTo } from '../core/uri.ts';
import type { IcebergType, NestedField, TableMetadata } from '../format/iceberg/types.ts';
import { applyUpdates, checkRequirements } from '../format/iceberg/updates.ts';
import { loadSdk } from '../io/cloud-sdk.ts';
import type { ObjectStore } from '../io/object-store.ts';
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
import { MetadataFiles, metadataFileVersion } from './metadata-files.ts';

export interface GlueCatalogOptions {
  /** The AWS region whose Glue Data Catalog holds the databases (each region has its own). */
  region: string;
  /** Where table folders go (`<rootUri>/<database>/<table>`), and the store that holds them. */
  warehouse: { store: ObjectStore; rootUri: string };
  /** The catalog's name (`Catalog.name`); default `glue`. */
  name?: string;
  /** Another Glue endpoint (a VPC endpoint, a Glue-compatible server); default the region's. */
  endpoint?: string;
  /** The AWS account ID of the Glue catalog, for a catalog another account shares; default the caller's. */
  catalogId?: string;
  /** Omitted: the SDK's default chain (environment, shared config files, SSO, instance and task roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Let createNamespace create Glue databases (needs `glue:CreateDatabase`). Off by default: the
   * database is where Athena, Lake Formation grants and other engines look, so a writer pointed
   * at the wrong region or account must fail, not quietly make a second, empty database there.
   */
  createDatabases?: boolean;
  /**
   * UpdateTable's SkipArchive (default true). Glue keeps an archived version per update up to a
   * quota; a table committed per batch would exhaust it, and the metadata files keep the history.
   */
  skipArchive?: boolean;
  /** Attempts per request, first one included (the SDK's default: 3). */
  maxAttempts?: number;
  clock?: Clock;
}

type Sdk = typeof import('@aws-sdk/client-glue');
type GlueOp =
  | 'GetDatabase'
  | 'GetDatabases'
  | 'CreateDatabase'
  | 'DeleteDatabase'
  | 'GetTable'
  | 'GetTables'
  | 'CreateTable'
  | 'UpdateTable'
  | 'DeleteTable';

/** Glue's table type and parameters for Iceberg tables, as Iceberg's GlueCatalog and PyIceberg's write them. */
const EXTERNAL_TABLE = 'EXTERNAL_TABLE';
const TABLE_TYPE = 'table_type';
const ICEBERG = 'ICEBERG';
const METADATA_LOCATION = 'metadata_location';
const PREVIOUS_METADATA_LOCATION = 'previous_metadata_location';

/**
 * Athena's rule for database and table names, which Iceberg's GlueCatalog enforces by default:
 * Glue itself folds names to lower case, so `Sales` and `sales` would be one table.
 */
const GLUE_DATABASE_NAME = /^[a-z0-9_]{1,252}$/;
const GLUE_TABLE_NAME = /^[a-z0-9_]{1,255}$/;

/**
 * An Iceberg catalog in the AWS Glue Data Catalog: a Glue database is a namespace (one level), a
 * Glue table of type EXTERNAL_TABLE with `table_type=ICEBERG` and `metadata_location` is an Iceberg
 * table, as Iceberg's GlueCatalog and PyIceberg's glue catalog write them, so Athena, EMR, Spark,
 * Trino and PyIceberg see the same tables.
 *
 * A commit writes the new metadata file create-only through the warehouse store, then moves the
 * Glue table with UpdateTable carrying the VersionId read together with the metadata location the
 * commit was built on: Glue refuses a stale VersionId (ConcurrentModificationException), so of two
 * commits from one base exactly one moves the table. The Glue database must exist: it is not
 * created on first write unless `createDatabases` is set. Delta-only tables have no place here
 * (a Glue table is either Iceberg's or Delta's), so writes refuse them.
 */
export class GlueCatalog implements Catalog {
  readonly name: string;
  readonly region: string;
  private readonly options: GlueCatalogOptions;
  private readonly store: ObjectStore;
  private readonly warehouseUri: string;
  private readonly clock: Clock;
  private readonly files: MetadataFiles;
  private client?: Promise<{ sdk: Sdk; client: GlueClient }>;

  constructor(options: GlueCatalogOptions) {
    if (typeof options.region !== 'string' || !/^[a-z0-9-]+$/.test(options.region)) {
      throw invalidInput(`glue catalog: expected an AWS region such as us-east-1, found ${JSON.stringify(options.region)}`);
    }
    this.options = options;
    this.name = options.name ?? 'glue';
    this.region = options.region;
    this.store = options.warehouse.store;
    this.files = new MetadataFiles(this.store, 'glue catalog');
    this.warehouseUri = options.warehouse.rootUri.replace(/\/+$/, '');
    this.clock = options.clock ?? systemClock;
    if (this.warehouseUri !== this.store.root && relativeTo(this.store.root, this.warehouseUri) === undefined) {
      throw invalidInput(`glue catalog: expected the warehouse ${this.warehouseUri} inside its store ${this.store.root}`);
    }
  }

  /** Closes the SDK client's connections. */
  async close(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) (await c.catch(() => undefined))?.client.destroy();
  }

  /** `<warehouse>/<database>/<table>`. */
  defaultTableLocation(id: TableIdentifier): string {
    return [this.warehouseUri, this.databaseFor(id.namespace, 'create'), this.tableNameFor(id, 'create')].join('/');
  }

  // ---- namespaces

  async listNamespaces(parent: string[] = []): Promise<string[][]> {
    if (parent.length > 0) {
      // Glue databases do not nest: an existing one has no namespaces below it.
      await this.requireDatabase(parent);
      return [];
    }
    const names: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.call('GetDatabases', 'the catalog', (c, sdk) => c.send(new sdk.GetDatabasesCommand({ CatalogId: this.options.catalogId, NextToken: token })));
      for (const db of page.DatabaseList ?? []) if (db.Name) names.push(db.Name);
      token = page.NextToken;
    } while (token);
    return names.sort().map((n) => [n]);
  }

  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    const database = this.databaseFor(namespace, 'create');
    for (const [k, v] of Object.entries(properties)) {
      if (typeof v !== 'string') throw invalidInput(`glue catalog: namespace property ${JSON.stringify(k)} must be a string, found ${typeof v}`);
    }
    if (!this.options.createDatabases) {
      if (await this.getDatabase(database)) throw namespaceExists(database);
      throw this.catalogNotFound(database);
    }
    // As Iceberg's GlueCatalog maps them: `comment` is the database's Description, `location` its LocationUri.
    const { comment, location, ...rest } = properties;
    await this.call(
      'CreateDatabase',
      `database ${database}`,
      (c, sdk) =>
        c.send(new sdk.CreateDatabaseCommand({ CatalogId: this.options.catalogId, DatabaseInput: { Name: database, Description: comment, LocationUri: location, Parameters: rest } })),
      {
        AlreadyExistsException: () => {
          throw namespaceExists(database);
        },
      },
    );
  }

  async namespaceExists(namespace: string[]): Promise<boolean> {
    checkNamespace(namespace);
    const database = this.databaseFor(namespace, 'read');
    return database !== undefined && (await this.getDatabase(database)) !== undefined;
  }

  async loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>> {
    const db = await this.requireDatabase(namespace);
    const out: Record<string, string> = { ...(db.Parameters ?? {}) };
    if (db.Description !== undefined) out.comment = db.Description;
    if (db.LocationUri !== undefined) out.location = db.LocationUri;
    return out;
  }

  async dropNamespace(namespace: string[]): Promise<void> {
    const db = await this.requireDatabase(namespace);
    const database = db.Name!;
    // DeleteDatabase deletes every table in the database with it, Iceberg's or not: refuse unless empty.
    const tables = await this.glueTables(database);
    if (tables.length > 0) {
      throw invalidInput(`glue catalog: database ${database} is not empty: it holds ${tables.length} table(s), e.g. ${tables[0]!.Name}`, { namespace });
    }
    await this.call('DeleteDatabase', `database ${database}`, (c, sdk) => c.send(new sdk.DeleteDatabaseCommand({ CatalogId: this.options.catalogId, Name: database })), {
      EntityNotFoundException: () => {
        throw this.catalogNotFound(database);
      },
    });
  }

  // ---- tables

  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    const db = await this.requireDatabase(namespace);
    const tables = await this.glueTables(db.Name!);
    return tables
      .filter(isIcebergTable)
      .map((t) => t.Name!)
      .sort()
      .map((name) => ({ namespace: [db.Name!], name }));
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    checkTableIdentifier(id);
    const database = this.databaseFor(id.namespace, 'read');
    const name = this.tableNameFor(id, 'read');
    if (database === undefined || name === undefined) return false;
    const table = await this.getTable(database, name);
    return table !== undefined && isIcebergTable(table);
  }

  async loadTable(id: TableIdentifier): Promise<LoadTableResult> {
    const table = await this.requireTable(id);
    const metadataLocation = icebergPointer(table, id);
    return { metadataLocation, metadata: await this.files.read(metadataLocation, id) };
  }

  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    const database = this.databaseFor(id.namespace, 'create');
    const name = this.tableNameFor(id, 'create');
    await this.requireDatabase(id.namespace);
    if (await this.getTable(database, name)) throw tableExists(id);
    const located = metadata.location ? metadata : { ...metadata, location: this.defaultTableLocation(id) };
    const written = await this.files.write(located, 1);
    try {
      await this.createGlueTable(id, database, tableInput(name, written.uri, written.metadata, undefined, undefined));
    } catch (e) {
      await this.files.deleteQuietly(written.uri);
      throw e;
    }
    await this.files.resetHint(written.uri, written.version);
    return { metadataLocation: written.uri, metadata: written.metadata };
  }

  async registerTable(id: TableIdentifier, metadataLocation: string): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    const database = this.databaseFor(id.namespace, 'create');
    const name = this.tableNameFor(id, 'create');
    await this.requireDatabase(id.namespace);
    if (await this.getTable(database, name)) throw tableExists(id);
    const metadata = await this.files.read(metadataLocation);
    await this.createGlueTable(id, database, tableInput(name, metadataLocation, metadata, undefined, undefined));
    return { metadataLocation, metadata };
  }

  async commitTable(id: TableIdentifier, commit: TableCommit, options: CommitOptions = {}): Promise<CommitResult> {
    const table = await this.requireTable(id);
    const database = table.DatabaseName ?? this.databaseFor(id.namespace, 'create');
    const current = icebergPointer(table, id);
    // The VersionId read with this metadata location is the lock: UpdateTable with it succeeds
    // only while the table is still at the version the commit is built on.
    const versionId = table.VersionId;
    if (versionId === undefined || versionId === '') {
      throw new TwinlakeError('io', `glue catalog: Glue returned no VersionId for table ${formatTableIdentifier(id)}, so a commit cannot be guarded against concurrent ones; nothing was committed`, {
        table: formatTableIdentifier(id),
      });
    }
    const base = await this.files.read(current, id);
    let next: TableMetadata;
    try {
      checkRequirements(base, commit.requirements);
      if (commit.updates.length === 0) return { status: 'committed', metadataLocation: current, metadata: base };
      next = applyUpdates(base, commit.updates, { nowMs: this.clock.nowMs(), previousMetadataLocation: current });
    } catch (e) {
      if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', reason: e.message };
      throw e;
    }
    const written = await this.files.writeForCommit(next, metadataFileVersion(current) + 1, options.durable);
    if ('status' in written) return written;
    const input = tableInput(table.Name!, written.uri, written.metadata, table, current);
    let failure: unknown;
    try {
      await this.withClient((c, sdk) =>
        c.send(
          new sdk.UpdateTableCommand({
            CatalogId: this.options.catalogId,
            DatabaseName: database,
            TableInput: input,
            VersionId: versionId,
            SkipArchive: this.options.skipArchive ?? true,
          }),
        ),
      );
    } catch (e) {
      failure = e;
    }
    if (failure !== undefined) {
      const outcome = await this.afterFailedUpdate(id, database, table, written.uri, failure).catch(async (e: unknown) => {
        // Refused for certain: nothing points at the new file. Unknown: the table may point at it.
        if (!isTwinlakeError(e, 'commit-state-unknown')) await this.files.deleteQuietly(written.uri);
        throw e;
      });
      if (outcome.status === 'conflict') {
        await this.files.deleteQuietly(written.uri);
        return outcome;
      }
    }
    const hint = this.files.advanceHint(async () => (await this.getTable(database, table.Name!))?.Parameters?.[METADATA_LOCATION], written.uri);
    if (options.deferFollowUp) return { status: 'committed', metadataLocation: written.uri, metadata: written.metadata, followUp: hint };
    await hint;
    return { status: 'committed', metadataLocation: written.uri, metadata: written.metadata };
  }

  async dropTable(id: TableIdentifier, options: { purge?: boolean } = {}): Promise<void> {
    const table = await this.requireTable(id);
    const current = icebergPointer(table, id);
    let purgeLocation: string | undefined;
    if (options.purge) {
      const metadata = await this.files.read(current, id).catch(() => undefined);
      const location = metadata?.location ?? table.StorageDescriptor?.Location ?? current.replace(/\/metadata\/[^/]+$/, '');
      purgeLocation = location;
    }
    await this.call(
      'DeleteTable',
      `table ${formatTableIdentifier(id)}`,
      (c, sdk) => c.send(new sdk.DeleteTableCommand({ CatalogId: this.options.catalogId, DatabaseName: table.DatabaseName, Name: table.Name })),
      {
        EntityNotFoundException: () => {
          throw tableNotFound(id);
        },
      },
    );
    if (purgeLocation !== undefined) await this.files.purge(purgeLocation);
  }

  // ---- Glue calls

  private withClient<T>(run: (client: GlueClient, sdk: Sdk) => Promise<T>): Promise<T> {
    this.client ??= loadSdk('glue catalog', '@aws-sdk/client-glue', () => import('@aws-sdk/client-glue')).then((sdk) => ({
      sdk,
      client: new sdk.GlueClient({
        region: this.options.region,
        endpoint: this.options.endpoint,
        credentials: this.options.credentials,
        maxAttempts: this.options.maxAttempts,
      }),
    }));
    const pending = this.client;
    pending.catch(() => {
      if (this.client === pending) this.client = undefined;
    });
    return pending.then(({ client, sdk }) => run(client, sdk));
  }

  /**
   * One Glue request. `on` handles the Glue error codes the caller expects (EntityNotFoundException,
   * AlreadyExistsException); every other failure becomes a TwinlakeError naming the operation, what
   * it was about and, for a denial, the IAM permission.
   */
  private async call<T>(op: GlueOp, what: string, run: (client: GlueClient, sdk: Sdk) => Promise<T>, on: Record<string, () => T> = {}): Promise<T> {
    try {
      return await this.withClient(run);
    } catch (e) {
      const handle = on[errorCode(e)];
      if (handle) return handle();
      throw this.error(e, op, what);
    }
  }

  private async getDatabase(database: string): Promise<GlueDatabase | undefined> {
    const out = await this.call<{ Database?: GlueDatabase }>(
      'GetDatabase',
      `database ${database}`,
      (c, sdk) => c.send(new sdk.GetDatabaseCommand({ CatalogId: this.options.catalogId, Name: database })),
      { EntityNotFoundException: () => ({}) },
    );
    return out.Database;
  }

  private async getTable(database: string, name: string): Promise<GlueTable | undefined> {
    const out = await this.call<{ Table?: GlueTable }>(
      'GetTable',
      `table ${database}.${name}`,
      (c, sdk) => c.send(new sdk.GetTableCommand({ CatalogId: this.options.catalogId, DatabaseName: database, Name: name })),
      { EntityNotFoundException: () => ({}) },
    );
    return out.Table;
  }

  /** Every table of a database, Iceberg's or not. */
  private async glueTables(database: string): Promise<GlueTable[]> {
    const out: GlueTable[] = [];
    let token: string | undefined;
    do {
      const page = await this.call(
        'GetTables',
        `database ${database}`,
        (c, sdk) => c.send(new sdk.GetTablesCommand({ CatalogId: this.options.catalogId, DatabaseName: database, NextToken: token })),
        {
          EntityNotFoundException: () => {
            throw this.catalogNotFound(database);
          },
        },
      );
      out.push(...(page.TableList ?? []));
      token = page.NextToken;
    } while (token);
    return out;
  }

  private async createGlueTable(id: TableIdentifier, database: string, input: TableInput): Promise<void> {
    await this.call('CreateTable', `table ${formatTableIdentifier(id)}`, (c, sdk) => c.send(new sdk.CreateTableCommand({ CatalogId: this.options.catalogId, DatabaseName: database, TableInput: input })), {
      AlreadyExistsException: () => {
        throw tableExists(id);
      },
      EntityNotFoundException: () => {
        throw this.catalogNotFound(database);
      },
    });
  }

  /**
   * UpdateTable failed: find out whether the table moved to our metadata file anyway. The SDK
   * retries a request whose response was lost, and the retry of an update Glue already applied
   * fails with ConcurrentModificationException (the VersionId moved, by our own update): the
   * table's pointer, not the error, says who won.
   */
  private async afterFailedUpdate(id: TableIdentifier, database: string, before: GlueTable, ours: string, failure: unknown): Promise<CommitResult> {
    const code = errorCode(failure);
    let now: GlueTable | undefined;
    try {
      now = await this.getTable(database, before.Name!);
    } catch {
      // A ConcurrentModificationException may be the retry of our own applied update: only the
      // pointer could tell, and it cannot be read now.
      if (code !== 'ConcurrentModificationException' && isDefiniteRefusal(failure)) throw this.error(failure, 'UpdateTable', `table ${formatTableIdentifier(id)}`);
      throw this.commitStateUnknown(id, ours, failure);
    }
    const pointer = now?.Parameters?.[METADATA_LOCATION];
    if (pointer === ours) return { status: 'committed', metadataLocation: ours, metadata: (await this.files.read(ours, id)) };
    const moved = now === undefined || now.VersionId !== before.VersionId;
    if (code === 'ConcurrentModificationException' || code === 'EntityNotFoundException') {
      return {
        status: 'conflict',
        reason: `glue catalog: table ${formatTableIdentifier(id)} was changed by a concurrent commit: expected metadata ${before.Parameters?.[METADATA_LOCATION]} at Glue version ${before.VersionId}, found ${pointer ?? 'no table'}${now ? ` at version ${now.VersionId}` : ''}`,
      };
    }
    // Refused outright (access denied, invalid input), or another version is in place so our
    // stale VersionId can never apply: the commit did not happen, and the error says why.
    if (isDefiniteRefusal(failure) || moved) {
      throw this.error(failure, 'UpdateTable', `table ${formatTableIdentifier(id)}`);
    }
    // No answer and the table still at the version we built on: our request may still land.
    throw this.commitStateUnknown(id, ours, failure);
  }

  private commitStateUnknown(id: TableIdentifier, ours: string, failure: unknown): TwinlakeError {
    return new TwinlakeError(
      'commit-state-unknown',
      `glue catalog: the UpdateTable of ${formatTableIdentifier(id)} to ${ours} got no answer and may or may not have happened (${this.describe(failure)})`,
      { table: formatTableIdentifier(id), metadataLocation: ours },
      { cause: failure },
    );
  }

  /** An SDK error as a TwinlakeError: what failed, on what, in which region, and what to do. */
  private error(e: unknown, op: GlueOp, what: string): TwinlakeError {
    if (e instanceof TwinlakeError) return e;
    const code = errorCode(e);
    const status = httpStatus(e);
    const context = { op, code, status, region: this.region };
    const io = (message: string, retryable: boolean) => new TwinlakeError('io', `glue catalog: ${message}`, context, { cause: e, retryable });
    const where = `${what} in region ${this.region}${this.options.catalogId ? ` (catalog ${this.options.catalogId})` : ''}`;
    if (code === 'AccessDeniedException') {
      return io(`access denied to ${op} on ${where}: the credentials need the glue:${op} permission (${this.describe(e)})`, false);
    }
    if (CREDENTIAL_CODES.has(code)) return io(`Glue ${this.at()} rejected the credentials for ${op} on ${where} (${this.describe(e)})`, false);
    if (code === 'CredentialsProviderError') {
      return io(
        `no AWS credentials for ${op} on ${where}: set a credential in the catalog settings, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance or task role applies (${errorMessage(e)})`,
        false,
      );
    }
    const sysCode = systemCode(e);
    if (sysCode !== undefined || code === 'TimeoutError') {
      return io(`cannot reach the Glue endpoint ${this.endpointName()} for ${op} on ${where} (${sysCode ?? code})`, true);
    }
    if (code === 'EntityNotFoundException') return notFound(`glue catalog: ${op} found no ${where} (${this.describe(e)})`, context);
    if (code === 'InvalidInputException' || code === 'ValidationException') return new TwinlakeError('invalid-input', `glue catalog: Glue refused ${op} on ${where} (${this.describe(e)})`, context, { cause: e });
    return io(`${op} on ${where} failed (${this.describe(e)})`, status === undefined || status >= 500 || code === 'ThrottlingException');
  }

  private describe(e: unknown): string {
    const status = httpStatus(e);
    return `${errorCode(e)}${status !== undefined ? `, HTTP ${status}` : ''}: ${errorMessage(e)}`;
  }

  private endpointName(): string {
    return `${this.options.endpoint ?? `glue.${this.region}.amazonaws.com`} (region ${this.region})`;
  }

  private at(): string {
    return this.options.endpoint ? `at ${this.options.endpoint}` : `in region ${this.region}`;
  }

  // ---- names

  /**
   * The Glue database of a namespace; undefined for `read` when no Glue database can have that
   * name (nothing by that name exists then), an error for `create`.
   */
  private databaseFor(namespace: string[], purpose: 'create'): string;
  private databaseFor(namespace: string[], purpose: 'read'): string | undefined;
  private databaseFor(namespace: string[], purpose: 'create' | 'read'): string | undefined {
    checkNamespace(namespace);
    const why = databaseNameProblem(namespace);
    if (why === undefined) return namespace[0]!;
    if (purpose === 'read') return undefined;
    throw namespace.length > 1 ? unsupported(`glue catalog: ${why}`, { namespace }) : invalidInput(`glue catalog: ${why}`, { namespace });
  }

  private tableNameFor(id: TableIdentifier, purpose: 'create'): string;
  private tableNameFor(id: TableIdentifier, purpose: 'read'): string | undefined;
  private tableNameFor(id: TableIdentifier, purpose: 'create' | 'read'): string | undefined {
    checkTableIdentifier(id);
    if (GLUE_TABLE_NAME.test(id.name)) return id.name;
    if (purpose === 'read') return undefined;
    throw invalidInput(`glue catalog: ${tableNameProblem(id.name)}`, { name: id.name });
  }

  private async requireDatabase(namespace: string[]): Promise<GlueDatabase> {
    checkNamespace(namespace);
    const why = databaseNameProblem(namespace);
    if (why !== undefined) throw notFound(`glue catalog: namespace ${namespace.join('.')} does not exist: ${why}`, { namespace });
    const db = await this.getDatabase(namespace[0]!);
    if (!db) throw this.catalogNotFound(namespace[0]!);
    return db;
  }

  private async requireTable(id: TableIdentifier): Promise<GlueTable> {
    checkTableIdentifier(id);
    const database = this.databaseFor(id.namespace, 'read');
    const name = this.tableNameFor(id, 'read');
    if (database === undefined) throw notFound(`glue catalog: table ${formatTableIdentifier(id)} does not exist: ${databaseNameProblem(id.namespace)}`, { table: formatTableIdentifier(id) });
    if (name === undefined) throw notFound(`glue catalog: table ${formatTableIdentifier(id)} does not exist: ${tableNameProblem(id.name)}`, { table: formatTableIdentifier(id) });
    const table = await this.getTable(database, name);
    if (!table) {
      // Say which is missing: a missing database usually means the wrong region or account.
      if (!(await this.getDatabase(database))) throw this.catalogNotFound(database, id);
      throw tableNotFound(id, this.region);
    }
    if (!isIcebergTable(table)) {
      const type = table.Parameters?.[TABLE_TYPE];
      throw unsupported(
        `glue catalog: Glue table ${formatTableIdentifier(id)} is not an Iceberg table (Parameters.table_type is ${type === undefined ? 'missing' : JSON.stringify(type)}, expected "ICEBERG")`,
        { table: formatTableIdentifier(id) },
      );
    }
    return table;
  }

  /** The seed's troubleshooting message: the database is missing, or this is the wrong region or account. */
  private catalogNotFound(database: string, table?: TableIdentifier): TwinlakeError {
    const account = this.options.catalogId ? ` of account ${this.options.catalogId}` : '';
    const looking = table ? ` (looking for table ${formatTableIdentifier(table)})` : '';
    return notFound(
      `glue catalog: Iceberg catalog not found: Glue database ${database} does not exist in region ${this.region}${account}${looking}; ` +
        `create the Glue database ${database} in region ${this.region} (aws glue create-database --region ${this.region} --database-input Name=${database}), ` +
        `or check the catalog region if the database is in another one`,
      { database, region: this.region },
    );
  }

}

/**
 * The Glue table for an Iceberg metadata file: EXTERNAL_TABLE, `table_type=ICEBERG`,
 * `metadata_location` (and `previous_metadata_location` on updates), the table location and the
 * columns, as Iceberg's GlueCatalog writes them. The columns are for people browsing Glue and for
 * Athena's DDL view; readers take the schema from the metadata file. The parameters others set on
 * the table (a description, an owner, their own keys) are kept.
 */
function tableInput(name: string, metadataLocation: string, metadata: TableMetadata, current: GlueTable | undefined, previous: string | undefined): TableInput {
  const parameters: Record<string, string> = { ...(current?.Parameters ?? {}), [TABLE_TYPE]: ICEBERG, [METADATA_LOCATION]: metadataLocation };
  if (previous !== undefined) parameters[PREVIOUS_METADATA_LOCATION] = previous;
  else delete parameters[PREVIOUS_METADATA_LOCATION];
  return {
    Name: name,
    TableType: EXTERNAL_TABLE,
    Description: current?.Description,
    Owner: current?.Owner,
    Parameters: parameters,
    StorageDescriptor: { Location: metadata.location, Columns: glueColumns(metadata) },
  };
}

/**
 * Every column of the current schema (`iceberg.field.current=true`), then the columns only older
 * schemas have (`false`), once per name: the parameters Iceberg's GlueCatalog and PyIceberg write.
 */
function glueColumns(metadata: TableMetadata): Column[] {
  const out: Column[] = [];
  const seen = new Set<string>();
  const add = (f: NestedField, current: boolean) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    out.push({
      Name: f.name,
      Type: glueType(f.type),
      ...(f.doc !== undefined ? { Comment: f.doc } : {}),
      Parameters: { 'iceberg.field.id': String(f.id), 'iceberg.field.optional': String(!f.required), 'iceberg.field.current': String(current) },
    });
  };
  const currentId = metadata['current-schema-id'];
  for (const s of metadata.schemas) if (s['schema-id'] === currentId) s.fields.forEach((f) => add(f, true));
  for (const s of metadata.schemas) if (s['schema-id'] !== currentId) s.fields.forEach((f) => add(f, false));
  return out;
}

/** Hive type names, as Glue shows them and Athena's DDL reads them. */
function glueType(type: IcebergType): string {
  if (typeof type !== 'string') {
    if (type.type === 'struct') return `struct<${type.fields.map((f) => `${f.name}:${glueType(f.type)}`).join(',')}>`;
    if (type.type === 'list') return `array<${glueType(type.element)}>`;
    return `map<${glueType(type.key)},${glueType(type.value)}>`;
  }
  const decimal = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  if (decimal) return `decimal(${decimal[1]},${decimal[2]})`;
  if (type.startsWith('fixed[')) return 'binary';
  return HIVE_TYPES[type] ?? type;
}

const HIVE_TYPES: Record<string, string> = {
  boolean: 'boolean',
  int: 'int',
  long: 'bigint',
  float: 'float',
  double: 'double',
  date: 'date',
  time: 'string',
  timestamp: 'timestamp',
  timestamptz: 'timestamp',
  timestamp_ns: 'timestamp',
  timestamptz_ns: 'timestamp',
  string: 'string',
  uuid: 'string',
  binary: 'binary',
};

function isIcebergTable(table: GlueTable): boolean {
  return table.Parameters?.[TABLE_TYPE]?.toUpperCase() === ICEBERG;
}

function icebergPointer(table: GlueTable, id: TableIdentifier): string {
  const location = table.Parameters?.[METADATA_LOCATION];
  if (!location) {
    throw new TwinlakeError('data-invalid', `glue catalog: Glue table ${formatTableIdentifier(id)} has table_type=ICEBERG but no metadata_location parameter`, { table: formatTableIdentifier(id) });
  }
  return location;
}

/** Why a namespace cannot be a Glue database, or undefined when it can. */
function databaseNameProblem(namespace: string[]): string | undefined {
  if (namespace.length > 1) {
    return `namespace ${namespace.join('.')} has ${namespace.length} levels, but a Glue database is one name and does not nest: use a one-level namespace such as ${namespace[0]}`;
  }
  const name = namespace[0]!;
  if (GLUE_DATABASE_NAME.test(name)) return undefined;
  return `${JSON.stringify(name)} cannot be a Glue database name: Glue and Athena take lower-case letters, digits and _ (at most 252)${name.toLowerCase() !== name && GLUE_DATABASE_NAME.test(name.toLowerCase()) ? `; use ${name.toLowerCase()}` : ''}`;
}

function tableNameProblem(name: string): string {
  return `${JSON.stringify(name)} cannot be a Glue table name: Glue and Athena take lower-case letters, digits and _ (at most 255)${name.toLowerCase() !== name && GLUE_TABLE_NAME.test(name.toLowerCase()) ? `; use ${name.toLowerCase()}` : ''}`;
}

function namespaceExists(database: string): TwinlakeError {
  return new TwinlakeError('already-exists', `glue catalog: database ${database} already exists`, { namespace: [database] });
}

function tableExists(id: TableIdentifier): TwinlakeError {
  return new TwinlakeError('already-exists', `glue catalog: table ${formatTableIdentifier(id)} already exists`, { table: formatTableIdentifier(id) });
}

function tableNotFound(id: TableIdentifier, region?: string): TwinlakeError {
  const where = region ? ` in Glue database ${id.namespace[0]} (region ${region})` : '';
  return notFound(`glue catalog: table ${formatTableIdentifier(id)} does not exist${where}`, { table: formatTableIdentifier(id) });
}

const CREDENTIAL_CODES = new Set(['UnrecognizedClientException', 'InvalidSignatureException', 'ExpiredTokenException', 'InvalidClientTokenId', 'IncompleteSignature', 'MissingAuthenticationTokenException']);
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/** A refusal Glue answered, so the request certainly did not apply. */
function isDefiniteRefusal(e: unknown): boolean {
  const status = httpStatus(e);
  return status !== undefined && status >= 400 && status < 500 && errorCode(e) !== 'ThrottlingException';
}

/** The Glue error code (`EntityNotFoundException`): the SDK puts it in the error's name. */
function errorCode(e: unknown): string {
  const name = (e as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : 'unknown error';
}

function httpStatus(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

/** A network error's code, also when wrapped (an AggregateError of several addresses). */
function systemCode(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && depth < 4; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    const inner = (cur as { errors?: unknown[] }).errors?.[0];
    cur = inner ?? (cur as { cause?: unknown }).cause;
  }
  return undefined;
}
