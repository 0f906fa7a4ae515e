import { dataInvalid, notFound, TwinlakeError, unsupported } from '../../core/errors.ts';
import { PARTITION_DATA_ID_START } from './partition-spec-parser.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import { maxFieldId } from './schema.ts';
import type {
  MetadataLogEntry,
  PartitionField,
  PartitionSpec,
  Schema,
  Snapshot,
  SnapshotLogEntry,
  SnapshotRef,
  SortOrder,
  StructType,
  TableMetadata,
} from './types.ts';

/**
 * Table metadata files (spec §Table Metadata, Appendix C). Parsing accepts v1, v2 and v3 files as
 * written by Spark, Trino, PyIceberg, Impala and Flink and normalizes them to the v2 shape of
 * `TableMetadata`; fields this model does not know are kept so a rewrite does not drop them.
 */

export const SUPPORTED_FORMAT_VERSIONS = [1, 2, 3] as const;

/** spec §Partition Evolution: v1 writers numbered partition fields from 1000. */

export function parseTableMetadata(text: string, source = 'metadata.json'): TableMetadata {
  let raw: any;
  try {
    raw = parseJson(text, source);
  } catch (e) {
    throw new TwinlakeError('data-invalid', `iceberg metadata: ${(e as Error).message}`, { source }, { cause: e });
  }
  return normalizeTableMetadata(raw, source);
}

/** Normalize an already-parsed metadata object (e.g. from a REST catalog response). */
export function normalizeTableMetadata(raw: any, source = 'metadata'): TableMetadata {
  const fail = (what: string): never => {
    throw dataInvalid(`iceberg metadata: ${what} (${source})`, { source });
  };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) fail('expected a JSON object');
  const version = toNumber(raw['format-version'], 'format-version', fail);
  if (!SUPPORTED_FORMAT_VERSIONS.includes(version as 1 | 2 | 3)) {
    throw unsupported(`iceberg metadata: format-version ${version} is not supported; expected one of ${SUPPORTED_FORMAT_VERSIONS.join(', ')} (${source})`);
  }
  if (typeof raw.location !== 'string') fail(`expected a string location, found ${JSON.stringify(raw.location)}`);

  // Schemas: v1 may carry only the deprecated `schema`.
  let schemas: Schema[];
  let currentSchemaId: number;
  if (Array.isArray(raw.schemas) && raw.schemas.length > 0) {
    schemas = raw.schemas.map((s: any) => parseSchema(s, fail));
    currentSchemaId = raw['current-schema-id'] === undefined ? schemas[0]!['schema-id'] : toNumber(raw['current-schema-id'], 'current-schema-id', fail);
  } else if (raw.schema) {
    const s = parseSchema({ 'schema-id': 0, ...raw.schema }, fail);
    schemas = [s];
    currentSchemaId = s['schema-id'];
  } else {
    return fail('no schemas and no schema');
  }
  if (!schemas.some((s) => s['schema-id'] === currentSchemaId)) {
    fail(`current-schema-id ${currentSchemaId} not in schemas [${schemas.map((s) => s['schema-id']).join(', ')}]`);
  }

  // Partition specs: v1 may carry only the deprecated `partition-spec` (a bare field list).
  let specs: PartitionSpec[];
  let defaultSpecId: number;
  if (Array.isArray(raw['partition-specs']) && raw['partition-specs'].length > 0) {
    specs = raw['partition-specs'].map((s: any) => parseSpec(s, fail));
    defaultSpecId = raw['default-spec-id'] === undefined ? specs[0]!['spec-id'] : toNumber(raw['default-spec-id'], 'default-spec-id', fail);
  } else {
    specs = [parseSpec({ 'spec-id': 0, fields: Array.isArray(raw['partition-spec']) ? raw['partition-spec'] : [] }, fail)];
    defaultSpecId = 0;
  }
  if (!specs.some((s) => s['spec-id'] === defaultSpecId)) {
    fail(`default-spec-id ${defaultSpecId} not in partition-specs [${specs.map((s) => s['spec-id']).join(', ')}]`);
  }
  const maxPartitionId = Math.max(PARTITION_DATA_ID_START - 1, ...specs.flatMap((s) => s.fields.map((f) => f['field-id'])));

  const sortOrders: SortOrder[] =
    Array.isArray(raw['sort-orders']) && raw['sort-orders'].length > 0
      ? raw['sort-orders'].map((o: any) => ({ ...o, 'order-id': toNumber(o['order-id'], 'order-id', fail), fields: Array.isArray(o.fields) ? o.fields : [] }))
      : [{ 'order-id': 0, fields: [] }];
  const defaultSortOrderId = raw['default-sort-order-id'] === undefined ? sortOrders[0]!['order-id'] : toNumber(raw['default-sort-order-id'], 'default-sort-order-id', fail);

  const snapshots: Snapshot[] = (raw.snapshots ?? []).map((s: any) => parseSnapshot(s, fail));
  let currentSnapshotId = optionalSnapshotId(raw['current-snapshot-id'], 'current-snapshot-id', fail);

  const refs: Record<string, SnapshotRef> = {};
  if (raw.refs && typeof raw.refs === 'object') {
    for (const [name, ref] of Object.entries<any>(raw.refs)) {
      refs[name] = { ...ref, 'snapshot-id': toSnapshotId(ref['snapshot-id'], `refs.${name}.snapshot-id`, fail), type: ref.type ?? 'branch' };
    }
  }
  // spec §Table Metadata Fields: there is always a main branch pointing to current-snapshot-id.
  if (!refs.main && currentSnapshotId !== null) refs.main = { 'snapshot-id': currentSnapshotId, type: 'branch' };
  if (currentSnapshotId === null && refs.main) currentSnapshotId = refs.main['snapshot-id'];

  const properties: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw.properties ?? {})) properties[k] = typeof v === 'string' ? v : String(v);

  const metadata: TableMetadata = {
    ...raw,
    'format-version': version as 1 | 2 | 3,
    'table-uuid': typeof raw['table-uuid'] === 'string' ? raw['table-uuid'] : '',
    location: raw.location,
    'last-sequence-number': raw['last-sequence-number'] === undefined ? 0 : toNumber(raw['last-sequence-number'], 'last-sequence-number', fail),
    'last-updated-ms': toNumber(raw['last-updated-ms'] ?? 0, 'last-updated-ms', fail),
    'last-column-id': raw['last-column-id'] === undefined ? Math.max(...schemas.map(maxFieldId)) : toNumber(raw['last-column-id'], 'last-column-id', fail),
    schemas,
    'current-schema-id': currentSchemaId,
    'partition-specs': specs,
    'default-spec-id': defaultSpecId,
    'last-partition-id': raw['last-partition-id'] === undefined ? maxPartitionId : toNumber(raw['last-partition-id'], 'last-partition-id', fail),
    properties,
    'current-snapshot-id': currentSnapshotId,
    snapshots,
    'snapshot-log': (raw['snapshot-log'] ?? []).map(
      (e: any): SnapshotLogEntry => ({
        'timestamp-ms': toNumber(e['timestamp-ms'], 'snapshot-log timestamp-ms', fail),
        'snapshot-id': toSnapshotId(e['snapshot-id'], 'snapshot-log snapshot-id', fail),
      }),
    ),
    'metadata-log': (raw['metadata-log'] ?? []).map(
      (e: any): MetadataLogEntry => ({ 'timestamp-ms': toNumber(e['timestamp-ms'], 'metadata-log timestamp-ms', fail), 'metadata-file': String(e['metadata-file']) }),
    ),
    'sort-orders': sortOrders,
    'default-sort-order-id': defaultSortOrderId,
    refs,
  };
  metadata.statistics = (raw.statistics ?? []).map((s: any) => withSnapshotId(s, fail));
  metadata['partition-statistics'] = (raw['partition-statistics'] ?? []).map((s: any) => withSnapshotId(s, fail));
  if (raw['next-row-id'] !== undefined && raw['next-row-id'] !== null) metadata['next-row-id'] = toNumber(raw['next-row-id'], 'next-row-id', fail);
  else if (version >= 3) metadata['next-row-id'] = 0;
  return metadata;
}

function parseSchema(s: any, fail: (what: string) => never): Schema {
  if (!s || s.type !== 'struct' || !Array.isArray(s.fields)) fail(`expected a struct schema, found ${stringifyJson(s)?.slice(0, 200)}`);
  return { ...s, type: 'struct', 'schema-id': s['schema-id'] === undefined ? 0 : toNumber(s['schema-id'], 'schema-id', fail) };
}

function parseSpec(s: any, fail: (what: string) => never): PartitionSpec {
  if (!s || !Array.isArray(s.fields)) fail(`expected a partition spec, found ${stringifyJson(s)?.slice(0, 200)}`);
  const fields: PartitionField[] = s.fields.map((f: any, i: number) => ({
    ...f,
    'source-id': f['source-id'] ?? (Array.isArray(f['source-ids']) ? f['source-ids'][0] : undefined),
    // v1 specs may lack field IDs: the reference implementation numbered them from 1000.
    'field-id': f['field-id'] === undefined ? PARTITION_DATA_ID_START + i : toNumber(f['field-id'], 'partition field-id', fail),
  }));
  return { ...s, 'spec-id': s['spec-id'] === undefined ? 0 : toNumber(s['spec-id'], 'spec-id', fail), fields };
}

/** Parse one snapshot object (snapshot IDs to bigint, v1 defaults filled). */
export function parseSnapshot(s: any, fail: (what: string) => never = defaultFail): Snapshot {
  if (!s || typeof s !== 'object') fail('expected a snapshot object');
  const out: Snapshot = {
    ...s,
    'snapshot-id': toSnapshotId(s['snapshot-id'], 'snapshot-id', fail),
    'sequence-number': s['sequence-number'] === undefined ? 0 : toNumber(s['sequence-number'], 'sequence-number', fail),
    'timestamp-ms': toNumber(s['timestamp-ms'], 'timestamp-ms', fail),
    summary: { operation: 'append', ...(s.summary ?? {}) },
  };
  const parent = optionalSnapshotId(s['parent-snapshot-id'], 'parent-snapshot-id', fail);
  if (parent === null) delete out['parent-snapshot-id'];
  else out['parent-snapshot-id'] = parent;
  if (s['schema-id'] !== undefined && s['schema-id'] !== null) out['schema-id'] = toNumber(s['schema-id'], 'snapshot schema-id', fail);
  if (s['first-row-id'] !== undefined && s['first-row-id'] !== null) out['first-row-id'] = toNumber(s['first-row-id'], 'first-row-id', fail);
  if (s['added-rows'] !== undefined && s['added-rows'] !== null) out['added-rows'] = toNumber(s['added-rows'], 'added-rows', fail);
  return out;
}

const defaultFail = (what: string): never => {
  throw dataInvalid(`iceberg metadata: ${what}`);
};

function withSnapshotId(s: any, fail: (what: string) => never): any {
  return { ...s, 'snapshot-id': toSnapshotId(s['snapshot-id'], 'statistics snapshot-id', fail) };
}

function toNumber(v: unknown, what: string, fail: (what: string) => never): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'bigint') return Number(v);
  return fail(`expected a number for ${what}, found ${JSON.stringify(v)}`);
}

function toSnapshotId(v: unknown, what: string, fail: (what: string) => never): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return fail(`expected an integer for ${what}, found ${JSON.stringify(v)}`);
}

/** Java writes -1 for "no snapshot" in v1/v2 (spec Appendix F); PyIceberg omits it; v3 writes null. */
function optionalSnapshotId(v: unknown, what: string, fail: (what: string) => never): bigint | null {
  if (v === undefined || v === null) return null;
  const id = toSnapshotId(v, what, fail);
  return id === -1n ? null : id;
}

// ---------------------------------------------------------------------------------------------
// Writing.

/**
 * Compact JSON (as Java writes it: metadata grows with every snapshot) with every field the spec requires for the metadata's format version. Without a
 * current snapshot, v1/v2 files get `current-snapshot-id: -1` (what Java has always written and
 * every reader accepts, spec Appendix F) and v3 files get `null`.
 */
export function serializeTableMetadata(m: TableMetadata): string {
  return new TextDecoder().decode(serializeTableMetadataBytes(m));
}

/**
 * The metadata file's bytes (what `serializeTableMetadata` spells). Every commit rewrites the whole
 * snapshot list and snapshot log; a snapshot or log entry never changes once added, so its UTF-8
 * bytes are made once and copied in, and the rest of the file is all that is serialized per
 * commit. Bytes, not text: joining 10,000 kept strings walks each one again (V8 keeps them as
 * ropes) and the result must be encoded again, 100+ ms for an 8 MB file; copying kept bytes is a
 * few milliseconds.
 */
export function serializeTableMetadataBytes(m: TableMetadata): Uint8Array {
  const json = tableMetadataToJson(m, { lists: false });
  const v = m['format-version'];
  json.snapshots = SNAPSHOTS_MARK;
  json['snapshot-log'] = SNAPSHOT_LOG_MARK;
  const text = stringifyJson(json);
  const marks = [`"snapshots":"${SNAPSHOTS_MARK}"`, `"snapshot-log":"${SNAPSHOT_LOG_MARK}"`];
  const at = marks.map((mark) => text.indexOf(mark));
  // A property that happens to spell a marker: no shortcut.
  if (at.some((i, k) => i < 0 || text.indexOf(marks[k]!, i + 1) >= 0) || at[0]! > at[1]!) return UTF8.encode(stringifyJson(tableMetadataToJson(m)));
  const parts: Uint8Array[] = [UTF8.encode(text.slice(0, at[0]) + '"snapshots":')];
  const list = (items: Uint8Array[]) => {
    parts.push(OPEN);
    items.forEach((b, i) => (i > 0 ? parts.push(COMMA, b) : parts.push(b)));
    parts.push(CLOSE);
  };
  list(m.snapshots.map((s) => snapshotBytes(s, v)));
  parts.push(UTF8.encode(text.slice(at[0]! + marks[0]!.length, at[1]) + '"snapshot-log":'));
  list(m['snapshot-log'].map(logEntryBytes));
  parts.push(UTF8.encode(text.slice(at[1]! + marks[1]!.length)));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

const UTF8 = new TextEncoder();
const OPEN = UTF8.encode('[');
const CLOSE = UTF8.encode(']');
const COMMA = UTF8.encode(',');
const SNAPSHOTS_MARK = 'twinlake-snapshots-placeholder-5f0c2e';
const SNAPSHOT_LOG_MARK = 'twinlake-snapshot-log-placeholder-5f0c2e';
const snapshotTexts = new WeakMap<Snapshot, { version: number; bytes: Uint8Array }>();
const logEntryTexts = new WeakMap<object, Uint8Array>();

function logEntryBytes(entry: TableMetadata['snapshot-log'][number]): Uint8Array {
  let bytes = logEntryTexts.get(entry);
  if (bytes === undefined) logEntryTexts.set(entry, (bytes = UTF8.encode(stringifyJson(entry))));
  return bytes;
}

function snapshotBytes(s: Snapshot, version: number): Uint8Array {
  const hit = snapshotTexts.get(s);
  if (hit && hit.version === version) return hit.bytes;
  const bytes = UTF8.encode(stringifyJson(snapshotToJson(s, version)));
  snapshotTexts.set(s, { version, bytes });
  return bytes;
}

const KNOWN_FIELDS = new Set([
  'format-version', 'table-uuid', 'location', 'last-sequence-number', 'last-updated-ms', 'last-column-id', 'schema', 'current-schema-id',
  'schemas', 'partition-spec', 'default-spec-id', 'partition-specs', 'last-partition-id', 'default-sort-order-id', 'sort-orders',
  'properties', 'current-snapshot-id', 'refs', 'snapshots', 'statistics', 'partition-statistics', 'snapshot-log', 'metadata-log', 'next-row-id',
]);

/** The JSON object of a metadata file (bigints kept; serialize with `stringifyJson`). */
export function tableMetadataToJson(m: TableMetadata, opts: { lists?: boolean } = {}): Record<string, unknown> {
  const v = m['format-version'];
  const out: Record<string, unknown> = { 'format-version': v };
  if (v >= 2 || m['table-uuid']) out['table-uuid'] = m['table-uuid'];
  out.location = m.location;
  if (v >= 2) out['last-sequence-number'] = m['last-sequence-number'];
  out['last-updated-ms'] = m['last-updated-ms'];
  out['last-column-id'] = m['last-column-id'];
  if (v === 1) out.schema = currentSchema(m);
  out['current-schema-id'] = m['current-schema-id'];
  out.schemas = m.schemas;
  if (v === 1) out['partition-spec'] = specById(m, m['default-spec-id']).fields;
  out['default-spec-id'] = m['default-spec-id'];
  out['partition-specs'] = m['partition-specs'];
  out['last-partition-id'] = m['last-partition-id'];
  out['default-sort-order-id'] = m['default-sort-order-id'];
  out['sort-orders'] = m['sort-orders'];
  out.properties = m.properties;
  out['current-snapshot-id'] = m['current-snapshot-id'] ?? (v >= 3 ? null : -1);
  out.refs = m.refs;
  // Without `lists`, the snapshots and the snapshot log are left to the caller (serializeTableMetadata).
  out.snapshots = opts.lists === false ? [] : m.snapshots.map((s) => snapshotToJson(s, v));
  out.statistics = m.statistics ?? [];
  out['partition-statistics'] = m['partition-statistics'] ?? [];
  out['snapshot-log'] = opts.lists === false ? [] : m['snapshot-log'];
  out['metadata-log'] = m['metadata-log'];
  if (v >= 3) out['next-row-id'] = m['next-row-id'] ?? 0;
  for (const [k, val] of Object.entries(m)) if (!KNOWN_FIELDS.has(k) && val !== undefined) out[k] = val;
  return out;
}

const KNOWN_SNAPSHOT_FIELDS = new Set([
  'snapshot-id', 'parent-snapshot-id', 'sequence-number', 'timestamp-ms', 'summary', 'manifest-list', 'schema-id', 'first-row-id', 'added-rows',
]);

/** One snapshot as JSON for the given format version (v1 has no sequence numbers). */
export function snapshotToJson(s: Snapshot, formatVersion: number): Record<string, unknown> {
  const out: Record<string, unknown> = { 'snapshot-id': s['snapshot-id'] };
  if (s['parent-snapshot-id'] !== undefined) out['parent-snapshot-id'] = s['parent-snapshot-id'];
  if (formatVersion >= 2) out['sequence-number'] = s['sequence-number'];
  out['timestamp-ms'] = s['timestamp-ms'];
  out.summary = s.summary;
  out['manifest-list'] = s['manifest-list'];
  if (s['schema-id'] !== undefined) out['schema-id'] = s['schema-id'];
  if (s['first-row-id'] !== undefined) out['first-row-id'] = s['first-row-id'];
  if (s['added-rows'] !== undefined) out['added-rows'] = s['added-rows'];
  for (const [k, val] of Object.entries(s)) if (!KNOWN_SNAPSHOT_FIELDS.has(k) && val !== undefined) out[k] = val;
  return out;
}

export function newTableMetadata(args: {
  location: string;
  schema: Schema | StructType;
  partitionSpec?: PartitionSpec;
  sortOrder?: SortOrder;
  properties: Record<string, string>;
  formatVersion?: 1 | 2 | 3;
  tableUuid: string;
  nowMs: number;
  lastColumnId: number;
}): TableMetadata {
  const formatVersion = args.formatVersion ?? 2;
  const schema: Schema = { ...args.schema, type: 'struct', 'schema-id': (args.schema as Schema)['schema-id'] ?? 0 };
  const spec = args.partitionSpec ?? { 'spec-id': 0, fields: [] };
  const order = args.sortOrder ?? { 'order-id': 0, fields: [] };
  const m: TableMetadata = {
    'format-version': formatVersion,
    'table-uuid': args.tableUuid,
    location: args.location.replace(/\/+$/, ''),
    'last-sequence-number': 0,
    'last-updated-ms': args.nowMs,
    'last-column-id': Math.max(args.lastColumnId, maxFieldId(schema)),
    schemas: [schema],
    'current-schema-id': schema['schema-id'],
    'partition-specs': [spec],
    'default-spec-id': spec['spec-id'],
    'last-partition-id': Math.max(PARTITION_DATA_ID_START - 1, ...spec.fields.map((f) => f['field-id'])),
    properties: { ...args.properties },
    'current-snapshot-id': null,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    'sort-orders': [order],
    'default-sort-order-id': order['order-id'],
    refs: {},
    statistics: [],
    'partition-statistics': [],
  };
  if (formatVersion >= 3) m['next-row-id'] = 0;
  return m;
}

// ---------------------------------------------------------------------------------------------
// Lookups.

/** The schema with that ID; throws `not-found` when the metadata has none (a dangling reference). */
export function schemaById(m: TableMetadata, id: number): Schema {
  const s = m.schemas.find((x) => x['schema-id'] === id);
  if (!s) throw notFound(`iceberg metadata: schema-id ${id} not in schemas [${m.schemas.map((x) => x['schema-id']).join(', ')}]`);
  return s;
}

export function currentSchema(m: TableMetadata): Schema {
  return schemaById(m, m['current-schema-id']);
}

/** The partition spec with that ID; throws `not-found` when the metadata has none. */
/** A spec with no fields, or only `void` ones, partitions nothing (spec §Partitioning). */
export function isUnpartitioned(spec: PartitionSpec): boolean {
  return spec.fields.every((f) => f.transform === 'void');
}

export function specById(m: TableMetadata, id: number): PartitionSpec {
  const s = m['partition-specs'].find((x) => x['spec-id'] === id);
  if (!s) throw notFound(`iceberg metadata: spec-id ${id} not in partition-specs [${m['partition-specs'].map((x) => x['spec-id']).join(', ')}]`);
  return s;
}

/** The snapshot with that ID, or undefined (it may have expired). */
export function snapshotById(m: TableMetadata, id: bigint): Snapshot | undefined {
  return m.snapshots.find((s) => s['snapshot-id'] === id);
}

export function currentSnapshot(m: TableMetadata): Snapshot | undefined {
  const id = m['current-snapshot-id'] ?? m.refs.main?.['snapshot-id'];
  return id === undefined || id === null ? undefined : snapshotById(m, id);
}

/** The snapshot and its ancestors, newest first; the walk stops where a parent has expired. */
export function ancestors(m: TableMetadata, snapshotId: bigint): Snapshot[] {
  const out: Snapshot[] = [];
  const seen = new Set<bigint>();
  let s = snapshotById(m, snapshotId);
  while (s && !seen.has(s['snapshot-id'])) {
    out.push(s);
    seen.add(s['snapshot-id']);
    const parent = s['parent-snapshot-id'];
    s = parent === undefined ? undefined : snapshotById(m, parent);
  }
  return out;
}

/**
 * The table's state at `timestampMs` (spec Appendix F §Point in Time Reads): the last
 * `snapshot-log` entry at or before the time, so rollbacks are honoured. A table without a
 * snapshot log falls back to the main branch lineage. Undefined when no snapshot qualifies.
 */
export function snapshotAsOf(m: TableMetadata, timestampMs: number): Snapshot | undefined {
  if (m['snapshot-log'].length > 0) {
    let found: SnapshotLogEntry | undefined;
    for (const e of m['snapshot-log']) if (e['timestamp-ms'] <= timestampMs) found = e;
    return found ? snapshotById(m, found['snapshot-id']) : undefined;
  }
  const head = currentSnapshot(m);
  if (!head) return undefined;
  return ancestors(m, head['snapshot-id']).find((s) => s['timestamp-ms'] <= timestampMs);
}

/** What `peekTopLevel` found of one key of a metadata file's top-level object. */
export type PeekedValue =
  | { status: 'found'; value: unknown }
  | { status: 'absent' }
  /** The text ends before the key's value does (a prefix of the file was given). */
  | { status: 'truncated' }
  /** The text up to there is not a JSON object. */
  | { status: 'invalid'; at: number };

/**
 * The value of `key` in the top-level object of a metadata file's JSON, scanning only as far as
 * the key (the values before it are skipped, not parsed), for readers that need one field of a
 * file whose snapshots are megabytes: a Delta read of a catalog table needs only the table's
 * formats (`properties`), which writers put before the snapshot list. `text` may be a prefix of
 * the file; values are plain JSON (no bigints: use it for fields that have none).
 */
export function peekTopLevel(text: string, key: string): PeekedValue {
  const n = text.length;
  const ws = (i: number) => {
    while (i < n && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 10 || text.charCodeAt(i) === 13 || text.charCodeAt(i) === 9)) i++;
    return i;
  };
  // The index after the string opening at i, or -1 when the text ends first.
  const skipString = (i: number) => {
    for (let j = i + 1; ; ) {
      const q = text.indexOf('"', j);
      if (q < 0) return -1;
      let slashes = 0;
      while (text.charCodeAt(q - 1 - slashes) === 92) slashes++;
      if (slashes % 2 === 0) return q + 1;
      j = q + 1;
    }
  };
  // The index after the value starting at i; -1 truncated, -2 invalid.
  const skipValue = (i: number) => {
    const c = text[i];
    if (c === '"') return skipString(i);
    if (c === '{' || c === '[') {
      let depth = 0;
      for (let j = i; j < n; ) {
        const d = text.charCodeAt(j);
        if (d === 34) {
          j = skipString(j);
          if (j < 0) return -1;
          continue;
        }
        if (d === 123 || d === 91) depth++;
        else if (d === 125 || d === 93) {
          depth--;
          if (depth === 0) return j + 1;
        }
        j++;
      }
      return -1;
    }
    let j = i;
    while (j < n && !',}] \n\r\t'.includes(text[j]!)) j++;
    if (j === i) return i >= n ? -1 : -2;
    return j >= n ? -1 : j;
  };
  let i = ws(0);
  if (i >= n) return { status: 'truncated' };
  if (text[i] !== '{') return { status: 'invalid', at: i };
  i = ws(i + 1);
  if (text[i] === '}') return { status: 'absent' };
  for (;;) {
    if (i >= n) return { status: 'truncated' };
    if (text[i] !== '"') return { status: 'invalid', at: i };
    const keyEnd = skipString(i);
    if (keyEnd < 0) return { status: 'truncated' };
    let name: unknown;
    try {
      name = JSON.parse(text.slice(i, keyEnd));
    } catch {
      return { status: 'invalid', at: i };
    }
    i = ws(keyEnd);
    if (i >= n) return { status: 'truncated' };
    if (text[i] !== ':') return { status: 'invalid', at: i };
    const start = ws(i + 1);
    if (start >= n) return { status: 'truncated' };
    const end = skipValue(start);
    if (end === -1) return { status: 'truncated' };
    if (end === -2) return { status: 'invalid', at: start };
    if (name === key) {
      try {
        return { status: 'found', value: JSON.parse(text.slice(start, end)) };
      } catch {
        return { status: 'invalid', at: start };
      }
    }
    i = ws(end);
    if (i >= n) return { status: 'truncated' };
    if (text[i] === '}') return { status: 'absent' };
    if (text[i] !== ',') return { status: 'invalid', at: i };
    i = ws(i + 1);
  }
}
