import { type FileHandle, open } from 'node:fs/promises';
import type { DuckDBValue } from '@duckdb/node-api';
import {
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBListValue,
  DuckDBMapValue,
  DuckDBStructValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBTimeValue,
  DuckDBUUIDValue,
} from '@duckdb/node-api';
import { dataInvalid, internal, invalidInput, unsupported } from '../core/errors.ts';
import { localPath, localPathIfFile, SCHEME_AND_AUTHORITY } from '../core/uri.ts';
import { formatDate, formatTime, formatTimestamp, fromJsonValue, unscaledToDecimal } from '../format/iceberg/single-value.ts';
import type { IcebergType, NestedField } from '../format/iceberg/types.ts';
import { quoteIdent, quoteString, sqlLiteral, toDuckDBType } from '../format/parquet/duckdb-types.ts';
import { physicalName } from '../format/parquet/field-ids.ts';
import { decodeDeletionVectorBlob } from '../format/delta/deletion-vector.ts';
import { decodePuffinFooter, type FileMetadata } from '../format/iceberg/puffin.ts';
import type { RoaringBitmap64 } from '../format/roaring.ts';
import type { EqualityDeleteFile, LiteralValue, PositionDeletes, ScanFile, ScanTask } from '../format/scan-task.ts';
import type { DuckDBSession } from './duckdb-session.ts';
import { varcharColumnBytes } from './varchar-bytes.ts';

const FILE_COL = '__tl_file';
const ROW_COL = '__tl_row';
const colAlias = (f: NestedField) => `__tl_c${f.id}`;

export interface ScanSqlOptions {
  /**
   * Local paths of files to match by physical name although the task resolves by field ID:
   * files written without field IDs (see `filesWithoutFieldIds`).
   */
  nameMappedFiles?: Set<string>;
  limit?: number;
}

function readType(field: NestedField, physicalNames: Map<number, string>): string {
  // Struct members are matched by name inside a column, so the read type uses physical names.
  return toDuckDBType(field.type, { nameOf: (f) => physicalName(f, physicalNames) });
}

/** A column's default for files that lack it: its `initial-default` (Iceberg), else null. */
function defaultValue(field: NestedField): string {
  const initial = field['initial-default'];
  if (initial === undefined || initial === null || typeof field.type !== 'string') return 'CAST(NULL AS VARCHAR)';
  // DuckDB requires one type for all defaults of the schema map; it casts the text back.
  return `CAST(${sqlLiteral(field.type, fromJsonValue(field.type, initial) as LiteralValue)} AS VARCHAR)`;
}

/**
 * One `read_parquet` over `paths`. `virtual` adds DuckDB's virtual columns `filename` and
 * `file_row_number`, which joins and deletes match on; they are left out otherwise, since asking
 * for them costs a plain scan about a quarter of its time.
 */
function readParquet(paths: string[], task: ScanTask, fields: NestedField[], byName: boolean, virtual: boolean): string {
  const entries = fields.map((f) => {
    const key = byName ? quoteString(physicalName(f, task.physicalNames)) : `CAST(${f.id} AS INTEGER)`;
    return `${key}: {name: ${quoteString(colAlias(f))}, type: ${quoteString(readType(f, task.physicalNames))}, default_value: ${defaultValue(f)}}`;
  });
  const list = `[${paths.map(quoteString).join(', ')}]`;
  // filename and file_row_number are DuckDB's virtual columns; the schema's aliases cannot clash.
  const extra = virtual ? `, filename AS ${quoteIdent(FILE_COL)}, file_row_number AS ${quoteIdent(ROW_COL)}` : '';
  return `SELECT *${extra} FROM read_parquet(${list}, schema = MAP {${entries.join(', ')}}, hive_partitioning = false)`;
}

/** SQL that renames physical struct member names to logical ones, or undefined when none differ. */
function logicalExpr(type: IcebergType, expr: string, physicalNames: Map<number, string>, depth: number): string | undefined {
  if (typeof type === 'string') return undefined;
  const v = `__y${depth}`;
  if (type.type === 'struct') {
    const parts = type.fields.map((f) => {
      const inner = `struct_extract(${expr}, ${quoteString(physicalName(f, physicalNames))})`;
      const renamed = logicalExpr(f.type, inner, physicalNames, depth + 1);
      return { f, sql: renamed ?? inner, same: renamed === undefined && physicalName(f, physicalNames) === f.name };
    });
    if (parts.every((p) => p.same)) return undefined;
    return `CASE WHEN ${expr} IS NULL THEN NULL ELSE struct_pack(${parts.map((p) => `${quoteIdent(p.f.name)} := ${p.sql}`).join(', ')}) END`;
  }
  if (type.type === 'list') {
    const e = logicalExpr(type.element, v, physicalNames, depth + 1);
    return e === undefined ? undefined : `list_transform(${expr}, lambda ${v}: ${e})`;
  }
  const k = logicalExpr(type.key, `${v}.key`, physicalNames, depth + 1);
  const val = logicalExpr(type.value, `${v}.value`, physicalNames, depth + 1);
  if (k === undefined && val === undefined) return undefined;
  return `map_from_entries(list_transform(map_entries(${expr}), lambda ${v}: struct_pack(key := ${k ?? `${v}.key`}, value := ${val ?? `${v}.value`})))`;
}

/**
 * A DuckDB query returning the task's rows under the logical schema. Files are read with one
 * `read_parquet` over all of them (columns found by field ID or physical name; a column missing
 * from older files reads as its initial default or null; narrower types such as int are widened).
 * Per-file constants (partition values) are joined on the file name from one VALUES list, which
 * stays one hash join however many files there are. Row-level deletes are anti-joins (see
 * `deleteJoins`); vectors must be loaded first (`loadDeletionVectors`). Rows come in task order:
 * file by file, each file's rows in file order.
 */
export function scanRelationSql(task: ScanTask, options: ScanSqlOptions = {}): string {
  const fields = task.schema.fields.filter((f) => f.type !== 'unknown');
  const limit = options.limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(options.limit))}`;
  const topIds = new Set(task.schema.fields.map((f) => f.id));
  const constIds = [...new Set(task.files.flatMap((f) => [...(f.constants?.keys() ?? [])]))];
  for (const id of constIds) if (!topIds.has(id)) throw unsupported(`scan: constants for nested field ${id} are not supported`);
  const constFields = task.schema.fields.filter((f) => constIds.includes(f.id));

  const columnExpr = (f: NestedField): string => {
    const expr = `t.${quoteIdent(colAlias(f))}`;
    return constIds.includes(f.id) ? `CASE WHEN k.${quoteIdent(`__tl_h${f.id}`)} THEN k.${quoteIdent(`__tl_v${f.id}`)} ELSE ${expr} END` : expr;
  };
  const projection = task.schema.fields.map((f) => {
    if (f.type === 'unknown') return `NULL AS ${quoteIdent(f.name)}`;
    const expr = columnExpr(f);
    return `${logicalExpr(f.type, expr, task.physicalNames, 0) ?? expr} AS ${quoteIdent(f.name)}`;
  });

  if (task.files.length === 0) {
    const empty = task.schema.fields.map((f) => `CAST(NULL AS ${f.type === 'unknown' ? 'INTEGER' : toDuckDBType(f.type)}) AS ${quoteIdent(f.name)}`);
    return `SELECT ${empty.join(', ') || 'NULL AS __tl_none'} WHERE FALSE`;
  }
  if (fields.length === 0) throw unsupported('scan: a schema without readable columns is not supported');

  const mapped = options.nameMappedFiles ?? new Set<string>();
  const deletes = deleteJoins(task, [...fields, ...(task.hiddenFields ?? [])], mapped, columnExpr);
  const readFields = [...fields, ...(deletes?.hiddenFields ?? [])];
  const paths = task.files.map((f) => localPath(f.path));
  const groups = readGroups(paths, task, mapped);
  // One read_parquet keeps the task's file and row order by itself; a join or a union does not.
  const joined = constFields.length > 0 || groups.length > 1 || deletes !== undefined;
  const reads = groups.map((g) => readParquet(g.paths, task, readFields, g.byName, joined));
  let from = reads.length === 1 ? `(${reads[0]}) AS t` : `(${reads.join(' UNION ALL ')}) AS t`;
  if (!joined) return `SELECT ${projection.join(', ')} FROM ${from}${limit}`;

  const rows = task.files.map((file, index) => {
    const cells = constFields.flatMap((f) => {
      const has = file.constants?.has(f.id) ?? false;
      return [has ? 'TRUE' : 'FALSE', sqlLiteral(f.type, has ? file.constants!.get(f.id)! : null)];
    });
    const groupOf = deletes?.equalityGroupOf;
    const group = groupOf?.[index];
    const extra = groupOf ? [group === undefined ? 'NULL' : String(group)] : [];
    return `(${[quoteString(localPath(file.path)), String(index), ...extra, ...cells].join(', ')})`;
  });
  const names = [
    '__tl_path',
    '__tl_index',
    ...(deletes?.equalityGroupOf ? ['__tl_eqg'] : []),
    ...constFields.flatMap((f) => [`__tl_h${f.id}`, `__tl_v${f.id}`]),
  ].map(quoteIdent);
  from += ` JOIN (VALUES ${rows.join(', ')}) AS k(${names.join(', ')}) ON t.${quoteIdent(FILE_COL)} = k.__tl_path`;
  if (deletes) from += deletes.joins.join('');
  // A hash join may emit rows in any order; files and rows keep the task's order, as without it.
  return `SELECT ${projection.join(', ')} FROM ${from} ORDER BY k.__tl_index, t.${quoteIdent(ROW_COL)}${limit}`;
}

/** One read per column resolution: by field ID, and by name for files without field IDs. */
function readGroups(paths: string[], task: ScanTask, nameMapped: Set<string>): { paths: string[]; byName: boolean }[] {
  const byName = task.resolution === 'name';
  const groups = byName ? [{ paths, byName }] : [
    { paths: paths.filter((p) => !nameMapped.has(p)), byName: false },
    { paths: paths.filter((p) => nameMapped.has(p)), byName: true },
  ];
  return groups.filter((g) => g.paths.length > 0);
}

// ---------------------------------------------------------------------------------------------
// Row-level deletes

interface DeleteJoins {
  /** ` ANTI JOIN …` clauses against `t` (the rows) and `k` (the per-file VALUES list). */
  joins: string[];
  /** Per file index, its equality group (files with the same equality delete files share one). */
  equalityGroupOf?: (number | undefined)[];
  hiddenFields: NestedField[];
}

/**
 * Anti-joins that drop deleted rows. Positions from every source become one relation of
 * (file index, position) matched against DuckDB's `file_row_number`; position delete files are
 * read by DuckDB and keep only the rows naming the data file. Equality deletes are matched per
 * set of equality columns with IS NOT DISTINCT FROM (null equals null), against the columns as
 * the scan returns them (partition constants included); data files that share the same equality
 * delete files share a group, so the pairs list stays small however many files a delete covers.
 */
function deleteJoins(task: ScanTask, readable: NestedField[], nameMapped: Set<string>, columnExpr: (f: NestedField) => string): DeleteJoins | undefined {
  const positions: string[] = [];
  const ranges: string[] = [];
  const posFiles: string[] = [];
  const posPaths = new Set<string>();
  const groups = new Map<string, number>();
  const groupFiles: EqualityDeleteFile[][] = [];
  const equalityGroupOf: (number | undefined)[] = [];
  task.files.forEach((file, index) => {
    for (const p of file.deletes?.positions ?? []) {
      if (p.kind === 'vector') throw internal(`scan: the deletion vector at ${p.path}@${p.offset} must be loaded first (loadDeletionVectors)`);
      if (p.kind === 'bitmap') {
        const text = bitmapRangesText(p.bitmap);
        if (text !== '') ranges.push(`(${index}, ${quoteString(text)})`);
      } else {
        const local = localPath(p.path);
        posPaths.add(local);
        posFiles.push(`(${quoteString(local)}, ${quoteString(pathPart(p.dataFile))}, ${index})`);
      }
    }
    const eq = file.deletes?.equality ?? [];
    if (eq.length === 0) return;
    const key = eq.map((e) => `${e.path}\u0000${e.equalityIds.join(',')}`).sort().join('\u0001');
    let g = groups.get(key);
    if (g === undefined) {
      g = groupFiles.length;
      groups.set(key, g);
      groupFiles.push(eq);
    }
    equalityGroupOf[index] = g;
  });
  if (posFiles.length > 0) {
    positions.push(
      `SELECT m.i, d.pos FROM read_parquet([${[...posPaths].map(quoteString).join(', ')}], union_by_name = true) AS d ` +
        `JOIN (VALUES ${posFiles.join(', ')}) AS m(f, dp, i) ON d.filename = m.f AND regexp_replace(d.file_path, ${quoteString(SCHEME_AND_AUTHORITY.source)}, '') = m.dp`,
    );
  }
  if (ranges.length > 0) {
    // Runs travel as text ("start" or "start+count", space-separated): one literal per file
    // parses far faster than a VALUES row per position.
    const start = `CAST(split_part(b.r, '+', 1) AS BIGINT)`;
    const count = `CAST(coalesce(nullif(split_part(b.r, '+', 2), ''), '1') AS BIGINT)`;
    positions.push(
      `SELECT b.i, unnest(range(${start}, ${start} + ${count})) AS pos FROM ` +
        `(SELECT v.i, unnest(string_split(v.rs, ' ')) AS r FROM (VALUES ${ranges.join(', ')}) AS v(i, rs)) AS b`,
    );
  }
  const joins: string[] = [];
  if (positions.length > 0) {
    joins.push(` ANTI JOIN (${positions.join(' UNION ALL ')}) AS __tl_p ON __tl_p.i = k.__tl_index AND __tl_p.pos = t.${quoteIdent(ROW_COL)}`);
  }
  if (groupFiles.length === 0) return joins.length > 0 ? { joins, hiddenFields: [] } : undefined;

  // One anti-join per set of equality columns; each lists (delete file, group) pairs.
  const byIds = new Map<string, { ids: number[]; pairs: Map<string, Set<number>> }>();
  groupFiles.forEach((files, g) => {
    for (const e of files) {
      const ids = [...new Set(e.equalityIds)].sort((a, b) => a - b);
      const key = ids.join(',');
      let entry = byIds.get(key);
      if (!entry) byIds.set(key, (entry = { ids, pairs: new Map() }));
      const local = localPath(e.path);
      if (!entry.pairs.has(local)) entry.pairs.set(local, new Set());
      entry.pairs.get(local)!.add(g);
    }
  });
  const byId = new Map(readable.map((f) => [f.id, f]));
  let n = 0;
  for (const { ids, pairs } of byIds.values()) {
    const eqFields = ids.map((id) => {
      const f = byId.get(id);
      if (!f) throw unsupported(`scan: equality delete column ${id} is not a top-level column of the schema being read`);
      if (typeof f.type !== 'string') throw unsupported(`scan: equality delete column ${f.name} (${id}) is not a primitive column`);
      return f;
    });
    const reads = readGroups([...pairs.keys()], task, nameMapped).map((g) => readParquet(g.paths, task, eqFields, g.byName, true));
    const pairRows = [...pairs].flatMap(([path, gs]) => [...gs].map((g) => `(${quoteString(path)}, ${g})`));
    const alias = quoteIdent(`__tl_e${n++}`);
    const rel = `SELECT m.g, ${eqFields.map((f) => `d.${quoteIdent(colAlias(f))}`).join(', ')} FROM (${reads.join(' UNION ALL ')}) AS d ` +
      `JOIN (VALUES ${pairRows.join(', ')}) AS m(f, g) ON d.${quoteIdent(FILE_COL)} = m.f`;
    const on = [`${alias}.g = k.__tl_eqg`, ...eqFields.map((f) => `${alias}.${quoteIdent(colAlias(f))} IS NOT DISTINCT FROM ${columnExpr(f)}`)];
    joins.push(` ANTI JOIN (${rel}) AS ${alias} ON ${on.join(' AND ')}`);
  }
  const visible = new Set(task.schema.fields.map((f) => f.id));
  return { joins, equalityGroupOf, hiddenFields: readable.filter((f) => !visible.has(f.id)) };
}

/**
 * Position delete rows name their data file by URI. They are matched on the path part alone
 * (scheme and authority dropped): `file:/x` and `file:///x` spell one file, and a table whose
 * metadata was relocated keeps the old cluster's URIs inside its delete files. Two files of one
 * table do not differ by host alone.
 */
function pathPart(uri: string): string {
  return uri.replace(SCHEME_AND_AUTHORITY, '');
}

/** A bitmap's runs as "start" / "start+count" separated by spaces. */
function bitmapRangesText(bitmap: RoaringBitmap64): string {
  const parts: string[] = [];
  for (const [start, end] of bitmap.ranges()) parts.push(end - start === 1n ? String(start) : `${start}+${end - start}`);
  return parts.join(' ');
}

/**
 * The task with every `vector` position source read and decoded into a `bitmap`. Reads only the
 * vector's bytes; checks its size, CRC-32 and, when the metadata gives one, its cardinality.
 */
export async function loadDeletionVectors(task: ScanTask): Promise<ScanTask> {
  if (!task.files.some((f) => f.deletes?.positions?.some((p) => p.kind === 'vector'))) return task;
  const handles = new Map<string, FileHandle>();
  const footers = new Map<string, FileMetadata>();
  try {
    const files: ScanFile[] = [];
    for (const file of task.files) {
      const positions = file.deletes?.positions;
      if (!positions?.some((p) => p.kind === 'vector')) {
        files.push(file);
        continue;
      }
      const loaded: PositionDeletes[] = [];
      for (const p of positions) {
        if (p.kind !== 'vector') {
          loaded.push(p);
          continue;
        }
        const local = localPath(p.path);
        let handle = handles.get(local);
        if (!handle) {
          handle = await open(local, 'r');
          handles.set(local, handle);
        }
        const bytes = new Uint8Array(p.length);
        const { bytesRead } = await handle.read(bytes, 0, p.length, p.offset);
        const where = `deletion vector ${p.path}@${p.offset}`;
        if (bytesRead !== p.length) throw dataInvalid(`${where}: expected ${p.length} bytes, found ${bytesRead}`);
        if (p.dataFile !== undefined) {
          let footer = footers.get(local);
          if (!footer) footers.set(local, (footer = await readPuffinFooter(handle, p.path)));
          const blob = footer.blobs.find((b) => b.offset === p.offset);
          const named = blob?.properties?.['referenced-data-file'];
          if (named !== p.dataFile) {
            throw dataInvalid(`${where}: expected the deletion vector of ${p.dataFile}, found ${blob ? `one of ${named ?? 'no named data file'}` : 'no blob at that offset'} in the Puffin footer`, { file: p.path });
          }
        }
        const bitmap = decodeDeletionVectorBlob(bytes, { expectedSize: p.length - 8, where });
        if (p.cardinality !== undefined && bitmap.cardinality !== p.cardinality) {
          throw dataInvalid(`${where}: expected cardinality ${p.cardinality}, found ${bitmap.cardinality}`);
        }
        loaded.push({ kind: 'bitmap', bitmap });
      }
      files.push({ ...file, deletes: { ...file.deletes, positions: loaded } });
    }
    return { ...task, files };
  } finally {
    await Promise.all([...handles.values()].map((h) => h.close()));
  }
}

/** The footer of a Puffin file: its last 12 bytes give the payload's size, then the footer is read. */
async function readPuffinFooter(handle: FileHandle, source: string): Promise<FileMetadata> {
  const { size } = await handle.stat();
  const tail = new Uint8Array(Math.min(size, 12));
  await handle.read(tail, 0, tail.length, size - tail.length);
  const payload = tail.length === 12 ? new DataView(tail.buffer).getInt32(0, true) : 0;
  const footerLength = Math.min(size, Math.max(12, payload + 16));
  const bytes = new Uint8Array(footerLength);
  await handle.read(bytes, 0, footerLength, size - footerLength);
  return decodePuffinFooter(bytes, { fileLength: size, source });
}

/** Files among `paths` (local) whose Parquet schema carries no field IDs at all. */
export async function filesWithoutFieldIds(session: DuckDBSession, paths: string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rows = await session.all(
    `SELECT file_name FROM parquet_schema([${paths.map(quoteString).join(', ')}]) GROUP BY file_name HAVING count(field_id) = 0`,
  );
  return new Set(rows.map((r) => String(r.file_name)));
}

/** Every Parquet file whose columns the scan resolves: data files and equality delete files. */
function columnResolvedPaths(task: ScanTask): string[] {
  const out = new Set(task.files.map((f) => localPath(f.path)));
  for (const f of task.files) for (const e of f.deletes?.equality ?? []) out.add(localPath(e.path));
  return [...out];
}

/**
 * Position delete files the metadata says hold one data file's deletes must hold no row for any
 * other file: one that does is another table's (or snapshot's) file put in its place, and its
 * deletes would silently match nothing.
 */
async function checkPositionFiles(session: DuckDBSession, task: ScanTask): Promise<void> {
  const only = new Map<string, string>();
  for (const f of task.files) for (const p of f.deletes?.positions ?? []) if (p.kind === 'position-file' && p.only) only.set(localPath(p.path), pathPart(p.dataFile));
  if (only.size === 0) return;
  const values = [...only].map(([f, dp]) => `(${quoteString(f)}, ${quoteString(dp)})`).join(', ');
  const rows = await session.all(
    `SELECT d.filename AS f, d.file_path AS found, m.dp AS expected FROM read_parquet([${[...only.keys()].map(quoteString).join(', ')}]) AS d ` +
      `JOIN (VALUES ${values}) AS m(f, dp) ON d.filename = m.f WHERE regexp_replace(d.file_path, ${quoteString(SCHEME_AND_AUTHORITY.source)}, '') <> m.dp LIMIT 1`,
  );
  const bad = rows[0];
  if (bad) {
    throw dataInvalid(`position delete file ${String(bad.f)}: expected deletes of ${String(bad.expected)} only (its referenced_data_file), found a row for ${String(bad.found)}`, { file: String(bad.f) });
  }
}

async function scanSql(session: DuckDBSession, task: ScanTask, limit?: number): Promise<string> {
  await checkPositionFiles(session, task);
  const loaded = await loadDeletionVectors(task);
  const probe = loaded.resolution === 'field-id' && !loaded.fieldIdsKnown;
  const nameMappedFiles = probe ? await filesWithoutFieldIds(session, columnResolvedPaths(loaded)) : undefined;
  if (!loaded.filterSql) return scanRelationSql(loaded, { nameMappedFiles, limit });
  // The filter names logical columns; DuckDB pushes it down into the Parquet scan (row groups).
  const cut = limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(limit))}`;
  return `SELECT * FROM (${scanRelationSql(loaded, { nameMappedFiles })}) AS __tl_rows WHERE ${loaded.filterSql}${cut}`;
}

// ---------------------------------------------------------------------------------------------
// Values for callers

function jsValue(type: IcebergType, v: DuckDBValue): unknown {
  if (v === null) return null;
  if (typeof type !== 'string') {
    if (type.type === 'struct') {
      const entries = (v as DuckDBStructValue).entries;
      return Object.fromEntries(type.fields.map((f) => [f.name, jsValue(f.type, entries[f.name] ?? null)]));
    }
    if (type.type === 'list') return (v as DuckDBListValue).items.map((x) => jsValue(type.element, x));
    return (v as DuckDBMapValue).entries.map((e) => ({ key: jsValue(type.key, e.key), value: jsValue(type.value, e.value) }));
  }
  if (type === 'long') return typeof v === 'bigint' && Number.isSafeInteger(Number(v)) ? Number(v) : v;
  if (v instanceof DuckDBDecimalValue) return unscaledToDecimal(v.value, v.scale);
  if (v instanceof DuckDBDateValue) return v.isFinite ? formatDate(v.days) : String(v);
  if (v instanceof DuckDBTimeValue) return formatTime(v.micros);
  if (v instanceof DuckDBTimestampTZValue) return v.isFinite ? `${formatTimestamp(v.micros)}Z` : String(v);
  if (v instanceof DuckDBTimestampValue) return v.isFinite ? formatTimestamp(v.micros) : String(v);
  if (v instanceof DuckDBTimestampNanosecondsValue) return v.isFinite ? formatTimestamp(v.nanos, 'nanos') : String(v);
  if (v instanceof DuckDBUUIDValue) return v.toString();
  if (v instanceof DuckDBBlobValue) return new Uint8Array(v.bytes);
  return v;
}

/**
 * Reads the task's rows. Values: boolean, int, float and double as numbers (NaN and ±Infinity
 * included); long as a number when safe, else bigint; decimal as text with the type's scale
 * ("12.30"); date `YYYY-MM-DD`; time `HH:MM:SS.ffffff`; timestamptz `YYYY-MM-DDTHH:MM:SS.ffffffZ`
 * (UTC); timestamp the same without `Z`; timestamp_ns with nine fractional digits; string and uuid
 * as text; binary and fixed as Uint8Array; struct as an object keyed by logical names; list as an
 * array; map as an array of `{ key, value }` (keys need not be strings).
 */
export async function readScan(session: DuckDBSession, task: ScanTask, options: { limit?: number } = {}): Promise<Record<string, unknown>[]> {
  const { columns, rows } = await session.values(await scanSql(session, task, options.limit));
  const types = task.schema.fields.map((f) => f.type);
  return rows.map((row) => Object.fromEntries(columns.map((c, i) => [c, types[i] === 'unknown' ? null : jsValue(types[i], row[i])])));
}

/** How many rows the task reads (deletes and filter applied). */
export async function countScan(session: DuckDBSession, task: ScanTask): Promise<number> {
  const rows = await session.all(`SELECT count(*)::BIGINT AS n FROM (${await scanSql(session, task)})`);
  return Number((rows[0] as { n: bigint | number }).n);
}

/** Whether `exportExpr` changes a value of this type (maps always: they become lists of entries). */
function changesForExport(type: IcebergType): boolean {
  if (typeof type !== 'string') {
    if (type.type === 'struct') return type.fields.some((f) => changesForExport(f.type));
    if (type.type === 'list') return changesForExport(type.element);
    return true;
  }
  return ['timestamptz', 'timestamp', 'timestamp_ns', 'time', 'date', 'uuid', 'binary'].includes(type) || type.startsWith('decimal') || type.startsWith('fixed');
}

/** SQL giving a column the text/number form `readScan` documents, for DuckDB's JSON and CSV writers. */
function exportExpr(type: IcebergType, expr: string, depth: number): string {
  const v = `__z${depth}`;
  // A value already in its output form is left alone: rebuilding a struct or list costs the engine.
  if (!changesForExport(type)) return expr;
  if (typeof type !== 'string') {
    if (type.type === 'struct') {
      const parts = type.fields.map((f) => `${quoteIdent(f.name)} := ${exportExpr(f.type, `struct_extract(${expr}, ${quoteString(f.name)})`, depth + 1)}`);
      return `CASE WHEN ${expr} IS NULL THEN NULL ELSE struct_pack(${parts.join(', ')}) END`;
    }
    if (type.type === 'list') return `list_transform(${expr}, lambda ${v}: ${exportExpr(type.element, v, depth + 1)})`;
    return `list_transform(map_entries(${expr}), lambda ${v}: struct_pack(key := ${exportExpr(type.key, `${v}.key`, depth + 1)}, value := ${exportExpr(type.value, `${v}.value`, depth + 1)}))`;
  }
  switch (type) {
    case 'timestamptz': return `strftime(${expr}, '%Y-%m-%dT%H:%M:%S.%fZ')`;
    case 'timestamp': return `strftime(${expr}, '%Y-%m-%dT%H:%M:%S.%f')`;
    case 'timestamp_ns': return `strftime(${expr}, '%Y-%m-%dT%H:%M:%S.%n')`;
    case 'time': return `strftime(DATE '1970-01-01' + ${expr}, '%H:%M:%S.%f')`;
    case 'date': case 'uuid': return `CAST(${expr} AS VARCHAR)`;
    case 'binary': return `to_base64(${expr})`;
  }
  if (type.startsWith('decimal')) return `CAST(${expr} AS VARCHAR)`;
  if (type.startsWith('fixed')) return `to_base64(${expr})`;
  return expr;
}

/** Each column of an export (rows of the scan as `s`) in its output form; in CSV, nested values as JSON text. */
function exportValues(task: ScanTask, format: 'json' | 'csv'): string[] {
  return task.schema.fields.map((f) => {
    const value = exportExpr(f.type, `s.${quoteIdent(f.name)}`, 0);
    return format === 'csv' && typeof f.type !== 'string' ? `CAST(to_json(${value}) AS VARCHAR)` : value;
  });
}

function checkExportFormat(format: string): asserts format is 'json' | 'csv' {
  if (format !== 'json' && format !== 'csv') throw invalidInput(`export: expected format json or csv, found ${String(format)}`);
}

/**
 * Writes the task's rows to a local file without holding them in memory: `json` as NDJSON, `csv`
 * with a header. Values take `readScan`'s forms, except binary (base64 text). In CSV a struct,
 * list or map is its NDJSON value as JSON text in one cell: DuckDB's own CSV text for nested
 * values (`{'name': Søren}`) is not something any reader can parse back.
 */
export async function copyScanTo(session: DuckDBSession, task: ScanTask, options: { format: 'json' | 'csv'; path: string; limit?: number }): Promise<void> {
  checkExportFormat(options.format);
  const inner = await scanSql(session, task, options.limit);
  const format = options.format === 'json' ? 'FORMAT json' : 'FORMAT csv, HEADER true';
  const target = localPathIfFile(options.path);
  const columns = exportValues(task, options.format).map((v, i) => `${v} AS ${quoteIdent(task.schema.fields[i]!.name)}`);
  await session.run(`COPY (SELECT ${columns.join(', ')} FROM (${inner}) AS s) TO ${quoteString(target)} (${format})`);
}

/**
 * A CSV field as DuckDB's CSV writer prints it: NULL as nothing; quoted (inner quotes doubled)
 * when it is empty or holds a comma, a quote, a line break or a `#` (the comment character its
 * reader knows); else as is. Only text that can hold those is checked: numbers, booleans, dates,
 * times, decimals and uuids never do, and base64 only when it is empty.
 */
function csvFieldSql(text: string, type: IcebergType): string {
  if (typeof type === 'string' && type !== 'string' && type !== 'binary' && !type.startsWith('fixed')) return `coalesce(${text}, '')`;
  const needsQuotes = type === 'binary' || (typeof type === 'string' && type.startsWith('fixed'))
    ? `${text} = ''`
    : `${text} = '' OR contains(${text}, ',') OR contains(${text}, '"') OR contains(${text}, '#') OR contains(${text}, chr(10)) OR contains(${text}, chr(13))`;
  return `CASE WHEN ${text} IS NULL THEN '' WHEN ${needsQuotes} THEN '"' || replace(${text}, '"', '""') || '"' ELSE ${text} END`;
}

/** `csvFieldSql` for a header name, in JavaScript. */
function csvField(text: string): string {
  return text === '' || /[,"#\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * A query giving each row of the export as one line of text (newline included) in column
 * `line`: the bytes `copyScanTo` writes for that row. NDJSON lines are DuckDB's own `to_json` of
 * the row, which is what its JSON writer prints; CSV lines join the fields as its CSV writer
 * quotes them.
 */
function exportLinesSql(task: ScanTask, inner: string, format: 'json' | 'csv'): string {
  const values = exportValues(task, format);
  if (format === 'json') {
    const fields = task.schema.fields.map((f, i) => `${quoteIdent(f.name)} := ${values[i]}`);
    return `SELECT CAST(to_json(struct_pack(${fields.join(', ')})) AS VARCHAR) || chr(10) AS line FROM (${inner}) AS s`;
  }
  // The texts first, so that the quoting below reads each one as a column, not as its expression again.
  const texts = values.map((v, i) => `CAST(${v} AS VARCHAR) AS ${quoteIdent(`__tl_t${i}`)}`);
  const fields = task.schema.fields.map((f, i) => csvFieldSql(`c.${quoteIdent(`__tl_t${i}`)}`, f.type));
  // One concat builds the line in one allocation; a chain of || makes a string per step.
  return `SELECT concat(${fields.join(`, ',', `)}, chr(10)) AS line FROM (SELECT ${texts.join(', ')} FROM (${inner}) AS s) AS c`;
}

/**
 * Streams the task's rows as NDJSON or CSV (with a header), byte for byte what `copyScanTo`
 * writes, to `write` in pieces of one engine chunk (about 2,048 rows); each piece is written
 * before the next is read, so memory stays bounded whatever the table's size. `header: false`
 * leaves out the CSV header (a later part of one export). Resolves to the number of rows written.
 */
export async function streamScan(
  session: DuckDBSession,
  task: ScanTask,
  options: { format: 'json' | 'csv'; limit?: number; header?: boolean },
  write: (bytes: Uint8Array) => void | Promise<void>,
): Promise<number> {
  checkExportFormat(options.format);
  const inner = await scanSql(session, task, options.limit);
  if (options.format === 'csv' && options.header !== false) await write(Buffer.from(task.schema.fields.map((f) => csvField(f.name)).join(',') + '\n'));
  let rows = 0;
  await session.stream(exportLinesSql(task, inner, options.format), (chunk) => {
    rows += chunk.rowCount;
    return write(varcharColumnBytes(chunk, 0));
  });
  return rows;
}
