import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { invalidInput, isTwinlakeError, TwinlakeError } from '../core/errors.ts';
import { localPathIfFile } from '../core/uri.ts';
import { typeToString } from '../format/iceberg/schema.ts';
import type { IcebergType, StructType } from '../format/iceberg/types.ts';
import { structFromDescribe } from '../format/parquet/duckdb-types.ts';
import { conversionChecks, fieldIdsClause, parseCastFailure, selectList, type CastFailure } from '../format/parquet/field-ids.ts';
import { parseReturnStats, type FileStats } from '../format/parquet/stats.ts';
import { quoteIdent, quoteString, type DuckDBSession } from './duckdb-session.ts';
import type { EngineSettings } from './engine-settings.ts';
import { describeRelation, inputLabel, inputPaths, type InputFile } from './infer-schema.ts';
import { firstBadJsonLine, linesReadable, scanLines } from './text-lines.ts';

export interface EncodeOptions {
  /** FROM-clause SQL of the rows to write (see `inputRelation`). */
  source: string;
  /** The table schema; the input's columns are matched to it by logical name. */
  schema: StructType;
  physicalNames: Map<number, string>;
  /** Local directory the files are written into (created if missing; other files are left alone). */
  outputDir: string;
  /** Files roll over once they reach this size, at a row-group boundary. */
  targetFileSizeBytes: number;
  compression?: 'zstd' | 'snappy' | 'uncompressed';
  /** Start of every file name; a UUID follows. */
  filePrefix: string;
  /** Rows per row group (DuckDB default 122880). Smaller groups let small targets roll sooner. */
  rowGroupSize?: number;
  /** The input `source` reads, so a failure can name the line of the offending row. */
  input?: InputFile;
  /**
   * Split rows by these key expressions (SQL over the table's physical columns): every file holds
   * one combination of keys. DuckDB cannot roll files inside partitions, so a partition's rows go
   * to one file whatever the target size.
   */
  partitionBy?: PartitionBy[];
  /** For partitioned writes: the folder (relative to `outputDir`) a file with these keys goes to. */
  placeFile?: (keys: Map<string, string | null>) => string;
}

/** One partition key of a partitioned write (see `PartitionKey` in partition-keys.ts). */
export interface PartitionBy {
  alias: string;
  sql: string;
  unbounded?: boolean;
  /** The most distinct values the key can take besides null, when its transform bounds them. */
  distinct?: number;
}

/** A written file's statistics, and the partition keys it holds when the write was partitioned. */
export type EncodedFileStats = FileStats & { partitionKeys?: Map<string, string | null> };

const ALIAS = 'src';

/** RETURN_STATS `partition_keys`: a MAP(VARCHAR, VARCHAR), as entries or an object. */
function partitionKeysOf(raw: unknown): Map<string, string | null> {
  const out = new Map<string, string | null>();
  const entries: [unknown, unknown][] =
    raw instanceof Map ? [...raw] : Array.isArray(raw) ? raw.map((e: { key: unknown; value: unknown }) => [e.key, e.value]) : Object.entries((raw ?? {}) as object);
  for (const [k, v] of entries) out.set(String(k), v === null || v === undefined ? null : String(v));
  return out;
}

/** One row of a COPY's RETURN_STATS as the file's statistics, for files written outside `encodeParquet`. */
export function fileStatsOf(row: Record<string, unknown>, schema: StructType, physicalNames: Map<number, string>): FileStats {
  return parseReturnStats(statsRowOf(row), schema, physicalNames);
}

function statsRowOf(row: Record<string, unknown>) {
  const toMap = (entries: unknown): Map<string, unknown> => {
    if (entries instanceof Map) return entries as Map<string, unknown>;
    if (Array.isArray(entries)) return new Map(entries.map((e: { key: string; value: unknown }) => [e.key, e.value]));
    return new Map(Object.entries((entries ?? {}) as Record<string, unknown>));
  };
  const columnStatistics = new Map<string, Map<string, string>>();
  for (const [path, stats] of toMap(row.column_statistics)) {
    columnStatistics.set(path, new Map([...toMap(stats)].map(([k, v]) => [k, String(v)])));
  }
  return { filename: String(row.filename), count: row.count as bigint, fileSizeBytes: row.file_size_bytes as bigint, columnStatistics };
}

/**
 * Writes the source's rows as Parquet files with an Iceberg field ID on every column and returns
 * each file's statistics. DuckDB streams the COPY (memory stays near the session's memory_limit);
 * a partitioned write stages its rows first (see `copyPartitioned`).
 * A value that does not fit its column fails with an `invalid-input` error naming the column, the
 * line (NDJSON, CSV) or record (JSON) of the row, the value and the expected type; no file is left.
 */
export async function encodeParquet(session: DuckDBSession, options: EncodeOptions): Promise<EncodedFileStats[]> {
  if (!(options.targetFileSizeBytes > 0)) throw invalidInput(`encode: expected a positive target file size, found ${options.targetFileSizeBytes}`);
  if (/[/\\{}]/.test(options.filePrefix)) throw invalidInput(`encode: file prefix may not contain '/', '\\', '{' or '}', found ${JSON.stringify(options.filePrefix)}`);
  let inputType: StructType;
  try {
    inputType = structFromDescribe(await describeRelation(session, options.source), { lenient: true });
  } catch (e) {
    // Readers such as read_csv already parse the file while binding.
    throw await diagnose(session, options, { type: 'struct', fields: [] }, e);
  }
  const select = selectList(options.schema, options.physicalNames, { alias: ALIAS, type: inputType });
  // Files are written to a private folder and moved into place only when the whole COPY succeeded,
  // so a failure midway leaves nothing behind.
  const staging = join(options.outputDir, `.twinlake-staging-${randomUUID()}`);
  try {
    await mkdir(staging, { recursive: true });
  } catch (e) {
    throw new TwinlakeError('io', `encode: cannot create files in ${options.outputDir}: ${e instanceof Error ? e.message : String(e)}`, {}, { cause: e, retryable: false });
  }
  const partitioned = (options.partitionBy?.length ?? 0) > 0;
  const copyOptions = [
    'FORMAT parquet',
    `COMPRESSION ${options.compression ?? 'zstd'}`,
    `FIELD_IDS ${fieldIdsClause(options.schema, options.physicalNames)}`,
    ...(partitioned
      ? [`PARTITION_BY (${options.partitionBy!.map((p) => quoteIdent(p.alias)).join(', ')})`, 'APPEND']
      : [`FILE_SIZE_BYTES ${Math.floor(options.targetFileSizeBytes)}`]),
    `FILENAME_PATTERN ${quoteString(`${options.filePrefix}{uuid}`)}`,
    'RETURN_STATS',
    ...(options.rowGroupSize ? [`ROW_GROUP_SIZE ${Math.floor(options.rowGroupSize)}`] : []),
  ].join(', ');
  const query = `SELECT ${select} FROM ${options.source} AS ${ALIAS}`;
  try {
    let rows: Record<string, unknown>[];
    try {
      rows = partitioned
        ? await copyPartitioned(session, query, options.partitionBy!, staging, copyOptions)
        : await session.all(`COPY (${query}) TO ${quoteString(staging)} (${copyOptions})`);
    } catch (e) {
      throw await diagnose(session, options, inputType, e);
    }
    const files: EncodedFileStats[] = [];
    for (const row of rows) {
      const stats = parseReturnStats(statsRowOf(row), options.schema, options.physicalNames);
      // An empty input can still produce an empty file; a data file with no rows is useless.
      if (stats.recordCount === 0) continue;
      const keys = partitioned ? partitionKeysOf(row.partition_keys) : undefined;
      const dir = keys && options.placeFile ? join(options.outputDir, options.placeFile(keys)) : options.outputDir;
      if (dir !== options.outputDir) await mkdir(dir, { recursive: true });
      const target = join(dir, basename(stats.path));
      await rename(stats.path, target);
      files.push({ ...stats, path: target, ...(keys ? { partitionKeys: keys } : {}) });
    }
    return files;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The longest partition key DuckDB may use as (part of) a folder name: 255 bytes less `<alias>=`. */
const MAX_STAGED_KEY_BYTES = 200;

/**
 * How many partitions one COPY may write at once. DuckDB's partitioned COPY keeps, per thread, a
 * buffer for every partition it has seen since its last flush, and a writer for every open file;
 * each holds at least one 256 KiB block whatever its size, so 10,000 partitions in one COPY need
 * gigabytes however few rows they hold. About 1 MiB per partition and thread keeps the blocks
 * within the memory limit with room for the rows themselves (measured: 256 partitions of a
 * 12-column nested table at 256 MB and 2 threads pass, 512 do not).
 */
export function partitionsPerCopy(settings: EngineSettings): number {
  return Math.max(8, Math.min(2048, Math.floor(settings.memoryLimitBytes / settings.threads / 2 ** 20)));
}

/**
 * A partitioned COPY in bounded memory, whatever the number of partitions. Unless the keys'
 * transforms bound the partitions to one COPY's share, the rows are staged once in an engine table (which spills to the temp folder past the memory limit), their
 * partitions counted, and then written by one COPY when they fit `partitionsPerCopy`, or else in
 * groups of that many partitions, each group's rows stored together so each COPY reads only its
 * own. A partition is written by one COPY only, so each partition is one file (DuckDB cannot
 * roll files inside a partition) and no file ever holds two partitions.
 */
async function copyPartitioned(
  session: DuckDBSession,
  query: string,
  keys: PartitionBy[],
  dir: string,
  copyOptions: string,
): Promise<Record<string, unknown>[]> {
  const id = randomUUID().replace(/-/g, '');
  const staged = quoteIdent(`__tl_stage_${id}`);
  const groups = quoteIdent(`__tl_groups_${id}`);
  const grouped = quoteIdent(`__tl_grouped_${id}`);
  const aliases = keys.map((k) => quoteIdent(k.alias));
  const group = quoteIdent('__tl_group');
  // DuckDB names each partition's folder `<alias>=<key>`: a key of unbounded text (a long string
  // value) would pass the file system's 255-byte limit on a name. Such a key is written as `!` and
  // its MD5 (url_encode and to_hex never write `!`, so no short key looks alike), and put back
  // from the staged rows once the files are written.
  const unbounded = keys.filter((k) => k.unbounded).map((k) => quoteIdent(k.alias));
  const short = (a: string) => `CASE WHEN strlen(${a}) > ${MAX_STAGED_KEY_BYTES} THEN '!' || md5(${a}) ELSE ${a} END`;
  const shortened = (from: string) => (unbounded.length === 0 ? from : `SELECT * REPLACE (${unbounded.map((a) => `${short(a)} AS ${a}`).join(', ')}) FROM (${from})`);
  const copy = (from: string) => session.all(`COPY (${shortened(from)}) TO ${quoteString(dir)} (${copyOptions})`);
  const restore = async (rows: Record<string, unknown>[], table: string): Promise<Record<string, unknown>[]> => {
    const long = new Map<string, Map<string, string>>();
    for (const k of keys.filter((k) => k.unbounded)) {
      const a = quoteIdent(k.alias);
      const found = await session.all(`SELECT DISTINCT '!' || md5(${a}) AS short, ${a} AS key FROM ${table} WHERE strlen(${a}) > ${MAX_STAGED_KEY_BYTES}`);
      if (found.length > 0) long.set(k.alias, new Map(found.map((r) => [String(r.short), String(r.key)])));
    }
    if (long.size === 0) return rows;
    return rows.map((row) => {
      const restored = partitionKeysOf(row.partition_keys);
      for (const [alias, byShort] of long) {
        const v = restored.get(alias);
        if (v !== undefined && v !== null && byShort.has(v)) restored.set(alias, byShort.get(v)!);
      }
      return { ...row, partition_keys: restored };
    });
  };
  const perCopy = partitionsPerCopy(session.settings);
  // Keys that can take only so many values (bucket[N], a boolean; each may be null too) need no
  // count: when they cannot pass one COPY's share, the rows go straight from the input to one
  // COPY, as DuckDB's own partitioned COPY does, with no staged copy of them.
  const bound = keys.every((k) => k.distinct !== undefined) ? keys.reduce((n, k) => n * (k.distinct! + 1), 1) : Infinity;
  if (bound <= perCopy) {
    await session.run(`SET partitioned_write_max_open_files = ${Math.max(perCopy, 100)}`);
    return await copy(`SELECT *, ${keys.map((k) => `${k.sql} AS ${quoteIdent(k.alias)}`).join(', ')} FROM (${query})`);
  }
  try {
    await session.run(`CREATE TEMP TABLE ${staged} AS SELECT *, ${keys.map((k) => `${k.sql} AS ${quoteIdent(k.alias)}`).join(', ')} FROM (${query})`);
    const [{ n }] = await session.all(`SELECT count(*) AS n FROM (SELECT DISTINCT ${aliases.join(', ')} FROM ${staged})`);
    const partitions = Number(n);
    // Every partition of a COPY keeps its file open, so a partition is never split in two.
    await session.run(`SET partitioned_write_max_open_files = ${Math.max(perCopy, 100)}`);
    if (partitions <= perCopy) return await restore(await copy(`SELECT * FROM ${staged}`), staged);
    await session.run(
      `CREATE TEMP TABLE ${groups} AS SELECT *, (row_number() OVER (ORDER BY ${aliases.join(', ')}) - 1) // ${perCopy} AS ${group} ` +
        `FROM (SELECT DISTINCT ${aliases.join(', ')} FROM ${staged})`,
    );
    // Null keys are partitions too: match them with IS NOT DISTINCT FROM.
    const on = aliases.map((a) => `s.${a} IS NOT DISTINCT FROM g.${a}`).join(' AND ');
    await session.run(`CREATE TEMP TABLE ${grouped} AS SELECT s.*, g.${group} FROM ${staged} s JOIN ${groups} g ON ${on} ORDER BY g.${group}`);
    await session.run(`DROP TABLE ${staged}`);
    const rows: Record<string, unknown>[] = [];
    for (let g = 0; g * perCopy < partitions; g++) {
      rows.push(...(await copy(`SELECT * EXCLUDE (${group}) FROM ${grouped} WHERE ${group} = ${g}`)));
    }
    return await restore(rows, grouped);
  } finally {
    for (const table of [staged, groups, grouped]) await session.run(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// Bad input

async function diagnose(session: DuckDBSession, options: EncodeOptions, inputType: StructType, e: unknown): Promise<unknown> {
  if (!isTwinlakeError(e)) return e;
  const input = options.input;
  const paths = input ? inputPaths(input) : [];
  // The file DuckDB names in its message, or the only one.
  const named = /in file "([^"]*)"/.exec(e.message)?.[1];
  const fileOf = (path: string | undefined) => path ?? named ?? (paths.length === 1 ? paths[0] : undefined);
  const where = (path?: string) => nameOf(input, fileOf(path));
  // A partition key expression refused a value (see truncateSql in partition-keys.ts).
  const refused = /Invalid Input Error: (partition [^\n]*)/.exec(e.message);
  if (refused) return new TwinlakeError('invalid-input', `${where()}: ${refused[1]}`, {}, { cause: e });
  const cast = parseCastFailure(e.message);
  if (cast) {
    const bad = await firstBadRecord(session, options, inputType, cast).catch(() => undefined);
    const position = bad === undefined || !input ? '' : ` at ${await positionOf(input, bad.file ?? fileOf(undefined), bad.record)}`;
    const found = cast.value === undefined ? 'null (the column is required)' : JSON.stringify(cast.value);
    return new TwinlakeError('invalid-input', `${where(bad?.file)}: column "${cast.path}"${position}: expected ${cast.expected}, found ${found}`, { ...cast, record: bad?.record }, { cause: e });
  }
  if (input?.format === 'ndjson' && /Malformed JSON/.test(e.message)) {
    for (const path of named ? [named] : paths) {
      if (!linesReadable(path)) continue;
      const bad = await firstBadJsonLine(path).catch(() => undefined);
      if (bad) return new TwinlakeError('invalid-input', `${where(path)}: ${lineWord(input, path)} ${bad.line}${bad.problem}`, { line: bad.line }, { cause: e });
    }
  }
  if (input?.format === 'csv' && /Error when sniffing file/.test(e.message)) {
    for (const path of named ? [named] : paths) {
      if (!linesReadable(path)) continue;
      const located = await locateCsvShapeError(session, input, path).catch(() => undefined);
      if (located) return diagnose(session, { ...options, input: { ...input, path } }, inputType, located);
    }
  }
  const misfit = /JSON transform error in file "([^"]*)", (?:at byte \d+ )?in line (\d+)/.exec(e.message);
  if (misfit && input?.format === 'ndjson' && linesReadable(misfit[1]!)) {
    // DuckDB names the line but not the column: find the value whose shape does not fit.
    const found = await shapeMismatchAt(misfit[1]!, Number(misfit[2]), options.schema).catch(() => undefined);
    if (found) {
      const { line } = found;
      const value = JSON.stringify(found.value).slice(0, 200);
      return new TwinlakeError('invalid-input', `${where(misfit[1])}: column "${found.path}" at ${lineWord(input, misfit[1]!)} ${line}: expected ${found.expected}, found ${value}`, { line, path: found.path }, { cause: e });
    }
  }
  return describeReadError(input, e) ?? e;
}

/**
 * A reader's own message about a bad line (JSON, CSV), restated with the input's name for the
 * file; undefined when the message is not one of those.
 */
export function describeReadError(input: InputFile | undefined, e: unknown): TwinlakeError | undefined {
  if (!(e instanceof Error)) return undefined;
  const paths = input ? inputPaths(input) : [];
  const where = (path: string | undefined) => nameOf(input, path);
  const json = /(?:Malformed JSON|JSON transform error) in file "([^"]*)", (?:at byte \d+ )?in line (\d+): ([^\n]*)/.exec(e.message);
  if (json) return new TwinlakeError('invalid-input', `${where(json[1])}: ${lineWord(input, json[1])} ${json[2]}: ${json[3].trim()}`, { line: Number(json[2]) }, { cause: e });
  const csv = /CSV Error on Line: (\d+)\n(?:Original Line: ([^\n]*)\n)?([^\n]*)/.exec(e.message);
  if (csv) {
    const original = csv[2] === undefined ? '' : ` in ${JSON.stringify(csv[2].length > 200 ? `${csv[2].slice(0, 200)}…` : csv[2])}`;
    const file = /\bfile = ([^\n]+)/.exec(e.message.slice(csv.index + csv[0].length))?.[1]?.trim();
    const path = file && paths.includes(file) ? file : undefined;
    return new TwinlakeError('invalid-input', `${where(path)}: line ${csv[1]}: ${csv[3].trim()}${original}`, { line: Number(csv[1]) }, { cause: e });
  }
  return undefined;
}

/** How file `path` of the input (or its only file) is named in messages. */
function nameOf(input: InputFile | undefined, path: string | undefined): string {
  const paths = input ? inputPaths(input) : [];
  const p = path ?? (paths.length === 1 ? paths[0] : undefined);
  return input && p !== undefined ? inputLabel(input, p).label : 'input';
}

/** "line", or "record" for records a write spooled one per line. */
function lineWord(input: InputFile | undefined, path: string): string {
  return input && inputLabel(input, path).unit === 'record' ? 'record' : 'line';
}

/**
 * DuckDB's CSV sniffer rejects a file with a ragged row without saying where. Reading it again
 * with the header's column count fixed (no sniffing) makes DuckDB name the line.
 */
async function locateCsvShapeError(session: DuckDBSession, input: InputFile, path: string): Promise<unknown> {
  const c = input.csv ?? {};
  const delimiter = c.delimiter ?? ',';
  const quote = c.quote ?? '"';
  let header: string | undefined;
  for await (const { text } of scanLines(path)) {
    header = text;
    break;
  }
  if (header === undefined) return undefined;
  let count = 1;
  let quoted = false;
  for (const ch of header) {
    if (ch === quote) quoted = !quoted;
    else if (!quoted && ch === delimiter) count++;
  }
  const columns = Array.from({ length: count }, (_, i) => `'c${i}': 'VARCHAR'`).join(', ');
  const size = input.maxLineBytes === undefined ? '' : `, max_line_size = ${Math.ceil(input.maxLineBytes)}, buffer_size = ${2 * Math.ceil(input.maxLineBytes)}`;
  try {
    await session.run(
      `SELECT count(*) FROM read_csv(${quoteString(localPathIfFile(path))}, auto_detect = false, header = ${c.header ?? true ? 'true' : 'false'}, delim = ${quoteString(delimiter)}, quote = ${quoteString(quote)}, escape = ${quoteString(c.escape ?? quote)}${size}, columns = {${columns}})`,
    );
  } catch (e) {
    return e;
  }
  return undefined;
}

/**
 * The first record whose conversion fails, in the source's scan order: its 1-based number within
 * its file, and the file (when the reader can say; a column of the input named `filename` hides
 * DuckDB's virtual column of that name).
 */
async function firstBadRecord(
  session: DuckDBSession,
  options: EncodeOptions,
  inputType: StructType,
  cast: CastFailure,
): Promise<{ record: number; file?: string } | undefined> {
  const checks = conversionChecks(options.schema, options.physicalNames, { alias: ALIAS, type: inputType });
  const column = checks
    .filter((c) => cast.path === c.name || cast.path.startsWith(`${c.name}.`))
    .sort((a, b) => b.name.length - a.name.length)[0];
  const condition = column ? `NOT (${column.check})` : `NOT (${checks.map((c) => c.check).join(' AND ')})`;
  const byFile = options.input !== undefined && !inputType.fields.some((f) => f.name.toLowerCase() === 'filename');
  const file = byFile ? `${ALIAS}.filename` : 'NULL::VARCHAR';
  const rows = await session.all(
    `SELECT __file, __rn - min(__rn) OVER (PARTITION BY __file) + 1 AS __n, __rn, __bad FROM (SELECT row_number() OVER () AS __rn, ${file} AS __file, ${condition} AS __bad FROM ${options.source} AS ${ALIAS}) QUALIFY __bad ORDER BY __rn LIMIT 1`,
  );
  if (!rows.length) return undefined;
  const found = rows[0].__file === null || rows[0].__file === undefined ? undefined : String(rows[0].__file);
  return { record: Number(found === undefined ? rows[0].__rn : rows[0].__n), ...(found === undefined ? {} : { file: found }) };
}

/**
 * Where record `n` of a file sits: NDJSON skips blank lines, so the line is counted; a CSV record
 * is one line after the header, as DuckDB numbers CSV lines; JSON documents have records; records
 * a write spooled are numbered as given.
 */
async function positionOf(input: InputFile, path: string | undefined, record: number): Promise<string> {
  if (path !== undefined && inputLabel(input, path).unit === 'record') return `record ${record}`;
  if (input.format === 'csv') return `line ${record + (input.csv?.header ?? true ? 1 : 0)}`;
  if (input.format !== 'ndjson' || path === undefined || !linesReadable(path)) return `record ${record}`;
  let line = 0;
  let seen = 0;
  for await (const { text, bytes } of scanLines(path)) {
    line++;
    if ((text === undefined ? bytes > 0 : text.trim() !== '') && ++seen === record) return `line ${line}`;
  }
  return `record ${record}`;
}

/**
 * The value of NDJSON line `line` whose JSON kind does not fit its column: an object for a struct
 * or map, an array for a list. (Primitives are read as text and checked by the conversion.)
 * DuckDB names the line after the bad one for an element inside a list: when the named line fits,
 * the first line that does not is the one.
 */
async function shapeMismatchAt(path: string, line: number, schema: StructType): Promise<({ line: number } & ShapeMismatch) | undefined> {
  const mismatchOf = (text: string | undefined): ShapeMismatch | undefined => {
    if (text === undefined || text.trim() === '') return undefined;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    if (record === null || typeof record !== 'object') return undefined;
    for (const f of schema.fields) {
      const found = shapeMismatch(fieldOf(record, f.name), f.type, f.name);
      if (found) return found;
    }
    return undefined;
  };
  let first: ({ line: number } & ShapeMismatch) | undefined;
  let n = 0;
  for await (const { text } of scanLines(path)) {
    n++;
    const found = n === line || !first ? mismatchOf(text) : undefined;
    if (found && n === line) return { line: n, ...found };
    if (found && !first) first = { line: n, ...found };
    if (n >= line && first) return first;
  }
  return first;
}

interface ShapeMismatch {
  path: string;
  expected: string;
  value: unknown;
}

/** A JSON object's member by name: exact, else the one case-insensitive match. */
function fieldOf(object: Record<string, unknown>, name: string): unknown {
  if (name in object) return object[name];
  const folded = Object.keys(object).filter((k) => k.toLowerCase() === name.toLowerCase());
  return folded.length === 1 ? object[folded[0]!] : undefined;
}

function shapeMismatch(value: unknown, type: IcebergType, path: string): ShapeMismatch | undefined {
  if (value === null || value === undefined || typeof type === 'string') return undefined;
  const isObject = typeof value === 'object' && !Array.isArray(value);
  if (type.type === 'list') {
    if (!Array.isArray(value)) return { path, expected: typeToString(type), value };
    for (const element of value) {
      const found = shapeMismatch(element, type.element, `${path}.element`);
      if (found) return found;
    }
    return undefined;
  }
  if (!isObject) return { path, expected: typeToString(type), value };
  const object = value as Record<string, unknown>;
  if (type.type === 'map') {
    for (const v of Object.values(object)) {
      const found = shapeMismatch(v, type.value, `${path}.value`);
      if (found) return found;
    }
    return undefined;
  }
  for (const f of type.fields) {
    const found = shapeMismatch(fieldOf(object, f.name), f.type, `${path}.${f.name}`);
    if (found) return found;
  }
  return undefined;
}
