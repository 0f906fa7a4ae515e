import { rm } from 'node:fs/promises';
import { invalidInput, isTwinlakeError, unsupported } from '../../core/errors.ts';
import { newUuid } from '../../core/ids.ts';
import { fileUri, localPath } from '../../core/uri.ts';
import { quoteIdent, quoteString } from '../../engine/duckdb-session.ts';
import { currentSchema, currentSnapshot } from '../../format/iceberg/table-metadata.ts';
import { assignFreshIds, isPrimitive, ROW_LINEAGE_FIELDS, typeToString } from '../../format/iceberg/schema.ts';
import type { DataFile, NestedField, Schema, StructType, TableMetadata } from '../../format/iceberg/types.ts';
import { deleteFileKey } from '../../format/iceberg/manifest.ts';
import { partitionIdentity } from '../../format/iceberg/snapshot-summary.ts';
import type { RowDeletesBasis } from '../commit/snapshot-producer.ts';
import { encode, encodeFrom, inferOrExplain, type EncodedFiles } from '../write/batch.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { engineFile, withEngineFiles } from '../read/read-cache.ts';
import { isBlank } from '../write/input-diagnostics.ts';
import { prepareInput, type WriteInput } from '../write/input.ts';
import { discardUncommitted, forgetUncommitted, stagingFolder, trackStaging } from '../write/interrupt.ts';
import { bindFilter, emptyExplain } from '../read/scan-filter.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog, type WarningLog } from '../table-context.ts';
import { checkStrategy, rowChangeStrategy, type RowChangeStrategy } from '../../format/dual/table-properties.ts';
import { existingDeletes, loadDeletedPositions, writeRowDeletes, type ExistingDeletes, type WrittenDeletes } from './row-deletes.ts';
import { RoaringBitmap64 } from '../../format/roaring.ts';
import { catalogTable, commitWrite, type PreparedWrite } from '../commit/commit.ts';
import type { TableAction } from '../commit/transaction.ts';
import { operationSummary } from '../../format/dual/summary-keys.ts';
import { planSchema, type SchemaPlan } from '../write/schema-plan.ts';
import { splitExcluded } from '../write/exclude-columns.ts';
import { assignPhysicalNames } from '../../format/dual/physical-names.ts';
import { alreadyCommitted, committedResult, type WriteOptions, type WriteResult } from '../write/writer.ts';
import { rowDelta, updateSchema } from '../commit/table-actions.ts';
import { checkTxn, type TxnResult } from '../../format/dual/write-txn.ts';
import type { LoadTableResult } from '../../catalog/catalog.ts';

/**
 * Merge (upsert) on key columns and delete by predicate, copy-on-write: only files that hold an
 * affected key are rewritten, without the old rows; Iceberg records an `overwrite` snapshot and
 * Delta the matching `remove` + `add` in one version. Candidates are found from partition values
 * and key bounds before any data is read; the join itself runs in DuckDB.
 */
export interface MergeOptions extends Omit<WriteOptions, 'mode'> {
  /** Key columns (top-level, primitive); a record whose key exists replaces the current row. */
  keys: string[];
  /** Within one batch the greatest value of this column wins for a key (default: the last record). */
  orderBy?: string;
  /** A filter over the batch's columns; matching records delete their key instead. */
  deleteWhen?: string;
  /** Overrides the table's `write.merge.mode`. */
  strategy?: RowChangeStrategy;
}

export interface DeleteOptions {
  /** Overrides the table's `write.delete.mode`. */
  strategy?: RowChangeStrategy;
}

export interface MergeResult extends WriteResult {
  inserted: number;
  updated: number;
  deleted: number;
  /** Data files rewritten because they held an affected key. */
  rewrittenFiles: number;
  /** The size of the files rewritten (replaced by `bytes` of new files). */
  rewrittenBytes: number;
  strategy: RowChangeStrategy;
  /** Merge-on-read: delete files written (deletion vectors or position delete files). */
  deleteFiles: number;
  /** Merge-on-read: bytes of the delete files written (Iceberg's and Delta's). */
  deleteBytes: number;
}

const FILE = '__tl_file';
const POS = 'file_row_number';
/**
 * The temp tables of one merge or delete. Operations on other tables of the lakehouse share the
 * DuckDB session, so each operation names its own and drops them when it ends.
 */
export interface Scratch {
  /** The staged, deduplicated batch (merges). */
  batch: string;
  /** Positions already deleted in the candidate files. */
  deleted: string;
  /** The file and position (and key) of every live row the change affects. */
  hits: string;
  /** Each candidate file's first row ID and data sequence number (v3). */
  lineage: string;
}

export function scratchTables(): Scratch {
  const id = newUuid().replace(/-/g, '');
  return { batch: `__tl_batch_${id}`, deleted: `__tl_deleted_${id}`, hits: `__tl_hits_${id}`, lineage: `__tl_lineage_${id}` };
}

export async function dropScratch(ctx: TableContext, t: Scratch): Promise<void> {
  const session = await ctx.session();
  for (const name of Object.values(t)) await session.run(`DROP TABLE IF EXISTS ${name}`).catch(() => undefined);
}

export async function mergeTable(ctx: TableContext, input: WriteInput, opts: MergeOptions): Promise<MergeResult> {
  if (opts.keys.length === 0) throw invalidInput('merge: give at least one key column');
  const session = await ctx.session();
  const prepared = await prepareInput(input, session.settings.tempDir);
  const staging = await stagingFolder(session, 'twinlake-merge-');
  const untrackStaging = trackStaging(staging);
  const log = warningLog(ctx);
  const t = scratchTables();
  // A table this merge creates has no rows to delete: its first batch is an insert.
  const strategyFor = (l: LoadTableResult | undefined) => (l ? rowChangeStrategy(l.metadata, 'merge', opts.strategy) : checkStrategy(opts.strategy, 'merge'));
  try {
    if (await isBlank(prepared)) throw invalidInput(`${prepared.displayName}: no records; nothing was merged`);
    let input: { inferred: StructType; split: ReturnType<typeof splitExcluded>; incoming: StructType } | undefined;
    return await commitWrite(ctx, catalogTable(ctx, log.warn), {
      what: `merge ${identString(ctx.ident)}`,
      ...(opts.txn ? { txn: checkTxn(opts.txn, 'txn') } : {}),
      properties: opts.properties ?? {},
      alreadyCommitted: (loaded, txn) => alreadyMerged(ctx, loaded, txn, log, strategyFor(loaded)),
      async prepare(loaded): Promise<PreparedWrite<TableAction, MergeResult>> {
        if (!input) {
          const inferred = opts.schema && !opts.excludeColumns?.length ? opts.schema : await inferOrExplain(session, prepared, loaded && currentSchema(loaded.metadata));
          // Excluded columns steer the merge (deleteWhen, orderBy) but are not stored in the table.
          const split = splitExcluded(inferred, opts.excludeColumns, 'merge');
          input = { inferred, split, incoming: opts.schema ?? split.kept };
          for (const k of opts.keys) if (opts.excludeColumns?.includes(k)) throw invalidInput(`merge: key column ${k} cannot be excluded from the table`);
          checkKeys(opts.keys, input.incoming, 'the input');
          if (loaded) checkKeys(opts.keys, currentSchema(loaded.metadata), `table ${identString(ctx.ident)}`);
        }
        const { inferred, split, incoming } = input;
        const strategy = strategyFor(loaded);
        const plan = planSchema(ctx, loaded?.metadata, incoming, opts);
        requireSameNames(plan);
        // The batch, converted strictly to the table's types, staged as Parquet outside the table.
        const batchPlan = { ...withSteeringColumns(plan, split.excluded), location: fileUri(staging), spec: { 'spec-id': 0, fields: [] }, targetFileSize: Number.MAX_SAFE_INTEGER };
        const batch = await encode(ctx, batchPlan, prepared, { ...incoming, fields: [...incoming.fields, ...split.excluded] });
        const inputNames = new Set([...inferred.fields, ...incoming.fields].map((f) => f.name));
        await stageBatch(ctx, t, batch, batchPlan.schema, opts, inputNames);
        forgetUncommitted(batch.files); // scratch of this merge, removed with its staging folder

        const metadata = loaded?.metadata;
        const live = metadata ? await candidateFiles(ctx, t, metadata, plan.schema, opts.keys) : { data: [], deletes: [], sequenceNumbers: new Map() };
        // The engine reads the candidates (and their position deletes) from local files.
        return withEngineFiles(ctx, engineReadFiles(live), async (ctx) => {
          const rows = await liveRows(ctx, t, metadata, live, live.data);
          const using = `USING (${opts.keys.map(quoteIdent).join(', ')})`;
          // One pass over the candidates finds every live row holding a batch key.
          const keyColumns = opts.keys.map((k) => quoteIdent(k)).join(', ');
          const touched = await findHits(
            ctx,
            t,
            live.data,
            live.data.length
              ? `SELECT ${quoteIdent(FILE)}, ${POS}, ${keyColumns} FROM (${rows.positions(live.data)}) AS r SEMI JOIN ${t.batch} AS b ${using}`
              : `SELECT NULL::VARCHAR AS ${quoteIdent(FILE)}, NULL::BIGINT AS ${POS}, ${keyColumns} FROM ${t.batch} WHERE FALSE`,
          );
          const counts = await mergeCounts(ctx, t, opts.keys);
          const inserts = `SELECT * EXCLUDE (__tl_delete) FROM ${t.batch} WHERE NOT __tl_delete`;
          const change: RowChange =
            strategy === 'copy-on-write' || touched.length === 0
              ? {
                  strategy: 'copy-on-write',
                  touched,
                  sql: touched.length ? `SELECT * FROM (${await rows.keep(touched)}) AS k ANTI JOIN ${t.batch} AS b ${using} UNION ALL BY NAME ${inserts}` : inserts,
                  rowLineage: touched.length > 0 && rows.lineage,
                }
              : { strategy, touched, sql: inserts, deletedRowsSql: `SELECT * FROM ${t.hits}` };
          return rewrite(ctx, plan, loaded, rows, change, { displayName: 'merge', strategy, summary: mergeSummary(opts) }, opts, log, counts);
        });
      },
    });
  } finally {
    await dropScratch(ctx, t);
    await rm(staging, { recursive: true, force: true });
    untrackStaging();
    await prepared.dispose();
  }
}

/** Deletes the rows matching `where`; files without a matching row are left alone. */
export async function deleteRows(ctx: TableContext, where: string, opts: DeleteOptions = {}): Promise<MergeResult> {
  const log = warningLog(ctx);
  const t = scratchTables();
  try {
    return await commitWrite(ctx, catalogTable(ctx, log.warn, { mustExist: true }), {
      what: `delete ${identString(ctx.ident)}`,
      async prepare(loaded): Promise<PreparedWrite<TableAction, MergeResult> | { result: MergeResult }> {
        const metadata = loaded!.metadata;
        const strategy = rowChangeStrategy(metadata, 'delete', opts.strategy);
        const schema = currentSchema(metadata);
        const plan = planSchema(ctx, metadata, schema, {});
        requireSameNames(plan);
        const filter = bindFilter(where, schema)!;
        const snapshot = currentSnapshot(metadata);
        if (!snapshot) throw invalidInput(`delete: table ${identString(ctx.ident)} has no rows`);
        const live = await liveFiles(ctx.io, metadata, snapshot, { filter, schema, explain: emptyExplain() });
        const session = await ctx.session();
        return withEngineFiles(ctx, engineReadFiles(live), async (ctx): Promise<PreparedWrite<TableAction, MergeResult> | { result: MergeResult }> => {
          const rows = await liveRows(ctx, t, metadata, live, live.data);
          const touched = live.data.length ? await findHits(ctx, t, live.data, `SELECT ${quoteIdent(FILE)}, ${POS} FROM (${rows.positions(live.data)}) AS r WHERE ${filter.sql}`) : [];
          if (touched.length === 0) {
            return {
              result: {
                table: identString(ctx.ident), created: false, mode: 'delete', snapshotId: snapshot['snapshot-id'], deltaCommitted: true, files: 0, rows: 0, bytes: 0,
                warnings: log.warnings, schemaChanges: [], timings: zeroTimings(), inserted: 0, updated: 0, deleted: 0, rewrittenFiles: 0, rewrittenBytes: 0, strategy, deleteFiles: 0, deleteBytes: 0,
              },
            };
          }
          const deleted = Number((await session.all(`SELECT count(*) AS n FROM ${t.hits}`))[0]!.n);
          const change: RowChange =
            strategy === 'copy-on-write'
              ? { strategy, touched, sql: `SELECT * FROM (${await rows.keep(touched)}) AS r WHERE (${filter.sql}) IS NOT TRUE`, rowLineage: rows.lineage }
              : { strategy, touched, deletedRowsSql: `SELECT * FROM ${t.hits}` };
          const what = { displayName: 'delete', strategy, summary: operationSummary('delete', { predicate: where }) } as const;
          return rewrite(ctx, plan, loaded, rows, change, what, {}, log, { inserted: 0, updated: 0, deleted });
        });
      },
    });
  } finally {
    await dropScratch(ctx, t);
  }
}

/** A merge whose batch the table already holds (see WriteTxn): nothing merged. */
function alreadyMerged(ctx: TableContext, loaded: LoadTableResult, txn: TxnResult, log: WarningLog, strategy: RowChangeStrategy): MergeResult {
  return {
    ...alreadyCommitted(ctx, loaded, 'merge', txn, log.warnings),
    inserted: 0, updated: 0, deleted: 0, rewrittenFiles: 0, rewrittenBytes: 0, strategy, deleteFiles: 0, deleteBytes: 0,
  };
}

function zeroTimings() {
  return { encodeMs: 0, icebergCommitMs: 0, deltaCommitMs: 0, checkpointMs: 0 };
}

/**
 * What a merge or delete changes in the files it touches:
 * - copy-on-write: `sql` is every row to write (kept rows of `touched` and inserts); `touched`
 *   files are removed;
 * - merge-on-read: `deletedRowsSql` gives the (file, position) of the rows to delete from
 *   `touched`, which stay; `sql`, when given, the rows to insert.
 */
type RowChange =
  | { strategy: 'copy-on-write'; touched: DataFile[]; sql: string; rowLineage?: boolean }
  | { strategy: 'merge-on-read'; touched: DataFile[]; sql?: string; deletedRowsSql: string };

/**
 * Writes the change's files and names the row delta that commits them. The producer refuses a
 * base where a concurrent commit rewrote one of the touched files, or changed its deletes, first:
 * the transaction says `rerun` and the caller plans again on the metadata it returns.
 */
async function rewrite(
  ctx: TableContext,
  plan: SchemaPlan,
  loaded: LoadTableResult | undefined,
  rows: LiveRows,
  change: RowChange,
  what: { displayName: 'merge' | 'delete'; strategy: RowChangeStrategy; summary: Record<string, string> },
  opts: WriteOptions,
  log: WarningLog,
  counts: { inserted: number; updated: number; deleted: number },
): Promise<PreparedWrite<TableAction, MergeResult>> {
  const { touched } = change;
  const written: EncodedFiles =
    change.sql !== undefined
      ? await encodeFrom(ctx, plan, { sql: change.sql, displayName: what.displayName, rowLineage: change.strategy === 'copy-on-write' && change.rowLineage === true })
      : emptyEncoded(plan);
  let deletes: WrittenDeletes = { deletes: [], files: [], bytes: 0 };
  if (change.strategy === 'merge-on-read') {
    try {
      // Each delete file is tracked as it is written (writeRowDeletes), so an interrupt removes it.
      deletes = await writeRowDeletes(ctx, loaded!.metadata, await deletedPositions(ctx, rows, change.deletedRowsSql, touched));
    } catch (e) {
      await discardUncommitted(ctx.io, written.files);
      throw e;
    }
  }
  const rowDeletes: RowDeletesBasis | undefined =
    loaded && loaded.metadata['format-version'] >= 2
      ? {
          replaced: new Map(touched.map((f) => [f['file-path'], (rows.existing.get(f['file-path'])?.replaceable ?? []).map(deleteFileKey)])),
          partitions: new Set(touched.map(partitionIdentity)),
          plannedAt: loaded.metadata['last-sequence-number'],
        }
      : undefined;
  const delta = rowDelta(ctx, {
    added: written.dataFiles,
    removeFiles: new Set(change.strategy === 'copy-on-write' ? touched.map((f) => f['file-path']) : []),
    addedDeletes: deletes.deletes,
    summary: what.summary,
    ...(rowDeletes ? { rowDeletes } : {}),
  });
  const cow = change.strategy === 'copy-on-write';
  return {
    files: [...written.files, ...deletes.files],
    actions: [updateSchema(ctx, plan, opts), delta],
    ...(plan.newTable ? { create: plan.newTable } : {}),
    done: (c) => ({
      ...committedResult(ctx, c, what.displayName, written, log.warnings, plan.schemaChanges, 0),
      rewrittenFiles: cow ? touched.length : 0,
      rewrittenBytes: cow ? touched.reduce((a, f) => a + f['file-size-in-bytes'], 0) : 0,
      strategy: what.strategy,
      deleteFiles: deletes.deletes.length,
      deleteBytes: deletes.bytes,
      ...counts,
    }),
  };
}

/** Delta's MERGE parameters (as delta-rs records them): the join on the keys and what each match does. */
function mergeSummary(opts: MergeOptions): Record<string, string> {
  const matched = [...(opts.deleteWhen ? [{ actionType: 'delete', predicate: opts.deleteWhen }] : []), { actionType: 'update' }];
  const notMatched = [{ actionType: 'insert', ...(opts.deleteWhen ? { predicate: `NOT (${opts.deleteWhen})` } : {}) }];
  return operationSummary('merge', {
    predicate: opts.keys.map((k) => `target.${k} = source.${k}`).join(' AND '),
    matchedPredicates: JSON.stringify(matched),
    notMatchedPredicates: JSON.stringify(notMatched),
    notMatchedBySourcePredicates: '[]',
  });
}

function emptyEncoded(plan: SchemaPlan): EncodedFiles {
  return { files: [], dataFiles: [], rows: 0, bytes: 0, schema: plan.schema };
}

/** The positions each touched file loses: those already deleted and the rows `sql` selects. */
async function deletedPositions(ctx: TableContext, rows: LiveRows, sql: string, touched: DataFile[]): Promise<{ file: DataFile; bitmap: RoaringBitmap64 }[]> {
  const session = await ctx.session();
  // Positions come back as runs of consecutive rows (gaps and islands), so a delete of a long
  // stretch of a file costs one range, not one value per row.
  const found = await session.all(
    `SELECT f, list(struct_pack(lo := lo, hi := hi)) AS runs FROM (` +
      `SELECT f, min(pos) AS lo, max(pos) + 1 AS hi FROM (` +
      `SELECT ${quoteIdent(FILE)} AS f, ${POS} AS pos, ${POS} - row_number() OVER (PARTITION BY ${quoteIdent(FILE)} ORDER BY ${POS}) AS island FROM (${sql})` +
      `) GROUP BY f, island) GROUP BY f`,
  );
  const byEnginePath = new Map(found.map((r) => [String(r.f), r.runs as { lo: bigint; hi: bigint }[]]));
  const out: { file: DataFile; bitmap: RoaringBitmap64 }[] = [];
  for (const file of touched) {
    const runs = byEnginePath.get(engineFile(ctx, file['file-path']));
    if (!runs) continue;
    const bitmap = new RoaringBitmap64();
    for (const { lo, hi } of runs) bitmap.addRange(lo, hi);
    const before = rows.existing.get(file['file-path']);
    if (before) bitmap.addAll(before.positions);
    out.push({ file, bitmap });
  }
  return out;
}

function checkKeys(keys: string[], struct: StructType, where: string): void {
  for (const k of keys) {
    const f = struct.fields.find((x) => x.name === k);
    const parent = k.includes('.') ? struct.fields.find((x) => x.name === k.slice(0, k.indexOf('.'))) : undefined;
    if (!f && parent && !isPrimitive(parent.type)) {
      throw invalidInput(`merge: key column ${k} is nested inside ${parent.name} (${typeToString(parent.type)}); keys must be top-level primitive columns`);
    }
    if (!f) throw invalidInput(`merge: key column ${k} is missing from ${where} (columns: ${struct.fields.map((x) => x.name).join(', ')})`);
    if (!isPrimitive(f.type)) throw invalidInput(`merge: key column ${k} has the nested type ${typeToString(f.type)}; keys must be primitive columns`);
  }
}

/** The merge reads and writes rows by column name, so physical names must be the logical ones. */
export function requireSameNames(plan: SchemaPlan): void {
  const walk = (fields: StructType['fields']) => {
    for (const f of fields) {
      if ((plan.physicalNames.get(f.id) ?? f.name) !== f.name) {
        throw unsupported(`merge: column ${f.name} is stored as ${plan.physicalNames.get(f.id)}; merging tables with renamed columns is not supported yet`);
      }
      if (typeof f.type !== 'string' && f.type.type === 'struct') walk(f.type.fields);
    }
  };
  walk(plan.schema.fields);
}

/**
 * The live rows of some of the table's own files, by column name (older files lack newer
 * columns), with the file and row position of each; rows already deleted (deletion vectors,
 * position deletes) are left out.
 */
export interface LiveRows {
  existing: Map<string, ExistingDeletes>;
  /** Every column plus the file and position. */
  positions(files: DataFile[]): string;
  /** Whether rows moved to new files keep their row lineage (v3 tables). */
  lineage: boolean;
  /**
   * The rows to keep when `files` are rewritten: their columns, and on v3 tables the row
   * lineage each row already has — a moved row keeps its `_row_id` and, being unmodified, its
   * `_last_updated_sequence_number` (spec §Row Lineage); values not yet materialized are the
   * inherited ones (the file's first row ID plus the position; its data sequence number).
   */
  keep(files: DataFile[]): Promise<string>;
}

const [ROW_ID, LAST_UPDATED] = ROW_LINEAGE_FIELDS.map((f) => f.name) as [string, string];

export async function liveRows(
  ctx: TableContext,
  t: Scratch,
  metadata: TableMetadata | undefined,
  live: { data: DataFile[]; deletes: DataFile[]; sequenceNumbers: Map<DataFile, number | undefined> },
  files: DataFile[],
): Promise<LiveRows> {
  const session = await ctx.session();
  const existing = metadata ? await existingDeletes(ctx, metadata, live, files) : new Map<string, ExistingDeletes>();
  if (existing.size > 0) await loadDeletedPositions(ctx, t.deleted, existing);
  const enginePathOf = (f: DataFile) => engineFile(ctx, f['file-path']);
  const positions = (touched: DataFile[]) => {
    const paths = touched.map((f) => quoteString(enginePathOf(f)));
    const scan = `SELECT * FROM read_parquet([${paths.join(', ')}], union_by_name = true, filename = ${quoteString(FILE)}, file_row_number = true, hive_partitioning = false)`;
    if (!touched.some((f) => existing.has(f['file-path']))) return scan;
    return `SELECT * FROM (${scan}) AS s ANTI JOIN ${t.deleted} AS d ON s.${quoteIdent(FILE)} = d.f AND s.${POS} = d.pos`;
  };
  const select = (touched: DataFile[]) => `SELECT * EXCLUDE (${quoteIdent(FILE)}, ${POS}) FROM (${positions(touched)})`;
  // A table whose own columns use the lineage names (another engine's) keeps rows without them.
  const lineage =
    metadata !== undefined && metadata['format-version'] >= 3 && !currentSchema(metadata).fields.some((f) => ROW_LINEAGE_FIELDS.some((l) => l.name === f.name));
  if (lineage && files.length > 0) {
    const values = files.map((f) => `(${quoteString(enginePathOf(f))}, ${f['first-row-id'] ?? 'NULL'}::BIGINT, ${live.sequenceNumbers.get(f) ?? 'NULL'}::BIGINT)`);
    await session.run(`CREATE OR REPLACE TEMP TABLE ${t.lineage} AS SELECT * FROM (VALUES ${values.join(', ')}) AS v(f, first_row_id, seq)`);
  }
  const keep = async (touched: DataFile[]) => {
    if (!lineage) return select(touched);
    const columns = new Set((await session.all(`DESCRIBE ${positions(touched)}`)).map((r) => String(r.column_name)));
    const stored = (name: string) => (columns.has(name) ? `s.${quoteIdent(name)}` : 'NULL');
    const drop = [FILE, POS, ...[ROW_ID, LAST_UPDATED].filter((c) => columns.has(c))].map(quoteIdent).join(', ');
    return (
      `SELECT s.* EXCLUDE (${drop}), coalesce(${stored(ROW_ID)}, l.first_row_id + s.${POS}) AS ${quoteIdent(ROW_ID)}, ` +
      `coalesce(${stored(LAST_UPDATED)}, l.seq) AS ${quoteIdent(LAST_UPDATED)} FROM (${positions(touched)}) AS s LEFT JOIN ${t.lineage} AS l ON s.${quoteIdent(FILE)} = l.f`
    );
  };
  return { existing, positions, lineage, keep };
}

/**
 * Deduplicates the staged batch into the scratch table `batch`: the last record per key wins (or the greatest
 * `orderBy`); `__tl_delete` marks the keys to delete. Null keys are refused.
 */
async function stageBatch(ctx: TableContext, t: Scratch, batch: EncodedFiles, schema: Schema, opts: MergeOptions, inputNames: Set<string>): Promise<void> {
  const session = await ctx.session();
  const keys = opts.keys.map(quoteIdent).join(', ');
  const files = `read_parquet([${batch.files.map((f) => quoteString(localPath(f))).join(', ')}], filename = '__tl_bf', file_row_number = true, hive_partitioning = false)`;
  const nullKeys = opts.keys.map((k) => `${quoteIdent(k)} IS NULL`).join(' OR ');
  const [nulls] = await session.all(`SELECT count(*) AS n, min(file_row_number) AS first FROM ${files} WHERE ${nullKeys}`);
  if (Number(nulls!.n) > 0) {
    throw invalidInput(`merge: ${nulls!.n} record(s) have a null key (${opts.keys.join(', ')}), the first at record ${Number(nulls!.first) + 1}; keys may not be null`);
  }
  const order = [
    ...(opts.orderBy ? [`${quoteIdent(opts.orderBy)} DESC NULLS LAST`] : []),
    '__tl_bf DESC',
    'file_row_number DESC',
  ].join(', ');
  // deleteWhen and orderBy look at the records as they came in: their errors name the input's columns.
  const input: Schema = { ...schema, fields: schema.fields.filter((f) => inputNames.has(f.name)) };
  const del = opts.deleteWhen !== undefined ? `((${bindDeleteWhen(opts.deleteWhen, input)}) IS TRUE)` : 'FALSE';
  if (opts.orderBy && !input.fields.some((f) => f.name === opts.orderBy)) {
    throw invalidInput(`merge: --order-by column ${opts.orderBy} is not in the input (columns: ${input.fields.map((f) => f.name).join(', ')})`);
  }
  const dropped = ['__tl_rn', '__tl_bf', 'file_row_number', ...(opts.excludeColumns ?? [])].map(quoteIdent).join(', ');
  await session.run(
    `CREATE OR REPLACE TEMP TABLE ${t.batch} AS SELECT * EXCLUDE (${dropped}), ${del} AS __tl_delete FROM (` +
      `SELECT *, row_number() OVER (PARTITION BY ${keys} ORDER BY ${order}) AS __tl_rn FROM ${files}) WHERE __tl_rn = 1`,
  );
}

function bindDeleteWhen(where: string, input: Schema): string {
  try {
    return bindFilter(where, input)!.sql;
  } catch (e) {
    if (isTwinlakeError(e, 'invalid-input')) throw invalidInput(`merge: --delete-when ${JSON.stringify(where)}: ${e.message} (the input's columns: ${input.fields.map((f) => f.name).join(', ')})`);
    throw e;
  }
}

/**
 * The batch is staged with the table's columns plus the excluded ones that steer the merge,
 * given field IDs above the table's so they collide with none; they never reach the table.
 */
function withSteeringColumns(plan: SchemaPlan, excluded: NestedField[]): SchemaPlan {
  if (excluded.length === 0) return plan;
  let next = plan.lastColumnId + 1;
  const extra = assignFreshIds({ type: 'struct', fields: excluded }, () => next++).fields;
  const schema: Schema = { ...plan.schema, fields: [...plan.schema.fields, ...extra] };
  return { ...plan, schema, physicalNames: assignPhysicalNames(schema, plan.physicalNames) };
}

/** Live files that may hold a key of the batch: by partition and key bounds, before reading data. */
async function candidateFiles(ctx: TableContext, t: Scratch, metadata: TableMetadata, schema: Schema, keys: string[]): Promise<LiveFiles> {
  const none: LiveFiles = { data: [], deletes: [], sequenceNumbers: new Map() };
  const snapshot = currentSnapshot(metadata);
  if (!snapshot) return none;
  const session = await ctx.session();
  const conditions: string[] = [];
  for (const k of keys) {
    const [r] = await session.all(`SELECT CAST(min(${quoteIdent(k)}) AS VARCHAR) AS lo, CAST(max(${quoteIdent(k)}) AS VARCHAR) AS hi, count(DISTINCT ${quoteIdent(k)}) AS n FROM ${t.batch}`);
    if (r!.lo === null) return none;
    const type = schema.fields.find((f) => f.name === k)!.type;
    const lit = (v: unknown) => literal(type as string, String(v));
    if (keys.length === 1 && Number(r!.n) <= 1000) {
      const values = await session.all(`SELECT DISTINCT CAST(${quoteIdent(k)} AS VARCHAR) AS v FROM ${t.batch}`);
      conditions.push(`${quoteIdent(k)} IN (${values.map((v) => lit(v.v)).join(', ')})`);
    } else {
      conditions.push(`${quoteIdent(k)} >= ${lit(r!.lo)} AND ${quoteIdent(k)} <= ${lit(r!.hi)}`);
    }
  }
  const filter = bindFilter(conditions.join(' AND '), schema);
  return liveFiles(ctx.io, metadata, snapshot, { filter, schema, explain: emptyExplain() });
}

export type LiveFiles = Awaited<ReturnType<typeof liveFiles>>;

/** The files of `live` the engine opens: data files and position delete files (vectors are read through the FileIO). */
export function engineReadFiles(live: LiveFiles): string[] {
  return [...live.data, ...live.deletes.filter((d) => d.content === 1 && d['file-format'] === 'PARQUET')].map((f) => f['file-path']);
}

/** A key value as a filter literal (strings quoted; numbers and temporal values as text). */
function literal(type: string, text: string): string {
  if (type === 'int' || type === 'long' || type === 'float' || type === 'double' || type.startsWith('decimal')) return text;
  if (type === 'boolean') return text === 'true' ? 'TRUE' : 'FALSE';
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * Runs `sql` (the file and position of each live row a change affects, plus for merges the key)
 * into the scratch table `hits`, and returns the candidates holding such a row: only these are
 * changed.
 */
async function findHits(ctx: TableContext, t: Scratch, candidates: DataFile[], sql: string): Promise<DataFile[]> {
  const session = await ctx.session();
  await session.run(`CREATE OR REPLACE TEMP TABLE ${t.hits} AS ${sql}`);
  const found = await session.all(`SELECT DISTINCT ${quoteIdent(FILE)} AS f FROM ${t.hits}`);
  const hit = new Set(found.map((r) => String(r.f)));
  return candidates.filter((f) => hit.has(engineFile(ctx, f['file-path'])));
}

/** Inserted, updated and deleted keys: a batch key found in a live row exists already. */
async function mergeCounts(ctx: TableContext, t: Scratch, keys: string[]): Promise<{ inserted: number; updated: number; deleted: number }> {
  const session = await ctx.session();
  const using = keys.map(quoteIdent).join(', ');
  const [r] = await session.all(
    `SELECT count(*) FILTER (WHERE e.__tl_found AND NOT b.__tl_delete) AS updated, count(*) FILTER (WHERE e.__tl_found AND b.__tl_delete) AS deleted, ` +
      `count(*) FILTER (WHERE e.__tl_found IS NULL AND NOT b.__tl_delete) AS inserted ` +
      `FROM ${t.batch} AS b LEFT JOIN (SELECT DISTINCT ${using}, TRUE AS __tl_found FROM ${t.hits}) AS e USING (${using})`,
  );
  return { inserted: Number(r!.inserted), updated: Number(r!.updated), deleted: Number(r!.deleted) };
}
