import { invalidInput, unsupported } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import { bytesToHex, decimalParams, decimalToUnscaled, fixedLength, formatTime, unscaledToDecimal } from '../iceberg/single-value.ts';
import type { IcebergType, NestedField, StructType } from '../iceberg/types.ts';

/**
 * Iceberg types as DuckDB spells them (DESIGN.md §3), and DuckDB's described types back to Iceberg
 * types for schema inference.
 */

/** A DuckDB identifier, always quoted so any name (spaces, quotes, unicode, keywords) is safe. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A DuckDB string literal. DuckDB does not interpret backslashes in '...' literals. */
export function quoteString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

export interface DuckDBTypeOptions {
  /** The name a struct field gets in DuckDB (default: its logical name). */
  nameOf?: (field: NestedField) => string;
}

export function toDuckDBType(type: IcebergType, options: DuckDBTypeOptions = {}): string {
  if (typeof type !== 'string') {
    if (type.type === 'struct') {
      const nameOf = options.nameOf ?? ((f: NestedField) => f.name);
      return `STRUCT(${type.fields.map((f) => `${quoteIdent(nameOf(f))} ${toDuckDBType(f.type, options)}`).join(', ')})`;
    }
    if (type.type === 'list') return `${toDuckDBType(type.element, options)}[]`;
    return `MAP(${toDuckDBType(type.key, options)}, ${toDuckDBType(type.value, options)})`;
  }
  switch (type) {
    case 'boolean': return 'BOOLEAN';
    case 'int': return 'INTEGER';
    case 'long': return 'BIGINT';
    case 'float': return 'FLOAT';
    case 'double': return 'DOUBLE';
    case 'date': return 'DATE';
    case 'time': return 'TIME';
    case 'timestamp': return 'TIMESTAMP';
    case 'timestamptz': return 'TIMESTAMPTZ';
    case 'timestamp_ns': return 'TIMESTAMP_NS';
    case 'string': return 'VARCHAR';
    case 'uuid': return 'UUID';
    case 'binary': return 'BLOB';
  }
  const dec = decimalParams(type);
  if (dec) {
    if (dec.precision < 1 || dec.precision > 38 || dec.scale < 0 || dec.scale > dec.precision) throw invalidInput(`duckdb type: expected decimal(P, S) with 1 ≤ P ≤ 38 and 0 ≤ S ≤ P, found ${type}`);
    return `DECIMAL(${dec.precision},${dec.scale})`;
  }
  // DuckDB has no fixed-length binary; a reader gets the bytes as BLOB.
  if (fixedLength(type) !== undefined) return 'BLOB';
  throw unsupported(`duckdb type: no DuckDB type for Iceberg ${type}`);
}

/** A SQL expression of `value` typed as `type`, e.g. for partition constants and defaults. */
export function sqlLiteral(type: IcebergType, value: LiteralValue): string {
  const duck = toDuckDBType(type);
  if (value === null) return `CAST(NULL AS ${duck})`;
  const bad = () => invalidInput(`duckdb literal: expected a ${typeof type === 'string' ? type : type.type} value, found ${typeof value} ${String(value)}`);
  if (typeof type !== 'string') throw unsupported(`duckdb literal: nested ${type.type} constants are not supported`);
  switch (type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw bad();
      return value ? 'TRUE' : 'FALSE';
    case 'int':
    case 'long':
      if (typeof value !== 'bigint' && !(typeof value === 'number' && Number.isInteger(value))) throw bad();
      return `CAST(${value} AS ${duck})`;
    case 'float':
    case 'double':
      if (typeof value !== 'number') throw bad();
      return `CAST('${Number.isNaN(value) ? 'nan' : value === Infinity ? 'inf' : value === -Infinity ? '-inf' : Object.is(value, -0) ? '-0.0' : String(value)}' AS ${duck})`;
    case 'date':
      if (typeof value !== 'number') throw bad();
      if (!Number.isInteger(value)) throw bad();
      // Date arithmetic instead of a date string: DuckDB spells years before 1 as "(BC)".
      return `CAST(DATE '1970-01-01' + CAST(${value} AS INTEGER) AS DATE)`;
    case 'time':
      if (typeof value !== 'bigint' && typeof value !== 'number') throw bad();
      return `CAST(${quoteString(formatTime(BigInt(value)))} AS TIME)`;
    case 'timestamp':
    case 'timestamptz':
      if (typeof value !== 'bigint' && typeof value !== 'number') throw bad();
      return type === 'timestamp' ? `make_timestamp(CAST(${value} AS BIGINT))` : `CAST(make_timestamp(CAST(${value} AS BIGINT)) AS TIMESTAMPTZ)`;
    case 'timestamp_ns':
      if (typeof value !== 'bigint' && typeof value !== 'number') throw bad();
      return `make_timestamp_ns(CAST(${value} AS BIGINT))`;
    case 'string':
      if (typeof value !== 'string') throw bad();
      return `CAST(${quoteString(value)} AS VARCHAR)`;
    case 'uuid':
      if (typeof value !== 'string') throw bad();
      return `CAST(${quoteString(value)} AS UUID)`;
    case 'binary':
      if (!(value instanceof Uint8Array)) throw bad();
      return `unhex(${quoteString(bytesToHex(value))})`;
  }
  if (fixedLength(type) !== undefined) {
    if (!(value instanceof Uint8Array)) throw bad();
    return `unhex(${quoteString(bytesToHex(value))})`;
  }
  const dec = decimalParams(type);
  if (dec) {
    const text = typeof value === 'string' ? value : typeof value === 'bigint' ? unscaledToDecimal(value, dec.scale) : undefined;
    if (text === undefined) throw bad();
    return `CAST(${quoteString(unscaledToDecimal(decimalToUnscaled(text, dec.scale), dec.scale))} AS ${duck})`;
  }
  throw unsupported(`duckdb literal: no literal for ${type}`);
}

// ---------------------------------------------------------------------------------------------
// DuckDB type strings → Iceberg types

/** A parsed DuckDB type: a name with parameters, a struct, a list or a map. */
export type DuckDBTypeNode =
  | { kind: 'primitive'; name: string; params: string[] }
  | { kind: 'struct'; fields: { name: string; type: DuckDBTypeNode }[] }
  | { kind: 'list'; element: DuckDBTypeNode }
  | { kind: 'map'; key: DuckDBTypeNode; value: DuckDBTypeNode }
  | { kind: 'other'; text: string };

/** Parses type strings as DuckDB's DESCRIBE prints them, e.g. `STRUCT("a b" INTEGER, c VARCHAR[])[]`. */
export function parseDuckDBType(text: string): DuckDBTypeNode {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const fail = (what: string): never => {
    throw invalidInput(`duckdb type: ${what} at offset ${i} in ${JSON.stringify(text)}`);
  };
  const ident = (): string => {
    ws();
    if (text[i] === '"') {
      let out = '';
      i++;
      for (;;) {
        if (i >= text.length) fail('unterminated quoted name');
        if (text[i] === '"') {
          if (text[i + 1] === '"') { out += '"'; i += 2; continue; }
          i++;
          return out;
        }
        out += text[i++];
      }
    }
    const m = /^[^\s(),[\]"]+/.exec(text.slice(i));
    if (!m) fail('expected a name');
    i += m![0].length;
    return m![0];
  };
  // Balanced text up to the next top-level ',' or ')' (for ENUM/UNION bodies we do not model).
  const rawUntilClose = (): string => {
    const start = i;
    let depth = 0;
    let quote: string | undefined;
    for (; i < text.length; i++) {
      const c = text[i];
      if (quote) { if (c === quote) quote = undefined; continue; }
      if (c === "'" || c === '"') quote = c;
      else if (c === '(') depth++;
      else if (c === ')') { if (depth === 0) break; depth--; }
    }
    return text.slice(start, i);
  };
  const type = (): DuckDBTypeNode => {
    ws();
    const start = i;
    let name = ident().toUpperCase();
    // Multi-word names DESCRIBE prints.
    for (const [first, rest] of [['TIMESTAMP', ' WITH TIME ZONE'], ['TIME', ' WITH TIME ZONE'], ['DOUBLE', ' PRECISION']] as const) {
      if (name === first && text.slice(i, i + rest.length).toUpperCase() === rest) { name += rest; i += rest.length; }
    }
    let node: DuckDBTypeNode;
    ws();
    if (name === 'STRUCT' || name === 'ROW') {
      if (text[i] !== '(') fail("expected '(' after STRUCT");
      i++;
      const fields: { name: string; type: DuckDBTypeNode }[] = [];
      ws();
      while (text[i] !== ')') {
        const fname = ident();
        fields.push({ name: fname, type: type() });
        ws();
        if (text[i] === ',') { i++; ws(); continue; }
        if (text[i] !== ')') fail("expected ',' or ')' in STRUCT");
      }
      i++;
      node = { kind: 'struct', fields };
    } else if (name === 'MAP') {
      if (text[i] !== '(') fail("expected '(' after MAP");
      i++;
      const key = type();
      ws();
      if (text[i] !== ',') fail("expected ',' in MAP");
      i++;
      const value = type();
      ws();
      if (text[i] !== ')') fail("expected ')' after MAP");
      i++;
      node = { kind: 'map', key, value };
    } else if (name === 'LIST') {
      if (text[i] !== '(') fail("expected '(' after LIST");
      i++;
      const element = type();
      ws();
      if (text[i] !== ')') fail("expected ')' after LIST");
      i++;
      node = { kind: 'list', element };
    } else if (text[i] === '(') {
      i++;
      if (name === 'ENUM' || name === 'UNION') {
        rawUntilClose();
        i++;
        node = { kind: 'other', text: text.slice(start, i) };
      } else {
        const params: string[] = [];
        for (;;) {
          ws();
          const m = /^[^,)]+/.exec(text.slice(i));
          if (!m) fail('expected a type parameter');
          params.push(m![0].trim());
          i += m![0].length;
          if (text[i] === ',') { i++; continue; }
          if (text[i] === ')') { i++; break; }
          fail("expected ',' or ')' in type parameters");
        }
        node = { kind: 'primitive', name, params };
      }
    } else {
      node = { kind: 'primitive', name, params: [] };
    }
    // Array suffixes: T[] (list) and T[N] (fixed-size array, read as a list).
    for (;;) {
      ws();
      if (text[i] !== '[') break;
      const close = text.indexOf(']', i);
      if (close < 0) fail("expected ']'");
      i = close + 1;
      node = { kind: 'list', element: node };
    }
    return node;
  };
  const out = type();
  ws();
  if (i !== text.length) fail('unexpected text after the type');
  return out;
}

export interface InferOptions {
  /** What DuckDB's TIMESTAMP (no zone) becomes. Default `timestamp`. */
  naiveTimestamp?: 'timestamp' | 'timestamptz';
  /** Types with no Iceberg twin (INTERVAL, UNION, ...) become `unknown` instead of an error. */
  lenient?: boolean;
  /**
   * What DuckDB's JSON type (values of no single type: only nulls, or mixed) becomes. Default
   * `string` (the JSON text); schema inference asks for `unknown`, so a table can decide.
   */
  json?: 'string' | 'unknown';
}

/**
 * The Iceberg type of a DuckDB type, with every field ID 0 (the table assigns IDs) and every field
 * optional.
 */
export function fromDuckDBType(type: string | DuckDBTypeNode, options: InferOptions = {}): IcebergType {
  const node = typeof type === 'string' ? parseDuckDBType(type) : type;
  switch (node.kind) {
    case 'struct':
      return { type: 'struct', fields: node.fields.map((f) => ({ id: 0, name: f.name, required: false, type: fromDuckDBType(f.type, options) })) };
    case 'list':
      return { type: 'list', 'element-id': 0, element: fromDuckDBType(node.element, options), 'element-required': false };
    case 'map':
      return { type: 'map', 'key-id': 0, key: fromDuckDBType(node.key, options), 'value-id': 0, value: fromDuckDBType(node.value, options), 'value-required': false };
    case 'other':
      if (/^ENUM/i.test(node.text)) return 'string';
      if (options.lenient) return 'unknown';
      throw unsupported(`duckdb type: ${node.text} has no Iceberg type`);
  }
  switch (node.name) {
    case 'BOOLEAN': case 'BOOL': return 'boolean';
    case 'TINYINT': case 'SMALLINT': case 'INTEGER': case 'INT': case 'UTINYINT': case 'USMALLINT': return 'int';
    case 'BIGINT': case 'UINTEGER': return 'long';
    case 'UBIGINT': return 'decimal(20, 0)';
    case 'HUGEINT': case 'UHUGEINT': return 'decimal(38, 0)';
    case 'FLOAT': case 'REAL': return 'float';
    case 'DOUBLE': case 'DOUBLE PRECISION': return 'double';
    case 'DECIMAL': case 'NUMERIC': {
      const [p, s] = node.params.map(Number);
      if (!(p >= 1 && p <= 38)) throw unsupported(`duckdb type: DECIMAL(${node.params.join(',')}) exceeds Iceberg's precision 38`);
      return `decimal(${p}, ${s ?? 0})`;
    }
    case 'JSON': case 'NULL': return options.json ?? 'string';
    case 'VARCHAR': return 'string';
    case 'BLOB': return 'binary';
    case 'UUID': return 'uuid';
    case 'DATE': return 'date';
    case 'TIME': return 'time';
    case 'TIMESTAMP': case 'DATETIME': case 'TIMESTAMP_MS': case 'TIMESTAMP_S': return options.naiveTimestamp ?? 'timestamp';
    case 'TIMESTAMP WITH TIME ZONE': case 'TIMESTAMPTZ': return 'timestamptz';
    case 'TIMESTAMP_NS': return 'timestamp_ns';
  }
  if (options.lenient) return 'unknown';
  throw unsupported(`duckdb type: ${node.name}${node.params.length ? `(${node.params.join(',')})` : ''} has no Iceberg type`);
}

/** DuckDB's DESCRIBE output (column name + type string) as an Iceberg struct, IDs 0. */
export function structFromDescribe(columns: { name: string; type: string }[], options: InferOptions = {}): StructType {
  return { type: 'struct', fields: columns.map((c) => ({ id: 0, name: c.name, required: false, type: fromDuckDBType(c.type, options) })) };
}
