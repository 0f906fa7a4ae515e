import { dataInvalid, invalidInput, unsupported } from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import {
  type AvroCodec,
  type AvroFieldIndex,
  fieldsById,
  namedTypes,
  nonNull,
  optionalField,
  readAvroContainer,
  requiredField,
  resolveNamed,
  toBytes,
  toNumber,
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

export function encodeManifest(args: {
  formatVersion: 1 | 2 | 3;
  schema: Schema;
  spec: PartitionSpec;
  content: ManifestContent;
  entries: ManifestEntry[];
  syncMarker: Uint8Array;
  codec: AvroCodec;
}): Uint8Array {
  const { formatVersion: v, schema, spec, content, entries } = args;
  if (v === 1 && content !== ManifestContent.Data) throw invalidInput('iceberg manifest: v1 manifests hold data files only');
  const ptype = partitionType(spec, schema);
  const avroSchema = manifestEntryAvroSchema(v, ptype);
  const records = entries.map((e, i) => entryToAvro(e, v, ptype, spec, i));
  const metadata: Record<string, string> = {
    schema: stringifyJson(schema),
    'schema-id': String(schema['schema-id']),
    'partition-spec': stringifyJson(spec.fields),
    'partition-spec-id': String(spec['spec-id']),
    'format-version': String(v),
  };
  if (v >= 2) metadata.content = content === ManifestContent.Deletes ? 'deletes' : 'data';
  return writeAvroContainer({ schemaJson: avroSchema, records, metadata, codec: args.codec, syncMarker: args.syncMarker });
}

function entryToAvro(e: ManifestEntry, v: number, ptype: StructType, spec: PartitionSpec, i: number): object {
  const f = e['data-file'];
  const where = `iceberg manifest: entry ${i} (${f['file-path']})`;
  if (v === 1 && e['snapshot-id'] === undefined) throw invalidInput(`${where}: v1 manifests need a snapshot-id on every entry`);
  if (e.status !== EntryStatus.Added && v >= 2 && (e['sequence-number'] === undefined || e['file-sequence-number'] === undefined)) {
    // spec §Sequence Number Inheritance: only ADDED entries may inherit.
    throw invalidInput(`${where}: status ${e.status} entries need explicit sequence numbers`);
  }
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
  const bad = (): never => {
    throw invalidInput(`${where}: ${stringifyJson(value instanceof Uint8Array ? [...value] : value)} is not a valid ${type} value`);
  };
  const t = normalizePrimitive(type);
  switch (t) {
    case 'boolean':
      return typeof value === 'boolean' ? value : bad();
    case 'int':
    case 'date':
      if (typeof value === 'bigint') return Number(value);
      return typeof value === 'number' && Number.isInteger(value) ? value : bad();
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      if (typeof value === 'bigint') return value;
      return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : bad();
    case 'float':
    case 'double':
      return typeof value === 'number' ? value : bad();
    case 'string':
      return typeof value === 'string' ? value : bad();
    case 'binary':
      return value instanceof Uint8Array ? toBuffer(value) : bad();
    case 'uuid':
      if (value instanceof Uint8Array && value.length === 16) return toBuffer(value);
      return typeof value === 'string' ? attempt(() => toBuffer(uuidToBytes(value)), bad) : bad();
  }
  const dec = decimalParams(t);
  if (dec) {
    const unscaled = typeof value === 'bigint' ? value : typeof value === 'string' ? attempt(() => decimalToUnscaled(value, dec.scale), bad) : bad();
    if ((unscaled < 0n ? -unscaled : unscaled) >= 10n ** BigInt(dec.precision)) return bad();
    return twosComplement(unscaled, minBytesForPrecision(dec.precision));
  }
  const len = fixedLength(t);
  if (len !== undefined) return value instanceof Uint8Array && value.length === len ? toBuffer(value) : bad();
  return bad();
}

function attempt<T>(fn: () => T, onError: () => never): T {
  try {
    return fn();
  } catch {
    return onError();
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
