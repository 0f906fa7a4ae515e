import { checkColumnNames } from '../core/names.ts';
import { localPathIfFile } from '../core/uri.ts';
import type { IcebergType, StructType } from '../format/iceberg/types.ts';
import { quoteIdent, quoteString, structFromDescribe, toDuckDBType } from '../format/parquet/duckdb-types.ts';
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
  /**
   * One CSV file's columns in order, as the engine named them when it inferred the file's schema.
   * Given, the reader takes them as they are instead of detecting the file's layout again: each
   * detection reads and parses a sample of the file, once per query.
   */
  columns?: readonly string[];
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

/** Rows DuckDB samples to infer JSON types, and we sample to recognise timestamps and integers in text. */
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
      // comment = '': left to itself, the sniffer takes `#` for a comment marker when a row in its
      // sample starts with one, and every row starting with `#` is then dropped without a word.
      const text = !schema ? '' : input.columns && typeof input.path === 'string' ? `, auto_detect = false, columns = {${input.columns.map((c) => `${quoteString(c)}: 'VARCHAR'`).join(', ')}}` : ', all_varchar = true';
      return `read_csv(${path}, ${dialect}, comment = '', strict_mode = true, null_padding = false, ignore_errors = false${size}${union}${text})`;
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

/**
 * A primitive leaf of an inferred type, read from the text-typed input: SQL of its value (of the
 * list of its values, when it sits inside a list or map) and where its type is set.
 */
interface Leaf {
  /** Names from the root, with `element` and `value` for list elements and map values. */
  path: string;
  type: IcebergType;
  sql: string;
  inList: boolean;
  set: (t: IcebergType) => void;
}

/** A map of an inferred type: SQL of its keys (a list, of every map when it sits inside a list). */
interface MapNode {
  path: string;
  keysSql: string;
}

function leavesOf(struct: StructType, alias: string, maps?: MapNode[]): Leaf[] {
  const out: Leaf[] = [];
  const visit = (type: IcebergType, path: string, sql: string, inList: boolean, set: (t: IcebergType) => void) => {
    if (typeof type !== 'string' && type.type === 'map') maps?.push({ path, keysSql: inList ? `flatten(list_transform(${sql}, lambda x: map_keys(x)))` : `map_keys(${sql})` });
    if (typeof type === 'string') {
      out.push({ path, type, sql, inList, set });
    } else if (type.type === 'struct') {
      for (const f of type.fields) {
        const field = (e: string) => `struct_extract(${e}, ${quoteString(f.name)})`;
        visit(f.type, `${path}.${f.name}`, inList ? `list_transform(${sql}, lambda x: ${field('x')})` : field(sql), inList, (t) => (f.type = t));
      }
    } else if (type.type === 'list') {
      visit(type.element, `${path}.element`, inList ? `flatten(${sql})` : sql, true, (t) => (type.element = t));
    } else {
      const values = inList ? `flatten(list_transform(${sql}, lambda x: map_values(x)))` : `map_values(${sql})`;
      visit(type.value, `${path}.value`, values, true, (t) => (type.value = t));
    }
  };
  for (const f of struct.fields) visit(f.type, f.name, `${alias}.${quoteIdent(f.name)}`, false, (t) => (f.type = t));
  return out;
}

/** SQL counting a leaf's non-null values in the sample (those meeting `where`, when given). */
function countOf(leaf: Leaf, where?: (v: string) => string): string {
  if (!leaf.inList) return `count(${leaf.sql})${where ? ` FILTER (WHERE ${where(leaf.sql)})` : ''}`;
  return `coalesce(sum(len(list_filter(${leaf.sql}, lambda v: v IS NOT NULL${where ? ` AND ${where('v')}` : ''}))), 0)`;
}

const INTEGER_RE = '\\s*[+-]?[0-9]+\\s*';

/**
 * SQL that is TRUE when `v` matches the pattern and casts to the type. The cast runs only on
 * values that match: a failing TRY_CAST is costly, and AND outside a filter evaluates both sides
 * (this made the sample pass of a file with fractions many times slower than reading it).
 */
function matchThenCasts(v: string, pattern: string, cast: string): string {
  return `CASE WHEN regexp_full_match(${v}, ${quoteString(pattern)}) THEN TRY_CAST(trim(${v}) AS ${cast}) IS NOT NULL ELSE FALSE END`;
}

/** Leaves whose integers DuckDB may have widened: HUGEINT when signs mix, UBIGINT, DOUBLE beyond 64 bits. */
function mayHoldIntegers(type: IcebergType): boolean {
  return type === 'double' || type === 'decimal(38, 0)' || type === 'decimal(20, 0)';
}

/**
 * Decides from the sampled text what DuckDB's types do not say:
 * - ISO-8601 timestamps, which DuckDB's JSON reader leaves as text unless every value has the
 *   same shape: text leaves whose values are all timestamps become `timestamptz` when they all
 *   carry a zone (or some do: the rest are read as UTC) and `timestamp` when none does;
 * - integers: DuckDB samples `-3` as BIGINT and `4` as UBIGINT, so signs mixed give HUGEINT, and
 *   an integer beyond 64 bits gives DOUBLE. Leaves whose values are all integers become `long`
 *   when every one fits, else `decimal(38, 0)` when every one has at most 38 digits.
 * Leaves inside lists and maps count every element.
 */
async function refineFromText(session: DuckDBSession, source: string, struct: StructType): Promise<void> {
  const leaves = leavesOf(struct, 'src').filter((l) => l.type === 'string' || mayHoldIntegers(l.type));
  if (leaves.length === 0) return;
  const aggregates = leaves.flatMap((l, i) =>
    l.type === 'string'
      ? [
          `${countOf(l)} AS n${i}`,
          `${countOf(l, (v) => matchThenCasts(v, ZONED_RE, 'TIMESTAMPTZ'))} AS z${i}`,
          `${countOf(l, (v) => matchThenCasts(v, NAIVE_RE, 'TIMESTAMP'))} AS p${i}`,
        ]
      : [
          `${countOf(l)} AS n${i}`,
          `${countOf(l, (v) => `regexp_full_match(${v}, ${quoteString(INTEGER_RE)})`)} AS i${i}`,
          `${countOf(l, (v) => matchThenCasts(v, INTEGER_RE, 'BIGINT'))} AS l${i}`,
          `${countOf(l, (v) => matchThenCasts(v, INTEGER_RE, 'DECIMAL(38, 0)'))} AS d${i}`,
        ],
  );
  const [row] = await session.all(`SELECT ${aggregates.join(', ')} FROM (SELECT * FROM ${source} LIMIT ${SAMPLE_ROWS}) AS src`);
  leaves.forEach((l, i) => {
    const n = Number(row[`n${i}`]);
    if (n === 0) return;
    if (l.type === 'string') {
      const zoned = Number(row[`z${i}`]);
      const naive = Number(row[`p${i}`]);
      if (zoned + naive === n) l.set(zoned > 0 ? 'timestamptz' : 'timestamp');
      return;
    }
    if (Number(row[`i${i}`]) !== n) return;
    if (Number(row[`l${i}`]) === n) l.set('long');
    else if (Number(row[`d${i}`]) === n) l.set('decimal(38, 0)');
  });
}

/**
 * A narrower type a leaf's values may fit: `int` (every value fits 32 bits), `float` (every value
 * is in a float's range; like any float column it rounds to float precision, as the table asks).
 */
export type NarrowType = 'int' | 'float';

/** What the values of a whole input say that its sampled types do not (see `inputFacts`). */
export interface InputFacts {
  /** Leaves (by path) whose values all fit the narrower type asked for. */
  fits: Set<string>;
  /** Maps (by path) asked about: their distinct keys, sorted (numbers within keys by value). */
  keys: Map<string, string[]>;
}

/**
 * One pass over the whole input (not a sample, so the answer never depends on where in the input
 * a value sits) that says, by path as `leavesOf` names them:
 * - which leaves have values that all fit the narrower type asked for: JSON and CSV have one
 *   integer and one fraction type, so their `long` and `double` say nothing about an `int` or
 *   `float` column: the values decide;
 * - the keys of the maps asked about: objects whose keys vary are sampled as a map, and only
 *   their keys say whether they fit a struct column.
 */
export async function inputFacts(session: DuckDBSession, input: InputFile, struct: StructType, probes: Map<string, NarrowType>, mapPaths: ReadonlySet<string> = new Set()): Promise<InputFacts> {
  const maps: MapNode[] = [];
  const leaves = leavesOf(resolveUnknown(struct), 'src', maps).filter((l) => probes.has(l.path));
  const asked = maps.filter((m) => mapPaths.has(m.path));
  if (leaves.length === 0 && asked.length === 0) return { fits: new Set(), keys: new Map() };
  // DuckDB casts a number beyond a float's range to infinity, not NULL.
  const misfit = (l: Leaf) =>
    probes.get(l.path) === 'int'
      ? (v: string) => `TRY_CAST(trim(${v}) AS INTEGER) IS NULL`
      : (v: string) => `(TRY_CAST(trim(${v}) AS FLOAT) IS NULL OR (isfinite(TRY_CAST(trim(${v}) AS DOUBLE)) AND NOT isfinite(TRY_CAST(trim(${v}) AS FLOAT))))`;
  const aggregates = [
    ...leaves.map((l, i) => `${countOf(l, misfit(l))} AS m${i}`),
    ...asked.map((m, i) => `list_distinct(flatten(list(list_distinct(${m.keysSql})))) AS k${i}`),
  ];
  const source = inputRelation(input, resolveUnknown(struct));
  const [row] = await session.all(`SELECT ${aggregates.join(', ')} FROM ${source} AS src`);
  return {
    fits: new Set(leaves.filter((_, i) => Number(row[`m${i}`]) === 0).map((l) => l.path)),
    keys: new Map(asked.map((m, i) => [m.path, ((row[`k${i}`] as unknown[] | null) ?? []).map(String).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))])),
  };
}

/**
 * The schema of an input file, every field ID 0 and every field optional (the table assigns IDs).
 * JSON: integers of either sign → long (decimal(38, 0) when one does not fit 64 bits), fractions
 * (or a mix) → double, ISO-8601 instants → timestamptz, naive timestamps → timestamp, dates →
 * date, arrays → list, objects → struct, or map when their keys vary from record to record (each
 * in under a tenth of the sampled objects) or number more than 200 (DuckDB's
 * `field_appearance_threshold` and `map_inference_threshold`); `unknown` where the sample shows no
 * single type (only nulls, empty lists, or values of mixed types): a table's column decides those,
 * a new column takes `string` (see `resolveUnknown`). The same rules hold inside structs, lists
 * and maps.
 * CSV: DuckDB's sniffer, with a header row. Parquet: the file's own types.
 */
export async function inferSchema(session: DuckDBSession, input: InputFile): Promise<StructType> {
  const source = inputRelation(input);
  const json = input.format === 'ndjson' || input.format === 'json';
  const struct = structFromDescribe(await describeRelation(session, source), json ? { json: 'unknown' } : {});
  // Before any SQL names the columns: a NUL in a name would cut the engine's SQL text short.
  checkColumnNames(struct, 'input');
  if (input.format === 'parquet') return struct;
  // DuckDB types a text column as TIMESTAMP when every sampled value has one shape, and drops the
  // zone when it does: decide timestamp vs timestamptz from the raw text instead.
  const text = withTimestampsAsText(struct);
  const columns = input.format === 'csv' && typeof input.path === 'string' ? { columns: struct.fields.map((f) => f.name) } : {};
  await refineFromText(session, inputRelation({ ...input, ...columns }, text), text);
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

/** `unknown` leaves (no single type in the sample) as `string`, for columns no table decides. */
export function resolveUnknown<T extends IcebergType>(type: T): T {
  const visit = (t: IcebergType): IcebergType => {
    if (typeof t === 'string') return t === 'unknown' ? 'string' : t;
    if (t.type === 'struct') return { ...t, fields: t.fields.map((f) => ({ ...f, type: visit(f.type) })) };
    if (t.type === 'list') return { ...t, element: visit(t.element) };
    return { ...t, key: visit(t.key), value: visit(t.value) };
  };
  return visit(type) as T;
}
