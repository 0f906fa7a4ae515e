import { copyFile, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError, unsupported } from '../core/errors.ts';
import { newUuid } from '../core/ids.ts';
import { joinUri } from '../core/uri.ts';
import type { DuckDBSession } from '../engine/duckdb-session.ts';
import { describeReadError, encodeParquet, type EncodedFileStats } from '../engine/encode.ts';
import { partitionKeys, registerPartitionFunctions } from '../engine/partition-keys.ts';
import { partitionPathSegment } from '../spec/iceberg/transforms.ts';
import type { LiteralValue } from '../spec/scan-task.ts';
import { inferSchema, inputRelation } from '../engine/infer-schema.ts';
import type { FileIO } from '../io/file-io.ts';
import { canPromote, indexById, ROW_LINEAGE_FIELDS, typeToString } from '../spec/iceberg/schema.ts';
import type { DataFile, IcebergType, PartitionSpec, PartitionTuple, Schema, StructType } from '../spec/iceberg/types.ts';
import { icebergMetrics } from '../spec/parquet/stats.ts';
import { engineInput, type PreparedInput } from './input.ts';
import { diagnoseInput, withLongLines } from './input-diagnostics.ts';
import { discardUncommitted, onInterrupt, trackStaging, trackUncommitted } from './interrupt.ts';

/**
 * One batch of input turned into data files: schema inference with precise errors, encoding
 * through the engine, and the per-file metrics both formats are projected from. Shared by the
 * Iceberg-first and the Delta-only commit paths.
 */

/** Where and how a batch is encoded. */
export interface EncodeTarget {
  schema: Schema;
  physicalNames: Map<number, string>;
  /** The table location; files go under `<location>/data/`. */
  location: string;
  targetFileSize: number;
  /** The partition spec new files are written with (unpartitioned: no fields). */
  spec: PartitionSpec;
}

export interface BatchContext {
  io: FileIO;
  session: () => Promise<DuckDBSession>;
}

export async function inferOrExplain(session: DuckDBSession, input: PreparedInput): Promise<StructType> {
  try {
    return await withLongLines(session, input, () => inferSchema(session, engineInput(input)));
  } catch (e) {
    if (isTwinlakeError(e) && e.context.limit !== undefined) throw e; // a line over the limit, already named
    throw (await diagnoseInput(input)) ?? describeReadError(engineInput(input), e) ?? (isTwinlakeError(e) ? e : invalidInput(`${input.displayName}: ${errorMessage(e)}`));
  }
}

const STORAGE_ERRORS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EEXIST', 'EISDIR']);

async function explainEncodeFailure(e: unknown, input: PreparedInput, dataDir: string): Promise<TwinlakeError> {
  const code = (e as { code?: string }).code;
  if (code && STORAGE_ERRORS.has(code)) {
    return new TwinlakeError('io', `storage: cannot write data files under ${dataDir}: not writable (${code})`, {}, { cause: e });
  }
  if (isTwinlakeError(e) && ((e.kind !== 'invalid-input' && e.kind !== 'data-invalid') || e.context.limit !== undefined)) return e;
  // A record the sample used for inference did not cover may be malformed: find it.
  const diagnosis = await diagnoseInput(input);
  if (diagnosis) return diagnosis;
  return isTwinlakeError(e) ? e : invalidInput(`${input.displayName}: ${errorMessage(e)}`);
}

/**
 * For an existing table, an input column whose inferred primitive type differs from the table's
 * is read as the table's type: CSV digits become the table's decimal, and a value that does not
 * fit fails on that very row with its column, row and value named.
 */
export function alignToTable(incoming: StructType, table: Schema): StructType {
  const byName = new Map(table.fields.map((f) => [f.name, f]));
  return {
    ...incoming,
    fields: incoming.fields.map((f) => {
      const t = byName.get(f.name);
      if (!t || typeof t.type !== 'string' || typeof f.type !== 'string' || t.type === f.type) return f;
      if (canPromote(t.type, f.type)) return f; // evolution widens the table instead
      return { ...f, type: t.type };
    }),
  };
}

export interface EncodedFiles {
  /** URIs of every data file written. */
  files: string[];
  dataFiles: DataFile[];
  rows: number;
  bytes: number;
  schema: Schema;
}

/**
 * Rows to encode: an input file (converted strictly, errors name the line), or a relation already
 * in the table's types (rows a merge or delete keeps).
 */
export type EncodeSource =
  | { input: PreparedInput; incoming: StructType }
  /** `rowLineage`: the relation also has `_row_id` and `_last_updated_sequence_number`, written with their reserved field IDs (v3). */
  | { sql: string; displayName: string; rowLineage?: boolean };

export async function encode(ctx: BatchContext, plan: EncodeTarget, input: PreparedInput, incoming: StructType): Promise<EncodedFiles> {
  return encodeFrom(ctx, plan, { input, incoming });
}

export async function encodeFrom(ctx: BatchContext, plan: EncodeTarget, from: EncodeSource): Promise<EncodedFiles> {
  const input: PreparedInput | undefined = 'input' in from ? from.input : undefined;
  const displayName = input ? input.displayName : (from as { displayName: string }).displayName;
  if ('input' in from) checkRequiredColumns(plan.schema, from.incoming);
  const dataDir = joinUri(plan.location, 'data');
  const localDir = ctx.io.localPath(dataDir);
  if (!localDir) throw unsupported(`write: storage for ${dataDir} is not local disk; remote storage comes with the cloud storage issue`);
  const session = await ctx.session();
  const writeId = newUuid();
  const keys = partitionKeys(plan.spec, plan.schema, plan.physicalNames);
  if (keys.length > 0) registerPartitionFunctions(session);
  const sourceTypes = sourceTypesOf(plan.spec, plan.schema);
  const tupleOf = (raw: Map<string, string | null>): PartitionTuple => {
    const tuple: PartitionTuple = {};
    for (const f of plan.spec.fields) tuple[f.name] = null;
    for (const k of keys) tuple[k.field.name] = k.decode(raw.get(k.alias) ?? null);
    return tuple;
  };
  // Row lineage columns are written after the table's, with their reserved field IDs.
  const lineage = 'sql' in from && from.rowLineage === true;
  const encodeSchema = lineage ? { ...plan.schema, fields: [...plan.schema.fields, ...ROW_LINEAGE_FIELDS] } : plan.schema;
  const encodeNames = lineage ? new Map([...plan.physicalNames, ...ROW_LINEAGE_FIELDS.map((f) => [f.id, f.name] as const)]) : plan.physicalNames;
  // The engine encodes into a local staging folder outside the table (DESIGN.md §7), so a file
  // still being written, or one a killed process left behind, is never inside data/ where a
  // `data/**/*.parquet` glob would count it; the files are moved in once all of them are good.
  const staging = await mkdtemp(join(tmpdir(), 'twinlake-staging-'));
  const untrackStaging = trackStaging(staging);
  // An interrupt stops the engine's COPY instead of waiting for it to finish.
  const unstop = onInterrupt(() => session.interrupt());
  const files: string[] = [];
  const encodeAll = () =>
    encodeParquet(session, {
      partitionBy: keys.map((k) => ({ alias: k.alias, sql: k.sql })),
      // Human-readable folders as Iceberg writers name them: data/ts_day=2024-01-15/user_id_bucket=3/
      placeFile: (raw) => {
        const tuple = tupleOf(raw);
        return plan.spec.fields.map((f) => partitionPathSegment(f.name, f.transform, sourceTypes.get(f['field-id'])!, tuple[f.name] as LiteralValue)).join('/');
      },
      source: 'input' in from ? inputRelation(engineInput(from.input), from.incoming) : `(${from.sql})`,
      schema: encodeSchema,
      physicalNames: encodeNames,
      outputDir: staging,
      targetFileSizeBytes: plan.targetFileSize,
      filePrefix: `${writeId}-`,
      ...(input ? { input: engineInput(input) } : {}),
    });
  try {
    let stats: EncodedFileStats[];
    try {
      stats = input ? await withLongLines(session, input, encodeAll) : await encodeAll();
    } catch (e) {
      if (!input) throw e;
      throw await explainEncodeFailure(e, input, dataDir);
    }
    const rows = stats.reduce((a, s) => a + s.recordCount, 0);
    if (rows === 0 && input) {
      // A CSV whose rows do not match its header can read as no rows at all: say which line.
      throw (await diagnoseInput(input)) ?? invalidInput(`${input.displayName}: no records; nothing was written`);
    }
    const specId = plan.spec['spec-id'];
    const dataFiles: DataFile[] = [];
    const relativePaths = stats.map((s) => relative(staging, s.path).split(sep).join('/'));
    for (let i = 0; i < stats.length; i++) {
      const s = stats[i]!;
      if (s.recordCount === 0) continue;
      const metrics = icebergMetrics(s, plan.schema);
      checkRequiredNulls(plan.schema, metrics, displayName);
      dataFiles.push({
        content: 0,
        'file-path': joinUri(dataDir, relativePaths[i]!),
        'file-format': 'PARQUET',
        partition: s.partitionKeys ? tupleOf(s.partitionKeys) : {},
        'record-count': s.recordCount,
        'file-size-in-bytes': s.sizeBytes,
        ...metrics,
        'spec-id': specId,
      });
    }
    for (let i = 0; i < stats.length; i++) {
      const uri = joinUri(dataDir, relativePaths[i]!);
      trackUncommitted(ctx.io, uri);
      files.push(uri);
      await moveInto(stats[i]!.path, join(localDir, ...relativePaths[i]!.split('/')), dataDir);
    }
    return { files, dataFiles, rows, bytes: stats.reduce((a, s) => a + s.sizeBytes, 0), schema: plan.schema };
  } catch (e) {
    await discardUncommitted(ctx.io, files);
    throw e;
  } finally {
    unstop();
    await rm(staging, { recursive: true, force: true });
    untrackStaging();
  }
}

/** The source column type of each partition field, by partition field ID. */
function sourceTypesOf(spec: PartitionSpec, schema: Schema): Map<number, IcebergType> {
  const index = indexById(schema);
  const out = new Map<number, IcebergType>();
  for (const f of spec.fields) out.set(f['field-id'], index.get(f['source-id'])?.field.type ?? 'unknown');
  return out;
}

/** A required column must be present in every batch (DESIGN: missing optional columns read as null). */
function checkRequiredColumns(schema: Schema, incoming: StructType): void {
  const names = new Set(incoming.fields.map((f) => f.name));
  for (const f of schema.fields) {
    if (f.required && !names.has(f.name)) {
      throw invalidInput(`write: required column ${f.name} (${typeToString(f.type)}) is missing from the input`);
    }
  }
}

function checkRequiredNulls(schema: Schema, metrics: Pick<DataFile, 'null-value-counts'>, displayName: string): void {
  for (const f of schema.fields) {
    const nulls = metrics['null-value-counts']?.get(f.id) ?? 0;
    if (f.required && nulls > 0) {
      throw invalidInput(`${displayName}: column ${f.name} is required but ${nulls} row(s) have no value`);
    }
  }
}

/**
 * Moves a finished file from staging into the table's data folder: a rename on the same
 * filesystem; across filesystems a copy under a temporary name (which no listing or `*.parquet`
 * glob picks up) renamed into place, so a reader never sees half a file.
 */
async function moveInto(from: string, to: string, dataDir: string): Promise<void> {
  try {
    await mkdir(dirname(to), { recursive: true });
    try {
      await rename(from, to);
    } catch (e) {
      if ((e as { code?: string }).code !== 'EXDEV') throw e;
      const temp = join(dirname(to), `.${basename(to)}.${newUuid().replace(/-/g, '').slice(0, 16)}.tmp`);
      try {
        await copyFile(from, temp);
        await rename(temp, to);
      } finally {
        await rm(temp, { force: true });
      }
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code && STORAGE_ERRORS.has(code)) throw new TwinlakeError('io', `storage: cannot write data files under ${dataDir}: not writable (${code})`, {}, { cause: e });
    throw e;
  }
}
