import { open, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { invalidInput, notFound, unsupported } from '../../core/errors.ts';
import { mapLimit } from '../../core/concurrency.ts';
import { fileUri, isUri, relativeTo } from '../../core/uri.ts';
import type { LiteralValue } from '../../format/scan-task.ts';
import { quoteString, toDuckDBType } from '../../format/parquet/duckdb-types.ts';
import { compareLiterals, icebergMetrics, parseDuckDBStatValue, type ColumnStats, type FileStats } from '../../format/parquet/stats.ts';
import { nameMapping, parseNameMapping, typeToString } from '../../format/iceberg/schema.ts';
import { toBinary } from '../../format/iceberg/single-value.ts';
import { currentSchema, currentSnapshot, specById } from '../../format/iceberg/table-metadata.ts';
import type { DataFile, NestedField, PartitionSpec, PartitionTuple, Schema, Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { Props, readPhysicalNames } from '../../format/dual/table-properties.ts';
import type { DuckDBSession } from '../../engine/duckdb-session.ts';
import type { FileIO } from '../../io/file-io.ts';
import { stagingFolder, trackStaging } from './interrupt.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { catalogTable, commitWrite } from '../commit/commit.ts';
import { appendFiles, updateProperties } from '../commit/table-actions.ts';
import type { TableAction } from '../commit/transaction.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog } from '../table-context.ts';
import type { WriteResult } from './writer.ts';

/**
 * Adding Parquet files that already exist to the table, without rewriting them (as PyIceberg's
 * `add_files` and Delta's CONVERT TO DELTA do): each file's schema, field IDs and statistics come
 * from its footer, and one snapshot (and the Delta version mirroring it) adds them all.
 *
 * Files must lie inside the table's location: a Delta `add` path is relative to the table root,
 * and a table that named files elsewhere would be broken by anyone moving or vacuuming it.
 */

export interface AddFilesOptions {
  /** Footers read at once (default 4): each read is a DuckDB metadata query over a batch of files. */
  concurrency?: number;
}

/** What a write reports, less what add-files cannot do (create a table, evolve its schema, take a batch identity). */
export interface AddFilesResult extends Pick<WriteResult, 'table' | 'snapshotId' | 'deltaVersion' | 'deltaCommitted' | 'files' | 'rows' | 'bytes' | 'warnings'> {
  /** The name mapping property recorded by this commit (files without field IDs, table without one). */
  recordedNameMapping: boolean;
  /** Milliseconds: reading footers (in parallel), making the footers the table's data files, and the commits. */
  timings: { footerMs: number; dataFilesMs: number } & Omit<WriteResult['timings'], 'encodeMs'>;
}

/** Files in one metadata query: a long path list is one SQL text, and fewer queries cost less. */
const FOOTER_BATCH = 500;

interface Footer {
  /** The local file the engine read the footer from. */
  path: string;
  /** How messages name the file: its local path, or its URI when remote. */
  name: string;
  uri: string;
  rows: number;
  bytes: number;
  columns: { name: string; duckdbType: string; fieldId?: number; required: boolean; nested: boolean }[];
  /** By column name, aggregated over row groups. */
  stats: Map<string, ColumnStats>;
}

export async function addFiles(ctx: TableContext, patterns: readonly string[], opts: AddFilesOptions = {}): Promise<AddFilesResult> {
  const { warnings, warn } = warningLog(ctx);
  const what = `add-files ${identString(ctx.ident)}`;
  if (patterns.length === 0) throw invalidInput(`${what}: no files named`);
  const session = await ctx.session();
  const local = patterns.filter((p) => !isUri(p) || p.startsWith('file:'));
  const remoteNames = await expandRemote(ctx.io, patterns.filter((p) => isUri(p) && !p.startsWith('file:')), what);
  const paths = await expand(session, local, what);
  const footerStart = performance.now();
  const readAll = async (): Promise<Footer[]> => {
    // Remote files: only their footers are fetched, into sparse local files DuckDB reads them from.
    const staging = remoteNames.length > 0 ? await stagingFolder(session, 'twinlake-footers-') : undefined;
    const untrackStaging = staging ? trackStaging(staging) : () => undefined;
    try {
      const remote = new Map<string, { uri: string; size: number }>();
      await mapLimit(remoteNames, 8, async (uri, i) => {
        const file = join(staging!, `${i}.parquet`);
        remote.set(file, { uri, size: await fetchFooter(ctx.io, uri, file, what) });
      });
      const all = [...paths, ...remote.keys()];
      const batches: string[][] = [];
      for (let i = 0; i < all.length; i += FOOTER_BATCH) batches.push(all.slice(i, i + FOOTER_BATCH));
      return (await mapLimit(batches, Math.max(1, opts.concurrency ?? 4), (b) => readFooters(session, b, remote))).flat();
    } finally {
      if (staging) await rm(staging, { recursive: true, force: true });
      untrackStaging();
    }
  };
  let footers: Footer[] | undefined = await readAll();
  const footerMs = performance.now() - footerStart;
  // Files without field IDs are read by name (spec: Column Projection); the mapping says which.
  const needsMapping = footers.some((f) => f.columns.every((c) => c.fieldId === undefined));
  /**
   * The data files made from the footers, for the table shape they were checked against. An
   * attempt on the same shape reuses them (only the check against the live files runs again), so
   * the footers (a few kilobytes of objects per file) are let go before the commit instead of
   * staying alive through it; an attempt on another shape (a concurrent schema change) reads them again.
   */
  let records: { shape: string; files: DataFile[]; names: string[] } | undefined;
  let recordedNameMapping = false;
  let rows = 0;
  let bytes = 0;
  return commitWrite(ctx, catalogTable(ctx, warn, { mustExist: true }), {
    what,
    async prepare(loaded) {
      const metadata = loaded!.metadata;
      const dataFilesStart = performance.now();
      const shape = tableShape(metadata);
      if (records?.shape !== shape) {
        footers ??= await readAll();
        records = { shape, files: toDataFiles(metadata, footers, what), names: footers.map((f) => f.name) };
      }
      footers = undefined;
      const dataFiles = records.files;
      await checkNotLive(ctx, metadata, dataFiles, records.names, what);
      const dataFilesMs = performance.now() - dataFilesStart;
      const actions: TableAction[] = [];
      recordedNameMapping = needsMapping && metadata.properties[Props.nameMapping] === undefined;
      const set: Record<string, string> = {};
      if (recordedNameMapping) set[Props.nameMapping] = JSON.stringify(nameMapping(currentSchema(metadata), readPhysicalNames(metadata)));
      // Readers skip probing files for field IDs on tables whose files all carry them; these do not.
      if (needsMapping && metadata.properties[Props.filesWithoutFieldIds] !== 'true') set[Props.filesWithoutFieldIds] = 'true';
      if (Object.keys(set).length > 0) actions.push(updateProperties(set));
      actions.push(sameSnapshotAs(metadata), appendFiles(ctx, dataFiles));
      rows = dataFiles.reduce((a, f) => a + f['record-count'], 0);
      bytes = dataFiles.reduce((a, f) => a + f['file-size-in-bytes'], 0);
      return {
        // The files were there before and stay whatever happens: nothing of them is to remove.
        files: [],
        actions,
        done: (c) => ({
          table: identString(ctx.ident),
          snapshotId: c.snapshotId,
          deltaVersion: c.deltaVersion,
          deltaCommitted: c.deltaCommitted,
          files: dataFiles.length,
          rows,
          bytes,
          recordedNameMapping,
          warnings,
          timings: { footerMs, dataFilesMs, ...c.timings },
        }),
      };
    },
  });
}

/**
 * Cloud locations and globs of them (`s3://b/t/imported/*.parquet`; `*` and `?` within a folder,
 * `**` across folders) to the URIs of the objects they name, each once, listed through the store.
 */
async function expandRemote(io: FileIO, patterns: readonly string[], what: string): Promise<string[]> {
  return expandEach(patterns, what, async (p) => {
    const glob = /[*?[{]/.exec(p);
    if (!glob) return (await io.exists(p)) ? [p] : [];
    const folder = p.slice(0, p.lastIndexOf('/', glob.index) + 1);
    const re = globRegex(p);
    const found: string[] = [];
    for await (const m of io.list(folder)) if (re.test(m.uri)) found.push(m.uri);
    return found;
  });
}

/** A glob as a regular expression over whole URIs: `**` any text, `*` and `?` within a folder, `[...]` and `{a,b}`. */
function globRegex(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') (re += '.*'), i++;
    else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else (re += `[${glob.slice(i + 1, end).replace(/^!/, '^').replace(/\\/g, '\\\\')}]`), (i = end);
    } else if (c === '{') {
      const end = glob.indexOf('}', i + 1);
      if (end < 0) re += '\\{';
      else (re += `(?:${glob.slice(i + 1, end).split(',').map(escapeRegex).join('|')})`), (i = end);
    } else re += escapeRegex(c);
  }
  return new RegExp(`^${re}$`);
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Copies the footer of a remote Parquet file into a sparse local file of the same size (its first
 * four bytes and its footer in place, nothing between), which DuckDB's metadata functions read as
 * the file itself; returns the size. Two or three ranged reads, whatever the file's size.
 */
async function fetchFooter(io: FileIO, uri: string, local: string, what: string): Promise<number> {
  const head = await io.head(uri);
  if (!head) throw notFound(`${what}: ${uri} does not exist`);
  const size = head.size;
  const notParquet = () => invalidInput(`${what}: cannot read the Parquet footer of ${uri}: not a Parquet file (expected PAR1 at both ends of its ${size} bytes)`);
  if (size < 12) throw notParquet();
  const { store, key } = io.storeAt(uri);
  let tail = await store.get(key, { offset: size - Math.min(size, 64 * 1024), length: Math.min(size, 64 * 1024) });
  const magic = (b: Uint8Array, at: number) => Buffer.from(b.subarray(at, at + 4)).toString('latin1') === 'PAR1';
  if (!magic(tail, tail.length - 4)) throw notParquet();
  const footer = Buffer.from(tail.buffer, tail.byteOffset, tail.byteLength).readUInt32LE(tail.length - 8) + 8;
  if (footer > size - 4) throw notParquet();
  if (footer > tail.length) tail = await store.get(key, { offset: size - footer, length: footer });
  const first = await store.get(key, { offset: 0, length: 4 });
  if (!magic(first, 0)) throw notParquet();
  const handle = await open(local, 'w');
  try {
    await handle.write(first, 0, 4, 0);
    await handle.write(tail, 0, tail.length, size - tail.length);
  } finally {
    await handle.close();
  }
  return size;
}

/** Paths and globs (`data/*.parquet`, expanded by DuckDB's glob) to absolute local paths, each once. */
async function expand(session: DuckDBSession, patterns: readonly string[], what: string): Promise<string[]> {
  return expandEach(patterns, what, async (p) => {
    const local = resolve(p.startsWith('file:') ? new URL(p).pathname : p);
    return /[*?[{]/.test(local) ? (await session.all(`SELECT file FROM glob(${quoteString(local)}) ORDER BY file`)).map((r) => String(r.file)) : [local];
  });
}

/** Each pattern's files, in order: a pattern that names none, or a file named twice, is an error. */
async function expandEach(patterns: readonly string[], what: string, find: (pattern: string) => Promise<string[]>): Promise<string[]> {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const p of patterns) {
    const found = await find(p);
    if (found.length === 0) throw invalidInput(`${what}: ${p}: no file matches`);
    for (const f of found) {
      if (seen.has(f)) throw invalidInput(`${what}: ${f}: named twice`);
      seen.add(f);
      out.push(f);
    }
  }
  return out;
}

/** `remote`: the sparse footer copies (see fetchFooter) among `paths`, with their files' URIs and sizes. */
async function readFooters(session: DuckDBSession, paths: string[], remote: Map<string, { uri: string; size: number }>): Promise<Footer[]> {
  const list = `[${paths.map(quoteString).join(', ')}]`;
  let schemaRows: Record<string, unknown>[];
  let metaRows: Record<string, unknown>[];
  try {
    schemaRows = await session.all(
      `SELECT file_name, name, duckdb_type, field_id, repetition_type, num_children FROM parquet_schema(${list}) ORDER BY file_name, column_id`,
    );
    metaRows = await session.all(
      `SELECT file_name, path_in_schema, row_group_id, row_group_num_rows, num_values, stats_min_value, stats_max_value, stats_null_count, total_compressed_size FROM parquet_metadata(${list})`,
    );
  } catch (e) {
    const first = remote.get(paths[0]!)?.uri ?? paths[0];
    throw invalidInput(`add-files: cannot read the Parquet footer of a file among ${first}${paths.length > 1 ? ` and ${paths.length - 1} more` : ''}: ${(e as Error).message}`);
  }
  const byPath = new Map<string, Footer>();
  for (const p of paths) {
    const r = remote.get(p);
    byPath.set(p, { path: p, name: r?.uri ?? p, uri: r?.uri ?? fileUri(p), rows: 0, bytes: r?.size ?? 0, columns: [], stats: new Map() });
  }
  const footerOf = (name: unknown) => {
    const f = byPath.get(String(name));
    if (!f) throw invalidInput(`add-files: DuckDB named a file not asked for: ${String(name)}`);
    return f;
  };
  let root = true;
  let previous = '';
  for (const r of schemaRows) {
    const f = footerOf(r.file_name);
    if (f.path !== previous) (root = true), (previous = f.path);
    if (root) {
      root = false;
      continue;
    }
    f.columns.push({
      name: String(r.name),
      duckdbType: String(r.duckdb_type ?? ''),
      ...(r.field_id !== null && r.field_id !== undefined ? { fieldId: Number(r.field_id) } : {}),
      required: r.repetition_type === 'REQUIRED',
      nested: r.num_children !== null && r.num_children !== undefined,
    });
  }
  const groups = new Map<string, Set<string>>();
  for (const r of metaRows) {
    const f = footerOf(r.file_name);
    const g = groups.get(f.path) ?? new Set<string>();
    groups.set(f.path, g);
    const rg = String(r.row_group_id);
    if (!g.has(rg)) g.add(rg), (f.rows += Number(r.row_group_num_rows));
    const name = String(r.path_in_schema);
    const s = f.stats.get(name) ?? { valueCount: 0, nullCount: 0, sizeBytes: 0, rawMin: [] as string[], rawMax: [] as string[] };
    f.stats.set(name, s);
    s.valueCount! += Number(r.num_values);
    if (r.stats_null_count === null || r.stats_null_count === undefined) (s as Raw).noNulls = true;
    else s.nullCount! += Number(r.stats_null_count);
    s.sizeBytes! += Number(r.total_compressed_size);
    (s as Raw).rawMin.push(r.stats_min_value === null || r.stats_min_value === undefined ? NONE : String(r.stats_min_value));
    (s as Raw).rawMax.push(r.stats_max_value === null || r.stats_max_value === undefined ? NONE : String(r.stats_max_value));
  }
  await Promise.all([...byPath.values()].filter((f) => !remote.has(f.path)).map(async (f) => void (f.bytes = (await stat(f.path)).size)));
  return [...byPath.values()];
}

/** Row-group bounds as DuckDB prints them, until the column's type is known. */
interface Raw extends ColumnStats {
  rawMin: string[];
  rawMax: string[];
  noNulls?: boolean;
}
const NONE = '\u0000none';

/** What `toDataFiles` reads of the table: its schema, partition spec, name mapping and physical names. */
function tableShape(metadata: TableMetadata): string {
  return JSON.stringify([metadata['current-schema-id'], metadata['default-spec-id'], metadata.properties[Props.nameMapping] ?? null, metadata.properties[Props.physicalNames] ?? null]);
}

/** A file already live in the table's current snapshot is refused: a file is added once. */
async function checkNotLive(ctx: TableContext, metadata: TableMetadata, files: DataFile[], names: string[], what: string): Promise<void> {
  const snapshot = currentSnapshot(metadata);
  if (!snapshot) return;
  const live = new Set((await liveFiles(ctx.io, metadata, snapshot)).data.map((d) => canonical(d['file-path'])));
  files.forEach((f, i) => {
    if (live.has(canonical(f['file-path']))) throw invalidInput(`${what}: ${names[i]}: already a live file of the table; a file is added once`);
  });
}

/** The files as DataFiles of the table, or the first reason one does not fit. */
function toDataFiles(metadata: TableMetadata, footers: Footer[], what: string): DataFile[] {
  const schema = currentSchema(metadata);
  const spec = specById(metadata, metadata['default-spec-id']);
  const physical = readPhysicalNames(metadata);
  const nameOf = (f: NestedField) => physical.get(f.id) ?? f.name;
  // File column name → field: the name mapping's names, else the schema's current names.
  const mapped = new Map<string, NestedField>();
  const byId = new Map(schema.fields.map((f) => [f.id, f]));
  const mapping = metadata.properties[Props.nameMapping];
  if (mapping) {
    for (const m of parseNameMapping(mapping)) for (const n of m.names) if (m['field-id'] !== undefined && byId.has(m['field-id'])) mapped.set(n, byId.get(m['field-id'])!);
  } else {
    for (const f of schema.fields) mapped.set(f.name, f);
  }
  checkPartitioning(spec, schema, what);

  const location = metadata.location;
  const out: DataFile[] = [];
  for (const file of footers) {
    const at = `${what}: ${file.name}`;
    const rel = relativeTo(location, file.uri);
    if (rel === undefined || rel.split('/').includes('..')) {
      throw invalidInput(`${at}: not inside the table's location ${location}; files are added where they lie, so they must be below the table root (a Delta add path is relative to it); copy the file there first`);
    }
    if (/^(metadata|_delta_log)\//.test(rel)) throw invalidInput(`${at}: inside the table's ${rel.split('/')[0]}/ folder; data files go elsewhere below the table root`);
    const uri = `${location.replace(/\/+$/, '')}/${rel}`;
    const stats = new Map<number, ColumnStats>();
    const withIds = file.columns.some((c) => c.fieldId !== undefined);
    const seen = new Set<number>();
    for (const c of file.columns) {
      if (c.nested) throw unsupported(`${at}: column ${c.name} is nested; adding files with struct, list or map columns is not supported yet`);
      const field = withIds ? (c.fieldId === undefined ? undefined : byId.get(c.fieldId)) : mapped.get(c.name);
      if (!field) {
        const by = withIds ? `field ID ${c.fieldId ?? '(none)'}` : 'name';
        throw invalidInput(`${at}: column ${c.name} (${c.duckdbType}) is not a column of the table (matched by ${by}); expected one of ${schema.fields.map((f) => f.name).join(', ')}`);
      }
      // Readers find a column without a field ID by its physical name, and Delta always does (column mapping by name).
      if (nameOf(field) !== c.name) {
        throw invalidInput(`${at}: column ${c.name} maps to table column ${field.name}, which readers find in files under the name ${nameOf(field)}; rename the file's column`);
      }
      const expected = toDuckDBType(field.type);
      if (typeof field.type !== 'string' || normalizeType(expected) !== normalizeType(c.duckdbType)) {
        throw invalidInput(`${at}: column ${c.name}: expected ${typeToString(field.type)} (${expected}), found ${c.duckdbType}`);
      }
      seen.add(field.id);
      const raw = file.stats.get(c.name) as Raw | undefined;
      if (raw) stats.set(field.id, columnStats(raw, field));
    }
    for (const f of schema.fields) {
      if (f.required && !seen.has(f.id)) throw invalidInput(`${at}: required column ${f.name} (${typeToString(f.type)}) is missing from the file`);
      const nulls = stats.get(f.id)?.nullCount;
      if (f.required && (nulls === undefined || nulls > 0)) {
        throw invalidInput(`${at}: column ${f.name} is required but ${nulls === undefined ? 'the file has no null count for it' : `${nulls} row(s) have no value`}`);
      }
    }
    const fileStats: FileStats = { path: file.path, recordCount: file.rows, sizeBytes: file.bytes, columns: stats };
    out.push({
      content: 0,
      'file-path': uri,
      'file-format': 'PARQUET',
      partition: partitionOf(spec, schema, stats, at),
      'record-count': file.rows,
      'file-size-in-bytes': file.bytes,
      ...icebergMetrics(fileStats, schema),
      'spec-id': spec['spec-id'],
    });
  }
  return out;
}

function canonical(uri: string): string {
  return uri.startsWith('file:') ? new URL(uri).pathname : uri;
}

/** DuckDB spells some types two ways (TIMESTAMPTZ, TIMESTAMP WITH TIME ZONE). */
function normalizeType(t: string): string {
  return t.toUpperCase().replace(/\s+/g, ' ').replace('TIMESTAMP WITH TIME ZONE', 'TIMESTAMPTZ').replace('TIME WITH TIME ZONE', 'TIMETZ').replace(/\s*,\s*/g, ',');
}

/** A column's statistics over all row groups; a bound only when every row group has one. */
function columnStats(raw: Raw, field: NestedField): ColumnStats {
  const out: ColumnStats = { valueCount: raw.valueCount!, sizeBytes: raw.sizeBytes! };
  if (!raw.noNulls) out.nullCount = raw.nullCount!;
  const fold = (texts: string[], side: 1 | -1): LiteralValue | undefined => {
    let best: LiteralValue | undefined;
    for (const t of texts) {
      if (t === NONE) {
        // A row group of nulls only has no bounds and does not widen them; any other gap voids them.
        continue;
      }
      const v = parseDuckDBStatValue(field.type, t);
      if (v === undefined) return undefined;
      if (best === undefined) best = v;
      else {
        const order = compareLiterals(v, best);
        if (order === undefined) return undefined;
        if (order * side > 0) best = v;
      }
    }
    return best;
  };
  // Decimals come as text, which does not order as numbers across row groups.
  const decimal = typeof field.type === 'string' && field.type.startsWith('decimal');
  const complete = raw.rawMin.every((t, i) => t !== NONE || raw.rawMax[i] === NONE) && (!decimal || raw.rawMin.length === 1);
  if (complete) {
    const min = fold(raw.rawMin, -1);
    const max = fold(raw.rawMax, 1);
    if (min !== undefined && max !== undefined) (out.min = min), (out.max = max);
  }
  return out;
}

/** Only identity partitions can be read off a file's statistics, and only when constant in it. */
function checkPartitioning(spec: PartitionSpec, schema: Schema, what: string): void {
  for (const pf of spec.fields) {
    if (pf.transform !== 'identity' && pf.transform !== 'void') {
      throw unsupported(`${what}: the table is partitioned by ${pf.transform}(${schema.fields.find((f) => f.id === pf['source-id'])?.name ?? pf['source-id']}); files can be added only to unpartitioned tables or identity partitions`);
    }
  }
}

function partitionOf(spec: PartitionSpec, schema: Schema, stats: Map<number, ColumnStats>, at: string): PartitionTuple {
  const tuple: PartitionTuple = {};
  for (const pf of spec.fields) {
    if (pf.transform === 'void') {
      tuple[pf.name] = null;
      continue;
    }
    const field = schema.fields.find((f) => f.id === pf['source-id'])!;
    const s = stats.get(field.id);
    const type = field.type as string;
    if (s && s.nullCount !== undefined && s.valueCount !== undefined && s.nullCount === s.valueCount) {
      tuple[pf.name] = null;
      continue;
    }
    if (!s || s.nullCount !== 0 || s.min === undefined || s.max === undefined || compareLiterals(s.min, s.max) !== 0) {
      throw invalidInput(`${at}: partition column ${field.name} is not one value in the file (footer min ${String(s?.min)}, max ${String(s?.max)}, nulls ${String(s?.nullCount)}); a file goes into one identity partition`);
    }
    tuple[pf.name] = type.startsWith('decimal') || type === 'uuid' ? toBinary(type, s.min) : s.min;
  }
  return tuple;
}

/**
 * The files were checked not to be live in `prepared`'s current snapshot. An attempt on a table
 * that has moved on since prepares again (`rerun`), so the check runs on what the commit builds
 * on: two add-files of one file racing each other cannot both add it.
 */
function sameSnapshotAs(prepared: TableMetadata): TableAction {
  const id = (s: Snapshot | undefined) => s?.['snapshot-id'];
  return {
    async apply(base) {
      if (id(currentSnapshot(base.metadata)) === id(currentSnapshot(prepared))) return { status: 'apply', requirements: [], updates: [] };
      return { status: 'rerun', why: 'a concurrent commit changed the table these files were checked against' };
    },
  };
}
