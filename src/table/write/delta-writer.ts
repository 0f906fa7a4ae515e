import { invalidInput, TwinlakeError, unsupported } from '../../core/errors.ts';
import { newUuid } from '../../core/ids.ts';
import type { Action, AddFile, CommitInfo, Metadata, RemoveFile } from '../../format/delta/actions.ts';
import { fromDeltaSchema, protocolFor, toDeltaSchema } from '../../format/delta/schema.ts';
import type { DeltaSnapshot } from '../../format/delta/replay.ts';
import { assignFreshIds, evolveSchema, indexById, type SchemaChange } from '../../format/iceberg/schema.ts';
import type { Schema, StructType } from '../../format/iceberg/types.ts';
import { deltaStats } from '../../format/parquet/stats.ts';
import { encode, inferOrExplain, type EncodedFiles } from './batch.ts';
import { writeDeltaCheckpointIfDue } from '../delta/delta-checkpoint.ts';
import { deltaPath } from '../../format/delta/replay.ts';
import { isBlank } from './input-diagnostics.ts';
import { splitExcluded } from './exclude-columns.ts';
import { prepareInput, type WriteInput } from './input.ts';
import { assignPhysicalNames } from '../../format/dual/physical-names.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog } from '../table-context.ts';
import { boolProp, DEFAULT_TARGET_FILE_SIZE, intProp, Props } from '../../format/dual/table-properties.ts';
import { ENGINE_INFO } from '../../format/dual/version.ts';
import { committedResult, nothingWritten, type WriteOptions, type WriteResult } from './writer.ts';
import { commitWrite, type PreparedWrite, type WriteTarget } from '../commit/commit.ts';
import { checkTxn, deltaTxn, latestDeltaTxn, type TxnResult } from '../../format/dual/write-txn.ts';
import { DeltaTransaction, loadDeltaSnapshot, type DeltaCommitted, type DeltaTableAction } from '../commit/transaction.ts';

/**
 * Writes to a Delta-only table (`formats: [delta]`), where the Delta log is the truth
 * (DESIGN.md §1): data files, then version N+1 written create-only; a taken version means a
 * concurrent writer won, so the commit is rebuilt on the newer version and tried again (the
 * table's `commit.retry.*` policy, kept in its configuration). With `txn`, each attempt first
 * checks the newest version's `txn` actions: a batch the table holds is not written again. The
 * schema keeps the same column identity rules as dual tables (field IDs in the Parquet files,
 * column mapping `name`).
 */
export async function writeDeltaOnly(ctx: TableContext, location: string, input: WriteInput, opts: WriteOptions): Promise<WriteResult> {
  const mode = opts.mode ?? 'append';
  if (opts.partition) throw unsupported(`table ${identString(ctx.ident)}: partitioning a Delta-only table is not supported; keep Iceberg too (the default) to partition`);
  const { warnings, warn } = warningLog(ctx);
  const txn = opts.txn ? checkTxn(opts.txn, 'txn') : undefined;
  const prepared = await prepareInput(input, (await ctx.session()).settings.tempDir);
  try {
    const session = await ctx.session();
    if (await isBlank(prepared)) throw invalidInput(`${prepared.displayName}: no records; nothing was written`);
    let incoming: StructType | undefined;
    return await commitWrite(ctx, deltaLogTable(ctx, location, warn, opts.properties ?? {}), {
      what: `delta: write to ${identString(ctx.ident)}`,
      ...(txn ? { txn } : {}),
      properties: opts.properties ?? {},
      alreadyCommitted: (base, found) => alreadyCommitted(ctx, base, mode, found, warnings),
      async prepare(base): Promise<PreparedWrite<DeltaTableAction, WriteResult>> {
        const batch = (incoming ??= opts.schema ?? splitExcluded(await inferOrExplain(session, prepared, base && deltaTableSchema(base).schema), opts.excludeColumns, 'write').kept);
        const plan = planDeltaSchema(base, batch, opts);
        const encodeStart = performance.now();
        const written = await encode(ctx, { ...plan, location, spec: { 'spec-id': 0, fields: [] } }, prepared, batch);
        const encodeMs = performance.now() - encodeStart;
        const files: DeltaTableAction = {
          async apply({ snapshot, nowMs }) {
            // A concurrent writer changed the columns: encode again.
            if (snapshot && !sameIds(plan.schema, planDeltaSchema(snapshot, batch, opts).schema)) return { status: 'rerun', why: `a concurrent commit changed the columns of ${identString(ctx.ident)}` };
            return { status: 'apply', actions: commitActions(snapshot, plan, written, mode, nowMs, location, txn) };
          },
        };
        return { files: written.files, actions: [files], done: (c) => committedResult(ctx, c, mode, written, warnings, plan.changes, encodeMs) };
      },
    });
  } finally {
    await prepared.dispose();
  }
}

/**
 * Creates an empty Delta-only table: version 0 with its protocol and schema (column mapping
 * `name`, field IDs as for any write), written create-only. A table already at `location` is an
 * error, as creating an existing table is.
 */
export async function createDeltaOnly(ctx: TableContext, location: string, schema: StructType, opts: Omit<WriteOptions, 'mode' | 'schema'>): Promise<void> {
  if (opts.partition) throw unsupported(`table ${identString(ctx.ident)}: partitioning a Delta-only table is not supported; keep Iceberg too (the default) to partition`);
  const plan = planDeltaSchema(undefined, schema, { ...opts, schema });
  const empty: EncodedFiles = { files: [], dataFiles: [], rows: 0, bytes: 0, schema: plan.schema };
  const create: DeltaTableAction = {
    async apply({ snapshot, nowMs }) {
      if (snapshot) return { status: 'conflict', why: `table ${identString(ctx.ident)} already exists (Delta version ${snapshot.version} at ${location})` };
      return { status: 'apply', actions: commitActions(undefined, plan, empty, 'append', nowMs, location, undefined) };
    },
  };
  const outcome = await new DeltaTransaction(ctx, location, [create], { create: true, properties: opts.properties ?? {}, what: `delta: create ${identString(ctx.ident)}` }).commit();
  if (outcome.status === 'conflict') throw new TwinlakeError('already-exists', outcome.error.message, { table: identString(ctx.ident) });
  if (outcome.status !== 'committed') throw new Error(`delta: create of ${identString(ctx.ident)} ended ${outcome.status}`);
}

/** A Delta-only table's log as where a write commits: version N+1 create-only, then a checkpoint when due. */
function deltaLogTable(ctx: TableContext, location: string, warn: (m: string) => void, properties: Record<string, string>): WriteTarget<DeltaSnapshot, DeltaTableAction, DeltaCommitted> {
  return {
    load: () => loadDeltaSnapshot(ctx, location),
    repair: async () => undefined,
    latestTxn: (base, appId) => latestDeltaTxn(base.txns, appId),
    properties: (base) => base?.metadata.configuration,
    commit: (actions, base, o) => new DeltaTransaction(ctx, location, actions, { ...o, create: true, properties }).commit(base),
    async follow(c, deltaCommitMs) {
      const checkpointStart = performance.now();
      await writeDeltaCheckpointIfDue(ctx, location, [c.version], intProp(c.base?.metadata.configuration ?? properties, Props.deltaCheckpointInterval, 10), warn);
      const timings = { icebergCommitMs: 0, deltaCommitMs, checkpointMs: performance.now() - checkpointStart };
      return { created: c.created, ...(c.txn ? { txn: c.txn } : {}), deltaVersion: c.version, deltaCommitted: true, timings };
    },
  };
}

/** A write whose batch the Delta-only table already holds: nothing written (see WriteTxn). */
function alreadyCommitted(ctx: TableContext, base: DeltaSnapshot, mode: WriteResult['mode'], txn: TxnResult, warnings: string[]): WriteResult {
  return nothingWritten(ctx, mode, txn, warnings, { deltaVersion: base.version, deltaCommitted: true });
}

interface DeltaSchemaPlan {
  schema: Schema;
  physicalNames: Map<number, string>;
  lastColumnId: number;
  changed: boolean;
  /** Columns added and types widened by this batch (none for a new table). */
  changes: SchemaChange[];
  configuration: Record<string, string>;
  targetFileSize: number;
  tableId: string;
}

/** The Delta table's schema with its field IDs (column mapping), and its physical names. */
function deltaTableSchema(base: DeltaSnapshot): { schema: Schema; physicalNames: Map<number, string> } {
  const parsed = fromDeltaSchema(base.metadata.schemaString, 'name');
  return { schema: { ...parsed.schema, 'schema-id': 0 }, physicalNames: parsed.physicalNames };
}

function planDeltaSchema(base: DeltaSnapshot | undefined, incoming: StructType, opts: WriteOptions): DeltaSchemaPlan {
  if (!base) {
    let next = 1;
    const schema: Schema = { ...assignFreshIds(incoming, () => next++), 'schema-id': 0 };
    const configuration = {
      ...opts.properties,
      [Props.formats]: 'delta',
      'delta.columnMapping.mode': 'name',
      'delta.columnMapping.maxColumnId': String(next - 1),
    };
    return {
      schema,
      physicalNames: assignPhysicalNames(schema, new Map()),
      lastColumnId: next - 1,
      changed: true,
      changes: [],
      configuration,
      targetFileSize: intProp(configuration, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
      tableId: newUuid(),
    };
  }
  const parsed = deltaTableSchema(base);
  const current = parsed.schema;
  const configuration = { ...base.metadata.configuration };
  const lastColumnId = Math.max(Number(configuration['delta.columnMapping.maxColumnId'] ?? 0), ...indexById(current).keys());
  const evolved = evolveSchema(current, incoming, lastColumnId, {
    allowEvolution: boolProp(configuration, Props.schemaEvolution, true),
    newSchemaId: 0,
  });
  if (evolved.changed) configuration['delta.columnMapping.maxColumnId'] = String(evolved.lastColumnId);
  return {
    schema: evolved.schema,
    physicalNames: assignPhysicalNames(evolved.schema, parsed.physicalNames),
    lastColumnId: evolved.lastColumnId,
    changed: evolved.changed,
    changes: evolved.changes,
    configuration,
    targetFileSize: intProp(configuration, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
    tableId: base.metadata.id,
  };
}

function sameIds(a: Schema, b: Schema): boolean {
  const after = indexById(b);
  for (const [id, { path }] of indexById(a)) if (after.get(id)?.path.join('.') !== path.join('.')) return false;
  return true;
}

function commitActions(
  base: DeltaSnapshot | undefined,
  plan: DeltaSchemaPlan,
  written: EncodedFiles,
  mode: 'append' | 'overwrite',
  nowMs: number,
  location: string,
  txn: { appId: string; version: bigint } | undefined,
): Action[] {
  const commitInfo: CommitInfo = {
    timestamp: nowMs,
    operation: base ? 'WRITE' : 'CREATE TABLE AS SELECT',
    operationParameters: { mode: mode === 'overwrite' ? 'Overwrite' : 'Append', partitionBy: '[]' },
    isBlindAppend: mode === 'append',
    engineInfo: ENGINE_INFO,
  };
  const actions: Action[] = [{ commitInfo }];
  const protocol = protocolFor(plan.schema, { columnMapping: true });
  if (!base || JSON.stringify(base.protocol) !== JSON.stringify(protocol)) actions.push({ protocol });
  if (!base || plan.changed) {
    const metaData: Metadata = {
      id: plan.tableId,
      format: { provider: 'parquet', options: {} },
      schemaString: JSON.stringify(toDeltaSchema(plan.schema, plan.physicalNames)),
      partitionColumns: [],
      configuration: plan.configuration,
      createdTime: base?.metadata.createdTime ?? nowMs,
    };
    actions.push({ metaData });
  }
  if (txn) actions.push({ txn: deltaTxn(txn, nowMs) });
  if (mode === 'overwrite' && base) {
    for (const f of base.files) {
      const remove: RemoveFile = { path: f.path, deletionTimestamp: nowMs, dataChange: true, extendedFileMetadata: true, partitionValues: f.partitionValues, size: f.size };
      actions.push({ remove });
    }
  }
  for (const f of written.dataFiles) {
    const add: AddFile = {
      path: deltaPath(location, f['file-path']),
      partitionValues: {},
      size: f['file-size-in-bytes'],
      modificationTime: nowMs,
      dataChange: true,
      stats: deltaStats(f, plan.schema, plan.physicalNames),
    };
    actions.push({ add });
  }
  return actions;
}
