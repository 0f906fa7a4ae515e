import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError } from '../core/errors.ts';
import { newSnapshotId, newUuid } from '../core/ids.ts';
import type { LoadTableResult } from '../catalog/catalog.ts';
import { assignFreshIds, evolveSchema, indexById, nameMapping, typeToString } from '../spec/iceberg/schema.ts';
import { currentSchema, currentSnapshot, newTableMetadata } from '../spec/iceberg/table-metadata.ts';
import { applyUpdates, type TableRequirement, type TableUpdate } from '../spec/iceberg/updates.ts';
import type { Schema, StructType, TableMetadata } from '../spec/iceberg/types.ts';
import { catchUpDelta, checkpointInterval, DELTA_VERSION_KEY, nextDeltaVersion } from './delta-projection.ts';
import { writeDeltaCheckpointIfDue } from './delta-checkpoint.ts';
import { prepareInput, type WriteInput } from './input.ts';
import { isBlank } from './input-diagnostics.ts';
import { alignToTable, deleteFiles, encode, inferOrExplain, type EncodedFiles } from './batch.ts';
import { assignPhysicalNames } from './physical-names.ts';
import { SnapshotProducer } from './snapshot-producer.ts';
import type { TableContext } from './table-context.ts';
import { identString } from './table-context.ts';
import {
  boolProp,
  DEFAULT_TARGET_FILE_SIZE,
  intProp,
  parseFormats,
  Props,
  readPhysicalNames,
  tableFormats,
  writePhysicalNames,
  type TableFormat,
} from './table-properties.ts';
import { TWINLAKE_VERSION } from './version.ts';

export type WriteMode = 'append' | 'overwrite';

export interface WriteOptions {
  mode?: WriteMode;
  /** A declared schema (Iceberg JSON form) instead of inferring one from the input. */
  schema?: StructType;
  /** For a table created by this write: which formats to keep (default both). */
  formats?: TableFormat[];
  /** For a table created by this write: its properties. */
  properties?: Record<string, string>;
}

export interface WriteResult {
  table: string;
  created: boolean;
  mode: WriteMode;
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
   * Where the time went, in milliseconds: encoding the data files, committing the Iceberg
   * snapshot (including retries), writing the Delta version(s), and the Delta checkpoint that
   * follows every `delta.checkpointInterval` versions.
   */
  timings: { encodeMs: number; icebergCommitMs: number; deltaCommitMs: number; checkpointMs: number };
}

const MAX_COMMIT_ATTEMPTS = 50;

/**
 * One write: data files → Iceberg snapshot through the catalog's compare-and-swap → Delta
 * version create-only (DESIGN.md §1). A failure before the Iceberg commit deletes every file this
 * write created and leaves the table as it was.
 */
export async function writeTable(ctx: TableContext, input: WriteInput, opts: WriteOptions = {}): Promise<WriteResult> {
  const mode = opts.mode ?? 'append';
  const warnings: string[] = [];
  const warn = (m: string) => {
    warnings.push(m);
    ctx.warn(m);
  };
  const prepared = await prepareInput(input);
  try {
    const session = await ctx.session();
    if (await isBlank(prepared)) throw invalidInput(`input ${prepared.displayName}: no records; nothing was written`);
    let loaded = await tryLoad(ctx);
    let incoming = opts.schema ?? (await inferOrExplain(session, prepared));
    if (loaded && !opts.schema) incoming = alignToTable(incoming, currentSchema(loaded.metadata));
    if (loaded) await repairDelta(ctx, loaded.metadata, warn);

    for (let encodeAttempt = 0; ; encodeAttempt++) {
      const plan = planSchema(ctx, loaded?.metadata, incoming, opts);
      const encodeStart = performance.now();
      const written = await encode(ctx, { ...plan, specId: plan.newTable ? plan.newTable['default-spec-id'] : 0 }, prepared, incoming);
      const encodeMs = performance.now() - encodeStart;
      try {
        const commitStart = performance.now();
        const outcome = await commit(ctx, plan, written, mode, loaded);
        const icebergCommitMs = performance.now() - commitStart;
        if (outcome.status === 'schema-moved') {
          // A concurrent writer changed the columns this batch was encoded against.
          await deleteFiles(ctx, written.files);
          loaded = outcome.loaded;
          if (encodeAttempt >= 5) throw new TwinlakeError('commit-conflict', `write ${identString(ctx.ident)}: schema kept changing under concurrent writers`);
          continue;
        }
        const metadata = outcome.metadata;
        const deltaEnabled = tableFormats(metadata.properties).includes('delta');
        let deltaVersion: number | undefined;
        let deltaCommitted = false;
        let deltaCommitMs = 0;
        let checkpointMs = 0;
        if (deltaEnabled) {
          deltaVersion = Number(outcome.snapshot.summary[DELTA_VERSION_KEY]);
          const deltaStart = performance.now();
          const versions = await commitDelta(ctx, metadata, warn);
          deltaCommitted = versions !== undefined;
          const checkpointStart = performance.now();
          deltaCommitMs = checkpointStart - deltaStart;
          if (versions) await checkpointIfDue(ctx, metadata, versions, warn);
          checkpointMs = performance.now() - checkpointStart;
        }
        return {
          table: identString(ctx.ident),
          created: outcome.created,
          mode,
          snapshotId: outcome.snapshot['snapshot-id'],
          deltaVersion,
          deltaCommitted,
          files: written.dataFiles.length,
          rows: written.rows,
          bytes: written.bytes,
          warnings,
          timings: { encodeMs, icebergCommitMs, deltaCommitMs, checkpointMs },
        };
      } catch (e) {
        await deleteFiles(ctx, written.files);
        throw e;
      }
    }
  } finally {
    await prepared.dispose();
  }
}

async function tryLoad(ctx: TableContext): Promise<LoadTableResult | undefined> {
  try {
    return await ctx.catalog.loadTable(ctx.ident);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
}

/** The table's schema for this batch, with field IDs, and what else changes with it. */
interface SchemaPlan {
  schema: Schema;
  lastColumnId: number;
  schemaChanged: boolean;
  physicalNames: Map<number, string>;
  /** Set when the table does not exist yet: its metadata before the first snapshot. */
  newTable?: TableMetadata;
  location: string;
  targetFileSize: number;
}

function planSchema(ctx: TableContext, metadata: TableMetadata | undefined, incoming: StructType, opts: WriteOptions): SchemaPlan {
  if (!metadata) {
    let next = 1;
    const fresh = assignFreshIds(incoming, () => next++);
    const schema: Schema = { ...fresh, 'schema-id': 0 };
    const physicalNames = assignPhysicalNames(schema, new Map());
    const formats = parseFormats(opts.formats ?? ['iceberg', 'delta']);
    const properties: Record<string, string> = {
      [Props.formats]: formats.join(','),
      ...opts.properties,
      [Props.physicalNames]: writePhysicalNames(physicalNames),
      [Props.nameMapping]: JSON.stringify(nameMapping(schema, physicalNames)),
    };
    const newTable = newTableMetadata({
      location: ctx.location,
      schema,
      properties,
      formatVersion: 2,
      tableUuid: newUuid(),
      nowMs: ctx.clock.nowMs(),
      lastColumnId: next - 1,
    });
    return {
      schema,
      lastColumnId: next - 1,
      schemaChanged: false,
      physicalNames,
      newTable,
      location: ctx.location,
      targetFileSize: intProp(properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
    };
  }
  const current = currentSchema(metadata);
  const nextSchemaId = Math.max(...metadata.schemas.map((s) => s['schema-id'])) + 1;
  const evolved = evolveSchema(current, incoming, metadata['last-column-id'], {
    allowEvolution: boolProp(metadata.properties, Props.schemaEvolution, true),
    newSchemaId: nextSchemaId,
  });
  return {
    schema: evolved.schema,
    lastColumnId: evolved.lastColumnId,
    schemaChanged: evolved.changed,
    physicalNames: assignPhysicalNames(evolved.schema, readPhysicalNames(metadata)),
    location: metadata.location,
    targetFileSize: intProp(metadata.properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
  };
}

type CommitOutcome =
  | { status: 'committed'; metadata: TableMetadata; snapshot: NonNullable<ReturnType<typeof currentSnapshot>>; created: boolean }
  | { status: 'schema-moved'; loaded: LoadTableResult };

async function commit(ctx: TableContext, plan: SchemaPlan, written: EncodedFiles, mode: WriteMode, loaded: LoadTableResult | undefined): Promise<CommitOutcome> {
  const snapshotId = newSnapshotId();
  const producer = new SnapshotProducer(ctx.io, snapshotId, {
    operation: mode === 'overwrite' ? 'overwrite' : 'append',
    added: written.dataFiles,
    replaceAll: mode === 'overwrite',
  });
  let committed = false;
  try {
    let base = loaded;
    for (let attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
      if (attempt > 0) await backoff(attempt);
      if (!base && plan.newTable) {
        const outcome = await createWithSnapshot(ctx, plan, producer);
        if (outcome) {
          committed = true;
          return outcome;
        }
        base = await ctx.catalog.loadTable(ctx.ident); // someone else created it first
        if (!sameColumns(written.schema, base.metadata, plan)) return { status: 'schema-moved', loaded: base };
        continue;
      }
      if (!base) base = await ctx.catalog.loadTable(ctx.ident);
      const rebased = rebasePlan(ctx, plan, base.metadata);
      if (!rebased) return { status: 'schema-moved', loaded: base };
      const { updates, requirements, metadataForSnapshot } = rebased;
      const nowMs = Math.max(ctx.clock.nowMs(), base.metadata['last-updated-ms'] + 1);
      const parent = currentSnapshot(base.metadata);
      const produced = await producer.produce(metadataForSnapshot, nowMs, {
        schema: currentSchema(metadataForSnapshot),
        summaryExtra: summaryExtra(base.metadata, parent),
      });
      const result = await ctx.catalog.commitTable(ctx.ident, {
        requirements,
        updates: [...updates, { action: 'add-snapshot', snapshot: produced.snapshot }, { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId }],
      });
      if (result.status === 'committed') {
        committed = true;
        return { status: 'committed', metadata: result.metadata, snapshot: produced.snapshot, created: false };
      }
      await Promise.all(produced.attemptFiles.map((f) => ctx.io.delete(f).catch(() => undefined)));
      base = await ctx.catalog.loadTable(ctx.ident);
    }
    throw new TwinlakeError('commit-conflict', `write ${identString(ctx.ident)}: gave up after ${MAX_COMMIT_ATTEMPTS} attempts lost to concurrent commits`);
  } finally {
    if (!committed) await producer.abandon();
  }
}

function summaryExtra(metadata: TableMetadata, parent: ReturnType<typeof currentSnapshot>): Record<string, string> {
  const extra: Record<string, string> = { 'engine-name': 'twinlake', 'engine-version': TWINLAKE_VERSION };
  if (tableFormats(metadata.properties).includes('delta')) extra[DELTA_VERSION_KEY] = String(nextDeltaVersion(parent));
  return extra;
}

/**
 * Requirements and schema updates for committing this batch on `metadata`. Undefined when the
 * batch's field IDs no longer match the table (a concurrent writer added the same column with
 * another ID), so the batch must be encoded again.
 */
function rebasePlan(ctx: TableContext, plan: SchemaPlan, metadata: TableMetadata):
  | { updates: TableUpdate[]; requirements: TableRequirement[]; metadataForSnapshot: TableMetadata }
  | undefined {
  const fresh = planSchema(ctx, metadata, plan.schema, {});
  if (!sameColumns(plan.schema, metadata, fresh)) return undefined;
  const parent = currentSnapshot(metadata);
  const requirements: TableRequirement[] = [
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent ? parent['snapshot-id'] : null },
    { type: 'assert-current-schema-id', 'current-schema-id': metadata['current-schema-id'] },
    { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': metadata['last-column-id'] },
  ];
  const updates: TableUpdate[] = [];
  if (fresh.schemaChanged) {
    updates.push({ action: 'add-schema', schema: fresh.schema, 'last-column-id': fresh.lastColumnId });
    updates.push({ action: 'set-current-schema', 'schema-id': -1 });
    updates.push({
      action: 'set-properties',
      updates: {
        [Props.physicalNames]: writePhysicalNames(fresh.physicalNames),
        [Props.nameMapping]: JSON.stringify(nameMapping(fresh.schema, fresh.physicalNames)),
      },
    });
  }
  // The snapshot's manifests are written against the schema it will carry.
  const metadataForSnapshot = updates.length ? applyUpdates(metadata, updates, { nowMs: ctx.clock.nowMs() }) : metadata;
  return { updates, requirements, metadataForSnapshot };
}

/** Every column the batch was encoded with still has the same field ID and name in `plan`. */
function sameColumns(encoded: Schema, _metadata: TableMetadata, plan: SchemaPlan): boolean {
  const after = indexById(plan.schema);
  for (const [id, { path, field }] of indexById(encoded)) {
    const now = after.get(id);
    if (!now || now.path.join('.') !== path.join('.')) return false;
    if (typeof field.type === 'string' && typeToString(now.field.type) !== typeToString(field.type)) {
      // A widened type (int → long) still reads the file correctly; anything else does not.
      if (!(field.type === 'int' && now.field.type === 'long') && !(field.type === 'float' && now.field.type === 'double')) return false;
    }
  }
  return true;
}

async function createWithSnapshot(ctx: TableContext, plan: SchemaPlan, producer: SnapshotProducer): Promise<CommitOutcome | undefined> {
  const base = plan.newTable!;
  const nowMs = Math.max(ctx.clock.nowMs(), base['last-updated-ms'] + 1);
  const produced = await producer.produce(base, nowMs, { schema: plan.schema, summaryExtra: summaryExtra(base, undefined) });
  const metadata = applyUpdates(
    base,
    [
      { action: 'add-snapshot', snapshot: produced.snapshot },
      { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': produced.snapshot['snapshot-id'] },
    ],
    { nowMs },
  );
  try {
    if (!(await ctx.catalog.namespaceExists(ctx.ident.namespace))) {
      await ctx.catalog.createNamespace(ctx.ident.namespace).catch((e) => {
        if (!isTwinlakeError(e, 'already-exists')) throw e;
      });
    }
    const created = await ctx.catalog.createTable(ctx.ident, metadata);
    return { status: 'committed', metadata: created.metadata, snapshot: produced.snapshot, created: true };
  } catch (e) {
    if (isTwinlakeError(e, 'already-exists')) {
      await Promise.all(produced.attemptFiles.map((f) => ctx.io.delete(f).catch(() => undefined)));
      return undefined;
    }
    throw e;
  }
}

/**
 * Delta after a committed Iceberg snapshot: try, retry once, then warn (never fail the write).
 * Returns the versions this call wrote, or undefined when Delta is left behind.
 */
async function commitDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<number[] | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return (await catchUpDelta(ctx.io, metadata)).written;
    } catch (e) {
      if (attempt === 1) {
        warn(`delta: commit for ${identString(ctx.ident)} failed after the iceberg commit (${errorMessage(e)}); the next write will repair it`);
      }
    }
  }
  return undefined;
}

/** One checkpoint at the newest due version among those just written covers them all. */
async function checkpointIfDue(ctx: TableContext, metadata: TableMetadata, versions: number[], warn: (m: string) => void): Promise<void> {
  const due = versions.filter((v) => v > 0 && v % checkpointInterval(metadata) === 0);
  if (due.length > 0) await writeDeltaCheckpointIfDue(ctx, metadata, Math.max(...due), warn);
}

/** Open-for-write catches Delta up with Iceberg (DESIGN.md §1). Failures only warn. */
async function repairDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<void> {
  if (!tableFormats(metadata.properties).includes('delta')) return;
  try {
    const { written } = await catchUpDelta(ctx.io, metadata);
    await checkpointIfDue(ctx, metadata, written, warn);
  } catch (e) {
    warn(`delta: could not catch up ${identString(ctx.ident)} with iceberg (${errorMessage(e)})`);
  }
}

function backoff(attempt: number): Promise<void> {
  const ms = Math.min(200, 5 * attempt) + Math.random() * 20 * Math.min(attempt, 5);
  return new Promise((r) => setTimeout(r, ms));
}
