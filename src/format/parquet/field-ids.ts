import { invalidInput, unsupported } from '../../core/errors.ts';
import { decimalParams, fixedLength } from '../iceberg/single-value.ts';
import type { IcebergType, NestedField, StructType } from '../iceberg/types.ts';
import { quoteIdent, quoteString, toDuckDBType } from './duckdb-types.ts';

/**
 * The SQL that gives every Parquet column its Iceberg field ID (DESIGN.md §2) and turns an input
 * relation into the table's columns under their physical names.
 */

/** DuckDB reads this key of a FIELD_IDS entry as the ID of the entry's own column. */
const FIELD_ID_KEY = '__duckdb_field_id';

export function physicalName(field: NestedField, physicalNames: Map<number, string>): string {
  return physicalNames.get(field.id) ?? field.name;
}

/**
 * DuckDB's `FIELD_IDS` option value: `{"a": 1, "s": {__duckdb_field_id: 2, "x": 3}, "l":
 * {__duckdb_field_id: 4, element: 5}, "m": {__duckdb_field_id: 6, key: 7, value: 8}}`, keyed by
 * physical names, with an ID on every column including list elements and map keys and values.
 */
export function fieldIdsClause(schema: StructType, physicalNames: Map<number, string>): string {
  const entry = (id: number, type: IcebergType): string => {
    if (typeof type === 'string') return String(id);
    const parts = [`${FIELD_ID_KEY}: ${id}`];
    if (type.type === 'struct') parts.push(...members(type));
    else if (type.type === 'list') parts.push(`element: ${entry(type['element-id'], type.element)}`);
    else parts.push(`key: ${entry(type['key-id'], type.key)}`, `value: ${entry(type['value-id'], type.value)}`);
    return `{${parts.join(', ')}}`;
  };
  const members = (struct: StructType): string[] =>
    struct.fields.map((f) => {
      const name = physicalName(f, physicalNames);
      if (name === FIELD_ID_KEY) throw unsupported(`parquet field ids: a column may not be named ${FIELD_ID_KEY}`);
      return `${quoteIdent(name)}: ${entry(f.id, f.type)}`;
    });
  return `{${members(schema).join(', ')}}`;
}

// ---------------------------------------------------------------------------------------------
// Conversion of input columns to table columns

/**
 * Conversions that fail call DuckDB's `error()` with this marker, so the engine can tell a bad
 * value from other failures and report the column, the expected type and the value.
 */
const CAST_MARK = 'TWINLAKE_CAST ';
const VALUE_MARK = ' VALUE:';

export interface CastFailure {
  /** Logical path of the column, e.g. `o.p` or `tags.element`. */
  path: string;
  expected: string;
  /** The offending value as text (first 200 characters); undefined for a null in a required column. */
  value?: string;
}

export function parseCastFailure(message: string): CastFailure | undefined {
  const at = message.indexOf(CAST_MARK);
  if (at < 0) return undefined;
  const rest = message.slice(at + CAST_MARK.length);
  const end = rest.indexOf(VALUE_MARK);
  if (end < 0) return undefined;
  try {
    const head = JSON.parse(rest.slice(0, end)) as { path: string; expected: string; isNull?: boolean };
    return { path: head.path, expected: head.expected, value: head.isNull ? undefined : rest.slice(end + VALUE_MARK.length) };
  } catch {
    return undefined;
  }
}

function failSql(path: string, expected: string, valueSql: string | undefined): string {
  const head = `${CAST_MARK}${JSON.stringify({ path, expected, ...(valueSql === undefined ? { isNull: true } : {}) })}${VALUE_MARK}`;
  return valueSql === undefined ? `error(${quoteString(head)})` : `error(concat(${quoteString(head)}, left(${valueSql}, 200)))`;
}

function typeName(type: IcebergType): string {
  return typeof type === 'string' ? type : type.type;
}

/** SQL that parses the text `s` as `type`, NULL when the text is not exactly a value of the type. */
function parseText(type: string, s: string): string {
  const guarded = (re: string, cast: string) => `CASE WHEN regexp_full_match(${s}, ${quoteString(re)}) THEN TRY_CAST(trim(${s}) AS ${cast}) END`;
  const date = '[+-]?[0-9]{4,}-[0-9]{2}-[0-9]{2}';
  const clock = (digits: number) => `[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,${digits}})?)?`;
  switch (type) {
    case 'string': return s;
    // `+5` and ` 12 ` are integers; `2.5`, `1e3` and `0x10` are not (DuckDB's cast takes them all).
    case 'long': return guarded('\\s*[+-]?[0-9]+\\s*', 'BIGINT');
    case 'int': return guarded('\\s*[+-]?[0-9]+\\s*', 'INTEGER');
    // DuckDB casts a number beyond a float's range to infinity: refuse it instead.
    case 'float': return `CASE WHEN isfinite(TRY_CAST(trim(${s}) AS DOUBLE)) AND NOT isfinite(TRY_CAST(trim(${s}) AS FLOAT)) THEN NULL ELSE TRY_CAST(trim(${s}) AS FLOAT) END`;
    case 'double': return `TRY_CAST(trim(${s}) AS DOUBLE)`;
    case 'boolean': return `TRY_CAST(trim(${s}) AS BOOLEAN)`;
    case 'uuid': return `TRY_CAST(trim(${s}) AS UUID)`;
    case 'date': return guarded(`\\s*${date}\\s*`, 'DATE');
    case 'time': return guarded(`\\s*${clock(6)}\\s*`, 'TIME');
    // A zone on a timestamp without zone would be dropped by the cast: refuse it instead.
    case 'timestamp': return guarded(`\\s*${date}([T ]${clock(6)})?\\s*`, 'TIMESTAMP');
    case 'timestamp_ns': return guarded(`\\s*${date}([T ]${clock(9)})?\\s*`, 'TIMESTAMP_NS');
    // Fast path for the common ISO-8601 UTC form; other forms are checked by the full pattern.
    case 'timestamptz': return `CASE WHEN regexp_full_match(${s}, ${quoteString(`${date}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?Z`)}) THEN TRY_CAST(${s} AS TIMESTAMPTZ) ELSE ${guarded(`\\s*${date}([T ]${clock(6)}\\s*([zZ]|[+-][0-9]{2}(:?[0-9]{2})?)?)?\\s*`, 'TIMESTAMPTZ')} END`;
    case 'binary': return `CASE WHEN regexp_full_match(${s}, '[A-Za-z0-9+/]*={0,2}') AND length(${s}) % 4 = 0 THEN from_base64(${s}) END`;
  }
  const len = fixedLength(type);
  if (len !== undefined) return `CASE WHEN regexp_full_match(${s}, '[A-Za-z0-9+/]*={0,2}') AND length(${s}) % 4 = 0 AND octet_length(from_base64(${s})) = ${len} THEN from_base64(${s}) END`;
  const dec = decimalParams(type);
  if (dec) {
    // More fractional digits than the scale would be rounded by the cast: refuse them.
    const re = dec.scale > 0 ? `\\s*[+-]?([0-9]+(\\.[0-9]{0,${dec.scale}}0*)?|\\.[0-9]{1,${dec.scale}}0*)\\s*` : '\\s*[+-]?[0-9]+(\\.0*)?\\s*';
    return guarded(re, toDuckDBType(type));
  }
  throw unsupported(`input conversion: cannot convert text to ${type}`);
}

/**
 * A cheap test that text `s` is already in the type's canonical form, and the value it then has:
 * when the test passes, `parseText` would give that very value, so the strict parse runs only for
 * the values that fail it (text in another form, or text that does not fit). DuckDB's casts are
 * lenient (`'2.5'` casts to BIGINT 3, `'0x10'` to 16, `'infinity'` to a DATE), so the test is
 * that the value prints back as the very same text: only exact, canonical text passes. Timestamps
 * give a value that is NULL for text in any other form (`orNull`) instead of a test.
 */
function canonicalText(type: string, s: string): { test: string; value: string } | { orNull: string } | undefined {
  // ISO-8601 as most writers print an instant: microseconds (DuckDB, Python, Java) or
  // milliseconds (JavaScript). A GLOB of digit classes costs a fraction of the strict pattern,
  // and the text it passes is the pattern's own form; the value is NULL for any other text.
  const iso = (zone: string) =>
    [6, 3].map((digits) => `CASE WHEN ${s} GLOB '${ISO_GLOB}.${'[0-9]'.repeat(digits)}${zone}' THEN TRY_CAST(${s} AS ${zone ? 'TIMESTAMPTZ' : 'TIMESTAMP'}) END`).join(', ');
  const roundTrip = (cast: string) => ({ test: `CAST(TRY_CAST(${s} AS ${cast}) AS VARCHAR) = ${s}`, value: `TRY_CAST(${s} AS ${cast})` });
  switch (type) {
    case 'long': return roundTrip('BIGINT');
    case 'int': return roundTrip('INTEGER');
    // DuckDB prints a date as YYYY-MM-DD, and `infinity` or BC dates otherwise: ten bytes and the
    // same text is the strict pattern's own form.
    case 'date': return { ...roundTrip('DATE'), test: `strlen(${s}) = 10 AND ${roundTrip('DATE').test}` };
    // A number that parses as it stands parses the same trimmed (the strict parse trims).
    case 'double': return { test: `TRY_CAST(${s} AS DOUBLE) IS NOT NULL`, value: `TRY_CAST(${s} AS DOUBLE)` };
    case 'timestamptz': return { orNull: iso('Z') };
    case 'timestamp': return { orNull: iso('') };
  }
  return undefined;
}

const ISO_GLOB = '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]';

/** Source → target conversions that keep every value exactly (plain CAST). */
function widens(source: string, target: string): boolean {
  if (source === target) return true;
  const integerDigits: Record<string, number> = { int: 10, long: 19 };
  const td = decimalParams(target);
  if (source === 'int' && (target === 'long' || target === 'double')) return true;
  if (integerDigits[source] !== undefined && td) return td.precision - td.scale >= integerDigits[source];
  if (source === 'float' && target === 'double') return true;
  const sd = decimalParams(source);
  if (sd && td) return td.scale >= sd.scale && td.precision - td.scale >= sd.precision - sd.scale;
  if (source === 'date' && (target === 'timestamp' || target === 'timestamptz')) return true;
  // Naive and zoned timestamps meet at UTC: the engine's session time zone is UTC.
  if ((source === 'timestamp' && target === 'timestamptz') || (source === 'timestamptz' && target === 'timestamp')) return true;
  if (source === 'timestamp' && target === 'timestamp_ns') return true;
  if (fixedLength(source) !== undefined && target === 'binary') return true;
  return false;
}

interface Converted {
  /** SQL of the converted value. */
  value: string;
  /** SQL that is TRUE when the conversion succeeds (for locating a bad row after a failure). */
  check: string;
  /** The value is the input expression unchanged. */
  identity: boolean;
}

interface Ctx {
  physicalNames: Map<number, string>;
  depth: number;
}

function convert(target: IcebergType, source: IcebergType | undefined, expr: string, path: string, required: boolean, ctx: Ctx): Converted {
  const duck = toDuckDBType(target, { nameOf: (f) => physicalName(f, ctx.physicalNames) });
  if (source === undefined) {
    if (required) throw invalidInput(`input: required column "${path}" is missing from the input`);
    return { value: `CAST(NULL AS ${duck})`, check: 'TRUE', identity: false };
  }
  const inner = convertNonNull(target, source, expr, path, ctx, duck);
  if (!required) return inner;
  return {
    value: `CASE WHEN ${expr} IS NULL THEN ${failSql(path, typeName(target), undefined)} ELSE ${inner.value} END`,
    check: `(${expr} IS NOT NULL AND ${inner.check})`,
    identity: false,
  };
}

function convertNonNull(target: IcebergType, source: IcebergType, expr: string, path: string, ctx: Ctx, duck: string): Converted {
  const mismatch = () => invalidInput(`input: column "${path}": expected ${typeName(target)}, found ${typeName(source)}`);
  if (typeof target === 'string') {
    if (typeof source !== 'string') {
      if (target === 'string') return { value: `CAST(to_json(${expr}) AS VARCHAR)`, check: 'TRUE', identity: false };
      throw mismatch();
    }
    if (source === target) return { value: expr, check: 'TRUE', identity: true };
    if (widens(source, target)) return { value: `CAST(${expr} AS ${duck})`, check: 'TRUE', identity: false };
    if (target === 'string') return { value: `CAST(${expr} AS VARCHAR)`, check: 'TRUE', identity: false };
    const text = source === 'string' ? expr : `CAST(${expr} AS VARCHAR)`;
    const parsed = parseText(target, text);
    // Most values take the cheap canonical test; the strict parse (and its error) sees the rest.
    const fast = canonicalText(target, text);
    // A value that may be NULL goes first in the coalesce, which evaluates the next argument
    // only for the rows still NULL; a test and a value would cast each row twice.
    const first = fast && 'orNull' in fast ? `${fast.orNull}, ` : '';
    return {
      value: `CASE ${fast && 'test' in fast ? `WHEN ${fast.test} THEN ${fast.value} ` : ''}WHEN ${expr} IS NULL THEN NULL ELSE coalesce(${first}${parsed}, ${failSql(path, target, text)}) END`,
      check: `(${expr} IS NULL OR ${parsed} IS NOT NULL)`,
      identity: false,
    };
  }
  if (typeof source === 'string') {
    // Nested values given as text (a CSV cell holding `[1, 2]`): DuckDB's own cast, still strict.
    if (source !== 'string' && source !== 'unknown') throw mismatch();
    const parsed = `TRY_CAST(${expr} AS ${duck})`;
    return {
      value: `CASE WHEN ${expr} IS NULL THEN NULL ELSE coalesce(${parsed}, ${failSql(path, typeName(target), `CAST(${expr} AS VARCHAR)`)}) END`,
      check: `(${expr} IS NULL OR ${parsed} IS NOT NULL)`,
      identity: false,
    };
  }
  if (source.type !== target.type) throw mismatch();
  const v = `__x${ctx.depth}`;
  const deeper: Ctx = { ...ctx, depth: ctx.depth + 1 };
  const allOk = (checks: string) => `coalesce(list_bool_and(list_transform(${checks})), TRUE)`;
  if (target.type === 'struct' && source.type === 'struct') {
    const parts = target.fields.map((f) => {
      const src = findField(source, f.name);
      const childPath = `${path}.${f.name}`;
      const c = convert(f.type, src?.type, src ? `struct_extract(${expr}, ${quoteString(src.name)})` : '', childPath, f.required, deeper);
      return { field: f, src, c };
    });
    const identity =
      parts.length === source.fields.length &&
      parts.every((p, i) => p.c.identity && p.src === source.fields[i] && physicalName(p.field, ctx.physicalNames) === p.src.name);
    if (identity) return { value: expr, check: 'TRUE', identity: true };
    const packed = `struct_pack(${parts.map((p) => `${quoteIdent(physicalName(p.field, ctx.physicalNames))} := ${p.c.value}`).join(', ')})`;
    const checks = parts.map((p) => p.c.check).filter((c) => c !== 'TRUE');
    return {
      value: `CASE WHEN ${expr} IS NULL THEN NULL ELSE ${packed} END`,
      check: checks.length ? `(${expr} IS NULL OR (${checks.join(' AND ')}))` : 'TRUE',
      identity: false,
    };
  }
  if (target.type === 'list' && source.type === 'list') {
    const c = convert(target.element, source.element, v, `${path}.element`, target['element-required'], deeper);
    if (c.identity) return { value: expr, check: 'TRUE', identity: true };
    return {
      value: `list_transform(${expr}, lambda ${v}: ${c.value})`,
      check: c.check === 'TRUE' ? 'TRUE' : `(${expr} IS NULL OR ${allOk(`${expr}, lambda ${v}: ${c.check}`)})`,
      identity: false,
    };
  }
  if (target.type === 'map' && source.type === 'map') {
    const k = convert(target.key, source.key, `${v}.key`, `${path}.key`, true, deeper);
    const val = convert(target.value, source.value, `${v}.value`, `${path}.value`, target['value-required'], deeper);
    if (k.identity && val.identity) return { value: expr, check: 'TRUE', identity: true };
    const checks = [k.check, val.check].filter((c) => c !== 'TRUE');
    return {
      value: `map_from_entries(list_transform(map_entries(${expr}), lambda ${v}: struct_pack(key := ${k.value}, value := ${val.value})))`,
      check: checks.length ? `(${expr} IS NULL OR ${allOk(`map_entries(${expr}), lambda ${v}: ${checks.join(' AND ')}`)})` : 'TRUE',
      identity: false,
    };
  }
  throw mismatch();
}

/** Input columns match table columns by name; an exact match wins over a case-insensitive one. */
function findField(struct: StructType, name: string): NestedField | undefined {
  const exact = struct.fields.find((f) => f.name === name);
  if (exact) return exact;
  const folded = struct.fields.filter((f) => f.name.toLowerCase() === name.toLowerCase());
  return folded.length === 1 ? folded[0] : undefined;
}

export interface SelectSource {
  /** Qualifier of the input relation in the FROM clause, e.g. `src`. */
  alias: string;
  /**
   * The input's columns as Iceberg types, named as in the input. Omitted: the input already has
   * the table's logical names and types.
   */
  type?: StructType;
}

function columns(schema: StructType, physicalNames: Map<number, string>, source: SelectSource) {
  const input = source.type ?? schema;
  const ctx: Ctx = { physicalNames, depth: 0 };
  return schema.fields.map((f) => {
    const src = findField(input, f.name);
    const c = convert(f.type, src?.type, src ? `${source.alias}.${quoteIdent(src.name)}` : '', f.name, f.required, ctx);
    return { field: f, physical: physicalName(f, physicalNames), ...c };
  });
}

/**
 * The SELECT list that turns the input relation into the table's columns: values converted to the
 * table's types without loss (a value that does not fit fails the query with a marked error, see
 * `parseCastFailure`), nested structs rebuilt under physical names, columns absent from the input
 * as typed NULLs, required columns checked for nulls.
 */
export function selectList(schema: StructType, physicalNames: Map<number, string>, source: SelectSource): string {
  return columns(schema, physicalNames, source)
    .map((c) => `${c.value} AS ${quoteIdent(c.physical)}`)
    .join(', ');
}

/**
 * For each top-level column, SQL that is TRUE when its conversion succeeds: run after a failure to
 * find the first bad row.
 */
export function conversionChecks(schema: StructType, physicalNames: Map<number, string>, source: SelectSource): { name: string; check: string }[] {
  return columns(schema, physicalNames, source).map((c) => ({ name: c.field.name, check: c.check }));
}
