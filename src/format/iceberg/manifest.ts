import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import {
  type AvroCodec,
  type AvroFieldIndex,
  AvroWriter,
  fieldsById,
  namedTypes,
  nonNull,
  optionalField,
  readAvroContainer,
  requiredField,
  resolveNamed,
  toBytes,
  toNumber,
  writeAvroBlocks,
  writeAvroContainer,
} from './avro.ts';
import { indexById, isPrimitive, normalizePrimitive, typeToString } from './schema.ts';
import { transformResultType } from './transforms.ts';
import { bytesToUuid, decimalParams, decimalToUnscaled, fixedLength, readTwosComplement, unscaledToDecimal, uuidToBytes } from './single-value.ts';
import {
  DataFileContent,
  EntryStatus,
  ManifestContent,
  type DataFile,
  type ManifestEntry,
  type ManifestFile,
  type PartitionField,
  type PartitionSpec,
  type PartitionTuple,
  type PrimitiveType,
  type Schema,
  type StructType,
} from './types.ts';

/**
 * Manifests (spec §Manifests): Avro files listing data or delete files with their partition tuple
 * and metrics. Writes v1, v2 (default) and v3 manifests; reads any of them by field ID, so files
 * renamed by other writers (or stripped of their key-value metadata, as Impala's test tooling
 * does) still decode.
 *
 * Partition values use the forms of `LiteralValue` (spec/scan-task.ts): int/date as number,
 * long/time/timestamps as bigint, float/double as number, string, boolean, binary/fixed as
 * Uint8Array, decimal as text (`"12.30"`), uuid as its canonical string.
 */

/** spec §Data File Fields: v1 requires block_size_in_bytes; Java writes this constant. */
const V1_BLOCK_SIZE = 64 * 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Partition types.

/** Kept here for callers that imported it from manifests; it lives in transforms.ts. */
export { transformResultType };

/** The partition tuple's struct type: one optional field per partition field, with its field ID. */
export function partitionType(spec: PartitionSpec, schema: StructType): StructType {
  const index = indexById(schema);
  return {
    type: 'struct',
    fields: spec.fields.map((f) => {
      const source = index.get(f['source-id']);
      if (!source) {
        // A dropped source column can only survive as a void field.
        if (f.transform === 'void') return { id: f['field-id'], name: f.name, required: false, type: 'int' };
        throw invalidInput(`iceberg partition: field ${f.name} has source-id ${f['source-id']}, which is not in the schema`);
      }
      return { id: f['field-id'], name: f.name, required: false, type: transformResultType(f.transform, source.field.type) };
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// Avro schema of manifest entries (spec §Manifest Entry Fields, §Data File Fields, Appendix A).

/**
 * Avro names must match [A-Za-z_][A-Za-z0-9_]*; like Java, replace other characters by `_x<HEX>`
 * (and a leading digit by `_<digit>`). Readers map fields by field ID, so the name is cosmetic.
 */
export function avroCompatibleName(name: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return name;
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    const ok = i === 0 ? /[A-Za-z_]/.test(c) : /[A-Za-z0-9_]/.test(c);
    if (ok) out += c;
    else if (/[0-9]/.test(c)) out += `_${c}`;
    else out += `_x${c.codePointAt(0)!.toString(16).toUpperCase()}`;
  }
  return out;
}

function minBytesForPrecision(precision: number): number {
  const limit = 10n ** BigInt(precision);
  let n = 1;
  while (2n ** BigInt(8 * n - 1) - 1n < limit) n++;
  return n;
}

/** Avro schema of a primitive Iceberg type (Appendix A); named fixed types are defined once. */
export function avroPrimitive(type: PrimitiveType, defined: Set<string>): unknown {
  const t = normalizePrimitive(type);
  const named = (name: string, schema: object) => {
    if (defined.has(name)) return name;
    defined.add(name);
    return { type: 'fixed', name, ...schema };
  };
  switch (t) {
    case 'boolean':
    case 'int':
    case 'long':
    case 'float':
    case 'double':
    case 'string':
      return t;
    case 'binary':
      return 'bytes';
    case 'date':
      return { type: 'int', logicalType: 'date' };
    case 'time':
      return { type: 'long', logicalType: 'time-micros' };
    case 'timestamp':
    case 'timestamptz':
      return { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': t === 'timestamptz' };
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return { type: 'long', logicalType: 'timestamp-nanos', 'adjust-to-utc': t === 'timestamptz_ns' };
    case 'uuid':
      return named('uuid_fixed', { size: 16, logicalType: 'uuid' });
  }
  const dec = decimalParams(t);
  if (dec) return named(`decimal_${dec.precision}_${dec.scale}`, { size: minBytesForPrecision(dec.precision), logicalType: 'decimal', precision: dec.precision, scale: dec.scale });
  const len = fixedLength(t);
  if (len !== undefined) return named(`fixed_${len}`, { size: len });
  throw unsupported(`iceberg manifest: type ${t} cannot be a partition value`);
}

const intMap = (name: string, id: number, keyId: number, valueId: number, valueType: string) =>
  optionalField(name, id, {
    type: 'array',
    logicalType: 'map',
    items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [requiredField('key', keyId, 'int'), requiredField('value', valueId, valueType)] },
  });

/** The Avro schema of `manifest_entry` for a format version and partition type, with every field ID. */
export function manifestEntryAvroSchema(formatVersion: 1 | 2 | 3, partition: StructType): object {
  const defined = new Set<string>();
  const partitionRecord = {
    type: 'record',
    name: 'r102',
    fields: partition.fields.map((f) => {
      if (!isPrimitive(f.type)) throw invalidInput(`iceberg manifest: partition field ${f.name} must be primitive, found ${typeToString(f.type)}`);
      return optionalField(avroCompatibleName(f.name), f.id, avroPrimitive(f.type, defined));
    }),
  };
  const v1 = formatVersion === 1;
  const v3 = formatVersion >= 3;
  const dataFile = [
    ...(v1 ? [] : [requiredField('content', 134, 'int')]),
    requiredField('file_path', 100, 'string'),
    requiredField('file_format', 101, 'string'),
    requiredField('partition', 102, partitionRecord),
    requiredField('record_count', 103, 'long'),
    requiredField('file_size_in_bytes', 104, 'long'),
    ...(v1 ? [requiredField('block_size_in_bytes', 105, 'long')] : []),
    intMap('column_sizes', 108, 117, 118, 'long'),
    intMap('value_counts', 109, 119, 120, 'long'),
    intMap('null_value_counts', 110, 121, 122, 'long'),
    intMap('nan_value_counts', 137, 138, 139, 'long'),
    intMap('lower_bounds', 125, 126, 127, 'bytes'),
    intMap('upper_bounds', 128, 129, 130, 'bytes'),
    optionalField('key_metadata', 131, 'bytes'),
    optionalField('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }),
    ...(v1 ? [] : [optionalField('equality_ids', 135, { type: 'array', items: 'int', 'element-id': 136 })]),
    optionalField('sort_order_id', 140, 'int'),
    ...(v3 ? [optionalField('first_row_id', 142, 'long')] : []),
    ...(v1 ? [] : [optionalField('referenced_data_file', 143, 'string')]),
    ...(v3 ? [optionalField('content_offset', 144, 'long'), optionalField('content_size_in_bytes', 145, 'long')] : []),
  ];
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      requiredField('status', 0, 'int'),
      v1 ? requiredField('snapshot_id', 1, 'long') : optionalField('snapshot_id', 1, 'long'),
      ...(v1 ? [] : [optionalField('sequence_number', 3, 'long'), optionalField('file_sequence_number', 4, 'long')]),
      requiredField('data_file', 2, { type: 'record', name: 'r2', fields: dataFile }),
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// Encoding.

export interface EncodeManifestArgs {
  formatVersion: 1 | 2 | 3;
  schema: Schema;
  spec: PartitionSpec;
  content: ManifestContent;
  entries: ManifestEntry[];
  syncMarker: Uint8Array;
  codec: AvroCodec;
}

/**
 * A manifest's Avro bytes. The entries are written by an encoder compiled for the manifest's
 * schema (see `compileEntryEncoder`) straight into the block buffer: a commit of 100,000 files
 * writes 100,000 entries, and building an Avro record object for each (maps as arrays of
 * key/value records, a Buffer per bound) for avsc to walk cost more than the rest of the commit.
 * The bytes are those `encodeManifestGeneric` writes (the tests hold them to it).
 */
export function encodeManifest(args: EncodeManifestArgs): Uint8Array {
  const { formatVersion: v, schema, spec, content, entries } = args;
  if (v === 1 && content !== ManifestContent.Data) throw invalidInput('iceberg manifest: v1 manifests hold data files only');
  const ptype = partitionType(spec, schema);
  const avroSchema = manifestEntryAvroSchema(v, ptype);
  const encode = compileEntryEncoder(avroSchema, v, ptype, spec);
  return writeAvroBlocks({
    schemaJson: avroSchema,
    metadata: manifestMetadata(args),
    codec: args.codec,
    syncMarker: args.syncMarker,
    count: entries.length,
    encode: (w, i) => encode(w, entries[i]!, i),
  });
}

/** The same bytes as `encodeManifest`, through avsc and an Avro record per entry: the reference the compiled encoder is tested against. */
export function encodeManifestGeneric(args: EncodeManifestArgs): Uint8Array {
  const { formatVersion: v, schema, spec, content, entries } = args;
  if (v === 1 && content !== ManifestContent.Data) throw invalidInput('iceberg manifest: v1 manifests hold data files only');
  const ptype = partitionType(spec, schema);
  const avroSchema = manifestEntryAvroSchema(v, ptype);
  const records = entries.map((e, i) => entryToAvro(e, v, ptype, spec, i));
  return writeAvroContainer({ schemaJson: avroSchema, records, metadata: manifestMetadata(args), codec: args.codec, syncMarker: args.syncMarker });
}

function manifestMetadata(args: EncodeManifestArgs): Record<string, string> {
  const { formatVersion: v, schema, spec, content } = args;
  const metadata: Record<string, string> = {
    schema: stringifyJson(schema),
    'schema-id': String(schema['schema-id']),
    'partition-spec': stringifyJson(spec.fields),
    'partition-spec-id': String(spec['spec-id']),
    'format-version': String(v),
  };
  if (v >= 2) metadata.content = content === ManifestContent.Deletes ? 'deletes' : 'data';
  return metadata;
}

/** Checks the spec's rules for an entry that the Avro types alone do not: which entries need which IDs. */
function checkEntry(e: ManifestEntry, v: number, i: number): void {
  if (v === 1 && e['snapshot-id'] === undefined) throw invalidInput(`iceberg manifest: entry ${i} (${e['data-file']['file-path']}): v1 manifests need a snapshot-id on every entry`);
  if (e.status !== EntryStatus.Added && v >= 2 && (e['sequence-number'] === undefined || e['file-sequence-number'] === undefined)) {
    // spec §Sequence Number Inheritance: only ADDED entries may inherit.
    throw invalidInput(`iceberg manifest: entry ${i} (${e['data-file']['file-path']}): status ${e.status} entries need explicit sequence numbers`);
  }
}

// ---------------------------------------------------------------------------------------------
// The compiled entry encoder.

type EntryWriter = (w: AvroWriter, e: ManifestEntry, i: number) => void;

/** A value that does not fit its Avro type: the message the generic writer gives, less avsc's wording. */
function mismatch(i: number, field: string, value: unknown): never {
  const shown = typeof value === 'bigint' ? `${value}n` : value instanceof Uint8Array ? `${value.length} bytes` : JSON.stringify(value) ?? String(value);
  throw invalidInput(`avro: record ${i} does not match the schema: ${field} cannot be ${shown}`);
}

function writeInt(w: AvroWriter, x: unknown, i: number, field: string): void {
  if (typeof x !== 'number' || !Number.isInteger(x) || x < -0x80000000 || x > 0x7fffffff) mismatch(i, field, x);
  w.int(x);
}

function writeLong(w: AvroWriter, x: unknown, i: number, field: string): void {
  if (typeof x === 'number' && Number.isSafeInteger(x)) return w.long(x);
  if (typeof x === 'bigint' && x >= -(2n ** 63n) && x < 2n ** 63n) return w.bigLong(x);
  mismatch(i, field, x);
}

function writeString(w: AvroWriter, x: unknown, i: number, field: string): void {
  if (typeof x !== 'string') mismatch(i, field, x);
  w.string(x);
}

function writeBytes(w: AvroWriter, x: unknown, i: number, field: string): void {
  if (!(x instanceof Uint8Array)) mismatch(i, field, x);
  w.bytes(x);
}

type FieldWriter = (w: AvroWriter, x: unknown, i: number, field: string) => void;

/** An optional field (`["null", T]`): branch 0 when absent, else branch 1 and the value. */
function optional(write: FieldWriter): FieldWriter {
  return (w, x, i, field) => {
    if (x === undefined || x === null) return w.branch(0);
    w.branch(1);
    write(w, x, i, field);
  };
}

const optInt = optional(writeInt);
const optLong = optional(writeLong);
const optString = optional(writeString);
const optBytes = optional(writeBytes);

/** An Iceberg map keyed by field ID (an Avro array of key/value records, Appendix A), as one block. */
function optIdMap<V>(w: AvroWriter, m: Map<number, V> | undefined, i: number, field: string, value: (w: AvroWriter, x: V, i: number, field: string) => void): void {
  if (m === undefined || m === null) return w.branch(0);
  w.branch(1);
  if (m.size > 0) {
    w.long(m.size);
    for (const [k, x] of m) {
      writeInt(w, k, i, field);
      value(w, x, i, field);
    }
  }
  w.branch(0);
}

function optArray(w: AvroWriter, a: unknown, i: number, field: string, long: boolean): void {
  if (a === undefined || a === null) return w.branch(0);
  if (!Array.isArray(a)) mismatch(i, field, a);
  w.branch(1);
  if (a.length > 0) {
    w.long(a.length);
    for (const x of a) (long ? writeLong : writeInt)(w, x, i, field);
  }
  w.branch(0);
}

/** How a partition value, as `partitionValueToAvro` gives it, is written for its Avro type. */
type ValueKind = 'boolean' | 'int' | 'long' | 'float' | 'double' | 'string' | 'bytes' | 'fixed';

function writeAvroValue(w: AvroWriter, kind: ValueKind, x: any, i: number, field: string): void {
  switch (kind) {
    case 'boolean':
      return w.boolean(x);
    case 'int':
      return writeInt(w, x, i, field);
    case 'long':
      return writeLong(w, x, i, field);
    case 'float':
      return w.float(x);
    case 'double':
      return w.double(x);
    case 'string':
      return w.string(x);
    case 'bytes':
      return w.bytes(x);
    case 'fixed':
      return w.bytesRaw(x);
  }
}

/** The field IDs of `manifestEntryAvroSchema`'s records, in order, that the encoder below writes. */
function entryFieldIds(v: number): { entry: number[]; file: number[] } {
  const v1 = v === 1;
  return {
    entry: v1 ? [0, 1, 2] : [0, 1, 3, 4, 2],
    file: [
      ...(v1 ? [] : [134]),
      100, 101, 102, 103, 104,
      ...(v1 ? [105] : []),
      108, 109, 110, 137, 125, 128, 131, 132,
      ...(v1 ? [] : [135]),
      140,
      ...(v >= 3 ? [142] : []),
      ...(v1 ? [] : [143]),
      ...(v >= 3 ? [144, 145] : []),
    ],
  };
}

/**
 * An encoder for one manifest schema (`manifestEntryAvroSchema`): straight-line code over the
 * ManifestEntry and DataFile, one call per field, each site seeing one kind of value (a generic
 * walk through per-field closures makes every site see every kind). It writes the schema's fields
 * in the schema's order, which is checked here against the order it is written for. Values are
 * checked as avsc checks them (ints fit 32 bits, longs 64, bytes are bytes), and partition values
 * are converted and checked by the rules of `partitionValueToAvro`, as in the generic path.
 */
export function compileEntryEncoder(avroSchema: any, v: number, ptype: StructType, spec: PartitionSpec): EntryWriter {
  const ids = (rec: any): number[] => rec.fields.map((f: any) => f['field-id']);
  const dataFile = avroSchema.fields.find((f: any) => f['field-id'] === 2).type;
  const expected = entryFieldIds(v);
  if (ids(avroSchema).join() !== expected.entry.join() || ids(dataFile).join() !== expected.file.join()) {
    throw invalidInput(`iceberg manifest: the v${v} entry schema has fields ${ids(avroSchema)} / ${ids(dataFile)}; the encoder writes ${expected.entry} / ${expected.file}`);
  }
  const named = new Map<string, any>();
  const collect = (x: any) => {
    if (Array.isArray(x)) return x.forEach(collect);
    if (x === null || typeof x !== 'object') return;
    if (typeof x.name === 'string' && (x.type === 'fixed' || x.type === 'record')) named.set(x.name, x);
    if (Array.isArray(x.fields)) for (const f of x.fields) collect(f.type);
  };
  collect(avroSchema);
  const partitionRecord = dataFile.fields.find((f: any) => f['field-id'] === 102).type;
  const partition = ptype.fields.map((pf, k) => {
    const avroField = partitionRecord.fields[k];
    const branch = (avroField.type as unknown[])[1];
    const t = typeof branch === 'string' ? (named.get(branch) ?? branch) : branch;
    return {
      name: spec.fields[k]!.name,
      type: pf.type as PrimitiveType,
      normalized: normalizePrimitive(pf.type as PrimitiveType),
      kind: (typeof t === 'string' ? t : (t as { type: string }).type) as ValueKind,
      field: `partition.${avroField.name}`,
    };
  });
  const v1 = v === 1;
  const v3 = v >= 3;

  return (w, e, i) => {
    checkEntry(e, v, i);
    writeInt(w, e.status, i, 'status');
    if (v1) writeLong(w, e['snapshot-id'], i, 'snapshot_id');
    else {
      optLong(w, e['snapshot-id'], i, 'snapshot_id');
      optLong(w, e['sequence-number'], i, 'sequence_number');
      optLong(w, e['file-sequence-number'], i, 'file_sequence_number');
    }
    const f = e['data-file'];
    if (!v1) writeInt(w, f.content, i, 'content');
    writeString(w, f['file-path'], i, 'file_path');
    writeString(w, f['file-format'], i, 'file_format');
    for (let k = 0; k < partition.length; k++) {
      const p = partition[k]!;
      const value = f.partition[p.name];
      const x = value === null || value === undefined ? null : toAvroValue(value, p.normalized);
      if (x === NOT_VALID) throw notValid(value, p.type, `iceberg manifest: entry ${i} (${f['file-path']}): partition ${p.name}`);
      if (x === null) w.branch(0);
      else {
        w.branch(1);
        writeAvroValue(w, p.kind, x, i, p.field);
      }
    }
    writeLong(w, f['record-count'], i, 'record_count');
    writeLong(w, f['file-size-in-bytes'], i, 'file_size_in_bytes');
    if (v1) w.long(V1_BLOCK_SIZE);
    optIdMap(w, f['column-sizes'], i, 'column_sizes', writeLong);
    optIdMap(w, f['value-counts'], i, 'value_counts', writeLong);
    optIdMap(w, f['null-value-counts'], i, 'null_value_counts', writeLong);
    optIdMap(w, f['nan-value-counts'], i, 'nan_value_counts', writeLong);
    optIdMap(w, f['lower-bounds'], i, 'lower_bounds', writeBytes);
    optIdMap(w, f['upper-bounds'], i, 'upper_bounds', writeBytes);
    optBytes(w, f['key-metadata'], i, 'key_metadata');
    optArray(w, f['split-offsets'], i, 'split_offsets', true);
    if (!v1) optArray(w, f['equality-ids'], i, 'equality_ids', false);
    optInt(w, f['sort-order-id'], i, 'sort_order_id');
    if (v3) optLong(w, f['first-row-id'], i, 'first_row_id');
    if (!v1) optString(w, f['referenced-data-file'], i, 'referenced_data_file');
    if (v3) {
      optLong(w, f['content-offset'], i, 'content_offset');
      optLong(w, f['content-size-in-bytes'], i, 'content_size_in_bytes');
    }
  };
}

function entryToAvro(e: ManifestEntry, v: number, ptype: StructType, spec: PartitionSpec, i: number): object {
  const f = e['data-file'];
  const where = `iceberg manifest: entry ${i} (${f['file-path']})`;
  checkEntry(e, v, i);
  const partition: Record<string, unknown> = {};
  ptype.fields.forEach((pf, k) => {
    const name = spec.fields[k]!.name;
    partition[avroCompatibleName(pf.name)] = partitionValueToAvro(f.partition[name], pf.type as PrimitiveType, `${where}: partition ${name}`);
  });
  const map = (m: Map<number, number | Uint8Array> | undefined) =>
    m === undefined ? null : [...m].map(([key, value]) => ({ key, value: value instanceof Uint8Array ? toBuffer(value) : value }));
  const orNull = <T>(x: T | undefined) => (x === undefined ? null : x);
  const dataFile: Record<string, unknown> = {
    content: f.content,
    file_path: f['file-path'],
    file_format: f['file-format'],
    partition,
    record_count: f['record-count'],
    file_size_in_bytes: f['file-size-in-bytes'],
    block_size_in_bytes: V1_BLOCK_SIZE,
    column_sizes: map(f['column-sizes']),
    value_counts: map(f['value-counts']),
    null_value_counts: map(f['null-value-counts']),
    nan_value_counts: map(f['nan-value-counts']),
    lower_bounds: map(f['lower-bounds']),
    upper_bounds: map(f['upper-bounds']),
    key_metadata: f['key-metadata'] === undefined ? null : toBuffer(f['key-metadata']),
    split_offsets: orNull(f['split-offsets']),
    equality_ids: orNull(f['equality-ids']),
    sort_order_id: orNull(f['sort-order-id']),
    first_row_id: orNull(f['first-row-id']),
    referenced_data_file: orNull(f['referenced-data-file']),
    content_offset: orNull(f['content-offset']),
    content_size_in_bytes: orNull(f['content-size-in-bytes']),
  };
  return {
    status: e.status,
    snapshot_id: orNull(e['snapshot-id']),
    sequence_number: orNull(e['sequence-number']),
    file_sequence_number: orNull(e['file-sequence-number']),
    data_file: dataFile,
  };
}

const toBuffer = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** A partition value in `LiteralValue` form to the Avro value of its partition type. */
export function partitionValueToAvro(value: unknown, type: PrimitiveType, where: string): unknown {
  if (value === null || value === undefined) return null;
  const x = toAvroValue(value, normalizePrimitive(type));
  if (x === NOT_VALID) throw notValid(value, type, where);
  return x;
}

function notValid(value: unknown, type: PrimitiveType, where: string) {
  return invalidInput(`${where}: ${stringifyJson(value instanceof Uint8Array ? [...value] : value)} is not a valid ${type} value`);
}

const NOT_VALID = Symbol('not valid');

/** `partitionValueToAvro` for a non-null value and a normalized type; NOT_VALID when it does not fit. */
function toAvroValue(value: unknown, t: PrimitiveType): unknown {
  switch (t) {
    case 'boolean':
      return typeof value === 'boolean' ? value : NOT_VALID;
    case 'int':
    case 'date':
      if (typeof value === 'bigint') return Number(value);
      return typeof value === 'number' && Number.isInteger(value) ? value : NOT_VALID;
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      if (typeof value === 'bigint') return value;
      return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : NOT_VALID;
    case 'float':
    case 'double':
      return typeof value === 'number' ? value : NOT_VALID;
    case 'string':
      return typeof value === 'string' ? value : NOT_VALID;
    case 'binary':
      return value instanceof Uint8Array ? toBuffer(value) : NOT_VALID;
    case 'uuid':
      if (value instanceof Uint8Array && value.length === 16) return toBuffer(value);
      return typeof value === 'string' ? attempt(() => toBuffer(uuidToBytes(value))) : NOT_VALID;
  }
  const dec = decimalParams(t);
  if (dec) {
    const unscaled = typeof value === 'bigint' ? value : typeof value === 'string' ? attempt(() => decimalToUnscaled(value, dec.scale)) : NOT_VALID;
    if (unscaled === NOT_VALID) return NOT_VALID;
    if ((unscaled < 0n ? -unscaled : unscaled) >= 10n ** BigInt(dec.precision)) return NOT_VALID;
    return twosComplement(unscaled, minBytesForPrecision(dec.precision));
  }
  const len = fixedLength(t);
  if (len !== undefined) return value instanceof Uint8Array && value.length === len ? toBuffer(value) : NOT_VALID;
  return NOT_VALID;
}

function attempt<T>(fn: () => T): T | typeof NOT_VALID {
  try {
    return fn();
  } catch {
    return NOT_VALID;
  }
}

/** Avro decimals are fixed-size: sign-extend the two's complement to the full width. */
function twosComplement(n: bigint, size: number): Buffer {
  const out = Buffer.alloc(size);
  let v = BigInt.asUintN(size * 8, n);
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Decoding.

/**
 * What the manifest list says of a manifest against what it holds. The list counts each
 * manifest's entries and added rows (from v2 on): a manifest cut short at a block boundary, or
 * another manifest (of another snapshot or table) put in its place, disagrees. Only fewer entries
 * or rows than the list counts are taken as damage, and neither the length nor the entries'
 * snapshot IDs are compared: some writers record fewer entries (Impala, which also keeps entries
 * of other snapshots as added) or another manifest_length (DuckDB) than the file holds.
 */
function checkAgainstList(entries: ManifestEntry[], list: ManifestFile, source: string): void {
  const count = (status: EntryStatus) => entries.filter((e) => e.status === status).length;
  const addedRows = entries.reduce((n, e) => (e.status === EntryStatus.Added ? n + e['data-file']['record-count'] : n), 0);
  const found = { added: count(EntryStatus.Added), existing: count(EntryStatus.Existing), deleted: count(EntryStatus.Deleted), rows: addedRows };
  const expected = { added: list['added-files-count'], existing: list['existing-files-count'], deleted: list['deleted-files-count'], rows: list['added-rows-count'] };
  if (found.added >= expected.added && found.existing >= expected.existing && found.deleted >= expected.deleted && found.rows >= expected.rows) return;
  const say = (c: typeof found) => `${c.added} added, ${c.existing} existing and ${c.deleted} deleted entries with ${c.rows} added rows`;
  throw dataInvalid(`${source}: expected ${say(expected)} (the manifest list's counts), found ${say(found)}`, { file: source });
}

export interface DecodedManifest {
  entries: ManifestEntry[];
  specId: number;
  /** The table schema the writer stored in the header, when present. */
  schema?: Schema;
  /** The partition fields the writer stored in the header, when present. */
  partitionFields?: PartitionField[];
  formatVersion: 1 | 2 | 3;
  content: ManifestContent;
}

/**
 * Decode a manifest. `manifestFile` (its manifest-list entry) supplies the spec ID and content
 * when the header lacks them; `specsById` supplies partition field names. Sequence numbers and
 * snapshot IDs are left as written: apply `inheritSequenceNumbers` (and `inheritFirstRowIds`).
 */
export function decodeManifest(
  bytes: Uint8Array,
  opts: { specsById?: Map<number, PartitionSpec>; manifestFile?: ManifestFile; source?: string } = {},
): DecodedManifest {
  const source = opts.source ?? opts.manifestFile?.['manifest-path'] ?? 'manifest';
  const { schemaJson, metadata, records } = readAvroContainer(bytes, source);
  const named = namedTypes(schemaJson);
  const entryFields = fieldsById(schemaJson, named, source);
  const dataFileField = entryFields.byId.get(2) ?? entryFields.byName.get('data_file');
  if (!dataFileField) throw dataInvalid(`${source}: manifest entries have no data_file field (id 2)`);
  const fileFields = fieldsById(resolveNamed(nonNull(dataFileField.schema), named), named, source);
  const partField = fileFields.byId.get(102) ?? fileFields.byName.get('partition');
  if (!partField) throw dataInvalid(`${source}: data_file has no partition field (id 102)`);
  const partFields = fieldsById(resolveNamed(nonNull(partField.schema), named), named, source);

  const headerInt = (key: string) => {
    const raw = metadata[key];
    if (raw === undefined || raw === 'null' || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n)) throw dataInvalid(`${source}: manifest metadata ${key} is not an integer: ${JSON.stringify(raw)}`);
    return n;
  };
  const specId = opts.manifestFile?.['partition-spec-id'] ?? headerInt('partition-spec-id') ?? 0;
  let formatVersion = headerInt('format-version');
  if (formatVersion === undefined) {
    if (fileFields.byId.has(142) || fileFields.byId.has(144)) formatVersion = 3;
    else formatVersion = entryFields.byId.has(3) || fileFields.byId.has(134) ? 2 : 1;
  }
  if (formatVersion < 1 || formatVersion > 3) throw unsupported(`${source}: manifest format-version ${formatVersion} is not supported; expected 1, 2 or 3`);
  const content =
    metadata.content === 'deletes' ? ManifestContent.Deletes : metadata.content === 'data' ? ManifestContent.Data : (opts.manifestFile?.content ?? ManifestContent.Data);

  let schema: Schema | undefined;
  let partitionFields: PartitionField[] | undefined;
  try {
    if (metadata.schema) schema = parseJson(metadata.schema, `${source} schema`);
    if (metadata['partition-spec']) partitionFields = parseJson(metadata['partition-spec'], `${source} partition-spec`);
  } catch (e) {
    throw dataInvalid(`${source}: manifest metadata is not valid JSON: ${(e as Error).message}`);
  }
  if (schema && schema['schema-id'] === undefined) {
    const sid = headerInt('schema-id');
    if (sid !== undefined) schema = { ...schema, 'schema-id': sid };
  }

  // Partition field names: the table's spec, else the header's, else the Avro names.
  const specFields = opts.specsById?.get(specId)?.fields ?? partitionFields ?? [];
  const nameById = new Map(specFields.map((f) => [f['field-id'], f.name]));
  const partitionColumns = [...partFields.list].map((pf) => ({
    avroName: pf.name,
    name: (pf.id !== undefined ? nameById.get(pf.id) : undefined) ?? pf.name,
    schema: resolveNamed(nonNull(pf.schema), named),
  }));

  const entries = records.map((r, i): ManifestEntry => {
    const get = (idx: AvroFieldIndex, rec: any, id: number, name: string) => {
      const f = idx.byId.get(id) ?? idx.byName.get(name);
      return f === undefined ? undefined : rec[f.name];
    };
    const df = get(entryFields, r, 2, 'data_file');
    if (!df) throw dataInvalid(`${source}: entry ${i} has no data_file`);
    const partRec = get(fileFields, df, 102, 'partition') ?? {};
    const partition: PartitionTuple = {};
    for (const c of partitionColumns) partition[c.name] = partitionValueFromAvro(partRec[c.avroName], c.schema);

    const fv = (id: number, name: string) => get(fileFields, df, id, name);
    const need = (id: number, name: string) => {
      const v = fv(id, name);
      if (v === null || v === undefined) throw dataInvalid(`${source}: entry ${i} has no ${name} (field ${id})`);
      return v;
    };
    const dataFile: DataFile = {
      content: toNumber(fv(134, 'content') ?? DataFileContent.Data) as DataFileContent,
      'file-path': String(need(100, 'file_path')),
      'file-format': String(need(101, 'file_format')).toUpperCase() as DataFile['file-format'],
      partition,
      'record-count': toNumber(need(103, 'record_count')),
      'file-size-in-bytes': toNumber(need(104, 'file_size_in_bytes')),
      'spec-id': specId,
    };
    const setMap = (key: keyof DataFile, id: number, name: string, bytes: boolean) => {
      const raw = fv(id, name);
      if (raw === null || raw === undefined) return;
      const entries: [unknown, unknown][] = Array.isArray(raw) ? raw.map((kv: any) => [kv.key, kv.value]) : Object.entries(raw);
      (dataFile as any)[key] = new Map(entries.map(([k, val]) => [Number(k), bytes ? toBytes(val) : toNumber(val)]));
    };
    setMap('column-sizes', 108, 'column_sizes', false);
    setMap('value-counts', 109, 'value_counts', false);
    setMap('null-value-counts', 110, 'null_value_counts', false);
    setMap('nan-value-counts', 137, 'nan_value_counts', false);
    setMap('lower-bounds', 125, 'lower_bounds', true);
    setMap('upper-bounds', 128, 'upper_bounds', true);
    const opt = <K extends keyof DataFile>(key: K, id: number, name: string, conv: (x: any) => DataFile[K]) => {
      const raw = fv(id, name);
      if (raw !== null && raw !== undefined) dataFile[key] = conv(raw);
    };
    opt('key-metadata', 131, 'key_metadata', toBytes);
    opt('split-offsets', 132, 'split_offsets', (a: unknown[]) => a.map(toNumber));
    opt('equality-ids', 135, 'equality_ids', (a: unknown[]) => a.map(toNumber));
    opt('sort-order-id', 140, 'sort_order_id', toNumber);
    opt('first-row-id', 142, 'first_row_id', toNumber);
    opt('referenced-data-file', 143, 'referenced_data_file', String);
    opt('content-offset', 144, 'content_offset', toNumber);
    opt('content-size-in-bytes', 145, 'content_size_in_bytes', toNumber);

    const entry: ManifestEntry = { status: toNumber(get(entryFields, r, 0, 'status')) as EntryStatus, 'data-file': dataFile };
    const snapshotId = get(entryFields, r, 1, 'snapshot_id');
    if (snapshotId !== null && snapshotId !== undefined) entry['snapshot-id'] = BigInt(snapshotId);
    const seq = get(entryFields, r, 3, 'sequence_number');
    if (seq !== null && seq !== undefined) entry['sequence-number'] = toNumber(seq);
    const fileSeq = get(entryFields, r, 4, 'file_sequence_number');
    if (fileSeq !== null && fileSeq !== undefined) entry['file-sequence-number'] = toNumber(fileSeq);
    return entry;
  });

  if (opts.manifestFile && formatVersion >= 2) checkAgainstList(entries, opts.manifestFile, source);
  const out: DecodedManifest = { entries, specId, formatVersion: formatVersion as 1 | 2 | 3, content };
  if (schema) out.schema = schema;
  if (partitionFields) out.partitionFields = partitionFields;
  return out;
}

/** An Avro partition value to its `LiteralValue` form, guided by the writer's Avro type. */
function partitionValueFromAvro(value: unknown, schema: any): unknown {
  if (value === null || value === undefined) return null;
  const logical = schema && typeof schema === 'object' ? schema.logicalType : undefined;
  if (logical === 'decimal' && value instanceof Uint8Array) return unscaledToDecimal(readTwosComplement(value), Number(schema.scale ?? 0));
  if (logical === 'uuid' && value instanceof Uint8Array && value.length === 16) return bytesToUuid(value);
  if (value instanceof Uint8Array) return toBytes(value);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Inheritance.

/**
 * spec §Sequence Number Inheritance: null snapshot IDs come from the manifest-list entry; null
 * data and file sequence numbers too for ADDED entries. Manifests listed with sequence number 0
 * (v1 manifests, whose entries have no sequence numbers) give every entry sequence number 0, as
 * Java's reader does. Returns new entries.
 */
export function inheritSequenceNumbers(entries: readonly ManifestEntry[], manifestFile: ManifestFile): ManifestEntry[] {
  const seq = manifestFile['sequence-number'];
  return entries.map((e) => {
    const inherits = e.status === EntryStatus.Added || seq === 0;
    const out: ManifestEntry = { ...e };
    if (out['snapshot-id'] === undefined) out['snapshot-id'] = manifestFile['added-snapshot-id'];
    if (out['sequence-number'] === undefined && inherits) out['sequence-number'] = seq;
    if (out['file-sequence-number'] === undefined && inherits) out['file-sequence-number'] = seq;
    return out;
  });
}

/**
 * spec §First Row ID Inheritance (v3): data files without a first row ID take the manifest's
 * `first-row-id` plus the record counts of the preceding such files. DELETED entries take no IDs:
 * writers reserve `added_rows_count + existing_rows_count` per manifest, so counting deleted rows
 * would run into the next manifest's range. Returns new entries; unchanged without a manifest
 * first-row-id.
 */
export function inheritFirstRowIds(entries: readonly ManifestEntry[], manifestFile: ManifestFile): ManifestEntry[] {
  const first = manifestFile['first-row-id'];
  if (first === undefined || manifestFile.content !== ManifestContent.Data) return [...entries];
  let next = first;
  return entries.map((e) => {
    const f = e['data-file'];
    if (e.status === EntryStatus.Deleted || f.content !== DataFileContent.Data || f['first-row-id'] !== undefined) return e;
    const out: ManifestEntry = { ...e, 'data-file': { ...f, 'first-row-id': next } };
    next += f['record-count'];
    return out;
  });
}

/**
 * A delete file entry's identity: its path, plus the blob offset for a deletion vector (one
 * Puffin file holds the vectors of many data files, each its own manifest entry).
 */
export function deleteFileKey(d: DataFile): string {
  return d['content-offset'] === undefined ? d['file-path'] : `${d['file-path']}@${d['content-offset']}`;
}
