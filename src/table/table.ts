import { isTwinlakeError } from '../core/errors.ts';
import type { TableMetadata, Schema } from '../spec/iceberg/types.ts';
import { currentSchema, currentSnapshot, ancestors } from '../spec/iceberg/table-metadata.ts';
import { readScan, copyScanTo } from '../engine/read-scan.ts';
import { deltaVersionOf } from './delta-projection.ts';
import type { WriteInput } from './input.ts';
import { planRead, type ReadFormat, type ReadPlan, type TableSource, type TimeTravel } from './reader.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import { tableFormats, type TableFormat } from './table-properties.ts';
import { writeTable, type WriteOptions, type WriteResult } from './writer.ts';

export interface ReadOptions extends TimeTravel {
  /** Which projection to read through; Iceberg by default. */
  format?: ReadFormat;
  limit?: number;
}

export interface HistoryEntry {
  snapshotId: bigint;
  parentId?: bigint;
  timestamp: string;
  operation: string;
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
  formatVersion: number;
  tableUuid: string;
  schema: Schema;
  properties: Record<string, string>;
  currentSnapshotId?: bigint;
  deltaVersion?: number;
  files: number;
  records: number;
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

  get name(): string {
    return identString(this.ctx.ident);
  }

  /** Adds records (or a file, or a stream) to the table, creating it on the first write. */
  append(input: WriteInput, opts: Omit<WriteOptions, 'mode'> = {}): Promise<WriteResult> {
    return writeTable(this.ctx, input, { ...opts, mode: 'append' });
  }

  /** Replaces the table's contents with the input; older versions stay readable. */
  overwrite(input: WriteInput, opts: Omit<WriteOptions, 'mode'> = {}): Promise<WriteResult> {
    return writeTable(this.ctx, input, { ...opts, mode: 'overwrite' });
  }

  write(input: WriteInput, opts: WriteOptions = {}): Promise<WriteResult> {
    return writeTable(this.ctx, input, opts);
  }

  async exists(): Promise<boolean> {
    return this.ctx.catalog.tableExists(this.ctx.ident);
  }

  async metadata(): Promise<TableMetadata> {
    return (await this.ctx.catalog.loadTable(this.ctx.ident)).metadata;
  }

  /** Plans a read: the files and schema of the chosen version, through the chosen format. */
  async plan(opts: ReadOptions = {}): Promise<ReadPlan> {
    const metadata = await this.metadata();
    const source: TableSource = { io: this.ctx.io, location: metadata.location, iceberg: async () => metadata };
    const format = opts.format ?? (tableFormats(metadata.properties).includes('iceberg') ? 'iceberg' : 'delta');
    return planRead(source, format, opts);
  }

  /** Reads rows (see `readScan` for how values are represented). */
  async read(opts: ReadOptions = {}): Promise<Record<string, unknown>[]> {
    const plan = await this.plan(opts);
    return readScan(await this.ctx.session(), plan.task, { limit: opts.limit });
  }

  /** Writes the rows of a read to a local file as NDJSON or CSV, without holding them in memory. */
  async export(path: string, opts: ReadOptions & { output: 'json' | 'csv' }): Promise<ReadPlan> {
    const plan = await this.plan(opts);
    await copyScanTo(await this.ctx.session(), plan.task, { format: opts.output, path, limit: opts.limit });
    return plan;
  }

  async schema(): Promise<Schema> {
    return currentSchema(await this.metadata());
  }

  /** Snapshots of the main branch, newest first. */
  async history(): Promise<HistoryEntry[]> {
    const metadata = await this.metadata();
    const head = currentSnapshot(metadata);
    if (!head) return [];
    return ancestors(metadata, head['snapshot-id']).map((s) => ({
      snapshotId: s['snapshot-id'],
      parentId: s['parent-snapshot-id'],
      timestamp: new Date(s['timestamp-ms']).toISOString(),
      operation: s.summary.operation,
      deltaVersion: deltaVersionOf(s),
      addedFiles: Number(s.summary['added-data-files'] ?? 0),
      addedRecords: Number(s.summary['added-records'] ?? 0),
      totalRecords: Number(s.summary['total-records'] ?? 0),
      schemaId: s['schema-id'],
    }));
  }

  async describe(): Promise<TableDescription> {
    const metadata = await this.metadata();
    const head = currentSnapshot(metadata);
    return {
      name: this.name,
      location: metadata.location,
      formats: tableFormats(metadata.properties),
      formatVersion: metadata['format-version'],
      tableUuid: metadata['table-uuid'],
      schema: currentSchema(metadata),
      properties: metadata.properties,
      currentSnapshotId: head?.['snapshot-id'],
      deltaVersion: head ? deltaVersionOf(head) : undefined,
      files: Number(head?.summary['total-data-files'] ?? 0),
      records: Number(head?.summary['total-records'] ?? 0),
      bytes: Number(head?.summary['total-files-size'] ?? 0),
      snapshots: metadata.snapshots.length,
    };
  }
}

export function isNotFound(e: unknown): boolean {
  return isTwinlakeError(e, 'not-found');
}
