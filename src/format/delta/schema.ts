import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import { isJsonObject } from '../../core/json.ts';
import { parseJson } from '../../core/json.ts';
import type { IcebergType, ListType, MapType, NestedField, Schema, StructType } from '../iceberg/types.ts';
import type { Protocol } from './actions.ts';

/**
 * Delta schema JSON (PROTOCOL.md §Schema Serialization Format) and its mapping to the Iceberg model
 * (DESIGN.md §3), with column mapping metadata (PROTOCOL.md §Column Mapping) carrying the Iceberg
 * field IDs.
 */

export type DeltaType = string | DeltaStructType | DeltaArrayType | DeltaMapType;

export interface DeltaStructField {
  name: string;
  type: DeltaType;
  nullable: boolean;
  metadata: Record<string, unknown>;
}

export interface DeltaStructType {
  type: 'struct';
  fields: DeltaStructField[];
}

export interface DeltaArrayType {
  type: 'array';
  elementType: DeltaType;
  containsNull: boolean;
}

export interface DeltaMapType {
  type: 'map';
  keyType: DeltaType;
  valueType: DeltaType;
  valueContainsNull: boolean;
}

export type ColumnMappingMode = 'none' | 'name' | 'id';

export const COLUMN_MAPPING_ID = 'delta.columnMapping.id';
export const COLUMN_MAPPING_PHYSICAL_NAME = 'delta.columnMapping.physicalName';
/**
 * IDs of list elements and map keys/values, stored on the nearest enclosing struct field as
 * `{ "<physicalName>.element": id, "<physicalName>.key.element": id, ... }` (PROTOCOL.md §Writer
 * Requirements for IcebergCompatV2).
 */
export const COLUMN_MAPPING_NESTED_IDS = 'delta.columnMapping.nested.ids';
const COMMENT = 'comment';

// --- Iceberg → Delta ---------------------------------------------------------------------------

/**
 * The Delta schema of an Iceberg schema, every struct field carrying its Iceberg field ID and
 * physical name, list/map IDs recorded as nested IDs. Types without a Delta twin are refused.
 */
export function toDeltaSchema(schema: Schema | StructType, physicalNames: Map<number, string>): DeltaStructType {
  return structToDelta(schema, physicalNames, '');
}

function structToDelta(struct: StructType, names: Map<number, string>, path: string): DeltaStructType {
  return { type: 'struct', fields: struct.fields.map((f) => fieldToDelta(f, names, path)) };
}

function fieldToDelta(field: NestedField, names: Map<number, string>, parentPath: string): DeltaStructField {
  const path = parentPath === '' ? field.name : `${parentPath}.${field.name}`;
  const physical = names.get(field.id);
  if (physical === undefined) throw invalidInput(`delta schema: no physical name for field ${field.id} (${path})`);
  const nestedIds: Record<string, number> = {};
  const type = typeToDelta(field.type, names, path, physical, nestedIds);
  const metadata: Record<string, unknown> = {};
  if (field.doc !== undefined) metadata[COMMENT] = field.doc;
  metadata[COLUMN_MAPPING_ID] = field.id;
  metadata[COLUMN_MAPPING_PHYSICAL_NAME] = physical;
  if (Object.keys(nestedIds).length > 0) metadata[COLUMN_MAPPING_NESTED_IDS] = nestedIds;
  return { name: field.name, type, nullable: !field.required, metadata };
}

/** `key` is the nested-ID key of this position, relative to the nearest struct field. */
function typeToDelta(type: IcebergType, names: Map<number, string>, path: string, key: string, nestedIds: Record<string, number>): DeltaType {
  if (typeof type === 'string') return primitiveToDelta(type, path);
  switch (type.type) {
    case 'struct':
      return structToDelta(type, names, path);
    case 'list': {
      const k = `${key}.element`;
      nestedIds[k] = type['element-id'];
      return {
        type: 'array',
        elementType: typeToDelta(type.element, names, `${path}.element`, k, nestedIds),
        containsNull: !type['element-required'],
      };
    }
    case 'map': {
      const kk = `${key}.key`;
      const kv = `${key}.value`;
      nestedIds[kk] = type['key-id'];
      nestedIds[kv] = type['value-id'];
      return {
        type: 'map',
        keyType: typeToDelta(type.key, names, `${path}.key`, kk, nestedIds),
        valueType: typeToDelta(type.value, names, `${path}.value`, kv, nestedIds),
        valueContainsNull: !type['value-required'],
      };
    }
  }
}

function primitiveToDelta(type: string, path: string): string {
  switch (type) {
    case 'boolean':
    case 'long':
    case 'float':
    case 'double':
    case 'date':
    case 'string':
    case 'binary':
      return type;
    case 'int':
      return 'integer';
    case 'timestamptz':
      return 'timestamp';
    case 'timestamp':
      return 'timestamp_ntz';
  }
  const d = /^decimal\((\d+),\s*(\d+)\)$/.exec(type);
  if (d) {
    if (Number(d[1]) > 38) throw unsupported(`delta schema: column ${path}: expected decimal precision <= 38, found ${type}`);
    return `decimal(${d[1]},${d[2]})`;
  }
  throw unsupported(`delta schema: column ${path} has type ${type}, which has no Delta equivalent`);
}

// --- Delta → Iceberg ---------------------------------------------------------------------------

export interface ParsedDeltaSchema {
  schema: Schema;
  /** field ID → the column's name in the data files (struct fields at every level). */
  physicalNames: Map<number, string>;
}

/**
 * Reads any Delta table's schema. Field IDs come from column mapping metadata when present and are
 * otherwise assigned after the largest one found, struct by struct (all fields of a struct, then
 * their children), as Iceberg assigns fresh IDs. Physical names come from the metadata in modes
 * `name`/`id` and are the logical names in mode `none`.
 */
export function fromDeltaSchema(schemaString: string, columnMappingMode: ColumnMappingMode): ParsedDeltaSchema {
  let root: unknown;
  try {
    root = parseJson(schemaString, 'schemaString');
  } catch (e) {
    throw dataInvalid(`delta schema: ${(e as Error).message}`);
  }
  if (!isStruct(root)) throw dataInvalid(`delta schema: expected a struct at the top level, found ${short(root)}`);
  const ctx = new IdAssigner(root, columnMappingMode);
  const struct = ctx.struct(root, '');
  return { schema: { type: 'struct', 'schema-id': 0, fields: struct.fields }, physicalNames: ctx.physicalNames };
}

class IdAssigner {
  readonly physicalNames = new Map<number, string>();
  private next: number;
  private readonly used = new Set<number>();
  private readonly claimed = new Set<number>();

  constructor(
    root: DeltaStructType,
    private readonly mode: ColumnMappingMode,
  ) {
    collectIds(root, this.used);
    this.next = Math.max(0, ...this.used) + 1;
  }

  private fresh(): number {
    return this.next++;
  }

  private claim(id: number, path: string): number {
    if (this.claimed.has(id)) throw dataInvalid(`delta schema: column ${path}: field id ${id} is used twice`);
    this.claimed.add(id);
    return id;
  }

  struct(s: DeltaStructType, parentPath: string): StructType {
    if (!Array.isArray(s.fields)) throw dataInvalid(`delta schema: column ${parentPath || '<root>'}: expected a fields array`);
    // Assign this struct's IDs before descending, so top-level columns get the first IDs.
    const ids = s.fields.map((f) => {
      if (!f || typeof f.name !== 'string') throw dataInvalid(`delta schema: column ${parentPath || '<root>'}: a field has no name`);
      const path = parentPath === '' ? f.name : `${parentPath}.${f.name}`;
      const meta = f.metadata ?? {};
      const raw = meta[COLUMN_MAPPING_ID];
      const id = raw === undefined ? this.fresh() : this.claim(toInt(raw, `${path} ${COLUMN_MAPPING_ID}`), path);
      const physical = this.mode !== 'none' && typeof meta[COLUMN_MAPPING_PHYSICAL_NAME] === 'string' ? (meta[COLUMN_MAPPING_PHYSICAL_NAME] as string) : f.name;
      this.physicalNames.set(id, physical);
      return id;
    });
    const fields = s.fields.map((f, i): NestedField => {
      const path = parentPath === '' ? f.name : `${parentPath}.${f.name}`;
      const meta = f.metadata ?? {};
      const nested = isJsonObject(meta[COLUMN_MAPPING_NESTED_IDS]) ? (meta[COLUMN_MAPPING_NESTED_IDS] as Record<string, unknown>) : {};
      const key = typeof meta[COLUMN_MAPPING_PHYSICAL_NAME] === 'string' ? (meta[COLUMN_MAPPING_PHYSICAL_NAME] as string) : f.name;
      const out: NestedField = {
        id: ids[i]!,
        name: f.name,
        required: f.nullable === false,
        type: this.type(f.type, path, key, nested),
      };
      if (typeof meta[COMMENT] === 'string') out.doc = meta[COMMENT] as string;
      return out;
    });
    return { type: 'struct', fields };
  }

  private nestedId(nested: Record<string, unknown>, key: string, path: string): number {
    const raw = nested[key];
    return raw === undefined ? this.fresh() : this.claim(toInt(raw, `${path} ${COLUMN_MAPPING_NESTED_IDS}[${key}]`), path);
  }

  private type(t: DeltaType, path: string, key: string, nested: Record<string, unknown>): IcebergType {
    if (typeof t === 'string') return primitiveFromDelta(t, path);
    if (!isJsonObject(t)) throw dataInvalid(`delta schema: column ${path}: expected a type, found ${short(t)}`);
    switch (t.type) {
      case 'struct':
        return this.struct(t as DeltaStructType, path);
      case 'array': {
        const a = t as DeltaArrayType;
        const k = `${key}.element`;
        const list: ListType = {
          type: 'list',
          'element-id': this.nestedId(nested, k, path),
          element: undefined as unknown as IcebergType,
          'element-required': a.containsNull === false,
        };
        list.element = this.type(a.elementType, `${path}.element`, k, nested);
        return list;
      }
      case 'map': {
        const m = t as DeltaMapType;
        const kk = `${key}.key`;
        const kv = `${key}.value`;
        const map: MapType = {
          type: 'map',
          'key-id': this.nestedId(nested, kk, path),
          key: undefined as unknown as IcebergType,
          'value-id': this.nestedId(nested, kv, path),
          value: undefined as unknown as IcebergType,
          'value-required': m.valueContainsNull === false,
        };
        map.key = this.type(m.keyType, `${path}.key`, kk, nested);
        map.value = this.type(m.valueType, `${path}.value`, kv, nested);
        return map;
      }
    }
    throw unsupported(`delta schema: column ${path} has type ${short((t as { type: unknown }).type)}, which Twinlake cannot read`);
  }
}

function collectIds(t: unknown, out: Set<number>): void {
  if (!isJsonObject(t)) return;
  if (t.type === 'struct' && Array.isArray(t.fields)) {
    for (const f of t.fields) {
      const meta = isJsonObject(f?.metadata) ? f.metadata : {};
      const id = meta[COLUMN_MAPPING_ID];
      if (typeof id === 'number' || typeof id === 'bigint') out.add(Number(id));
      if (isJsonObject(meta[COLUMN_MAPPING_NESTED_IDS])) {
        for (const v of Object.values(meta[COLUMN_MAPPING_NESTED_IDS] as Record<string, unknown>)) {
          if (typeof v === 'number' || typeof v === 'bigint') out.add(Number(v));
        }
      }
      collectIds(f?.type, out);
    }
  } else if (t.type === 'array') {
    collectIds(t.elementType, out);
  } else if (t.type === 'map') {
    collectIds(t.keyType, out);
    collectIds(t.valueType, out);
  }
}

function primitiveFromDelta(t: string, path: string): IcebergType {
  switch (t) {
    case 'boolean':
    case 'long':
    case 'float':
    case 'double':
    case 'date':
    case 'string':
    case 'binary':
    case 'variant':
      return t;
    case 'integer':
    case 'short':
    case 'byte':
      return 'int';
    case 'timestamp':
      return 'timestamptz';
    case 'timestamp_ntz':
      return 'timestamp';
    case 'void':
      return 'unknown';
    case 'decimal':
      return 'decimal(10, 0)';
  }
  const d = /^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$/.exec(t);
  if (d) return `decimal(${Number(d[1])}, ${Number(d[2])})`;
  throw unsupported(`delta schema: column ${path} has type ${t}, which Twinlake cannot read`);
}

// --- protocol ----------------------------------------------------------------------------------

/**
 * The lowest protocol that supports what a new table uses (PROTOCOL.md §Table Features, §Column
 * Mapping, §Timestamp without timezone, §Deletion Vectors).
 */
export function protocolFor(schema: StructType, features: { columnMapping: boolean; deletionVectors?: boolean }): Protocol {
  const ntz = usesType(schema, 'timestamp');
  if (ntz || features.deletionVectors) {
    const names = [
      ...(features.columnMapping ? ['columnMapping'] : []),
      ...(features.deletionVectors ? ['deletionVectors'] : []),
      ...(ntz ? ['timestampNtz'] : []),
    ];
    // All three are reader-writer features, so both lists name them.
    return { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: names, writerFeatures: [...names] };
  }
  if (features.columnMapping) return { minReaderVersion: 2, minWriterVersion: 5 };
  return { minReaderVersion: 1, minWriterVersion: 2 };
}

function usesType(t: IcebergType, wanted: string): boolean {
  if (typeof t === 'string') return t === wanted;
  switch (t.type) {
    case 'struct':
      return t.fields.some((f) => usesType(f.type, wanted));
    case 'list':
      return usesType(t.element, wanted);
    case 'map':
      return usesType(t.key, wanted) || usesType(t.value, wanted);
  }
}

/**
 * The column mapping mode in force: the table property counts only when the protocol supports
 * column mapping (PROTOCOL.md §Column Mapping).
 */
export function columnMappingMode(protocol: Protocol, configuration: Record<string, string>): ColumnMappingMode {
  const supported =
    protocol.minReaderVersion === 2 || (protocol.minReaderVersion >= 3 && (protocol.readerFeatures ?? []).includes('columnMapping'));
  const mode = configuration['delta.columnMapping.mode'] ?? 'none';
  if (!supported) return 'none';
  if (mode === 'none' || mode === 'name' || mode === 'id') return mode;
  throw dataInvalid(`delta metadata: delta.columnMapping.mode: expected none, name or id, found ${JSON.stringify(mode)}`);
}

// --- helpers -----------------------------------------------------------------------------------


function isStruct(x: unknown): x is DeltaStructType {
  return isJsonObject(x) && x.type === 'struct' && Array.isArray(x.fields);
}

function toInt(x: unknown, what: string): number {
  const n = typeof x === 'bigint' ? Number(x) : x;
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw dataInvalid(`delta schema: ${what}: expected an integer, found ${short(x)}`);
  return n;
}

function short(x: unknown): string {
  const s = typeof x === 'bigint' ? String(x) : (JSON.stringify(x) ?? String(x));
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}
