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
import { invalidInput, unsupported } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import { formatDate, formatTime, formatTimestamp, fromJsonValue, unscaledToDecimal } from '../spec/iceberg/single-value.ts';
import type { IcebergType, NestedField } from '../spec/iceberg/types.ts';
import { quoteIdent, quoteString, sqlLiteral, toDuckDBType } from '../spec/parquet/duckdb-types.ts';
import { physicalName } from '../spec/parquet/field-ids.ts';
import type { LiteralValue, ScanTask } from '../spec/scan-task.ts';
import type { DuckDBSession } from './duckdb-session.ts';

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

function readParquet(paths: string[], task: ScanTask, fields: NestedField[], byName: boolean): string {
  const entries = fields.map((f) => {
    const key = byName ? quoteString(physicalName(f, task.physicalNames)) : `CAST(${f.id} AS INTEGER)`;
    return `${key}: {name: ${quoteString(colAlias(f))}, type: ${quoteString(readType(f, task.physicalNames))}, default_value: ${defaultValue(f)}}`;
  });
  const list = `[${paths.map(quoteString).join(', ')}]`;
  // filename and file_row_number are DuckDB's virtual columns; the schema's aliases cannot clash.
  return `SELECT *, filename AS ${quoteIdent(FILE_COL)}, file_row_number AS ${quoteIdent(ROW_COL)} FROM read_parquet(${list}, schema = MAP {${entries.join(', ')}}, hive_partitioning = false)`;
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
 * stays one hash join however many files there are. Rows come in task order: file by file, each
 * file's rows in file order.
 */
export function scanRelationSql(task: ScanTask, options: ScanSqlOptions = {}): string {
  const fields = task.schema.fields.filter((f) => f.type !== 'unknown');
  const limit = options.limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(options.limit))}`;
  const topIds = new Set(task.schema.fields.map((f) => f.id));
  const constIds = [...new Set(task.files.flatMap((f) => [...(f.constants?.keys() ?? [])]))];
  for (const id of constIds) if (!topIds.has(id)) throw unsupported(`scan: constants for nested field ${id} are not supported`);
  const constFields = task.schema.fields.filter((f) => constIds.includes(f.id));

  const projection = task.schema.fields.map((f) => {
    if (f.type === 'unknown') return `NULL AS ${quoteIdent(f.name)}`;
    let expr = `t.${quoteIdent(colAlias(f))}`;
    if (constIds.includes(f.id)) expr = `CASE WHEN k.${quoteIdent(`__tl_h${f.id}`)} THEN k.${quoteIdent(`__tl_v${f.id}`)} ELSE ${expr} END`;
    return `${logicalExpr(f.type, expr, task.physicalNames, 0) ?? expr} AS ${quoteIdent(f.name)}`;
  });

  if (task.files.length === 0) {
    const empty = task.schema.fields.map((f) => `CAST(NULL AS ${f.type === 'unknown' ? 'INTEGER' : toDuckDBType(f.type)}) AS ${quoteIdent(f.name)}`);
    return `SELECT ${empty.join(', ') || 'NULL AS __tl_none'} WHERE FALSE`;
  }
  if (fields.length === 0) throw unsupported('scan: a schema without readable columns is not supported');

  const paths = task.files.map((f) => localPath(f.path));
  const mapped = options.nameMappedFiles ?? new Set<string>();
  const byName = task.resolution === 'name';
  const groups = byName ? [{ paths, byName }] : [
    { paths: paths.filter((p) => !mapped.has(p)), byName: false },
    { paths: paths.filter((p) => mapped.has(p)), byName: true },
  ];
  const reads = groups.filter((g) => g.paths.length > 0).map((g) => readParquet(g.paths, task, fields, g.byName));
  let from = reads.length === 1 ? `(${reads[0]}) AS t` : `(${reads.join(' UNION ALL ')}) AS t`;
  // One read_parquet keeps the task's file and row order by itself; a join or a union does not.
  const joined = constFields.length > 0 || reads.length > 1;
  if (!joined) return `SELECT ${projection.join(', ')} FROM ${from}${limit}`;

  const rows = task.files.map((file, index) => {
    const cells = constFields.flatMap((f) => {
      const has = file.constants?.has(f.id) ?? false;
      return [has ? 'TRUE' : 'FALSE', sqlLiteral(f.type, has ? file.constants!.get(f.id)! : null)];
    });
    return `(${[quoteString(localPath(file.path)), String(index), ...cells].join(', ')})`;
  });
  const names = ['__tl_path', '__tl_index', ...constFields.flatMap((f) => [`__tl_h${f.id}`, `__tl_v${f.id}`])].map(quoteIdent);
  from += ` JOIN (VALUES ${rows.join(', ')}) AS k(${names.join(', ')}) ON t.${quoteIdent(FILE_COL)} = k.__tl_path`;
  // A hash join may emit rows in any order; files and rows keep the task's order, as without it.
  return `SELECT ${projection.join(', ')} FROM ${from} ORDER BY k.__tl_index, t.${quoteIdent(ROW_COL)}${limit}`;
}

/** Files among `paths` (local) whose Parquet schema carries no field IDs at all. */
export async function filesWithoutFieldIds(session: DuckDBSession, paths: string[]): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const rows = await session.all(
    `SELECT file_name FROM parquet_schema([${paths.map(quoteString).join(', ')}]) GROUP BY file_name HAVING count(field_id) = 0`,
  );
  return new Set(rows.map((r) => String(r.file_name)));
}

async function scanSql(session: DuckDBSession, task: ScanTask, limit?: number): Promise<string> {
  const nameMappedFiles = task.resolution === 'field-id' ? await filesWithoutFieldIds(session, task.files.map((f) => localPath(f.path))) : undefined;
  if (!task.filterSql) return scanRelationSql(task, { nameMappedFiles, limit });
  // The filter names logical columns; DuckDB pushes it down into the Parquet scan (row groups).
  const cut = limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(limit))}`;
  return `SELECT * FROM (${scanRelationSql(task, { nameMappedFiles })}) AS __tl_rows WHERE ${task.filterSql}${cut}`;
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

/** SQL giving a column the text/number form `readScan` documents, for DuckDB's JSON and CSV writers. */
function exportExpr(type: IcebergType, expr: string, depth: number): string {
  const v = `__z${depth}`;
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

/**
 * Writes the task's rows to a local file without holding them in memory: `json` as NDJSON, `csv`
 * with a header. Values take `readScan`'s forms, except binary (base64 text) and maps in CSV.
 */
export async function copyScanTo(session: DuckDBSession, task: ScanTask, options: { format: 'json' | 'csv'; path: string; limit?: number }): Promise<void> {
  if (options.format !== 'json' && options.format !== 'csv') throw invalidInput(`export: expected format json or csv, found ${String(options.format)}`);
  const inner = await scanSql(session, task, options.limit);
  const columns = task.schema.fields.map((f) => `${exportExpr(f.type, `s.${quoteIdent(f.name)}`, 0)} AS ${quoteIdent(f.name)}`);
  const format = options.format === 'json' ? 'FORMAT json' : 'FORMAT csv, HEADER true';
  const target = options.path.startsWith('file:') ? localPath(options.path) : options.path;
  await session.run(`COPY (SELECT ${columns.join(', ')} FROM (${inner}) AS s) TO ${quoteString(target)} (${format})`);
}
