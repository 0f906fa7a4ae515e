import { rm } from 'node:fs/promises';
import { relative, sep } from 'node:path';
import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError } from '../../core/errors.ts';
import { mapLimit } from '../../core/concurrency.ts';
import { newUuid } from '../../core/ids.ts';
import { joinUri } from '../../core/uri.ts';
import type { DuckDBSession } from '../../engine/duckdb-session.ts';
import { describeReadError, encodeParquet, type EncodedFileStats } from '../../engine/encode.ts';
import { partitionKeys, registerPartitionFunctions } from '../../engine/partition-keys.ts';
import { partitionPathSegment } from '../../format/iceberg/transforms.ts';
import type { LiteralValue } from '../../format/scan-task.ts';
import { inferSchema, inputFacts, inputRelation, resolveUnknown, type NarrowType } from '../../engine/infer-schema.ts';
import type { FileIO } from '../../io/file-io.ts';
import { canPromote, indexById, ROW_LINEAGE_FIELDS, typeToString } from '../../format/iceberg/schema.ts';
import type { DataFile, IcebergType, PartitionSpec, PartitionTuple, Schema, StructType } from '../../format/iceberg/types.ts';
import { icebergMetrics } from '../../format/parquet/stats.ts';
import { engineInput, type PreparedInput } from './input.ts';
import { diagnoseInput, withLongLines } from './input-diagnostics.ts';
import { discardUncommitted, stagingFolder, trackStaging, writeUncommitted } from './interrupt.ts';

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

/**
 * The schema of the input, inferred; for an existing table, read against the table's schema
 * (`alignToTable`), so what the sample leaves open (nulls, empty lists) takes the table's types.
 */
export async function inferOrExplain(session: DuckDBSession, input: PreparedInput, table?: StructType): Promise<StructType> {
  try {
    // engineInput is taken on each attempt: a retry for long lines widens its reader buffers.
    return await withLongLines(session, input, async () => {
      const inferred = await inferSchema(session, engineInput(input));
      // The encoding reads the file with the columns its header gave, without detecting them again.
      if (input.format === 'csv' && input.files.length === 1) input.columns = inferred.fields.map((f) => f.name);
      if (!table) return resolveUnknown(inferred);
      // JSON and CSV say long and double for every number: their values (all of them, so the order
      // of the rows never matters) decide whether an int or float column must widen. Parquet's
      // types are the values' own.
      // Objects whose keys vary are sampled as a map: their keys decide whether a struct column reads them.
      const probes = new Map<string, NarrowType>();
      const keyProbes = new Set<string>();
      if (input.format !== 'parquet') alignToTable(inferred, table, { probes, keyProbes });
      const facts = probes.size || keyProbes.size ? await inputFacts(session, engineInput(input), inferred, probes, keyProbes) : { fits: new Set<string>(), keys: new Map<string, string[]>() };
      return alignToTable(inferred, table, { fits: facts.fits, keys: facts.keys, displayName: input.displayName });
    });
  } catch (e) {
    if (isTwinlakeError(e) && e.context.limit !== undefined) throw e; // a line over the limit, already named
    throw (await diagnoseInput(input)) ?? describeReadError(engineInput(input), e) ?? (isTwinlakeError(e) ? e : invalidInput(`${input.displayName}: ${errorMessage(e)}`));
  }
}

const STORAGE_ERRORS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'ENOTDIR', 'EEXIST', 'EISDIR']);

async function explainEncodeFailure(e: unknown, input: PreparedInput, dataDir: string): Promise<TwinlakeError> {
  const code = (e as { code?: string }).code;
  if (code === 'ENAMETOOLONG') {
    return new TwinlakeError('io', `storage: cannot write data files under ${dataDir}: a path is longer than the file system allows: 255 bytes per name, 4096 bytes in all (${code}); use fewer partition fields or a shorter warehouse path`, {}, { cause: e, retryable: false });
  }
  if (code && STORAGE_ERRORS.has(code)) {
    return new TwinlakeError('io', `storage: cannot write data files under ${dataDir}: not writable (${code})`, {}, { cause: e });
  }
  if (isTwinlakeError(e) && ((e.kind !== 'invalid-input' && e.kind !== 'data-invalid') || e.context.limit !== undefined)) return e;
  // A record the sample used for inference did not cover may be malformed: find it.
  const diagnosis = await diagnoseInput(input);
  if (diagnosis) return diagnosis;
  return isTwinlakeError(e) ? e : invalidInput(`${input.displayName}: ${errorMessage(e)}`);
}

export interface AlignOptions {
  /** Leaves (by path) whose values, all of the input's, fit the table's int or float: read as the table's type. */
  fits?: Set<string>;
  /** Collects the leaves where a batch's long meets an int column, or its double a float column. */
  probes?: Map<string, NarrowType>;
  /** The keys of the batch's maps (by path) that meet a struct column; see `keyProbes`. */
  keys?: Map<string, string[]>;
  /** Collects the maps of unknown values (objects whose keys vary) that meet a struct column. */
  keyProbes?: Set<string>;
  /** How the input is named in messages. */
  displayName?: string;
}

/**
 * The types a batch is read as when it goes into an existing table: the table's type wherever the
 * batch fits it, at every depth (struct fields, list elements, map keys and values), so the strict
 * conversion reads each value as the table's type and a value that does not fit fails on that very
 * row with its column, row and value named (CSV digits become the table's decimal, a whole number
 * goes into a double). Elsewhere the batch's own type stays, for schema evolution to judge:
 * - a wider primitive (int → long, float → double, decimal precision up) widens the table; from
 *   JSON or CSV, whose numbers are all long or double, only when a value of the input needs it
 *   (`opts.fits` names the leaves whose values fit the table's int or float);
 * - a field the table lacks, in any struct, is added;
 * - `unknown` (only nulls, empty lists or mixed values in the sample) fits any type;
 * - a JSON object (inferred as a struct) fits a map column: its fields are the map's entries;
 * - objects whose keys vary from record to record, with values of mixed types (inferred as a map
 *   of unknown; an empty object too), fit a struct column when every key of theirs in the input
 *   (`opts.keys`) is a field of it; a key the struct lacks is refused, never read through the
 *   struct, which would drop its values;
 * - anything else (a struct where the table has a string, ...) is left for evolution to refuse.
 * Fields of the table's structs that the batch lacks are read too (rows past the sample may hold
 * them); absent, they are null. Top-level columns the batch lacks are written as nulls.
 */
export function alignToTable(incoming: StructType, table: StructType, opts: AlignOptions = {}): StructType {
  const byName = new Map(table.fields.map((f) => [f.name, f]));
  return {
    ...incoming,
    fields: incoming.fields.map((f) => {
      const t = byName.get(f.name);
      return { ...f, type: t ? fitType(t.type, f.type, f.name, opts) : resolveUnknown(f.type) };
    }),
  };
}

function fitType(table: IcebergType, batch: IcebergType, path: string, opts: AlignOptions): IcebergType {
  if (batch === 'unknown') return table;
  if (typeof table === 'string' || typeof batch === 'string') {
    if (typeof table !== 'string' || typeof batch !== 'string') return resolveUnknown(batch);
    if (!canPromote(table, batch)) return table;
    const narrow = table === 'int' && batch === 'long' ? 'int' : table === 'float' && batch === 'double' ? 'float' : undefined;
    if (narrow) opts.probes?.set(path, narrow);
    return narrow && opts.fits?.has(path) ? table : batch;
  }
  if (table.type === 'struct' && batch.type === 'struct') {
    const inBatch = new Set(batch.fields.map((f) => f.name));
    const byName = new Map(table.fields.map((f) => [f.name, f]));
    const fields = batch.fields.map((f) => {
      const t = byName.get(f.name);
      return { ...f, type: t ? fitType(t.type, f.type, `${path}.${f.name}`, opts) : resolveUnknown(f.type) };
    });
    return { ...batch, fields: [...fields, ...table.fields.filter((f) => !inBatch.has(f.name))] };
  }
  if (table.type === 'struct' && batch.type === 'map' && batch.value === 'unknown') {
    opts.keyProbes?.add(path);
    const keys = opts.keys?.get(path);
    const fields = new Set(table.fields.map((f) => f.name));
    const missing = keys?.filter((k) => !fields.has(k)) ?? [];
    if (missing.length > 0) {
      const shown = missing.slice(0, 5).join(', ') + (missing.length > 5 ? ', …' : '');
      throw invalidInput(
        `${opts.displayName ?? 'input'}: column "${path}": the table has ${typeToString(table)}, with no field ${shown} (${missing.length} keys of the input's objects in all); ` +
          `objects whose keys vary from record to record are not added as struct fields: declare those fields, or write the objects to a map column`,
        { path },
      );
    }
    return table;
  }
  if (table.type === 'list' && batch.type === 'list') return { ...batch, element: fitType(table.element, batch.element, `${path}.element`, opts) };
  if (table.type === 'map' && batch.type === 'map') {
    return { ...batch, key: fitType(table.key, batch.key, `${path}.key`, opts), value: fitType(table.value, batch.value, `${path}.value`, opts) };
  }
  if (table.type === 'map' && batch.type === 'struct') {
    // Every field is an entry: the value type must take each field's values.
    let value: IcebergType = table.value;
    for (const f of batch.fields) value = fitType(value, f.type, `${path}.${f.name}`, opts);
    return { ...table, value };
  }
  return resolveUnknown(batch);
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
  const staging = await stagingFolder(session, 'twinlake-staging-');
  const untrackStaging = trackStaging(staging);
  const files: string[] = [];
  const encodeAll = () =>
    encodeParquet(session, {
      partitionBy: keys.map((k) => ({ alias: k.alias, sql: k.sql, unbounded: k.unbounded, distinct: k.distinct })),
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
    const relativePaths = stats.map((s) => relative(staging, s.path).split(sep).join('/'));
    // Finished files go in through the store (DESIGN.md §7): moved on local disk, uploaded to a
    // cloud store (several at once, multipart for large ones) while their metrics are gathered.
    // Each is tracked from before it lands, so an interrupt or a failure removes it again.
    const landing = landFiles(ctx.io, stats.map((s, i) => ({ uri: joinUri(dataDir, relativePaths[i]!), localFile: s.path })), files);
    const dataFiles: DataFile[] = [];
    try {
      const specId = plan.spec['spec-id'];
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
    } catch (e) {
      // Let the uploads under way end before their files are deleted, or one could land after.
      await landing.catch(() => undefined);
      throw e;
    }
    await landing;
    return { files, dataFiles, rows, bytes: stats.reduce((a, s) => a + s.sizeBytes, 0), schema: plan.schema };
  } catch (e) {
    await discardUncommitted(ctx.io, files);
    throw e;
  } finally {
    await rm(staging, { recursive: true, force: true });
    untrackStaging();
  }
}

/**
 * How many files go into a store at once. A cloud store's multipart upload keeps a few parts of
 * each file in memory, so this bounds the write's upload buffers; on local disk a file is moved.
 */
export const FILES_IN_FLIGHT = 4;

/**
 * Stores each staged file under its URI through the FileIO, at most FILES_IN_FLIGHT at a time;
 * every URI is pushed to `landed` before its upload starts (so a failure cleans it up). Fails with
 * the first error once the uploads under way have ended; later files are not started.
 */
export async function landFiles(io: FileIO, items: { uri: string; localFile: string }[], landed: string[]): Promise<void> {
  await mapLimit(items, FILES_IN_FLIGHT, async ({ uri, localFile }) => {
    landed.push(uri);
    await writeUncommitted(io, uri, () => io.putFile(uri, localFile));
  });
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
