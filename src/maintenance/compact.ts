import { invalidInput } from '../core/errors.ts';
import { newUuid } from '../core/ids.ts';
import { quoteIdent } from '../engine/duckdb-session.ts';
import { DEFAULT_TARGET_FILE_SIZE, intProp, Props } from '../format/dual/table-properties.ts';
import { deleteFileKey } from '../format/iceberg/manifest.ts';
import { partitionIdentity } from '../format/iceberg/snapshot-summary.ts';
import { OPERATION_KEY } from '../format/dual/summary-keys.ts';
import { currentSchema, currentSnapshot } from '../format/iceberg/table-metadata.ts';
import type { DataFile, TableMetadata } from '../format/iceberg/types.ts';
import { catalogTable, commitWrite, type PreparedWrite } from '../table/commit/commit.ts';
import type { RowDeletesBasis } from '../table/commit/snapshot-producer.ts';
import { replaceFiles, updateSchema } from '../table/commit/table-actions.ts';
import type { TableAction } from '../table/commit/transaction.ts';
import { dropScratch, engineReadFiles, liveRows, requireSameNames, scratchTables, type LiveFiles } from '../table/merge/merge.ts';
import type { ExistingDeletes } from '../table/merge/row-deletes.ts';
import { liveFiles } from '../table/read/iceberg-scan.ts';
import { withEngineFiles } from '../table/read/read-cache.ts';
import type { Table } from '../table/table.ts';
import { identString, warningLog, type TableContext } from '../table/table-context.ts';
import { encodeFrom, type EncodedFiles } from '../table/write/batch.ts';
import { discardUncommitted } from '../table/write/interrupt.ts';
import { planSchema, type SchemaPlan } from '../table/write/schema-plan.ts';
import { zorderColumns, zorderSql } from './zorder.ts';

/**
 * Compaction: per partition of the current spec, the small files (and, to sort or Z-order, every
 * file) are bin-packed into groups and each group's live rows are written again as files near the
 * target size, through the engine. Rows a delete file removes are not written, and the delete
 * files that applied only to the rewritten files go with them. One Iceberg `replace` snapshot and
 * one Delta version (`dataChange: false`) commit every group through the one Transaction: an
 * append committed meanwhile is kept (the action re-applies on the new base); a delete or merge
 * committed meanwhile on a group's files makes the commit `rerun`, and that group is skipped
 * while the others are written again.
 */
export interface CompactOptions {
  /** Bytes the rewritten files aim for (default: `write.target-file-size-bytes`, else 128 MiB). */
  targetFileSize?: number;
  /** A group of fewer files is left alone unless its files have row-level deletes to fold in (default 2; see DEFAULT_MIN_INPUT_FILES). */
  minInputFiles?: number;
  /**
   * Bytes of input one group holds at most (default 100 GiB, as Iceberg's rewrite-data-files
   * `max-file-group-size-bytes`): the unit a concurrent delete or merge makes compaction skip.
   */
  maxGroupBytes?: number;
  /** Rows of each group written sorted by these columns. */
  sort?: string[];
  /** Rows of each group written in Z-order of these columns (src/format/zorder.ts). */
  zorder?: string[];
  /** Plans the groups and commits nothing. */
  dryRun?: boolean;
  /** A filter (as `read --where`) whose files scanned before and after are reported. */
  explainFilter?: string;
}

export interface CompactResult {
  table: string;
  dryRun: boolean;
  targetFileSize: number;
  /** Live data files before, and after as this compaction left them (files others committed meanwhile not counted; after = before for a dry run). */
  filesBefore: number;
  filesAfter: number;
  /** Groups planned, rewritten, and skipped because a concurrent commit changed their files. */
  groups: number;
  groupsRewritten: number;
  groupsSkipped: number;
  /** Data files removed and their bytes (planned, for a dry run). */
  filesRewritten: number;
  bytesRewritten: number;
  /** Files written, their bytes and rows. */
  filesAdded: number;
  bytesAdded: number;
  rows: number;
  /** Row-level deletes folded in: rows left out, delete files removed. */
  deletedRowsRemoved: number;
  deleteFilesRemoved: number;
  snapshotId?: bigint;
  deltaVersion?: number;
  /** For `explainFilter`: the files the project's pruning scans (of the live ones) before and after. */
  pruning?: { filter: string; before: { files: number; scanned: number }; after: { files: number; scanned: number } };
  warnings: string[];
}

/** One group: files of one partition rewritten together, and what their deletes were when planned. */
interface Group {
  partition: DataFile['partition'];
  specId: number;
  files: DataFile[];
  bytes: number;
  /** Per file: the delete files applying to it and the rows they remove, to recognise a concurrent change. */
  deletes: Map<string, string>;
}

/*
 * The defaults, against Iceberg's rewrite_data_files options (iceberg-spark-procedures.md
 * §rewrite_data_files, "General Options"):
 * - target-file-size-bytes: the seed's 128 MiB, through `write.target-file-size-bytes` as there
 *   (Iceberg's own default is 512 MB).
 * - min-file-size-bytes, 75% of the target: the same. A file that size is near enough the target;
 *   rewriting it again with a few small ones would cost its bytes to save one file.
 * - min-input-files: 2, where Iceberg says 5. A run here is one the user asked for (by hand or on
 *   the table's schedule), and it leaves each partition in as few files as its bytes need, like
 *   Delta's OPTIMIZE (delta-optimizations.mdx: bin-packing is idempotent, a second run does
 *   nothing). Small files also cost more in a dual table: every one is a Delta add action that
 *   each checkpoint and each Delta reader's log replay carries, with no manifest to skip it. The
 *   write amplification Iceberg's 5 guards against is bounded here by the 75% rule: a
 *   partition's compacted file stops being rewritten once it is near the target.
 * - delete-ratio-threshold, 0.3: the same for files of at least the minimum size, so a file near
 *   the target is not rewritten whole for a few deleted rows. A smaller file is a candidate by
 *   its size, and a group holding deletes is rewritten even when it would not become fewer
 *   files, whatever the ratio, where Iceberg would leave a lone small file with a few deletes
 *   (its delete-file-threshold, 2147483647, is off): rewrites fold in row-level deletes (issue
 *   13), and on a dual table each delete costs two files (the Iceberg delete file and the Delta
 *   DV file).
 * - max-file-group-size-bytes, 100 GB: the same. partial-progress.enabled false: the same (one
 *   commit for every group). max-file-size-bytes (180%, for splitting large files) is not used:
 *   a file above the target is left as it is.
 * - A group is rewritten when it would become fewer files; Iceberg also rewrites a group of two
 *   or more whose bytes exceed the target, which may write as many files as it read.
 */
const DEFAULT_MIN_INPUT_FILES = 2;
export const MIN_FILE_SIZE_RATIO = 0.75;
export const DELETE_RATIO_THRESHOLD = 0.3;
const DEFAULT_MAX_GROUP_BYTES = 100 * 1024 ** 3;

export async function compact(table: Table, opts: CompactOptions = {}): Promise<CompactResult> {
  // The Table's context: compaction is a table operation that lives in the maintenance layer.
  const ctx: TableContext = table.context;
  if (opts.sort?.length && opts.zorder?.length) throw invalidInput('compact: give sort or zorder, not both');
  if (opts.targetFileSize !== undefined && !(Number.isSafeInteger(opts.targetFileSize) && opts.targetFileSize > 0)) {
    throw invalidInput(`compact: targetFileSize must be a positive whole number of bytes, got ${opts.targetFileSize}`);
  }
  if (opts.minInputFiles !== undefined && !(Number.isSafeInteger(opts.minInputFiles) && opts.minInputFiles >= 1)) {
    throw invalidInput(`compact: minInputFiles must be a whole number of at least 1, got ${opts.minInputFiles}`);
  }
  const log = warningLog(ctx);
  const t = scratchTables();
  const what = identString(ctx.ident);
  let planned: Group[] | undefined;
  let skipped = 0;
  let filesBefore = 0;
  let beforeSnapshot: bigint | undefined;
  let target = 0;
  const empty = (dryRun: boolean, groups: Group[] = []): CompactResult => ({
    table: what, dryRun, targetFileSize: target, filesBefore, filesAfter: filesBefore,
    groups: groups.length + skipped, groupsRewritten: 0, groupsSkipped: skipped,
    filesRewritten: dryRun ? groups.reduce((a, g) => a + g.files.length, 0) : 0,
    bytesRewritten: dryRun ? groups.reduce((a, g) => a + g.bytes, 0) : 0,
    filesAdded: 0, bytesAdded: 0, rows: 0, deletedRowsRemoved: 0, deleteFilesRemoved: 0, warnings: log.warnings,
  });
  try {
    const result = await commitWrite(ctx, catalogTable(ctx, log.warn, { mustExist: true }), {
      what: `compact ${what}`,
      async prepare(loaded): Promise<PreparedWrite<TableAction, CompactResult> | { result: CompactResult }> {
        const metadata = loaded!.metadata;
        const snapshot = currentSnapshot(metadata);
        if (!planned) {
          target = opts.targetFileSize ?? intProp(metadata.properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE);
          beforeSnapshot = snapshot?.['snapshot-id'];
        }
        const schema = currentSchema(metadata);
        for (const c of [...(opts.sort ?? []), ...(opts.zorder ?? [])]) {
          if (!schema.fields.some((f) => f.name === c)) throw invalidInput(`compact: column ${c} is not in table ${what} (columns: ${schema.fields.map((f) => f.name).join(', ')})`);
        }
        if (opts.zorder?.length) zorderColumns(schema, opts.zorder);
        if (!snapshot) return { result: empty(opts.dryRun === true) };
        const plan = planSchema(ctx, metadata, schema, {});
        requireSameNames(plan);
        const live = await liveFiles(ctx.io, metadata, snapshot);
        if (!planned) filesBefore = live.data.length;
        const layout = (opts.sort?.length ?? 0) > 0 || (opts.zorder?.length ?? 0) > 0;
        const candidates = planned
          ? live.data.filter((f) => planned!.some((g) => g.files.some((x) => x['file-path'] === f['file-path'])))
          : live.data.filter((f) => f['spec-id'] === metadata['default-spec-id'] && (layout || f['file-size-in-bytes'] < MIN_FILE_SIZE_RATIO * target || deleteHeavy(metadata, live, f)));
        return withEngineFiles(ctx, engineReadFiles({ ...live, data: candidates }), async (ctx) => {
          const rows = await liveRows(ctx, t, metadata, live, candidates);
          const signatures = new Map(candidates.map((f) => [f['file-path'], signatureOf(rows.existing.get(f['file-path']))]));
          let groups: Group[];
          if (!planned) {
            // A group is worth rewriting when it has deletes to fold in, a layout to apply, or
            // would become fewer files: files already near the target are not rewritten again.
            groups = binPack(candidates, signatures, target, opts.maxGroupBytes ?? DEFAULT_MAX_GROUP_BYTES).filter(
              (g) =>
                g.files.some((f) => rows.existing.has(f['file-path'])) ||
                (g.files.length >= (opts.minInputFiles ?? DEFAULT_MIN_INPUT_FILES) && (layout || Math.ceil(g.bytes / target) < g.files.length)),
            );
            planned = groups;
          } else {
            // Prepared again after a concurrent commit: a group whose files are gone or whose
            // deletes changed is skipped; the others are written again on this base.
            const livePaths = new Set(live.data.map((f) => f['file-path']));
            groups = planned.filter((g) => g.files.every((f) => livePaths.has(f['file-path']) && signatures.get(f['file-path']) === g.deletes.get(f['file-path'])));
            skipped += planned.length - groups.length;
            planned = groups;
          }
          if (opts.dryRun || groups.length === 0) return { result: empty(opts.dryRun === true, opts.dryRun ? groups : []) };

          const order = opts.zorder?.length
            ? zorderSql(await ctx.session(), schema, opts.zorder)
            : opts.sort?.length
              ? opts.sort.map((c) => `${quoteIdent(c)} ASC NULLS FIRST`).join(', ')
              : undefined;
          const written: EncodedFiles[] = [];
          try {
            for (const g of groups) written.push(await rewriteGroup(ctx, plan, g, await rows.keep(g.files), order, target, rows.lineage));
          } catch (e) {
            await discardUncommitted(ctx.io, written.flatMap((w) => w.files));
            throw e;
          }
          const rewritten = groups.flatMap((g) => g.files);
          const replacedDeletes = new Map(rewritten.map((f) => [f['file-path'], (rows.existing.get(f['file-path'])?.replaceable ?? []).map(deleteFileKey)]));
          const rowDeletes: RowDeletesBasis | undefined =
            metadata['format-version'] >= 2 ? { replaced: replacedDeletes, partitions: new Set(rewritten.map(partitionIdentity)), plannedAt: metadata['last-sequence-number'] } : undefined;
          const added = written.flatMap((w) => w.dataFiles);
          const liveRowsBefore = rewritten.reduce((a, f) => a + f['record-count'], 0);
          const rowsAdded = written.reduce((a, w) => a + w.rows, 0);
          return {
            files: written.flatMap((w) => w.files),
            actions: [updateSchema(ctx, plan), replaceFiles(ctx, { removeFiles: new Set(rewritten.map((f) => f['file-path'])), added, ...(rowDeletes ? { rowDeletes } : {}), summary: { [OPERATION_KEY]: 'compaction' } })],
            done: (c) => ({
              ...empty(false, groups),
              filesAfter: filesBefore - rewritten.length + added.length,
              groupsRewritten: groups.length,
              filesRewritten: rewritten.length,
              bytesRewritten: rewritten.reduce((a, f) => a + f['file-size-in-bytes'], 0),
              filesAdded: added.length,
              bytesAdded: added.reduce((a, f) => a + f['file-size-in-bytes'], 0),
              rows: rowsAdded,
              deletedRowsRemoved: liveRowsBefore - rowsAdded,
              deleteFilesRemoved: new Set([...replacedDeletes.values()].flat()).size,
              ...(c.snapshotId !== undefined ? { snapshotId: c.snapshotId } : {}),
              ...(c.deltaVersion !== undefined ? { deltaVersion: c.deltaVersion } : {}),
            }),
          };
        });
      },
    });
    if (opts.explainFilter !== undefined) result.pruning = await pruning(table, opts.explainFilter, beforeSnapshot, result.snapshotId);
    return result;
  } finally {
    await dropScratch(ctx, t);
  }
}

/**
 * Whether a file of at least the minimum size is worth rewriting for its row-level deletes: the
 * delete files naming it remove at least DELETE_RATIO_THRESHOLD of its rows. A delete file of its
 * partition that names no data file may remove any number of its rows: the file is rewritten, as
 * it cannot be told from the manifests. Which rows they remove is read only for the files chosen.
 */
function deleteHeavy(metadata: TableMetadata, live: LiveFiles, f: DataFile): boolean {
  if (live.deletes.length === 0 || metadata['format-version'] < 2) return false;
  const p = partitionIdentity(f);
  let deleted = 0;
  for (const d of live.deletes) {
    if (d['referenced-data-file'] === undefined) {
      if (partitionIdentity(d) === p) return true;
    } else if (d['referenced-data-file'] === f['file-path']) deleted += d['record-count'];
  }
  return deleted > 0 && deleted >= DELETE_RATIO_THRESHOLD * f['record-count'];
}

function signatureOf(d: ExistingDeletes | undefined): string {
  if (!d) return '';
  return `${d.positions.cardinality}:${d.replaceable.map(deleteFileKey).sort().join(',')}`;
}

/**
 * First-fit decreasing per partition: the largest files first, each into the first group of its
 * partition with room, so groups come out near `maxGroupBytes` and few.
 */
function binPack(files: DataFile[], signatures: Map<string, string>, target: number, maxGroupBytes: number): Group[] {
  const byPartition = new Map<string, DataFile[]>();
  for (const f of files) {
    const key = partitionIdentity(f);
    byPartition.set(key, [...(byPartition.get(key) ?? []), f]);
  }
  const groups: Group[] = [];
  const capacity = Math.max(maxGroupBytes, target);
  for (const members of byPartition.values()) {
    const sorted = [...members].sort((a, b) => b['file-size-in-bytes'] - a['file-size-in-bytes'] || a['file-path'].localeCompare(b['file-path']));
    const open: Group[] = [];
    for (const f of sorted) {
      let g = open.find((x) => x.bytes + f['file-size-in-bytes'] <= capacity);
      if (!g) open.push((g = { partition: f.partition, specId: f['spec-id'], files: [], bytes: 0, deletes: new Map() }));
      g.files.push(f);
      g.bytes += f['file-size-in-bytes'];
      g.deletes.set(f['file-path'], signatures.get(f['file-path']) ?? '');
    }
    groups.push(...open);
  }
  return groups;
}

/**
 * Writes a group's live rows (`keep`) as files near `target` bytes: the rows, in the requested
 * order, are numbered once and cut into equal runs, each run one file. The number of runs comes
 * from the input's bytes; small files carry more footer and less compression than large ones,
 * so when the output turns out to need fewer files it is written again with that many.
 */
async function rewriteGroup(ctx: TableContext, plan: SchemaPlan, g: Group, keep: string, order: string | undefined, target: number, rowLineage: boolean): Promise<EncodedFiles> {
  const session = await ctx.session();
  const name = `__tl_compact_${newUuid().replace(/-/g, '')}`;
  await session.run(`CREATE TEMP TABLE ${name} AS SELECT *, row_number() OVER (${order ? `ORDER BY ${order}` : ''}) AS __tl_rn FROM (${keep}) AS k`);
  try {
    const [r] = await session.all(`SELECT count(*) AS n FROM ${name}`);
    const rows = Number(r!.n);
    const write = async (runs: number): Promise<EncodedFiles> => {
      const out: EncodedFiles = { files: [], dataFiles: [], rows: 0, bytes: 0, schema: plan.schema };
      const per = Math.ceil(rows / runs);
      try {
        for (let lo = 0; lo < rows; lo += per) {
          // Unpartitioned encoding, so each run is one file; every row is of the group's partition.
          const e = await encodeFrom(ctx, { ...plan, spec: { 'spec-id': g.specId, fields: [] }, targetFileSize: 2 * target }, {
            sql: `SELECT * EXCLUDE (__tl_rn) FROM ${name} WHERE __tl_rn > ${lo} AND __tl_rn <= ${lo + per} ORDER BY __tl_rn`,
            displayName: 'compact',
            rowLineage,
          });
          out.files.push(...e.files);
          out.dataFiles.push(...e.dataFiles.map((f) => ({ ...f, partition: g.partition, 'spec-id': g.specId })));
          out.rows += e.rows;
          out.bytes += e.bytes;
        }
      } catch (e) {
        await discardUncommitted(ctx.io, out.files);
        throw e;
      }
      return out;
    };
    if (rows === 0) return { files: [], dataFiles: [], rows: 0, bytes: 0, schema: plan.schema };
    const runsFor = (bytes: number) => Math.max(1, Math.min(rows, Math.ceil(bytes / target)));
    let runs = runsFor(g.bytes);
    for (;;) {
      const out = await write(runs);
      // Fewer, larger files compress better again: stop once the count holds (it only falls).
      const needed = runsFor(out.bytes);
      if (needed >= runs) return out;
      await discardUncommitted(ctx.io, out.files);
      runs = needed;
    }
  } finally {
    await session.run(`DROP TABLE IF EXISTS ${name}`).catch(() => undefined);
  }
}

/** Files the read planner scans for `filter` (as `twinlake read --explain` counts them) before and after. */
async function pruning(table: Table, filter: string, before: bigint | undefined, after: bigint | undefined): Promise<CompactResult['pruning']> {
  const count = async (snapshotId: bigint | undefined) => {
    if (snapshotId === undefined) return { files: 0, scanned: 0 };
    const plan = await table.plan({ where: filter, snapshotId });
    const e = plan.task.explain!;
    return { files: e.files, scanned: e.files - e.filesSkipped };
  };
  const b = await count(before);
  return { filter, before: b, after: after === undefined ? b : await count(after) };
}

