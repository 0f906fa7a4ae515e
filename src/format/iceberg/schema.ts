import { invalidInput, dataInvalid } from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';
import { decimalParams } from './single-value.ts';
import type { IcebergType, ListType, MapType, NestedField, PrimitiveType, Schema, StructType } from './types.ts';

/** Helpers over the schema model of types.ts (spec §Schemas and Data Types). */

/** Reserved field IDs of position delete files' columns (spec §Reserved Field IDs). */
export const POSITION_DELETE_FILE_PATH_ID = 2147483546;
export const POSITION_DELETE_POS_ID = 2147483545;

/**
 * The row lineage columns of v3 tables (spec §Row Lineage, §Reserved Field IDs). Files hold them
 * only when a writer moved existing rows; otherwise readers derive them by inheritance.
 */
export const ROW_LINEAGE_FIELDS: readonly NestedField[] = [
  { id: 2147483540, name: '_row_id', required: false, type: 'long' },
  { id: 2147483539, name: '_last_updated_sequence_number', required: false, type: 'long' },
];

export function isPrimitive(type: IcebergType): type is PrimitiveType {
  return typeof type === 'string';
}

export interface IndexedField {
  field: NestedField;
  /** Names from the schema root; list elements and map keys/values appear as element/key/value. */
  path: string[];
}

/** Every field of a schema by ID, nested ones included; list elements and map keys/values get synthetic fields. */
export function indexById(schema: StructType): Map<number, IndexedField> {
  const index = new Map<number, IndexedField>();
  const visit = (type: IcebergType, path: string[]) => {
    for (const [field, childPath] of children(type, path)) {
      index.set(field.id, { field, path: childPath });
      visit(field.type, childPath);
    }
  };
  visit(schema, []);
  return index;
}

/** The direct children of a nested type as fields, with their paths. */
function children(type: IcebergType, path: string[]): [NestedField, string[]][] {
  if (isPrimitive(type)) return [];
  if (type.type === 'struct') return type.fields.map((f) => [f, [...path, f.name]]);
  if (type.type === 'list') return [[listElementField(type), [...path, 'element']]];
  return [
    [mapKeyField(type), [...path, 'key']],
    [mapValueField(type), [...path, 'value']],
  ];
}

export function listElementField(list: ListType): NestedField {
  return { id: list['element-id'], name: 'element', required: list['element-required'], type: list.element };
}

export function mapKeyField(map: MapType): NestedField {
  return { id: map['key-id'], name: 'key', required: true, type: map.key };
}

export function mapValueField(map: MapType): NestedField {
  return { id: map['value-id'], name: 'value', required: map['value-required'], type: map.value };
}

/** The highest field ID inside a type (0 when it has none). */
export function maxFieldId(type: IcebergType): number {
  let max = 0;
  for (const [field] of children(type, [])) max = Math.max(max, field.id, maxFieldId(field.type));
  return max;
}

/**
 * Assign new IDs to every field of a struct. The order matches Iceberg Java's `AssignFreshIds`: all
 * fields of a struct take IDs before any of their children, then children in field order; a list
 * takes its element ID, a map its key then value IDs, before recursing.
 */
export function assignFreshIds(struct: StructType, nextId: () => number): StructType {
  return freshStruct(struct, nextId);
}

function freshStruct(struct: StructType, nextId: () => number): StructType {
  const ids = struct.fields.map(() => nextId());
  return { type: 'struct', fields: struct.fields.map((f, i) => ({ ...f, id: ids[i]!, type: freshType(f.type, nextId) })) };
}

function freshType(type: IcebergType, nextId: () => number): IcebergType {
  if (isPrimitive(type)) return type;
  if (type.type === 'struct') return freshStruct(type, nextId);
  if (type.type === 'list') {
    const elementId = nextId();
    return { ...type, 'element-id': elementId, element: freshType(type.element, nextId) };
  }
  const keyId = nextId();
  const valueId = nextId();
  return { ...type, 'key-id': keyId, 'value-id': valueId, key: freshType(type.key, nextId), value: freshType(type.value, nextId) };
}

/** A readable type name for messages: `struct<a: int, b: list<string>>`. */
export function typeToString(type: IcebergType): string {
  if (isPrimitive(type)) return normalizePrimitive(type);
  if (type.type === 'struct') return `struct<${type.fields.map((f) => `${f.name}: ${typeToString(f.type)}`).join(', ')}>`;
  if (type.type === 'list') return `list<${typeToString(type.element)}>`;
  return `map<${typeToString(type.key)}, ${typeToString(type.value)}>`;
}

/** Canonical spelling of a primitive type: readers must accept `decimal(9,2)` and `decimal(9, 2)`. */
export function normalizePrimitive(type: string): PrimitiveType {
  const t = type.trim();
  const dec = /^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(t);
  if (dec) return `decimal(${Number(dec[1])}, ${Number(dec[2])})`;
  const fixed = /^fixed\s*\[\s*(\d+)\s*\]$/.exec(t);
  if (fixed) return `fixed[${Number(fixed[1])}]`;
  return t;
}

/**
 * Whether a column of type `from` may become `to` by a v1/v2 type promotion (spec §Schema
 * Evolution): int→long, float→double, decimal(P,S)→decimal(P',S) with P' > P.
 */
export function canPromote(from: PrimitiveType, to: PrimitiveType): boolean {
  const a = normalizePrimitive(from);
  const b = normalizePrimitive(to);
  if (a === 'int' && b === 'long') return true;
  if (a === 'float' && b === 'double') return true;
  const da = decimalParams(a);
  const db = decimalParams(b);
  return da !== undefined && db !== undefined && da.scale === db.scale && db.precision > da.precision;
}

function samePrimitive(a: PrimitiveType, b: PrimitiveType): boolean {
  return normalizePrimitive(a) === normalizePrimitive(b);
}

// ---------------------------------------------------------------------------------------------
// Evolution of a table schema by an incoming batch schema.

/** One change an evolution makes, naming the column by its full path (`items.element.color`). */
export type SchemaChange =
  | { change: 'added'; column: string; type: string }
  | { change: 'widened'; column: string; from: string; to: string };

export function describeSchemaChange(c: SchemaChange): string {
  return c.change === 'added' ? `new column ${c.column}: ${c.type}` : `column ${c.column} promoted from ${c.from} to ${c.to}`;
}

export interface EvolveResult {
  schema: Schema;
  lastColumnId: number;
  changed: boolean;
  /** What changed, in schema order; empty when nothing did. */
  changes: SchemaChange[];
}

/**
 * Merge the schema of an incoming batch into the table's current schema, matching columns by name
 * (case-sensitive) at every level: struct fields, list elements and map values.
 *
 * - a batch column the table lacks becomes a new optional column (ids above `lastColumnId`);
 * - a wider batch type promotes the table column (int→long, float→double, decimal precision up);
 * - a narrower batch type is accepted as is: the writer casts the batch to the table type;
 * - table columns missing from the batch are kept.
 *
 * Anything else is an `invalid-input` error naming every offending column. With
 * `allowEvolution: false` any new column or promotion is an error too. When nothing changes the
 * current schema is returned as is (same schema-id).
 */
export function evolveSchema(
  current: Schema,
  incoming: StructType,
  lastColumnId: number,
  opts: { allowEvolution: boolean; newSchemaId: number },
): EvolveResult {
  const ctx: MergeContext = { nextId: lastColumnId, changes: [], errors: [] };
  const merged = mergeStruct(current, incoming, [], ctx);
  if (ctx.errors.length > 0) {
    throw invalidInput(`iceberg schema: the batch does not fit the table: ${ctx.errors.join('; ')}`, { errors: ctx.errors });
  }
  if (ctx.changes.length === 0) return { schema: current, lastColumnId, changed: false, changes: [] };
  if (!opts.allowEvolution) {
    const differences = ctx.changes.map(describeSchemaChange);
    throw invalidInput(`iceberg schema: the batch differs from the table schema and schema evolution is off: ${differences.join('; ')}`, { differences });
  }
  const schema: Schema = { ...current, type: 'struct', fields: merged.fields, 'schema-id': opts.newSchemaId };
  return { schema, lastColumnId: ctx.nextId, changed: true, changes: ctx.changes };
}

interface MergeContext {
  nextId: number;
  changes: SchemaChange[];
  errors: string[];
}

const pathName = (path: string[]) => path.join('.');

function mergeStruct(table: StructType, batch: StructType, path: string[], ctx: MergeContext): StructType {
  const byName = new Map(table.fields.map((f) => [f.name, f]));
  const seen = new Map<string, NestedField>();
  for (const bf of batch.fields) {
    if (seen.has(bf.name)) ctx.errors.push(`column ${pathName([...path, bf.name])} appears twice in the batch`);
    else seen.set(bf.name, bf);
  }
  // Existing fields first, in table order, then new ones in batch order: IDs then depend only on
  // the resulting schema, so evolving the table again by the evolved schema gives the same IDs.
  const fields = table.fields.map((tf) => {
    const bf = seen.get(tf.name);
    return bf ? { ...tf, type: mergeType(tf.type, bf.type, [...path, tf.name], ctx) } : { ...tf };
  });
  const added: NestedField[] = [];
  for (const bf of seen.values()) {
    if (byName.has(bf.name)) continue;
    // As Java's UpdateSchema.addColumn: the column takes its ID, then its nested fields theirs.
    const id = ++ctx.nextId;
    added.push({ ...bf, id, required: false, type: freshType(bf.type, () => ++ctx.nextId) });
    ctx.changes.push({ change: 'added', column: pathName([...path, bf.name]), type: typeToString(bf.type) });
  }
  return { ...table, fields: [...fields, ...added] };
}

function mergeType(table: IcebergType, batch: IcebergType, path: string[], ctx: MergeContext): IcebergType {
  const mismatch = () => {
    ctx.errors.push(`column ${pathName(path)} has type ${typeToString(table)} in the table but ${typeToString(batch)} in the batch`);
    return table;
  };
  if (isPrimitive(table) || isPrimitive(batch)) {
    if (!isPrimitive(table) || !isPrimitive(batch)) return mismatch();
    if (samePrimitive(table, batch)) return table;
    if (canPromote(batch, table)) return table; // narrower batch: cast on write
    if (canPromote(table, batch)) {
      ctx.changes.push({ change: 'widened', column: pathName(path), from: typeToString(table), to: typeToString(batch) });
      return normalizePrimitive(batch);
    }
    return mismatch();
  }
  if (table.type !== batch.type) return mismatch();
  if (table.type === 'struct') return mergeStruct(table, batch as StructType, path, ctx);
  if (table.type === 'list') {
    const b = batch as ListType;
    return { ...table, element: mergeType(table.element, b.element, [...path, 'element'], ctx) };
  }
  const b = batch as MapType;
  // Map keys identify entries: Iceberg allows no new fields or promotions inside them.
  const changesBefore = ctx.changes.length;
  const key = mergeType(table.key, b.key, [...path, 'key'], ctx);
  if (ctx.changes.length > changesBefore) {
    ctx.changes.length = changesBefore;
    ctx.errors.push(`map key ${pathName([...path, 'key'])} has type ${typeToString(table.key)} in the table but ${typeToString(b.key)} in the batch; map keys cannot evolve`);
  }
  return { ...table, key, value: mergeType(table.value, b.value, [...path, 'value'], ctx) };
}

// ---------------------------------------------------------------------------------------------
// Name mapping (spec §Column Projection, Appendix C §Name Mapping Serialization).

export interface MappedField {
  'field-id'?: number;
  names: string[];
  fields?: MappedField[];
}

export type NameMapping = MappedField[];

/**
 * The name mapping of a schema: the value of table property `schema.name-mapping.default`.
 * `aliases` adds other names a column has in data files (e.g. its physical name, which a rename
 * does not change).
 */
export function nameMapping(schema: StructType, aliases?: Map<number, string | string[]>): NameMapping {
  const mapFields = (fields: [NestedField, string][]): MappedField[] =>
    fields.map(([field, name]) => {
      const other = aliases?.get(field.id) ?? [];
      const names = [name, ...(typeof other === 'string' ? [other] : other).filter((n) => n !== name)];
      const out: MappedField = { 'field-id': field.id, names };
      const nested = children(field.type, []).map(([f, p]) => [f, p[p.length - 1]!] as [NestedField, string]);
      if (nested.length > 0) out.fields = mapFields(nested);
      return out;
    });
  return mapFields(schema.fields.map((f) => [f, f.name]));
}

/** Parse a `schema.name-mapping.default` value. */
export function parseNameMapping(json: string): NameMapping {
  let raw: unknown;
  try {
    raw = parseJson(json, 'name mapping');
  } catch (e) {
    throw dataInvalid(`iceberg name mapping: not JSON: ${(e as Error).message}`);
  }
  const parseList = (v: unknown, where: string): MappedField[] => {
    if (!Array.isArray(v)) throw dataInvalid(`iceberg name mapping: expected a list at ${where}, found ${JSON.stringify(v)}`);
    return v.map((m, i) => {
      const at = `${where}[${i}]`;
      if (m === null || typeof m !== 'object') throw dataInvalid(`iceberg name mapping: expected an object at ${at}`);
      const o = m as Record<string, unknown>;
      if (!Array.isArray(o.names) || !o.names.every((n) => typeof n === 'string')) {
        throw dataInvalid(`iceberg name mapping: expected "names" to be a list of strings at ${at}, found ${JSON.stringify(o.names)}`);
      }
      const out: MappedField = { names: o.names as string[] };
      if (o['field-id'] !== undefined && o['field-id'] !== null) {
        if (typeof o['field-id'] !== 'number' || !Number.isInteger(o['field-id'])) {
          throw dataInvalid(`iceberg name mapping: expected an integer "field-id" at ${at}, found ${JSON.stringify(o['field-id'])}`);
        }
        out['field-id'] = o['field-id'];
      }
      if (o.fields !== undefined && o.fields !== null) out.fields = parseList(o.fields, `${at}.fields`);
      return out;
    });
  };
  return parseList(raw, '$');
}
