import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError, unsupported } from '../core/errors.ts';
import { newSnapshotId, newUuid } from '../core/ids.ts';
import type { LoadTableResult } from '../catalog/catalog.ts';
import { assignFreshIds, evolveSchema, indexById, nameMapping, typeToString } from '../spec/iceberg/schema.ts';
import { currentSchema, currentSnapshot, newTableMetadata, specById } from '../spec/iceberg/table-metadata.ts';
import { evolvePartitionSpec, parsePartitionSpec } from '../spec/iceberg/partition-spec-parser.ts';
import { applyUpdates, type TableRequirement, type TableUpdate } from '../spec/iceberg/updates.ts';
import type { PartitionSpec, Schema, StructType, TableMetadata } from '../spec/iceberg/types.ts';
import { catchUpDelta, checkpointInterval, DELTA_VERSION_KEY, nextDeltaVersion } from './delta-projection.ts';
import { writeDeltaCheckpointIfDue } from './delta-checkpoint.ts';
import { prepareInput, type WriteInput } from './input.ts';
import { isBlank } from './input-diagnostics.ts';
import { alignToTable, deleteFiles, encode, inferOrExplain, type EncodedFiles } from './batch.ts';
import { assignPhysicalNames } from './physical-names.ts';
import { SnapshotProducer, type SnapshotChange } from './snapshot-producer.ts';
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
  /**
   * The partition spec, e.g. `day(ts), bucket(16, user_id)`. A new table is created with it; on
   * an existing table a different spec is a partition evolution.
   */
  partition?: string;
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
      const written = await encode(ctx, plan, prepared, incoming);
      if (tableFormats(plan.newTable?.properties ?? loaded!.metadata.properties).includes('delta')) {
        await refuseEmptyIdentityStrings(ctx, plan, written);
      }
      const encodeMs = performance.now() - encodeStart;
      try {
        const commitStart = performance.now();
        const outcome = await commit(ctx, plan, written, mode, loaded, opts);
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

export async function tryLoad(ctx: TableContext): Promise<LoadTableResult | undefined> {
  try {
    return await ctx.catalog.loadTable(ctx.ident);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
}

/** The table's schema for this batch, with field IDs, and what else changes with it. */
export interface SchemaPlan {
  schema: Schema;
  lastColumnId: number;
  schemaChanged: boolean;
  physicalNames: Map<number, string>;
  /** Set when the table does not exist yet: its metadata before the first snapshot. */
  newTable?: TableMetadata;
  location: string;
  targetFileSize: number;
  /** The spec this batch is written with. */
  spec: PartitionSpec;
  /** add-spec / set-default-spec when this write evolves the partitioning. */
  specUpdates: TableUpdate[];
}

export function planSchema(ctx: TableContext, metadata: TableMetadata | undefined, incoming: StructType, opts: WriteOptions): SchemaPlan {
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
    const spec = opts.partition ? parsePartitionSpec(opts.partition, schema, { specId: 0, lastPartitionId: 999 }) : { 'spec-id': 0, fields: [] };
    if (formats.includes('delta')) checkDeltaPartitioning(spec, schema);
    const newTable = newTableMetadata({
      location: ctx.location,
      schema,
      partitionSpec: spec,
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
      spec: specById(newTable, newTable['default-spec-id']),
      specUpdates: [],
    };
  }
  const current = currentSchema(metadata);
  const nextSchemaId = Math.max(...metadata.schemas.map((s) => s['schema-id'])) + 1;
  const evolved = evolveSchema(current, incoming, metadata['last-column-id'], {
    allowEvolution: boolProp(metadata.properties, Props.schemaEvolution, true),
    newSchemaId: nextSchemaId,
  });
  let spec = specById(metadata, metadata['default-spec-id']);
  const specUpdates: TableUpdate[] = [];
  if (opts.partition !== undefined) {
    const wanted = parsePartitionSpec(opts.partition, { ...evolved.schema }, { lastPartitionId: metadata['last-partition-id'] });
    const next = evolvePartitionSpec(
      { specs: metadata['partition-specs'], lastPartitionId: metadata['last-partition-id'], defaultSpecId: metadata['default-spec-id'], formatVersion: metadata['format-version'] },
      wanted,
    );
    if (next.changed) {
      if (tableFormats(metadata.properties).includes('delta')) checkIdentityUnchanged(spec, next.spec, evolved.schema);
      if (next.isNew) specUpdates.push({ action: 'add-spec', spec: next.spec });
      specUpdates.push({ action: 'set-default-spec', 'spec-id': next.spec['spec-id'] });
      spec = next.spec;
    }
  }
  return {
    schema: evolved.schema,
    lastColumnId: evolved.lastColumnId,
    schemaChanged: evolved.changed,
    physicalNames: assignPhysicalNames(evolved.schema, readPhysicalNames(metadata)),
    location: metadata.location,
    targetFileSize: intProp(metadata.properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
    spec,
    specUpdates,
  };
}

/**
 * Delta reads an empty partition string back as null (PROTOCOL.md §Partition Value
 * Serialization), so Iceberg and Delta would disagree on those rows: refuse them before commit.
 */
async function refuseEmptyIdentityStrings(ctx: TableContext, plan: SchemaPlan, written: EncodedFiles): Promise<void> {
  const index = indexById(plan.schema);
  for (const f of plan.spec.fields) {
    if (f.transform !== 'identity' || index.get(f['source-id'])?.field.type !== 'string') continue;
    if (written.dataFiles.some((d) => d.partition[f.name] === '')) {
      await deleteFiles(ctx, written.files);
      throw invalidInput(
        `partition ${f.name}: a row has an empty string in identity partition column ${index.get(f['source-id'])!.path.join('.')}; Delta reads it back as null, so it cannot be written to a table that keeps Delta`,
      );
    }
  }
}

/** Creates an empty table (no snapshot); Delta version 0 records its creation. */
export async function createTable(ctx: TableContext, schema: StructType, opts: Omit<WriteOptions, 'mode' | 'schema'>): Promise<TableMetadata> {
  const formats = parseFormats(opts.formats ?? ['iceberg', 'delta']);
  if (!formats.includes('iceberg')) throw unsupported(`create ${identString(ctx.ident)}: an empty Delta-only table is created by its first write`);
  const plan = planSchema(ctx, undefined, schema, opts);
  if (!(await ctx.catalog.namespaceExists(ctx.ident.namespace))) {
    await ctx.catalog.createNamespace(ctx.ident.namespace).catch((e) => {
      if (!isTwinlakeError(e, 'already-exists')) throw e;
    });
  }
  const created = await ctx.catalog.createTable(ctx.ident, plan.newTable!);
  if (formats.includes('delta')) await commitDelta(ctx, created.metadata, ctx.warn);
  return created.metadata;
}

/**
 * Delta partition columns are the identity-partitioned source columns (DESIGN.md §4); Delta can
 * partition only by top-level primitive columns.
 */
function checkDeltaPartitioning(spec: PartitionSpec, schema: Schema): void {
  const index = indexById(schema);
  for (const f of spec.fields) {
    if (f.transform !== 'identity') continue;
    const source = index.get(f['source-id']);
    if (source && source.path.length > 1) {
      throw invalidInput(`partition ${f.name}: Delta tables can partition by top-level columns only, found identity(${source.path.join('.')}); use --formats iceberg or another transform`);
    }
  }
}

/** Delta's partition columns cannot change once set: a dual-format table keeps its identity set. */
function checkIdentityUnchanged(before: PartitionSpec, after: PartitionSpec, schema: Schema): void {
  const ids = (s: PartitionSpec) => s.fields.filter((f) => f.transform === 'identity').map((f) => f['source-id']).sort((a, b) => a - b).join(',');
  if (ids(before) !== ids(after)) {
    const names = (s: PartitionSpec) => {
      const index = indexById(schema);
      const list = s.fields.filter((f) => f.transform === 'identity').map((f) => index.get(f['source-id'])?.path.join('.') ?? `#${f['source-id']}`);
      return list.length ? list.join(', ') : 'none';
    };
    throw invalidInput(
      `partition: Delta partition columns cannot change once set, and this table keeps Delta: identity columns are ${names(before)}, the new spec has ${names(after)}; other transforms may change freely`,
    );
  }
  checkDeltaPartitioning(after, schema);
}

export type CommitOutcome =
  | { status: 'committed'; metadata: TableMetadata; snapshot: NonNullable<ReturnType<typeof currentSnapshot>>; created: boolean }
  | { status: 'schema-moved'; loaded: LoadTableResult };

async function commit(ctx: TableContext, plan: SchemaPlan, written: EncodedFiles, mode: WriteMode, loaded: LoadTableResult | undefined, opts: WriteOptions): Promise<CommitOutcome> {
  return commitChange(ctx, plan, written, { operation: mode === 'overwrite' ? 'overwrite' : 'append', added: written.dataFiles, replaceAll: mode === 'overwrite' }, loaded, opts);
}

/**
 * Commits a snapshot change through the catalog, rebuilding it on the newest metadata when a
 * concurrent commit wins. 'schema-moved' means the batch must be prepared again: its columns or
 * partitioning changed underneath, or (for merges and deletes) a file it rewrites is gone.
 */
export async function commitChange(
  ctx: TableContext,
  plan: SchemaPlan,
  written: EncodedFiles,
  change: SnapshotChange,
  loaded: LoadTableResult | undefined,
  opts: WriteOptions,
): Promise<CommitOutcome> {
  const snapshotId = newSnapshotId();
  const producer = new SnapshotProducer(ctx.io, snapshotId, change);
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
      const rebased = rebasePlan(ctx, plan, base.metadata, opts);
      if (!rebased) return { status: 'schema-moved', loaded: base };
      const { updates, requirements, metadataForSnapshot } = rebased;
      const nowMs = Math.max(ctx.clock.nowMs(), base.metadata['last-updated-ms'] + 1);
      const parent = currentSnapshot(base.metadata);
      let produced;
      try {
        produced = await producer.produce(metadataForSnapshot, nowMs, {
          schema: currentSchema(metadataForSnapshot),
          summaryExtra: summaryExtra(base.metadata, parent),
        });
      } catch (e) {
        // A file this change rewrites was removed by a concurrent commit: prepare it again.
        if (isTwinlakeError(e, 'commit-conflict')) return { status: 'schema-moved', loaded: base };
        throw e;
      }
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
function rebasePlan(ctx: TableContext, plan: SchemaPlan, metadata: TableMetadata, opts: WriteOptions):
  | { updates: TableUpdate[]; requirements: TableRequirement[]; metadataForSnapshot: TableMetadata }
  | undefined {
  const fresh = planSchema(ctx, metadata, plan.schema, { partition: opts.partition });
  if (!sameColumns(plan.schema, metadata, fresh)) return undefined;
  // Files were split by the spec they were encoded with; a concurrent partition change means again.
  if (!sameSpec(plan.spec, fresh.spec)) return undefined;
  const parent = currentSnapshot(metadata);
  const requirements: TableRequirement[] = [
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent ? parent['snapshot-id'] : null },
    { type: 'assert-current-schema-id', 'current-schema-id': metadata['current-schema-id'] },
    { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': metadata['last-column-id'] },
    { type: 'assert-default-spec-id', 'default-spec-id': metadata['default-spec-id'] },
  ];
  const updates: TableUpdate[] = [...fresh.specUpdates];
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

function sameSpec(a: PartitionSpec, b: PartitionSpec): boolean {
  const key = (s: PartitionSpec) => JSON.stringify(s.fields.map((f) => [f['field-id'], f['source-id'], f.transform, f.name]));
  return key(a) === key(b);
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
export async function commitDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<number[] | undefined> {
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
export async function checkpointIfDue(ctx: TableContext, metadata: TableMetadata, versions: number[], warn: (m: string) => void): Promise<void> {
  const due = versions.filter((v) => v > 0 && v % checkpointInterval(metadata) === 0);
  if (due.length > 0) await writeDeltaCheckpointIfDue(ctx, metadata, Math.max(...due), warn);
}

/** Open-for-write catches Delta up with Iceberg (DESIGN.md §1). Failures only warn. */
export async function repairDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<void> {
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
