import { dataInvalid, invalidInput } from '../../core/errors.ts';
import type { LiteralValue } from '../scan-task.ts';
import {
  type AvroCodec,
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
import { isPrimitive, normalizePrimitive } from './schema.ts';
import { compareUtf8, decimalParams, decimalToUnscaled, toBinary } from './single-value.ts';
import { ManifestContent, type FieldSummary, type ManifestFile, type PartitionTuple, type PrimitiveType, type StructType } from './types.ts';

/**
 * Manifest lists (spec §Manifest Lists): one Avro record per manifest of a snapshot. Writes v1,
 * v2 (default) and v3; reads any version by field ID (v1 and v2 name the file counts differently).
 */


/** The Avro schema of `manifest_file` for a format version, with every field ID. */
export function manifestFileAvroSchema(formatVersion: 1 | 2 | 3): object {
  const v1 = formatVersion === 1;
  // v1 files named the counts added_data_files_count etc. (and made them optional).
  const count = (v2Name: string, v1Name: string, id: number, type: string) => (v1 ? optionalField(v1Name, id, type) : requiredField(v2Name, id, type));
  return {
    type: 'record',
    name: 'manifest_file',
    fields: [
      requiredField('manifest_path', 500, 'string'),
      requiredField('manifest_length', 501, 'long'),
      requiredField('partition_spec_id', 502, 'int'),
      ...(v1 ? [] : [requiredField('content', 517, 'int'), requiredField('sequence_number', 515, 'long'), requiredField('min_sequence_number', 516, 'long')]),
      requiredField('added_snapshot_id', 503, 'long'),
      count('added_files_count', 'added_data_files_count', 504, 'int'),
      count('existing_files_count', 'existing_data_files_count', 505, 'int'),
      count('deleted_files_count', 'deleted_data_files_count', 506, 'int'),
      count('added_rows_count', 'added_rows_count', 512, 'long'),
      count('existing_rows_count', 'existing_rows_count', 513, 'long'),
      count('deleted_rows_count', 'deleted_rows_count', 514, 'long'),
      optionalField('partitions', 507, {
        type: 'array',
        'element-id': 508,
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            requiredField('contains_null', 509, 'boolean'),
            optionalField('contains_nan', 518, 'boolean'),
            optionalField('lower_bound', 510, 'bytes'),
            optionalField('upper_bound', 511, 'bytes'),
          ],
        },
      }),
      optionalField('key_metadata', 519, 'bytes'),
      ...(formatVersion >= 3 ? [optionalField('first_row_id', 520, 'long')] : []),
    ],
  };
}

export function encodeManifestList(args: {
  formatVersion: 1 | 2 | 3;
  snapshotId: bigint;
  parentSnapshotId?: bigint | null;
  sequenceNumber: number;
  /** v3: the snapshot's first-row-id, recorded in the file metadata. */
  firstRowId?: number;
  manifests: ManifestFile[];
  syncMarker: Uint8Array;
  codec: AvroCodec;
}): Uint8Array {
  const v = args.formatVersion;
  // Java writes the string "null" for a snapshot without parent; readers expect the key.
  const metadata: Record<string, string> = {
    'snapshot-id': String(args.snapshotId),
    'parent-snapshot-id': args.parentSnapshotId === undefined || args.parentSnapshotId === null ? 'null' : String(args.parentSnapshotId),
    'format-version': String(v),
  };
  if (v >= 2) metadata['sequence-number'] = String(args.sequenceNumber);
  if (v >= 3 && args.firstRowId !== undefined) metadata['first-row-id'] = String(args.firstRowId);
  const buf = (u: Uint8Array | undefined) => (u === undefined ? null : Buffer.from(u.buffer, u.byteOffset, u.byteLength));
  const records = args.manifests.map((m) => {
    if (v === 1 && m.content !== ManifestContent.Data) throw invalidInput(`iceberg manifest list: v1 lists hold data manifests only, found delete manifest ${m['manifest-path']}`);
    return {
      manifest_path: m['manifest-path'],
      manifest_length: m['manifest-length'],
      partition_spec_id: m['partition-spec-id'],
      content: m.content,
      sequence_number: m['sequence-number'],
      min_sequence_number: m['min-sequence-number'],
      added_snapshot_id: m['added-snapshot-id'],
      // v1 and v2 names of the same fields: the writer picks what its schema has.
      added_files_count: m['added-files-count'],
      added_data_files_count: m['added-files-count'],
      existing_files_count: m['existing-files-count'],
      existing_data_files_count: m['existing-files-count'],
      deleted_files_count: m['deleted-files-count'],
      deleted_data_files_count: m['deleted-files-count'],
      added_rows_count: m['added-rows-count'],
      existing_rows_count: m['existing-rows-count'],
      deleted_rows_count: m['deleted-rows-count'],
      partitions:
        m.partitions === undefined
          ? null
          : m.partitions.map((p) => ({
              contains_null: p['contains-null'],
              contains_nan: p['contains-nan'] ?? null,
              lower_bound: buf(p['lower-bound']),
              upper_bound: buf(p['upper-bound']),
            })),
      key_metadata: buf(m['key-metadata']),
      first_row_id: m['first-row-id'] ?? null,
    };
  });
  return writeAvroContainer({ schemaJson: manifestFileAvroSchema(v), records, metadata, codec: args.codec, syncMarker: args.syncMarker });
}

/**
 * Decode a manifest list. Fields v1 lacks take the spec's defaults (Appendix E §Version 2):
 * content 0, sequence numbers 0; missing v1 counts are 0 here — v1 readers must treat them as
 * unknown, so do not skip a manifest because a v1 list says it added nothing.
 */
export function decodeManifestList(bytes: Uint8Array, source = 'manifest list', opts: { snapshotId?: bigint } = {}): ManifestFile[] {
  const { schemaJson, metadata, records } = readAvroContainer(bytes, source);
  // Writers record the snapshot a list belongs to in its header: a list of another snapshot (or
  // another table) put in this one's place would otherwise be read as this snapshot's files.
  const written = metadata['snapshot-id'];
  // Compared as doubles too: some tools rewrite metadata JSON with IDs rounded to doubles.
  if (opts.snapshotId !== undefined && written !== undefined && written !== 'null' && written !== String(opts.snapshotId) && Number(written) !== Number(opts.snapshotId)) {
    throw dataInvalid(`${source}: expected the manifest list of snapshot ${opts.snapshotId}, found one written for snapshot ${written}`, { file: source });
  }
  const named = namedTypes(schemaJson);
  const fields = fieldsById(schemaJson, named, source);
  const partitionsField = fields.byId.get(507) ?? fields.byName.get('partitions');
  const summaryFields = partitionsField ? fieldsById(resolveNamed(nonNull(resolveNamed(nonNull(partitionsField.schema), named)).items, named), named, source) : undefined;
  const names: Record<number, string[]> = {
    500: ['manifest_path'],
    501: ['manifest_length'],
    502: ['partition_spec_id'],
    503: ['added_snapshot_id'],
    504: ['added_files_count', 'added_data_files_count'],
    505: ['existing_files_count', 'existing_data_files_count'],
    506: ['deleted_files_count', 'deleted_data_files_count'],
    507: ['partitions'],
    512: ['added_rows_count'],
    513: ['existing_rows_count'],
    514: ['deleted_rows_count'],
    515: ['sequence_number'],
    516: ['min_sequence_number'],
    517: ['content'],
    519: ['key_metadata'],
    520: ['first_row_id'],
  };
  const fieldName = (id: number) => fields.byId.get(id)?.name ?? names[id]!.find((n) => fields.byName.has(n));

  return records.map((r, i): ManifestFile => {
    const get = (id: number) => {
      const n = fieldName(id);
      const v = n === undefined ? undefined : r[n];
      return v === null ? undefined : v;
    };
    const need = (id: number) => {
      const v = get(id);
      if (v === undefined) throw dataInvalid(`${source}: manifest ${i} has no ${names[id]![0]} (field ${id})`);
      return v;
    };
    const num = (id: number, dflt = 0) => {
      const v = get(id);
      return v === undefined ? dflt : toNumber(v);
    };
    const out: ManifestFile = {
      'manifest-path': String(need(500)),
      'manifest-length': toNumber(need(501)),
      'partition-spec-id': toNumber(need(502)),
      content: num(517) as ManifestContent,
      'sequence-number': num(515),
      'min-sequence-number': num(516),
      'added-snapshot-id': BigInt(need(503)),
      'added-files-count': num(504),
      'existing-files-count': num(505),
      'deleted-files-count': num(506),
      'added-rows-count': num(512),
      'existing-rows-count': num(513),
      'deleted-rows-count': num(514),
    };
    const partitions = get(507);
    if (Array.isArray(partitions) && summaryFields) {
      const sf = (p: any, id: number, name: string) => {
        const f = summaryFields.byId.get(id) ?? summaryFields.byName.get(name);
        const v = f === undefined ? undefined : p[f.name];
        return v === null ? undefined : v;
      };
      out.partitions = partitions.map((p): FieldSummary => {
        const s: FieldSummary = { 'contains-null': Boolean(sf(p, 509, 'contains_null')) };
        const nan = sf(p, 518, 'contains_nan');
        if (nan !== undefined) s['contains-nan'] = Boolean(nan);
        const lo = sf(p, 510, 'lower_bound');
        if (lo !== undefined) s['lower-bound'] = toBytes(lo);
        const hi = sf(p, 511, 'upper_bound');
        if (hi !== undefined) s['upper-bound'] = toBytes(hi);
        return s;
      });
    }
    const key = get(519);
    if (key !== undefined) out['key-metadata'] = toBytes(key);
    const firstRowId = get(520);
    if (firstRowId !== undefined) out['first-row-id'] = toNumber(firstRowId);
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// Partition field summaries (spec §Manifest Lists, `field_summary`).

/**
 * One summary per field of the manifest's partition type (see `partitionType` in manifest.ts),
 * from the partition tuples of the manifest's live files. Bounds are the binary single values of
 * Appendix D; -0.0 sorts before +0.0 as the spec requires. uuid fields get no bounds: Iceberg
 * versions disagree on uuid order, and a missing bound is always safe.
 */
export function partitionSummaries(partition: StructType, tuples: readonly PartitionTuple[]): FieldSummary[] {
  return partition.fields.map((f) => {
    const type = isPrimitive(f.type) ? normalizePrimitive(f.type) : undefined;
    const compare = type === undefined ? undefined : comparatorFor(type);
    const floating = type === 'float' || type === 'double';
    let containsNull = false;
    let containsNan = false;
    let lo: unknown;
    let hi: unknown;
    for (const t of tuples) {
      const v = t[f.name];
      if (v === null || v === undefined) {
        containsNull = true;
        continue;
      }
      if (floating && Number.isNaN(v)) {
        containsNan = true;
        continue;
      }
      if (!compare) continue;
      if (lo === undefined || compare(v, lo) < 0) lo = v;
      if (hi === undefined || compare(v, hi) > 0) hi = v;
    }
    const summary: FieldSummary = { 'contains-null': containsNull, 'contains-nan': containsNan };
    if (type !== undefined && lo !== undefined && hi !== undefined) {
      summary['lower-bound'] = toBinary(type, lo as LiteralValue);
      summary['upper-bound'] = toBinary(type, hi as LiteralValue);
    }
    return summary;
  });
}

function comparatorFor(type: PrimitiveType): ((a: any, b: any) => number) | undefined {
  const sign = (d: number) => (d < 0 ? -1 : d > 0 ? 1 : 0);
  switch (type) {
    case 'boolean':
      return (a: boolean, b: boolean) => Number(a) - Number(b);
    case 'int':
    case 'date':
      return (a: number, b: number) => sign(a - b);
    case 'float':
    case 'double':
      return (a: number, b: number) => (a < b ? -1 : a > b ? 1 : Object.is(a, -0) && Object.is(b, 0) ? -1 : Object.is(a, 0) && Object.is(b, -0) ? 1 : 0);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return (a: bigint | number, b: bigint | number) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
    case 'string':
      return compareUtf8;
    case 'binary':
      return compareBytes;
  }
  if (type.startsWith('fixed')) return compareBytes;
  const dec = decimalParams(type);
  if (dec) {
    const unscaled = (v: string | bigint) => (typeof v === 'bigint' ? v : decimalToUnscaled(v, dec.scale));
    return (a: string | bigint, b: string | bigint) => {
      const x = unscaled(a);
      const y = unscaled(b);
      return x < y ? -1 : x > y ? 1 : 0;
    };
  }
  return undefined;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
