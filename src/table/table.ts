import { invalidInput, isTwinlakeError, TwinlakeError, unsupported } from '../core/errors.ts';
import { joinUri } from '../core/uri.ts';
import type { FileIO } from '../io/file-io.ts';
import { commitPath } from '../format/delta/actions.ts';
import { alterTable, type AlterOptions, type AlterResult } from './manage/alter.ts';
import { registerTable, type RegisterResult } from './manage/register.ts';
import { listLiveFiles, type LiveFiles } from './read/live-files.ts';
import { checkPlacement } from './table-placement.ts';
import { parseStats } from '../format/delta/stats.ts';
import { deltaHistory, deltaScanTask, deltaVersionOfSnapshot, readDeltaSnapshot } from './delta/delta-log.ts';
import { createDeltaOnly, writeDeltaOnly } from './write/delta-writer.ts';
import { syncDelta } from './delta/delta-sync.ts';
import { catalogSubject, verifyTable, type VerifyOptions, type VerifyResult } from './manage/verify.ts';
import { deleteRows, mergeTable, type DeleteOptions, type MergeOptions, type MergeResult } from './merge/merge.ts';
import type { Schema, StructType, TableMetadata } from '../format/iceberg/types.ts';
import { ancestors, currentSchema, currentSnapshot, specById } from '../format/iceberg/table-metadata.ts';
import { formatPartitionSpec } from '../format/iceberg/partition-spec-parser.ts';
import { countScan, readScan } from '../engine/read-scan.ts';
import { readCacheOf, withLocalTask } from './read/read-cache.ts';
import { deltaVersionOf, OPERATION_KEY, type TableOperation } from '../format/dual/summary-keys.ts';
import type { WriteInput } from './write/input.ts';
import { exportScan, planRead, type ExportTarget, type ReadFormat, type ReadPlan, type TableSource, type TimeTravel } from './read/reader.ts';
import { deltaReadTarget } from './read/metadata-locator.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import { checkCreationOptions, parseFormats, tableFormats, type TableFormat } from '../format/dual/table-properties.ts';
import { addFiles, type AddFilesOptions, type AddFilesResult } from './write/add-files.ts';
import { createTable, writeTable, type WriteOptions, type WriteResult } from './write/writer.ts';

export interface ReadOptions extends TimeTravel {
  /** Which projection to read through; Iceberg by default. */
  format?: ReadFormat;
  limit?: number;
  /** A filter, e.g. `region = 'us' AND ts >= '2024-01-01'`; files that cannot match are skipped. */
  where?: string;
}

export interface HistoryEntry {
  /** The Iceberg snapshot; undefined for a Delta-only table. */
  snapshotId?: bigint;
  parentId?: bigint;
  timestamp: string;
  /** Iceberg's snapshot operation (append, overwrite, delete), or Delta's for a Delta-only table. */
  operation: string;
  /** What made the snapshot when it was not a plain write: a merge, a delete or an alter. */
  change?: TableOperation;
  deltaVersion?: number;
  addedFiles: number;
  addedRecords: number;
  totalRecords: number;
  schemaId?: number;
}

export interface TableDescription {
  name: string;
  location: string;
  formats: TableFormat[];
  /** The Iceberg format version; undefined for a Delta-only table. */
  formatVersion?: number;
  /** The Delta protocol's reader and writer versions, when the table keeps Delta. */
  deltaProtocol?: { minReaderVersion: number; minWriterVersion: number };
  tableUuid: string;
  schema: Schema;
  /** The default partition spec in `--partition` syntax ('' when unpartitioned). */
  partitionSpec: string;
  properties: Record<string, string>;
  currentSnapshotId?: bigint;
  deltaVersion?: number;
  files: number;
  /** Rows stored in the data files, deleted ones included. */
  records: number;
  /** Rows marked deleted by row-level deletes (deletion vectors, position deletes). */
  deletedRecords: number;
  bytes: number;
  snapshots: number;
}

/**
 * A table in a lakehouse. Writes commit Iceberg and Delta together; reads go through either.
 *
 * @example
 * const lake = await Lakehouse.open({ warehouse: './warehouse' });
 * const events = lake.table('analytics.events');
 * await events.append([{ id: 1, ts: new Date(), user: 'ada' }]);
 * const rows = await events.read({ format: 'delta', limit: 10 });
 */
export class Table {
  constructor(private readonly ctx: TableContext) {}

  /** The table's catalog, store and engine, for the maintenance layer (src/maintenance/). */
  get context(): TableContext {
    return this.ctx;
  }

  get name(): string {
    return identString(this.ctx.ident);
  }

  /** Adds records (or a file, or a stream) to the table, creating it on the first write. */
  append(input: WriteInput, opts: Omit<WriteOptions, 'mode'> = {}): Promise<WriteResult> {
    return this.write(input, { ...opts, mode: 'append' });
  }

  /** Replaces the table's contents with the input; older versions stay readable. */
  overwrite(input: WriteInput, opts: Omit<WriteOptions, 'mode'> = {}): Promise<WriteResult> {
    return this.write(input, { ...opts, mode: 'overwrite' });
  }

  async write(input: WriteInput, opts: WriteOptions = {}): Promise<WriteResult> {
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) {
      await this.checkOptionsOfExisting(opts);
      return writeDeltaOnly(this.ctx, deltaLocation, input, opts);
    }
    const exists = await this.ctx.catalog.tableExists(this.ctx.ident);
    const wantsDeltaOnly = opts.formats !== undefined && parseFormats(opts.formats).join() === 'delta';
    if (exists) await this.checkOptionsOfExisting(opts);
    else await checkPlacement(this.ctx, { deltaOnly: wantsDeltaOnly });
    if (wantsDeltaOnly && !exists) {
      const registry = this.ctx.deltaRegistry;
      if (!registry) throw unsupported(`table ${this.name}: this catalog cannot hold Delta-only tables`);
      const result = await writeDeltaOnly(this.ctx, this.ctx.location, input, opts);
      await registry.register(this.ctx.ident, this.ctx.location);
      return result;
    }
    return writeTable(this.ctx, input, opts);
  }

  /**
   * Upserts records on key columns: a record whose key exists replaces the row, a new key is
   * inserted, records matching `deleteWhen` delete their key. Within one batch the last record for
   * a key wins (or the greatest `orderBy`).
   */
  async merge(input: WriteInput, opts: MergeOptions): Promise<MergeResult> {
    if (await this.deltaOnlyLocation()) throw unsupported(`table ${this.name}: merging into a Delta-only table is not supported`);
    if (await this.ctx.catalog.tableExists(this.ctx.ident)) await this.checkOptionsOfExisting(opts);
    else await checkPlacement(this.ctx);
    return mergeTable(this.ctx, input, opts);
  }

  /**
   * Adds existing Parquet files below the table's location (paths or globs) to both formats
   * without rewriting them: schema, field IDs (or names) and statistics come from their footers.
   */
  async addFiles(paths: readonly string[], opts: AddFilesOptions = {}): Promise<AddFilesResult> {
    if (await this.deltaOnlyLocation()) throw unsupported(`table ${this.name}: adding files to a Delta-only table is not supported`);
    return addFiles(this.ctx, paths, opts);
  }

  /** Deletes the rows matching a filter, e.g. `region = 'us' AND ts < '2020-01-01'`. */
  async delete(where: string, opts: DeleteOptions = {}): Promise<MergeResult> {
    if (await this.deltaOnlyLocation()) throw unsupported(`table ${this.name}: deleting from a Delta-only table is not supported`);
    return deleteRows(this.ctx, where, opts);
  }

  /**
   * Changes table properties (`set`, `unset`) and formats after creation, e.g.
   * `alter({ set: { 'write.merge.mode': 'merge-on-read' } })` or `alter({ formats: ['iceberg', 'delta'] })`.
   */
  alter(opts: AlterOptions): Promise<AlterResult> {
    return alterTable(this.ctx, opts);
  }

  /**
   * Adopts an Iceberg table another engine wrote: registers its metadata file (a path or URI)
   * under this name, where the table stays, and projects it to Delta; from then on every write
   * keeps both formats. `lake.table('sales.orders').register('/data/orders/metadata/00007-….metadata.json')`.
   */
  register(metadataFile: string): Promise<RegisterResult> {
    return registerTable(this.ctx, metadataFile);
  }

  /**
   * The live data files of the current (or a past) version, each with the delete files that
   * remove some of its rows: exactly what another engine must read to see the table's rows.
   */
  async files(opts: Omit<ReadOptions, 'limit' | 'where'> = {}): Promise<LiveFiles> {
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) {
      if (opts.format === 'iceberg') throw invalidInput(`table ${this.name} keeps only the Delta format; list its files with --format delta`);
      return listLiveFiles({ io: this.ctx.io, location: deltaLocation, iceberg: async () => undefined }, 'delta', opts);
    }
    const metadata = await this.metadata();
    if (opts.format === 'delta' && !tableFormats(metadata.properties).includes('delta')) throw invalidInput(`table ${this.name} keeps only the Iceberg format; list its files with --format iceberg`);
    return listLiveFiles({ io: this.ctx.io, location: metadata.location, iceberg: async () => metadata }, opts.format ?? 'iceberg', opts);
  }

  /** Formats and properties given to a write of an existing table must be the ones it has. */
  private async checkOptionsOfExisting(opts: Pick<WriteOptions, 'formats' | 'properties'>): Promise<void> {
    if (opts.formats === undefined && opts.properties === undefined) return;
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) {
      const { store, key } = this.ctx.io.storeAt(deltaLocation);
      const snap = await readDeltaSnapshot(store, key, {});
      checkCreationOptions(this.name, { formats: ['delta'], properties: snap.metadata.configuration }, opts);
      return;
    }
    const metadata = await this.metadata();
    checkCreationOptions(this.name, { formats: tableFormats(metadata.properties), properties: metadata.properties, formatVersion: metadata['format-version'] }, opts);
  }

  /**
   * Writes the Delta versions that Iceberg snapshots are still missing (after a Delta commit that
   * failed); writes do this too, before they write.
   */
  async syncDelta(): Promise<{ version: number; written: number[] }> {
    return syncDelta(this.ctx, await this.metadata(), this.ctx.warn);
  }

  /**
   * Checks that the table's files are whole (Delta commits and checkpoints parse, checkpoints
   * match the log, the version hint is current) and that both formats expose the same live files,
   * deletion vectors and rows, now (and at every retained snapshot with `allVersions`). `repair`
   * fixes what Iceberg determines and reports what it did.
   */
  async verify(opts: VerifyOptions = {}): Promise<VerifyResult> {
    const deltaLocation = await this.deltaOnlyLocation();
    const subject = deltaLocation
      ? { ctx: this.ctx, location: deltaLocation, delta: true }
      : catalogSubject(this.ctx, await this.ctx.catalog.loadTable(this.ctx.ident));
    return verifyTable(subject, opts);
  }

  /** Creates the table without data (schema in Iceberg JSON form); Delta version 0 records it. */
  async create(schema: StructType, opts: Omit<WriteOptions, 'mode' | 'schema'> = {}): Promise<void> {
    const deltaOnly = opts.formats !== undefined && parseFormats(opts.formats).join() === 'delta';
    if (!(await this.exists())) await checkPlacement(this.ctx, { deltaOnly });
    if (deltaOnly) {
      const registry = this.ctx.deltaRegistry;
      if (!registry) throw unsupported(`table ${this.name}: this catalog cannot hold Delta-only tables`);
      if (await this.exists()) throw new TwinlakeError('already-exists', `table ${this.name} already exists`, { table: this.name });
      await createDeltaOnly(this.ctx, this.ctx.location, schema, opts);
      await registry.register(this.ctx.ident, this.ctx.location);
      return;
    }
    await createTable(this.ctx, schema, opts);
  }

  async exists(): Promise<boolean> {
    return (await this.deltaOnlyLocation()) !== undefined || this.ctx.catalog.tableExists(this.ctx.ident);
  }

  /** The location of this table when it is a Delta-only table. */
  private async deltaOnlyLocation(): Promise<string | undefined> {
    return this.ctx.deltaRegistry?.location(this.ctx.ident);
  }

  /** The Iceberg metadata (not-found for unknown and for Delta-only tables). */
  async metadata(): Promise<TableMetadata> {
    return (await this.ctx.catalog.loadTable(this.ctx.ident)).metadata;
  }

  /** Plans a read: the files and schema of the chosen version, through the chosen format. */
  async plan(opts: ReadOptions = {}): Promise<ReadPlan> {
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) {
      if (opts.format === 'iceberg') throw invalidInput(`table ${this.name} keeps only the Delta format; read it with --format delta`);
      return planRead({ io: this.ctx.io, location: deltaLocation, iceberg: async () => undefined }, 'delta', opts);
    }
    if (opts.format === 'delta' && opts.snapshotId === undefined) {
      const planned = await this.planDeltaOfCatalogTable(opts);
      if (planned) return planned;
    }
    const metadata = await this.metadata();
    const formats = tableFormats(metadata.properties);
    if (opts.format === 'delta' && !formats.includes('delta')) throw invalidInput(`table ${this.name} keeps only the Iceberg format; read it with --format iceberg`);
    const source: TableSource = { io: this.ctx.io, location: metadata.location, iceberg: async () => metadata };
    return planRead(source, opts.format ?? 'iceberg', opts);
  }

  /**
   * A Delta read of a catalog table needs only its location, not its Iceberg metadata parsed
   * (megabytes at 10,000 snapshots, perhaps damaged while the Delta log is whole): see
   * deltaReadTarget. Undefined when the long way must decide (no such catalog call, another
   * layout, no Delta log where the damaged file's layout says).
   */
  private async planDeltaOfCatalogTable(opts: ReadOptions): Promise<ReadPlan | undefined> {
    const pointer = await this.ctx.catalog.metadataLocation?.(this.ctx.ident);
    const target = pointer === undefined ? undefined : await deltaReadTarget(this.ctx.io, pointer);
    if (!target) return undefined;
    if (target.properties && !tableFormats(target.properties).includes('delta')) throw invalidInput(`table ${this.name} keeps only the Iceberg format; read it with --format iceberg`);
    try {
      return await planRead({ io: this.ctx.io, location: target.location, iceberg: async () => undefined }, 'delta', opts);
    } catch (e) {
      if (target.properties || !isTwinlakeError(e, 'not-found')) throw e;
      return undefined;
    }
  }

  /** Reads rows (see `readScan` for how values are represented). */
  async read(opts: ReadOptions = {}): Promise<Record<string, unknown>[]> {
    const plan = await this.plan(opts);
    const session = await this.ctx.session();
    return withLocalTask(readCacheOf(this.ctx), this.ctx.io, plan.task, (task) => readScan(session, task, { limit: opts.limit }));
  }

  /** Counts the rows a read would return (`limit` aside). */
  async count(opts: Omit<ReadOptions, 'limit'> = {}): Promise<number> {
    const plan = await this.plan(opts);
    const session = await this.ctx.session();
    return withLocalTask(readCacheOf(this.ctx), this.ctx.io, plan.task, (task) => countScan(session, task));
  }

  /**
   * Writes the rows of a read as NDJSON or CSV, without holding them in memory: to a local file,
   * or to a stream as they are read (`export(process.stdout, { output: 'json' })`). A caller that
   * planned already (to answer a bad filter before a stream starts) passes its `plan`.
   */
  async export(target: ExportTarget, opts: ReadOptions & { output: 'json' | 'csv' }, planned?: ReadPlan): Promise<ReadPlan> {
    const plan = planned ?? (await this.plan(opts));
    await exportScan(await this.ctx.session(), plan.task, target, opts, { cache: readCacheOf(this.ctx), io: this.ctx.io });
    return plan;
  }

  async schema(): Promise<Schema> {
    if (await this.deltaOnlyLocation()) return (await this.plan({ format: 'delta' })).task.schema;
    return currentSchema(await this.metadata());
  }

  /** Snapshots of the main branch (Delta versions for a Delta-only table), newest first. */
  async history(): Promise<HistoryEntry[]> {
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) return deltaTableHistory(this.ctx.io, deltaLocation);
    return icebergHistory(await this.metadata());
  }

  async describe(): Promise<TableDescription> {
    const deltaLocation = await this.deltaOnlyLocation();
    if (deltaLocation) return describeDelta(this.name, this.ctx.io, deltaLocation);
    const metadata = await this.metadata();
    return describeIceberg(this.name, this.ctx.io, metadata, tableFormats(metadata.properties));
  }
}

/** The snapshots of the main branch, newest first; total rows with row-level deletes applied. */
export function icebergHistory(metadata: TableMetadata): HistoryEntry[] {
  const head = currentSnapshot(metadata);
  if (!head) return [];
  return ancestors(metadata, head['snapshot-id']).map((s) => ({
    snapshotId: s['snapshot-id'],
    parentId: s['parent-snapshot-id'],
    timestamp: new Date(s['timestamp-ms']).toISOString(),
    operation: s.summary.operation,
    ...(s.summary[OPERATION_KEY] ? { change: s.summary[OPERATION_KEY] as TableOperation } : {}),
    deltaVersion: deltaVersionOf(s),
    addedFiles: Number(s.summary['added-data-files'] ?? 0),
    addedRecords: Number(s.summary['added-records'] ?? 0),
    totalRecords: Number(s.summary['total-records'] ?? 0) - Number(s.summary['total-position-deletes'] ?? 0),
    schemaId: s['schema-id'],
  }));
}

/** The versions of a Delta log, newest first. */
export async function deltaTableHistory(io: FileIO, location: string): Promise<HistoryEntry[]> {
  const { store, key } = io.storeAt(location);
  let total = 0;
  const entries = (await deltaHistory(store, key)).reverse().map((c) => {
    total = c.removedFiles > 0 && c.operation === 'WRITE' ? c.addedRecords : total + c.addedRecords;
    return {
      timestamp: new Date(c.timestampMs ?? 0).toISOString(),
      operation: (c.operation ?? 'unknown').toLowerCase(),
      deltaVersion: c.version,
      addedFiles: c.addedFiles,
      addedRecords: c.addedRecords,
      totalRecords: total,
    };
  });
  return entries.reverse();
}

export async function describeDelta(name: string, io: FileIO, location: string): Promise<TableDescription> {
  const { store, key } = io.storeAt(location);
  const snap = await readDeltaSnapshot(store, key, {});
  const plan = deltaScanTask(snap, location);
  let records = 0;
  for (const f of snap.files) records += f.stats ? (parseStats(f.stats).numRecords ?? 0) : 0;
  return {
    name,
    location,
    formats: ['delta'],
    deltaProtocol: { minReaderVersion: snap.protocol.minReaderVersion, minWriterVersion: snap.protocol.minWriterVersion },
    tableUuid: snap.metadata.id,
    schema: plan.schema,
    partitionSpec: snap.metadata.partitionColumns.join(', '),
    properties: snap.metadata.configuration,
    deltaVersion: snap.version,
    files: snap.files.length,
    records,
    deletedRecords: snap.files.reduce((a, f) => a + (f.deletionVector?.cardinality ?? 0), 0),
    bytes: snap.files.reduce((a, f) => a + f.size, 0),
    snapshots: snap.version + 1,
  };
}

export async function describeIceberg(name: string, io: FileIO, metadata: TableMetadata, formats: TableFormat[]): Promise<TableDescription> {
  const head = currentSnapshot(metadata);
  // Before the first snapshot, Delta version 0 records the table's creation.
  // The version mirroring the head is the log's to say (after a rollback or another engine's
  // commit, no summary names it).
  const { store, key } = io.storeAt(metadata.location);
  const deltaVersion = !formats.includes('delta')
    ? head && deltaVersionOf(head)
    : head
      ? ((await deltaVersionOfSnapshot(store, key, head['snapshot-id'], deltaVersionOf(head))) ?? deltaVersionOf(head))
      : (await io.exists(joinUri(metadata.location, commitPath(0))))
        ? 0
        : undefined;
  return {
    name,
    location: metadata.location,
    formats,
    formatVersion: metadata['format-version'],
    tableUuid: metadata['table-uuid'],
    schema: currentSchema(metadata),
    partitionSpec: formatPartitionSpec(specById(metadata, metadata['default-spec-id']), currentSchema(metadata)),
    properties: metadata.properties,
    currentSnapshotId: head?.['snapshot-id'],
    deltaVersion,
    files: Number(head?.summary['total-data-files'] ?? 0),
    records: Number(head?.summary['total-records'] ?? 0),
    deletedRecords: Number(head?.summary['total-position-deletes'] ?? 0),
    bytes: Number(head?.summary['total-files-size'] ?? 0),
    snapshots: metadata.snapshots.length,
  };
}

