import { invalidInput } from '../../core/errors.ts';
import type { LoadTableResult } from '../../catalog/catalog.ts';
import type { SchemaChange } from '../../format/iceberg/schema.ts';
import { emptyStringPartition } from '../../format/dual/delta-partitioning.ts';
import { currentSchema, currentSnapshot } from '../../format/iceberg/table-metadata.ts';
import type { StructType, TableMetadata } from '../../format/iceberg/types.ts';
import { encode, inferOrExplain, type EncodedFiles } from './batch.ts';
import { catalogTable, commitWrite, type CommittedWrite, type PreparedWrite } from '../commit/commit.ts';
import { committedOrThrow, Transaction, type TableAction } from '../commit/transaction.ts';
import { commitDelta } from '../delta/delta-sync.ts';
import { deltaVersionOf } from '../../format/dual/summary-keys.ts';
import { checkTxn, type TxnResult, type WriteTxn } from '../../format/dual/write-txn.ts';
import { isBlank } from './input-diagnostics.ts';
import { prepareInput, type WriteInput } from './input.ts';
import { discardUncommitted } from './interrupt.ts';
import { planSchema, type SchemaPlan } from './schema-plan.ts';
import { splitExcluded } from './exclude-columns.ts';
import { appendFiles, overwriteFiles, updateSchema } from '../commit/table-actions.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog } from '../table-context.ts';
import { parseFormats, tableFormats, type TableFormat } from '../../format/dual/table-properties.ts';

export type WriteMode = 'append' | 'overwrite';

export interface WriteOptions {
  mode?: WriteMode;
  /** A declared schema (Iceberg JSON form) instead of inferring one from the input. */
  schema?: StructType;
  /** For a table created by this write: which formats to keep (default both). */
  formats?: TableFormat[];
  /** For a table created by this write: its properties. */
  properties?: Record<string, string>;
  /**
   * The partition spec, e.g. `day(ts), bucket(16, user_id)`. A new table is created with it; on
   * an existing table a different spec is a partition evolution.
   */
  partition?: string;
  /**
   * Top-level input columns not to store: columns that only steer a merge (`deleteWhen`,
   * `orderBy`), e.g. a CDC feed's `op` and `seq`.
   */
  excludeColumns?: string[];
  /**
   * The batch's identity for exactly-once writes: the application and the batch's version. A
   * batch whose version is not above the table's latest for the application was committed
   * before, and the write does nothing (`result.txn.status === 'already-committed'`).
   */
  txn?: WriteTxn;
}

export interface WriteResult {
  table: string;
  created: boolean;
  /** What the write did: append or overwrite, or a merge or a delete (MergeResult). */
  mode: WriteMode | 'merge' | 'delete';
  /** The Iceberg snapshot written; undefined for a Delta-only table. */
  snapshotId?: bigint;
  /** The Delta version that mirrors the snapshot; undefined when Delta is off for the table. */
  deltaVersion?: number;
  /** False when the Delta commit failed and will be repaired by the next write. */
  deltaCommitted: boolean;
  files: number;
  rows: number;
  bytes: number;
  warnings: string[];
  /**
   * How this write evolved the table's schema: columns added and types widened, each named by
   * its full path (`customer.address.zip`, `items.element.color`); empty when it did not.
   */
  schemaChanges: SchemaChange[];
  /**
   * Where the time went, in milliseconds: encoding the data files, committing the Iceberg
   * snapshot (including retries), writing the Delta version(s), and the Delta checkpoint that
   * follows every `delta.checkpointInterval` versions.
   */
  timings: { encodeMs: number; icebergCommitMs: number; deltaCommitMs: number; checkpointMs: number };
  /** With `txn`: whether this write committed the batch or found it committed already (and wrote nothing). */
  txn?: TxnResult;
}

/**
 * One write: data files → Iceberg snapshot through the catalog's compare-and-swap → Delta
 * version create-only (DESIGN.md §1). A failure before the Iceberg commit deletes every file this
 * write created and leaves the table as it was.
 */
export async function writeTable(ctx: TableContext, input: WriteInput, opts: WriteOptions = {}): Promise<WriteResult> {
  const mode = opts.mode ?? 'append';
  const { warnings, warn } = warningLog(ctx);
  const prepared = await prepareInput(input, (await ctx.session()).settings.tempDir);
  try {
    const session = await ctx.session();
    if (await isBlank(prepared)) throw invalidInput(`${prepared.displayName}: no records; nothing was written`);
    let incoming: StructType | undefined;
    return await commitWrite(ctx, catalogTable(ctx, warn), {
      what: `write ${identString(ctx.ident)}`,
      ...(opts.txn ? { txn: checkTxn(opts.txn, 'txn') } : {}),
      properties: opts.properties ?? {},
      alreadyCommitted: (loaded, txn) => alreadyCommitted(ctx, loaded, mode, txn, warnings),
      async prepare(loaded): Promise<PreparedWrite<TableAction, WriteResult>> {
        incoming ??= opts.schema ?? splitExcluded(await inferOrExplain(session, prepared, loaded && currentSchema(loaded.metadata)), opts.excludeColumns, 'write').kept;
        const plan = planSchema(ctx, loaded?.metadata, incoming, opts);
        const encodeStart = performance.now();
        const written = await encode(ctx, plan, prepared, incoming);
        if (tableFormats(plan.newTable?.properties ?? loaded!.metadata.properties).includes('delta')) {
          await refuseEmptyIdentityStrings(ctx, plan, written);
        }
        const encodeMs = performance.now() - encodeStart;
        const files = mode === 'overwrite' ? overwriteFiles(ctx, written.dataFiles) : appendFiles(ctx, written.dataFiles);
        return {
          files: written.files,
          actions: [updateSchema(ctx, plan, opts), files],
          ...(plan.newTable ? { create: plan.newTable } : {}),
          done: (c) => committedResult(ctx, c, mode, written, warnings, plan.schemaChanges, encodeMs),
        };
      },
    });
  } finally {
    await prepared.dispose();
  }
}

/** The result of a write whose files `written` were committed (`c`), with Delta's part. */
export function committedResult(
  ctx: TableContext,
  c: CommittedWrite,
  mode: WriteResult['mode'],
  written: EncodedFiles,
  warnings: string[],
  schemaChanges: SchemaChange[],
  encodeMs: number,
): WriteResult {
  return {
    table: identString(ctx.ident),
    created: c.created,
    mode,
    snapshotId: c.snapshotId,
    deltaVersion: c.deltaVersion,
    deltaCommitted: c.deltaCommitted,
    files: written.dataFiles.length,
    rows: written.rows,
    bytes: written.bytes,
    warnings,
    schemaChanges,
    timings: { encodeMs, ...c.timings },
    ...(c.txn ? { txn: c.txn } : {}),
  };
}

/**
 * The result of a write whose batch the table already holds (see WriteTxn): nothing written; the
 * table's current snapshot and Delta version, unchanged.
 */
export function alreadyCommitted(ctx: TableContext, loaded: LoadTableResult, mode: WriteResult['mode'], txn: TxnResult, warnings: string[]): WriteResult {
  const snapshot = currentSnapshot(loaded.metadata);
  const delta = tableFormats(loaded.metadata.properties).includes('delta');
  return nothingWritten(ctx, mode, txn, warnings, { snapshotId: snapshot?.['snapshot-id'], deltaVersion: delta && snapshot ? deltaVersionOf(snapshot) : undefined, deltaCommitted: delta });
}

/** A write result with no files, rows or bytes, at the table's unchanged state. */
export function nothingWritten(
  ctx: TableContext,
  mode: WriteResult['mode'],
  txn: TxnResult,
  warnings: string[],
  state: { snapshotId?: bigint; deltaVersion?: number; deltaCommitted: boolean },
): WriteResult {
  return {
    table: identString(ctx.ident),
    created: false,
    mode,
    snapshotId: state.snapshotId,
    deltaVersion: state.deltaVersion,
    deltaCommitted: state.deltaCommitted,
    files: 0,
    rows: 0,
    bytes: 0,
    warnings,
    schemaChanges: [],
    timings: { encodeMs: 0, icebergCommitMs: 0, deltaCommitMs: 0, checkpointMs: 0 },
    txn,
  };
}

/**
 * Delta reads an empty partition string back as null (PROTOCOL.md §Partition Value
 * Serialization), so Iceberg and Delta would disagree on those rows: refuse them before commit.
 */
async function refuseEmptyIdentityStrings(ctx: TableContext, plan: SchemaPlan, written: EncodedFiles): Promise<void> {
  const empty = emptyStringPartition(plan.spec, plan.schema, written.dataFiles);
  if (!empty) return;
  await discardUncommitted(ctx.io, written.files);
  throw invalidInput(`partition ${empty.field}: a row has an empty string in identity partition column ${empty.column}; Delta reads it back as null, so it cannot be written to a table that keeps Delta`);
}

/** Creates an empty table (no snapshot); Delta version 0 records its creation. */
export async function createTable(ctx: TableContext, schema: StructType, opts: Omit<WriteOptions, 'mode' | 'schema'>): Promise<TableMetadata> {
  const formats = parseFormats(opts.formats ?? ['iceberg', 'delta']);
  const plan = planSchema(ctx, undefined, schema, opts);
  // Exclusive: a table that exists is an error, as the catalog's createTable says.
  const created = committedOrThrow(await new Transaction(ctx, [], { create: plan.newTable!, exclusive: true }).commit());
  if (formats.includes('delta')) await commitDelta(ctx, created.metadata, ctx.warn);
  return created.metadata;
}
