import { localPathIfFile } from '../core/uri.ts';
import type { IcebergType, StructType } from '../spec/iceberg/types.ts';
import { quoteIdent, quoteString, structFromDescribe, toDuckDBType } from '../spec/parquet/duckdb-types.ts';
import type { DuckDBSession } from './duckdb-session.ts';

export type InputFormat = 'ndjson' | 'json' | 'csv' | 'parquet';

export interface InputFile {
  /**
   * A local path, `file:` URI or glob; or several, read as one relation whose columns are matched
   * by name. `.gz` and `.zst` files are decompressed by the reader (JSON, CSV).
   */
  path: string | readonly string[];
  format: InputFormat;
  /** CSV dialect; defaults: comma, double quote, quote doubled to escape, header row. */
  csv?: { delimiter?: string; quote?: string; escape?: string; header?: boolean };
  /** How a file is named in messages (default `input <path>`), and whether its lines are records. */
  labels?: ReadonlyMap<string, InputLabel>;
  /** The longest line (JSON record, CSV row) the reader must hold, in bytes; default DuckDB's 16 MB / 2 MB. */
  maxLineBytes?: number;
}

export interface InputLabel {
  label: string;
  /** 'record' when line N of the file is the Nth record given to a write (records spooled one per line). */
  unit: 'line' | 'record';
}

export function inputPaths(input: InputFile): string[] {
  return typeof input.path === 'string' ? [input.path] : [...input.path];
}

export function inputLabel(input: InputFile, path: string): InputLabel {
  return input.labels?.get(path) ?? { label: `input ${path}`, unit: 'line' };
}

/** Rows DuckDB samples to infer JSON types, and we sample to recognise timestamps in text. */
const SAMPLE_ROWS = 20480;

/** The reader's first argument: one path, or a list of them. */
function pathSql(input: InputFile): string {
  if (typeof input.path === 'string') return quoteString(localPathIfFile(input.path));
  return `[${input.path.map((p) => quoteString(localPathIfFile(p))).join(', ')}]`;
}

/** The type the input is read as before conversion: every primitive as text, so no reader coerces. */
function textShape(type: IcebergType): string {
  if (typeof type === 'string') return 'VARCHAR';
  if (type.type === 'struct') return toDuckDBType({ type: 'struct', fields: type.fields.map((f) => ({ ...f, type: textShapeType(f.type) })) });
  if (type.type === 'list') return `${textShape(type.element)}[]`;
  return `MAP(VARCHAR, ${textShape(type.value)})`;
}

function textShapeType(type: IcebergType): IcebergType {
  if (typeof type === 'string') return 'string';
  if (type.type === 'struct') return { ...type, fields: type.fields.map((f) => ({ ...f, type: textShapeType(f.type) })) };
  if (type.type === 'list') return { ...type, element: textShapeType(type.element) };
  return { ...type, key: 'string', value: textShapeType(type.value) };
}

/**
 * The FROM-clause SQL that reads the input. With a schema, JSON is read with explicit `columns`
 * (every primitive as text, converted strictly by `selectList`), so a row beyond DuckDB's sample
 * that does not fit fails instead of being coerced (DuckDB's JSON reader would turn 2.5 into 2 for
 * a BIGINT column); CSV is read as text for the same reason. Without a schema, DuckDB detects types.
 */
export function inputRelation(input: InputFile, schema?: StructType): string {
  const path = pathSql(input);
  // Several files: columns are matched by name, and every file is sampled for its columns.
  const union = typeof input.path === 'string' ? '' : ', union_by_name = true';
  // DuckDB's reader buffers are sized for its default longest line: a longer one is allowed
  // only when the caller measured it (the buffers grow with it).
  const long = input.maxLineBytes === undefined ? undefined : Math.ceil(input.maxLineBytes);
  switch (input.format) {
    case 'ndjson':
    case 'json': {
      const format = input.format === 'ndjson' ? 'newline_delimited' : 'auto';
      const columns = schema ? `, columns = {${schema.fields.map((f) => `${quoteString(f.name)}: ${quoteString(textShape(f.type))}`).join(', ')}}` : '';
      const size = long === undefined ? '' : `, maximum_object_size = ${long}`;
      return `read_json(${path}, format = '${format}', records = true, ignore_errors = false${size}${union}${columns})`;
    }
    case 'csv': {
      const c = input.csv ?? {};
      const quote = c.quote ?? '"';
      // skip = 0: the header is the first line. Left to itself, DuckDB's sniffer takes a ragged
      // wider row further down as the header and silently drops every row above it.
      const dialect = `delim = ${quoteString(c.delimiter ?? ',')}, quote = ${quoteString(quote)}, escape = ${quoteString(c.escape ?? quote)}, header = ${c.header ?? true ? 'true' : 'false'}, skip = 0`;
      const size = long === undefined ? '' : `, max_line_size = ${long}, buffer_size = ${2 * long}`;
      return `read_csv(${path}, ${dialect}, strict_mode = true, null_padding = false, ignore_errors = false${size}${union}${schema ? ', all_varchar = true' : ''})`;
    }
    case 'parquet':
      return `read_parquet(${path}, hive_partitioning = false${union})`;
  }
}

/** DuckDB's DESCRIBE of a FROM-clause source. */
export async function describeRelation(session: DuckDBSession, source: string): Promise<{ name: string; type: string }[]> {
  const rows = await session.all(`DESCRIBE SELECT * FROM ${source}`);
  return rows.map((r) => ({ name: String(r.column_name), type: String(r.column_type) }));
}

const DATE_RE = '[0-9]{4}-[0-9]{2}-[0-9]{2}';
const CLOCK_RE = '[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,6})?)?';
const ZONED_RE = `\\s*${DATE_RE}[T ]${CLOCK_RE}\\s*([zZ]|[+-][0-9]{2}(:?[0-9]{2})?)\\s*`;
const NAIVE_RE = `\\s*${DATE_RE}[T ]${CLOCK_RE}\\s*`;

/** Text leaves reachable without entering a list or map: SQL to read them, and where they sit. */
function textLeaves(struct: StructType, expr: (name: string) => string): { sql: string; set: (t: IcebergType) => void }[] {
  const out: { sql: string; set: (t: IcebergType) => void }[] = [];
  for (const f of struct.fields) {
    const sql = expr(f.name);
    if (f.type === 'string') out.push({ sql, set: (t) => (f.type = t) });
    else if (typeof f.type !== 'string' && f.type.type === 'struct') out.push(...textLeaves(f.type, (n) => `struct_extract(${sql}, ${quoteString(n)})`));
  }
  return out;
}

/**
 * DuckDB's JSON reader leaves ISO-8601 timestamps as text unless every value has the same shape.
 * Text columns whose sampled values are all timestamps become `timestamptz` when they all carry a
 * zone (or some do: the rest are read as UTC) and `timestamp` when none does.
 */
async function recogniseTimestamps(session: DuckDBSession, source: string, struct: StructType): Promise<void> {
  const leaves = textLeaves(struct, (n) => `src.${quoteIdent(n)}`);
  if (leaves.length === 0) return;
  const aggregates = leaves.flatMap((l, i) => [
    `count(${l.sql}) AS n${i}`,
    `count(${l.sql}) FILTER (WHERE regexp_full_match(${l.sql}, ${quoteString(ZONED_RE)}) AND TRY_CAST(trim(${l.sql}) AS TIMESTAMPTZ) IS NOT NULL) AS z${i}`,
    `count(${l.sql}) FILTER (WHERE regexp_full_match(${l.sql}, ${quoteString(NAIVE_RE)}) AND TRY_CAST(trim(${l.sql}) AS TIMESTAMP) IS NOT NULL) AS p${i}`,
  ]);
  const [row] = await session.all(`SELECT ${aggregates.join(', ')} FROM (SELECT * FROM ${source} LIMIT ${SAMPLE_ROWS}) AS src`);
  leaves.forEach((l, i) => {
    const n = Number(row[`n${i}`]);
    const zoned = Number(row[`z${i}`]);
    const naive = Number(row[`p${i}`]);
    if (n === 0 || zoned + naive !== n) return;
    l.set(zoned > 0 ? 'timestamptz' : 'timestamp');
  });
}

/**
 * The schema of an input file, every field ID 0 and every field optional (the table assigns IDs).
 * JSON: integers → long, fractions (or a mix) → double, ISO-8601 instants → timestamptz, naive
 * timestamps → timestamp, dates → date, objects → struct, arrays → list, mixed or all-null → string.
 * CSV: DuckDB's sniffer, with a header row. Parquet: the file's own types.
 */
export async function inferSchema(session: DuckDBSession, input: InputFile): Promise<StructType> {
  const source = inputRelation(input);
  const struct = structFromDescribe(await describeRelation(session, source));
  if (input.format === 'parquet') return struct;
  // DuckDB types a text column as TIMESTAMP when every sampled value has one shape, and drops the
  // zone when it does: decide timestamp vs timestamptz from the raw text instead.
  const text = withTimestampsAsText(struct);
  await recogniseTimestamps(session, inputRelation(input, text), text);
  return text;
}

function withTimestampsAsText(struct: StructType): StructType {
  const visit = (t: IcebergType): IcebergType => {
    if (typeof t === 'string') return t === 'timestamp' || t === 'timestamptz' ? 'string' : t;
    if (t.type === 'struct') return { ...t, fields: t.fields.map((f) => ({ ...f, type: visit(f.type) })) };
    if (t.type === 'list') return { ...t, element: visit(t.element) };
    return { ...t, key: visit(t.key), value: visit(t.value) };
  };
  return visit(struct) as StructType;
}
