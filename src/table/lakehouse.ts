import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../core/clock.ts';
import { errorMessage, TwinlakeError } from '../core/errors.ts';
import { fileUri, isUri, joinUri, localPath } from '../core/uri.ts';
import { parseTableIdentifier, type Catalog, type TableIdentifier } from '../catalog/catalog.ts';
import { SqlCatalog } from '../catalog/sql-catalog.ts';
import { DeltaRegistry } from '../catalog/delta-registry.ts';
import { DuckDBSession } from '../engine/duckdb-session.ts';
import { resolveEngineSettings, type EngineOptions, type EngineSettings } from '../engine/engine-settings.ts';
import { copyScanTo, readScan } from '../engine/read-scan.ts';
import { FileIO } from '../io/file-io.ts';
import { LocalStore } from '../io/local-store.ts';
import { storeForLocation } from '../io/store-for-uri.ts';
import { parseTableMetadata } from '../spec/iceberg/table-metadata.ts';
import { locateMetadataFile } from './metadata-locator.ts';
import { planRead, type ReadPlan, type TableSource } from './reader.ts';
import { Table, type ReadOptions } from './table.ts';

export interface LakehouseOptions {
  /** Warehouse directory (or file: URI). Default `./warehouse`. */
  warehouse?: string;
  /** A catalog to use instead of the embedded SQLite catalog at `<warehouse>/catalog.db`. */
  catalog?: Catalog;
  /** Receives warnings (e.g. a Delta commit that will be repaired later). Default: stderr. */
  onWarning?: (message: string) => void;
  clock?: Clock;
  /**
   * Storage access for table files. Default: local disk. Tests pass a FileIO whose stores fail at
   * chosen calls, to prove that a failure at any step loses nothing.
   */
  io?: FileIO;
  /**
   * The embedded engine's memory limit, threads and spill folder. Unset ones come from
   * `TWINLAKE_MEMORY_LIMIT`, `TWINLAKE_THREADS` and `TWINLAKE_TEMP_DIR`, else from the machine
   * (half its memory, or of the container's limit; every core; the system temp folder).
   */
  engine?: EngineOptions;
}

/** A FileIO for local `file:` URIs and absolute paths. */
export function localFileIO(): FileIO {
  return new FileIO((uri) => storeForLocation(uri));
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

  private constructor(
    readonly warehouse: string,
    readonly catalog: Catalog,
    readonly io: FileIO,
    private readonly deltaRegistry: DeltaRegistry | undefined,
    private readonly clock: Clock,
    private readonly onWarning: (m: string) => void,
    private readonly ownsCatalog: boolean,
    private readonly engineOptions: EngineOptions,
  ) {}

  static async open(opts: LakehouseOptions = {}): Promise<Lakehouse> {
    // Bad engine settings fail here, before anything is created.
    resolveEngineSettings(opts.engine);
    const dir = resolve(opts.warehouse ? (isUri(opts.warehouse) ? localPath(opts.warehouse) : opts.warehouse) : 'warehouse');
    try {
      await mkdir(dir, { recursive: true });
    } catch (e) {
      throw new TwinlakeError('io', `warehouse: cannot create ${dir} (${errorMessage(e)})`);
    }
    const io = opts.io ?? localFileIO();
    const warehouse = fileUri(dir);
    let catalog = opts.catalog;
    let deltaRegistry: DeltaRegistry | undefined;
    if (!catalog) {
      catalog = new SqlCatalog({ name: 'twinlake', dbPath: `${dir}/catalog.db`, warehouse: { store: new LocalStore(dir), rootUri: warehouse } });
      deltaRegistry = new DeltaRegistry(`${dir}/catalog.db`);
    }
    const warn = opts.onWarning ?? ((m: string) => process.stderr.write(`warning: ${m}\n`));
    return new Lakehouse(warehouse, catalog, io, deltaRegistry, opts.clock ?? systemClock, warn, !opts.catalog, { ...opts.engine });
  }

  /** A handle on a table (`namespace.table`); it need not exist yet: the first write creates it. */
  table(name: string | TableIdentifier): Table {
    const ident = typeof name === 'string' ? parseTableIdentifier(name) : name;
    return new Table({
      catalog: this.catalog,
      io: this.io,
      ident,
      location: joinUri(this.warehouse, ...ident.namespace, ident.name),
      session: () => this.session(),
      clock: this.clock,
      warn: this.onWarning,
      deltaRegistry: this.deltaRegistry,
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
    for (const t of this.deltaRegistry?.list() ?? []) out.push([...t.namespace, t.name].join('.'));
    return [...new Set(out)].sort();
  }

  /** Plans a read of a table known only by its location (any writer; no catalog needed). */
  async planPath(path: string, opts: ReadOptions = {}): Promise<ReadPlan> {
    const location = isUri(path) ? path.replace(/\/+$/, '') : fileUri(resolve(path));
    const io = this.io;
    const source: TableSource = {
      io,
      location,
      iceberg: async () => {
        const file = await locateMetadataFile(io, location);
        return file ? parseTableMetadata(await io.readText(file), file) : undefined;
      },
    };
    return planRead(source, opts.format, opts);
  }

  async readPath(path: string, opts: ReadOptions = {}): Promise<Record<string, unknown>[]> {
    const plan = await this.planPath(path, opts);
    return readScan(await this.session(), plan.task, { limit: opts.limit });
  }

  async exportPath(path: string, out: string, opts: ReadOptions & { output: 'json' | 'csv' }): Promise<ReadPlan> {
    const plan = await this.planPath(path, opts);
    await copyScanTo(await this.session(), plan.task, { format: opts.output, path: out, limit: opts.limit });
    return plan;
  }

  /** The embedded engine, opened on first use. */
  session(): Promise<DuckDBSession> {
    this.sessionPromise ??= DuckDBSession.open(this.engineOptions);
    return this.sessionPromise;
  }

  /** The engine settings this lakehouse opens its engine with, and where each came from. */
  engineSettings(): EngineSettings {
    return resolveEngineSettings(this.engineOptions);
  }

  async close(): Promise<void> {
    if (this.sessionPromise) (await this.sessionPromise).close();
    this.sessionPromise = undefined;
    if (this.ownsCatalog) await (this.catalog as { close?: () => Promise<void> | void }).close?.();
    this.deltaRegistry?.close();
  }
}
