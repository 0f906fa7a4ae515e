import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { dataInvalid, unsupported } from '../../core/errors.ts';
import { newUuid } from '../../core/ids.ts';
import { mapLimit } from '../../core/concurrency.ts';
import { joinUri } from '../../core/uri.ts';
import { quoteString } from '../../engine/duckdb-session.ts';
import { fileStatsOf } from '../../engine/encode.ts';
import type { FileIO } from '../../io/file-io.ts';
import {
  decodeDeletionVectorBlob,
  deletionVectorFileFromPuffin,
  deletionVectorFileName,
  encodeDeletionVectorFile,
  fileDescriptor,
  puffinBlobInDeletionVectorFile,
  soleDeletionVector,
} from '../../format/delta/deletion-vector.ts';
import { POSITION_DELETE_FILE_PATH_ID, POSITION_DELETE_POS_ID } from '../../format/iceberg/schema.ts';
import { toBinary } from '../../format/iceberg/single-value.ts';
import { icebergMetrics } from '../../format/parquet/stats.ts';
import type { DeletionVectorDescriptor } from '../../format/delta/actions.ts';
import { encodeDeletionVectorPuffin } from '../../format/iceberg/puffin.ts';
import { DataFileContent, type DataFile, type StructType, type TableMetadata } from '../../format/iceberg/types.ts';
import { RoaringBitmap64 } from '../../format/roaring.ts';
import { applicableDeletes, type ApplicableDeletes } from '../../format/iceberg/scan.ts';
import { engineFile } from '../read/read-cache.ts';
import type { TableContext } from '../table-context.ts';
import { tableFormats } from '../../format/dual/table-properties.ts';
import { discardUncommitted, stagingFolder, trackStaging, writeUncommitted } from '../write/interrupt.ts';

/**
 * Row-level deletes written by merge-on-read, and the deletes a merge or delete must respect when
 * it reads the files it changes.
 *
 * - Iceberg v3: one Puffin file per commit with a `deletion-vector-v1` blob per data file (spec
 *   §Deletion Vectors). The blob is the framed DV of Delta's DV file format byte for byte (size,
 *   magic and portable Roaring bitmap, CRC-32), but Delta readers cannot point into the Puffin
 *   file: a Delta DV file must start with its format version byte `1` (PROTOCOL.md §Deletion
 *   Vector Format), and delta-kernel-rs, the reader under delta-rs and DuckDB's delta extension,
 *   checks that byte before it seeks to the offset, while a Puffin file starts with `PFA1`. So
 *   the same blobs are written a second time as the Delta DV file of the same UUID: the version
 *   byte, then the Puffin file's blob section as it is, so a blob at Puffin offset `o` is at
 *   `o - 3` in the Delta file.
 * - Iceberg v2: a position delete file per data file (spec §Position Delete Files), naming it in
 *   `referenced_data_file`, and — for tables that keep Delta — a Delta DV file with the same
 *   positions, named by the same UUID.
 *
 * Either way the Delta projection derives each DV descriptor from the Iceberg delete file alone,
 * and a data file has at most one delete file of ours: a new delete merges the positions already
 * deleted and replaces the old file in the same snapshot.
 */

/** The UUID a Twinlake delete file (`<uuid>-deletes.parquet` or `.puffin`) is named by; undefined for another writer's file. */
export function deleteFileUuid(uri: string): string | undefined {
  const name = uri.slice(uri.lastIndexOf('/') + 1);
  const m = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-deletes\.(parquet|puffin)$/.exec(name);
  return m?.[1];
}

/** The Delta DV file that repeats a delete file's deletes (PROTOCOL.md storage type `u`). */
export function deltaDvFileUri(location: string, uuid: string): string {
  return joinUri(location, deletionVectorFileName(uuid));
}

/**
 * The Delta DV descriptor of an Iceberg delete file Twinlake wrote: its Delta DV file of the same
 * UUID. For a Puffin blob the place follows from the Iceberg metadata alone; for a position delete
 * file the size is read from the DV file, whose positions must number what the delete file holds.
 */
export async function deltaDescriptor(io: FileIO, location: string, d: DataFile): Promise<DeletionVectorDescriptor> {
  const uuid = deleteFileUuid(d['file-path']);
  if (uuid === undefined) throw dataInvalid(`delta projection: ${d['file-path']} is not a Twinlake delete file; its deletes have no Delta deletion vector`);
  if (d['file-format'] === 'PUFFIN') {
    return fileDescriptor(
      { uuid },
      puffinBlobInDeletionVectorFile({ contentOffset: d['content-offset']!, contentSizeInBytes: d['content-size-in-bytes']!, cardinality: d['record-count'] }),
    );
  }
  const uri = deltaDvFileUri(location, uuid);
  const { entry } = soleDeletionVector(await io.read(uri), uri);
  if (entry.cardinality !== d['record-count']) throw dataInvalid(`${uri}: expected ${d['record-count']} positions like ${d['file-path']}, found ${entry.cardinality}`);
  return fileDescriptor({ uuid }, entry);
}

/** The deleted rows of a data file as a merge finds them: positions, and the delete files to replace. */
export interface ExistingDeletes {
  positions: RoaringBitmap64;
  /** Delete files that name only this data file (ours, and file-scoped ones of other writers). */
  replaceable: DataFile[];
}

/**
 * The row-level deletes that apply to `files` (by the spec's scope rules), loaded as positions.
 * Equality deletes cannot be turned into positions without reading every row, so a table with
 * equality deletes on these files is refused.
 */
export async function existingDeletes(
  ctx: TableContext,
  metadata: TableMetadata,
  live: { data: DataFile[]; deletes: DataFile[]; sequenceNumbers: Map<DataFile, number | undefined> },
  files: DataFile[],
): Promise<Map<string, ExistingDeletes>> {
  const out = new Map<string, ExistingDeletes>();
  if (live.deletes.length === 0) return out;
  const applicable = applicableDeletes(metadata, live.data, live.deletes, live.sequenceNumbers);
  const found = new Map<DataFile, ApplicableDeletes>();
  for (const file of files) {
    const d = applicable(file);
    if (!d) continue;
    if (d.equality.length > 0) {
      throw unsupported(`${file['file-path']} has equality deletes (${d.equality[0]!['file-path']}); merging into or deleting from it needs them rewritten as positions first`);
    }
    found.set(file, d);
  }
  // Position delete files are read in one query, keeping the rows of the files asked about.
  const positionFiles = [...new Set([...found.values()].flatMap((d) => d.positionFiles.map((p) => p['file-path'])))];
  const fromFiles = new Map<string, bigint[]>();
  if (positionFiles.length > 0) {
    const session = await ctx.session();
    const wanted = [...found.keys()].filter((f) => found.get(f)!.positionFiles.length > 0).map((f) => quoteString(f['file-path']));
    const list = positionFiles.map((p) => quoteString(engineFile(ctx, p)));
    const rows = await session.all(
      `SELECT file_path AS f, filename AS d, list(pos ORDER BY pos) AS p FROM read_parquet([${list.join(', ')}], filename = true) WHERE file_path IN (${wanted.join(', ')}) GROUP BY ALL`,
    );
    for (const r of rows) fromFiles.set(`${String(r.d)}\n${String(r.f)}`, r.p as bigint[]);
  }
  const puffinFiles = new Map<string, Promise<Uint8Array>>();
  for (const [file, d] of found) {
    const path = file['file-path'];
    const positions = new RoaringBitmap64();
    const replaceable: DataFile[] = [];
    if (d.dv) {
      const dv = d.dv;
      const bytes = await readRange(ctx.io, dv['file-path'], dv['content-offset']!, dv['content-size-in-bytes']!, puffinFiles);
      positions.addAll(decodeDeletionVectorBlob(bytes, { expectedSize: bytes.length - 8, where: `deletion vector ${dv['file-path']}@${dv['content-offset']}` }));
      replaceable.push(dv);
    }
    for (const p of d.positionFiles) {
      for (const pos of fromFiles.get(`${engineFile(ctx, p['file-path'])}\n${path}`) ?? []) positions.add(pos);
      if (p['referenced-data-file'] === path) replaceable.push(p);
    }
    out.set(path, { positions, replaceable });
  }
  return out;
}

async function readRange(io: FileIO, uri: string, offset: number, length: number, cache: Map<string, Promise<Uint8Array>>): Promise<Uint8Array> {
  let pending = cache.get(uri);
  if (!pending) cache.set(uri, (pending = io.read(uri)));
  const all = await pending;
  if (all.length < offset + length) throw dataInvalid(`${uri}: expected ${length} bytes at ${offset}, the file has ${all.length}`);
  return all.subarray(offset, offset + length);
}

/**
 * Loads deleted positions into the temp table `name` (`f` the data file as the engine reads it,
 * `pos`), for anti-joins that hide deleted rows from a merge. Positions go in as lists and runs.
 */
export async function loadDeletedPositions(ctx: TableContext, name: string, existing: Map<string, ExistingDeletes>): Promise<void> {
  const session = await ctx.session();
  await session.run(`CREATE OR REPLACE TEMP TABLE ${name} (f VARCHAR, pos BIGINT)`);
  for (const [path, d] of existing) {
    await session.run(`INSERT INTO ${name} SELECT ${quoteString(engineFile(ctx, path))}, pos FROM (${positionsSql(d.positions)})`);
  }
}

/**
 * A relation of one BIGINT column `pos` holding the bitmap's positions: scattered positions as
 * one list literal, runs as ranges (a long VALUES list is slow to parse; a list is not).
 */
function positionsSql(bitmap: RoaringBitmap64): string {
  const ranges = [...bitmap.ranges()];
  const singles = ranges.filter(([lo, hi]) => hi - lo === 1n).map(([lo]) => lo);
  const runs = ranges.filter(([lo, hi]) => hi - lo > 1n);
  const parts: string[] = [];
  if (singles.length > 0) parts.push(`SELECT unnest([${singles.join(',')}]::BIGINT[]) AS pos`);
  if (runs.length > 0) {
    parts.push(`SELECT unnest(range(lo, hi)) AS pos FROM (SELECT unnest([${runs.map(([lo]) => lo).join(',')}]::BIGINT[]) AS lo, unnest([${runs.map(([, hi]) => hi).join(',')}]::BIGINT[]) AS hi)`);
  }
  return parts.length > 0 ? parts.join(' UNION ALL ') : 'SELECT NULL::BIGINT AS pos WHERE FALSE';
}

export interface WrittenDeletes {
  /** The delete files to add to the Iceberg snapshot. */
  deletes: DataFile[];
  /** Every file written (to remove if the commit is abandoned). */
  files: string[];
  /** Their total size: Iceberg's delete files and Delta's DV files. */
  bytes: number;
}

/**
 * Writes the deletes of a merge-on-read change: for each data file, every position deleted so far
 * (`bitmap` already holds the old ones). v3 tables get one Puffin file, v2 tables a position
 * delete file per data file; tables that keep Delta get the Delta DV file of each too.
 */
export async function writeRowDeletes(ctx: TableContext, metadata: TableMetadata, targets: { file: DataFile; bitmap: RoaringBitmap64 }[]): Promise<WrittenDeletes> {
  if (targets.length === 0) return { deletes: [], files: [], bytes: 0 };
  if (metadata['format-version'] >= 3) return writePuffinDeletes(ctx, metadata, targets);
  return writePositionDeletes(ctx, metadata, targets);
}

async function writePuffinDeletes(ctx: TableContext, metadata: TableMetadata, targets: { file: DataFile; bitmap: RoaringBitmap64 }[]): Promise<WrittenDeletes> {
  const uuid = newUuid();
  const uri = joinUri(metadata.location, 'data', `${uuid}-deletes.puffin`);
  const { bytes, entries } = encodeDeletionVectorPuffin(targets.map((t) => ({ referencedDataFile: t.file['file-path'], bitmap: t.bitmap })), { 'created-by': 'twinlake' });
  const written: string[] = [];
  let total = bytes.length;
  try {
    // Each file is tracked before it is written, so an interrupt mid-way deletes it.
    written.push(uri);
    await writeUncommitted(ctx.io, uri, () => ctx.io.write(uri, bytes));
    if (tableFormats(metadata.properties).includes('delta')) {
      const dv = deletionVectorFileFromPuffin(bytes, entries);
      const dvUri = deltaDvFileUri(metadata.location, uuid);
      written.push(dvUri);
      await writeUncommitted(ctx.io, dvUri, () => ctx.io.write(dvUri, dv));
      total += dv.length;
    }
  } catch (e) {
    await discardUncommitted(ctx.io, written);
    throw e;
  }
  const deletes = entries.map((e, i): DataFile => {
    const data = targets[i]!.file;
    return {
      content: DataFileContent.PositionDeletes,
      'file-path': uri,
      'file-format': 'PUFFIN',
      partition: data.partition,
      'spec-id': data['spec-id'],
      'record-count': e.cardinality,
      'file-size-in-bytes': bytes.length,
      'referenced-data-file': e.referencedDataFile,
      'content-offset': e.contentOffset,
      'content-size-in-bytes': e.contentSizeInBytes,
    };
  });
  return { deletes, files: written, bytes: total };
}

/** The columns of a position delete file (spec §Position Delete Files). */
const POSITION_DELETE_SCHEMA: StructType = {
  type: 'struct',
  fields: [
    { id: POSITION_DELETE_FILE_PATH_ID, name: 'file_path', required: true, type: 'string' },
    { id: POSITION_DELETE_POS_ID, name: 'pos', required: true, type: 'long' },
  ],
};

async function writePositionDeletes(ctx: TableContext, metadata: TableMetadata, targets: { file: DataFile; bitmap: RoaringBitmap64 }[]): Promise<WrittenDeletes> {
  const session = await ctx.session();
  const withDelta = tableFormats(metadata.properties).includes('delta');
  const staging = await stagingFolder(session, 'twinlake-deletes-');
  const untrackStaging = trackStaging(staging);
  const written: string[] = [];
  let total = 0;
  try {
    // Counts and column sizes as every data file has them: readers such as PyIceberg's
    // inspect.entries expect column_sizes on every entry.
    const metrics: ReturnType<typeof icebergMetrics>[] = [];
    for (const [i, { file, bitmap }] of targets.entries()) {
      const [row] = await session.all(
        `COPY (SELECT ${quoteString(file['file-path'])} AS file_path, pos FROM (${positionsSql(bitmap)}) ORDER BY pos) ` +
          `TO ${quoteString(join(staging, `${i}.parquet`))} (FORMAT parquet, COMPRESSION zstd, FIELD_IDS {file_path: ${POSITION_DELETE_FILE_PATH_ID}, pos: ${POSITION_DELETE_POS_ID}}, RETURN_STATS)`,
      );
      metrics.push(icebergMetrics(fileStatsOf(row!, POSITION_DELETE_SCHEMA, new Map()), POSITION_DELETE_SCHEMA));
    }
    // Many small files: their (durable) writes overlap.
    const deletes = await mapLimit(targets, 16, async ({ file, bitmap }, i): Promise<DataFile> => {
      const uuid = newUuid();
      const uri = joinUri(metadata.location, 'data', `${uuid}-deletes.parquet`);
      const bytes = await readFile(join(staging, `${i}.parquet`));
      // Each file is tracked before it is written, so an interrupt mid-way deletes it.
      written.push(uri);
      await writeUncommitted(ctx.io, uri, () => ctx.io.write(uri, bytes));
      total += bytes.length;
      if (withDelta) {
        const dvUri = deltaDvFileUri(metadata.location, uuid);
        const dv = encodeDeletionVectorFile([bitmap]).bytes;
        written.push(dvUri);
        await writeUncommitted(ctx.io, dvUri, () => ctx.io.write(dvUri, dv));
        total += dv.length;
      }
      const path = file['file-path'];
      const pathBytes = new TextEncoder().encode(path);
      const ranges = [...bitmap.ranges()];
      return {
        content: DataFileContent.PositionDeletes,
        'file-path': uri,
        'file-format': 'PARQUET',
        partition: file.partition,
        'spec-id': file['spec-id'],
        'record-count': bitmap.cardinality,
        'file-size-in-bytes': bytes.length,
        'referenced-data-file': path,
        'column-sizes': metrics[i]!['column-sizes'],
        'value-counts': metrics[i]!['value-counts'],
        'null-value-counts': metrics[i]!['null-value-counts'],
        // Exact bounds (the path whole, not cut to 16 characters) so readers can tell the file
        // this one applies to.
        'lower-bounds': new Map([
          [POSITION_DELETE_FILE_PATH_ID, pathBytes],
          [POSITION_DELETE_POS_ID, toBinary('long', ranges[0]![0])],
        ]),
        'upper-bounds': new Map([
          [POSITION_DELETE_FILE_PATH_ID, pathBytes],
          [POSITION_DELETE_POS_ID, toBinary('long', ranges[ranges.length - 1]![1] - 1n)],
        ]),
      };
    });
    return { deletes, files: written, bytes: total };
  } catch (e) {
    await discardUncommitted(ctx.io, written);
    throw e;
  } finally {
    await rm(staging, { recursive: true, force: true });
    untrackStaging();
  }
}

