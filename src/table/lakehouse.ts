import { mkdir, stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from '../core/clock.ts';
import { errorMessage, invalidInput, TwinlakeError } from '../core/errors.ts';
import { fileUri, isUri, joinUri, localPath } from '../core/uri.ts';
import { normalizeTableIdentifier, parseTableIdentifier, type Catalog, type TableIdentifier } from '../catalog/catalog.ts';
import { SqlCatalog } from '../catalog/sql-catalog.ts';
import { DeltaRegistry } from '../catalog/delta-registry.ts';
import { DuckDBSession } from '../engine/duckdb-session.ts';
import { onInterrupt, trackStaging } from './write/interrupt.ts';
import { resolveEngineSettings, type EngineOptions, type EngineSettings } from '../engine/engine-settings.ts';
import { readScan } from '../engine/read-scan.ts';
import { FileIO } from '../io/file-io.ts';
import { LocalStore } from '../io/local-store.ts';
import { RetryingStore } from '../io/retrying-store.ts';
import { storeForLocation, type StorageOptions } from '../io/store-for-uri.ts';
import { parseTableMetadata } from '../format/iceberg/table-metadata.ts';
import { locateMetadataFile } from './read/metadata-locator.ts';
import { exportScan, planRead, type ExportTarget, type ReadPlan, type TableSource } from './read/reader.ts';
import { describeDelta, describeIceberg, deltaTableHistory, icebergHistory, Table, type HistoryEntry, type ReadOptions, type TableDescription } from './table.ts';
import { latestDeltaVersion } from './delta/delta-log.ts';
import { listLiveFiles, type LiveFiles } from './read/live-files.ts';
import { DEFAULT_READ_CACHE_BYTES, ReadCache, withLocalTask } from './read/read-cache.ts';
import type { TableFormat } from '../format/dual/table-properties.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';

export interface LakehouseOptions {
  /**
   * Where tables live: a local folder (or `file:` URI), `s3://bucket/prefix` (also `s3a://`),
   * `az://container/prefix` or `abfss://container@account.dfs.core.windows.net/prefix`. Default
   * `./warehouse`.
   */
  warehouse?: string;
  /**
   * How to reach cloud stores (`s3`, `azure` settings): used for the warehouse and for every
   * location a table's metadata names. One object for the life of the lakehouse, so its stores
   * share their SDK clients.
   */
  storage?: StorageOptions;
  /**
   * A catalog to use instead of the embedded SQLite catalog at `<warehouse>/catalog.db`. A cloud
   * warehouse needs one (a SqlCatalog on a SQLite file or PostgreSQL, Glue or REST): the embedded
   * file cannot live in a bucket.
   */
  catalog?: Catalog;
  /** Where Delta-only tables are registered, beside `catalog` (see openSqlCatalog); the caller closes both. */
  deltaRegistry?: DeltaRegistry;
  /** Receives warnings (e.g. a Delta commit that will be repaired later). Default: stderr. */
  onWarning?: (message: string) => void;
  clock?: Clock;
  /**
   * Storage access for table files. Default: local disk, and the cloud stores `storage` reaches.
   * Tests pass a FileIO whose stores fail at chosen calls, to prove that a failure at any step
   * loses nothing.
   */
  io?: FileIO;
  /**
   * The embedded engine's memory limit, threads and spill folder. Unset ones come from
   * `TWINLAKE_MEMORY_LIMIT`, `TWINLAKE_THREADS` and `TWINLAKE_TEMP_DIR`, else from the machine
   * (half its memory, or of the container's limit; every core; the system temp folder).
   */
  engine?: EngineOptions;
  /**
   * The most bytes of remote table files kept on local disk for the engine (default 1 GiB), in a
   * folder under the engine's temp folder; see ReadCache. Files a running operation uses are kept
   * whatever the bound. Unused for local warehouses, whose files are read where they are.
   */
  readCacheBytes?: number;
  /**
   * Open for reading only: the warehouse folder and the catalog file are neither created nor
   * written, so a read-only mount (or a warehouse the user may only read) works. Writes fail
   * with an `io` error.
   */
  readOnly?: boolean;
}

/** One line of `tables --long`: a table's formats and size; `error` when it could not be read. */
export interface TableSummary {
  name: string;
  formats?: TableFormat[];
  /** Rows with row-level deletes applied. */
  rows?: number;
  files?: number;
  bytes?: number;
  error?: string;
}

/** A FileIO for local `file:` URIs and absolute paths, and cloud locations reached with `storage`. */
export function localFileIO(storage?: StorageOptions): FileIO {
  return new FileIO((uri) => {
    const { store, key } = storeForLocation(uri, storage);
    return { store: new RetryingStore(store), key };
  });
}

/** Whether a warehouse location is on a cloud store (any URI other than `file:`). */
function isRemoteLocation(location: string): boolean {
  return isUri(location) && !location.startsWith('file:');
}

/**
 * A warehouse of tables with its catalog: the entry point of the library.
 *
 * @example
 * import { Lakehouse } from 'twinlake';
 * const lake = await Lakehouse.open({ warehouse: './warehouse' });
 * await lake.table('analytics.events').append({ path: 'events.ndjson' });
 * console.log(await lake.listTables());
 * await lake.close();
 */
export class Lakehouse {
  private sessionPromise?: Promise<DuckDBSession>;
  private untrackSession: (() => void)[] = [];

  private constructor(
    readonly warehouse: string,
    readonly catalog: Catalog,
    readonly io: FileIO,
    private readonly deltaRegistry: DeltaRegistry | undefined,
    private readonly clock: Clock,
    private readonly onWarning: (m: string) => void,
    private readonly ownsCatalog: boolean,
    private readonly engineOptions: EngineOptions,
    readCacheBytes: number | undefined,
  ) {
    const folder = () => {
      const dir = join(resolveEngineSettings(this.engineOptions).tempDir, `twinlake-cache-${randomUUID()}`);
      // An interrupt removes the copies, as it removes staging.
      this.untrackSession.push(trackStaging(dir));
      return dir;
    };
    this.readCache = new ReadCache(folder, readCacheBytes ?? DEFAULT_READ_CACHE_BYTES);
  }

  /** Local copies of remote table files for the engine. */
  readonly readCache: ReadCache;

  static async open(opts: LakehouseOptions = {}): Promise<Lakehouse> {
    // Bad engine settings fail here, before anything is created.
    resolveEngineSettings(opts.engine);
    const cacheBytes = opts.readCacheBytes;
    if (cacheBytes !== undefined && !(Number.isSafeInteger(cacheBytes) && cacheBytes >= 0)) {
      throw invalidInput(`lakehouse: readCacheBytes expects a whole number of bytes (0 or more), found ${String(cacheBytes)}`);
    }
    if (opts.warehouse !== undefined && isRemoteLocation(opts.warehouse)) return Lakehouse.openRemote(opts.warehouse, opts);
    const dir = resolve(opts.warehouse ? (isUri(opts.warehouse) ? localPath(opts.warehouse) : opts.warehouse) : 'warehouse');
    if (!opts.readOnly) {
      try {
        await mkdir(dir, { recursive: true });
      } catch (e) {
        throw new TwinlakeError('io', `warehouse: cannot create ${dir} (${errorMessage(e)})`);
      }
    } else {
      // Reading a warehouse that was never written is reading an empty one; a path that cannot be
      // a folder at all is a mistake worth saying.
      const info = await stat(dir).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : e));
      if (info instanceof Error) throw new TwinlakeError('io', `warehouse: cannot read ${dir} (${errorMessage(info)})`);
      if (info && !info.isDirectory()) throw new TwinlakeError('io', `warehouse: ${dir} is not a folder`);
    }
    const io = opts.io ?? localFileIO(opts.storage);
    const warehouse = fileUri(dir);
    let catalog = opts.catalog;
    let deltaRegistry = opts.catalog ? opts.deltaRegistry : undefined;
    if (!catalog) {
      const readOnly = opts.readOnly === true;
      catalog = new SqlCatalog({ name: 'twinlake', dbPath: `${dir}/catalog.db`, warehouse: { store: new RetryingStore(new LocalStore(dir)), rootUri: warehouse }, readOnly, ...(opts.clock ? { clock: opts.clock } : {}) });
      deltaRegistry = new DeltaRegistry(`${dir}/catalog.db`, 'twinlake', { readOnly });
    }
    const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
    return new Lakehouse(warehouse, catalog, io, deltaRegistry, opts.clock ?? systemClock, warn, !opts.catalog, { ...opts.engine }, opts.readCacheBytes);
  }

  /**
   * A warehouse on a cloud store: nothing is created there (a bucket has no folders), and the
   * catalog is the caller's, since the embedded SQLite file cannot live in a bucket.
   */
  private static openRemote(location: string, opts: LakehouseOptions): Lakehouse {
    if (!opts.catalog) {
      throw invalidInput(
        `warehouse: the cloud warehouse ${location} needs a catalog (a SQLite file, a postgresql:// URI, Glue or REST); the embedded catalog file lives only in a local warehouse`,
        { warehouse: location },
      );
    }
    const warehouse = location.replace(/\/+$/, '');
    // Resolving the warehouse checks its form and that the storage settings reach it; at a
    // bucket's root, a location below it stands in (a store resolves a key in a folder).
    const io = opts.io ?? localFileIO(opts.storage);
    io.storeAt(/^[^:]+:\/\/[^/]+\/./.test(warehouse) ? warehouse : joinUri(warehouse, 'namespace'));
    const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
    return new Lakehouse(warehouse, opts.catalog, io, opts.deltaRegistry, opts.clock ?? systemClock, warn, false, { ...opts.engine }, opts.readCacheBytes);
  }

  /** A handle on a table (`namespace.table`); it need not exist yet: the first write creates it. */
  table(name: string | TableIdentifier): Table {
    const ident = typeof name === 'string' ? parseTableIdentifier(name) : normalizeTableIdentifier(name);
    return new Table({
      catalog: this.catalog,
      io: this.io,
      ident,
      location: joinUri(this.warehouse, ...ident.namespace, ident.name),
      session: () => this.session(),
      clock: this.clock,
      warn: this.onWarning,
      deltaRegistry: this.deltaRegistry,
      readCache: this.readCache,
    });
  }

  /** Every table in the catalog, as `namespace.table`. */
  async listTables(): Promise<string[]> {
    const out: string[] = [];
    const visit = async (parent?: string[]) => {
      for (const ns of await this.catalog.listNamespaces(parent)) {
        for (const t of await this.catalog.listTables(ns)) out.push([...t.namespace, t.name].join('.'));
        await visit(ns);
      }
    };
    await visit();
    for (const t of (await this.deltaRegistry?.list()) ?? []) out.push([...t.namespace, t.name].join('.'));
    return [...new Set(out)].sort();
  }

  /** Each table's formats, rows (deletes applied), files and bytes, for `tables --long`. */
  async tableSummaries(): Promise<TableSummary[]> {
    const out: TableSummary[] = [];
    for (const name of await this.listTables()) {
      try {
        const d = await this.table(name).describe();
        out.push({ name, formats: d.formats, rows: d.records - d.deletedRecords, files: d.files, bytes: d.bytes });
      } catch (e) {
        // One unreadable table (a missing metadata file) does not hide the others.
        out.push({ name, error: errorMessage(e) });
      }
    }
    return out;
  }

  /** A table known only by its location (any writer; no catalog needed). */
  private pathSource(path: string): TableSource {
    const location = isUri(path) ? path.replace(/\/+$/, '') : fileUri(resolve(path));
    const io = this.io;
    let metadata: Promise<TableMetadata | undefined> | undefined;
    return {
      io,
      location,
      iceberg: () =>
        (metadata ??= (async () => {
          const file = await locateMetadataFile(io, location);
          return file ? parseTableMetadata(await io.readText(file), file) : undefined;
        })()),
    };
  }

  /** Plans a read of a table known only by its location (any writer; no catalog needed). */
  async planPath(path: string, opts: ReadOptions = {}): Promise<ReadPlan> {
    return planRead(this.pathSource(path), opts.format, opts);
  }

  /**
   * Describes a table known only by its location: through its Iceberg metadata when it has some
   * (formats: Iceberg, and Delta when a Delta log is beside it), else through its Delta log.
   */
  async describePath(path: string): Promise<TableDescription> {
    const source = this.pathSource(path);
    const metadata = await source.iceberg();
    if (!metadata) return describeDelta(path, this.io, source.location);
    return describeIceberg(path, this.io, metadata, await this.formatsAt(source.location));
  }

  /** The history of a table known only by its location (see describePath). */
  async historyPath(path: string): Promise<HistoryEntry[]> {
    const source = this.pathSource(path);
    const metadata = await source.iceberg();
    return metadata ? icebergHistory(metadata) : deltaTableHistory(this.io, source.location);
  }

  /** The live files of a table known only by its location (see Table.files). */
  async filesPath(path: string, opts: Omit<ReadOptions, 'limit' | 'where'> = {}): Promise<LiveFiles> {
    return listLiveFiles(this.pathSource(path), opts.format, opts);
  }

  private async formatsAt(location: string): Promise<TableFormat[]> {
    const { store, key } = this.io.storeAt(location);
    const delta = (await latestDeltaVersion(store, key)) !== undefined;
    return delta ? ['delta', 'iceberg'] : ['iceberg'];
  }

  async readPath(path: string, opts: ReadOptions = {}): Promise<Record<string, unknown>[]> {
    const plan = await this.planPath(path, opts);
    const session = await this.session();
    return withLocalTask(this.readCache, this.io, plan.task, (task) => readScan(session, task, { limit: opts.limit }));
  }

  /** Exports a read of a table known only by its location (see Table.export). */
  async exportPath(path: string, target: ExportTarget, opts: ReadOptions & { output: 'json' | 'csv' }): Promise<ReadPlan> {
    const plan = await this.planPath(path, opts);
    await exportScan(await this.session(), plan.task, target, opts, { io: this.io, cache: this.readCache });
    return plan;
  }

  /** The embedded engine, opened on first use. */
  session(): Promise<DuckDBSession> {
    this.sessionPromise ??= DuckDBSession.open(this.engineOptions).then((session) => {
      // An interrupt stops the engine's statement in flight (and waits for it) instead of letting
      // it run to its end, then removes the spill folder, which only close() would remove.
      this.untrackSession.push(onInterrupt(() => session.interrupt()), trackStaging(session.spillDir));
      return session;
    });
    return this.sessionPromise;
  }

  /** The engine settings this lakehouse opens its engine with, and where each came from. */
  engineSettings(): EngineSettings {
    return resolveEngineSettings(this.engineOptions);
  }

  async close(): Promise<void> {
    if (this.sessionPromise) (await this.sessionPromise).close();
    this.sessionPromise = undefined;
    await this.readCache.close();
    for (const untrack of this.untrackSession) untrack();
    this.untrackSession = [];
    if (this.ownsCatalog) await (this.catalog as { close?: () => Promise<void> | void }).close?.();
    if (this.ownsCatalog) await this.deltaRegistry?.close();
  }
}
