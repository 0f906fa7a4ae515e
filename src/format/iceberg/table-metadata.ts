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

/**
 * Parses a metadata file. A large one (at least LAZY_TEXT characters: hundreds of snapshots) is
 * parsed lazily, see parseTableMetadataLazily; the result is the same object either way.
 */
export function parseTableMetadata(text: string, source = 'metadata.json'): TableMetadata {
  return (text.length >= LAZY_TEXT ? parseTableMetadataLazily(text, source) : undefined) ?? parseTableMetadataWhole(text, source);
}

/** Metadata texts at least this long are parsed lazily (below it the whole parse takes a few milliseconds). */
export const LAZY_TEXT = 256 * 1024;

/** Parses every part of a metadata file, each snapshot and log entry built and checked. */
export function parseTableMetadataWhole(text: string, source = 'metadata.json'): TableMetadata {
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
  const fail = failFor(source);
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
    'snapshot-log': (raw['snapshot-log'] ?? []).map((e: any) => parseSnapshotLogEntry(e, fail)),
    'metadata-log': (raw['metadata-log'] ?? []).map((e: any) => parseMetadataLogEntry(e, fail)),
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

function failFor(source: string): (what: string) => never {
  return (what: string): never => {
    throw dataInvalid(`iceberg metadata: ${what} (${source})`, { source });
  };
}

function parseSnapshotLogEntry(e: any, fail: (what: string) => never): SnapshotLogEntry {
  return {
    'timestamp-ms': toNumber(e['timestamp-ms'], 'snapshot-log timestamp-ms', fail),
    'snapshot-id': toSnapshotId(e['snapshot-id'], 'snapshot-log snapshot-id', fail),
  };
}

function parseMetadataLogEntry(e: any, fail: (what: string) => never): MetadataLogEntry {
  return { 'timestamp-ms': toNumber(e['timestamp-ms'], 'metadata-log timestamp-ms', fail), 'metadata-file': String(e['metadata-file']) };
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
// Lazy parsing.

/**
 * The lists that grow with every commit, left as text by a lazy parse: at 10,000 snapshots they
 * are nearly all of an 8 MB file, and a read of one snapshot needs none of the others.
 */
const LAZY_LISTS = {
  snapshots: (e: any, fail: (what: string) => never) => parseSnapshot(e, fail),
  'snapshot-log': parseSnapshotLogEntry,
  'metadata-log': parseMetadataLogEntry,
} as const;

type LazyKey = keyof typeof LAZY_LISTS;

/** A list of a lazily parsed file: where its text is, and the objects (elements) in it, as [start, end) pairs. */
interface LazyList {
  start: number;
  end: number;
  elements: number[];
}

/** The snapshots of a lazily parsed metadata object whose list is still text (see snapshotById). */
interface LazySnapshots {
  text: string;
  source: string;
  list: LazyList;
  /** Snapshots parsed one by one, by element index; the whole list reuses them. */
  parsed: Map<number, Snapshot>;
  /** What each ID looked up found: a reader that plans again asks for the same snapshot. */
  found: Map<bigint, Snapshot | undefined>;
  lookups: number;
}

const lazySnapshots = new WeakMap<TableMetadata, LazySnapshots>();

/**
 * The lazy parse of a metadata file: the top-level object is scanned (strings matched whole,
 * every character outside them one of JSON's, brackets paired), every value but the three lists
 * that grow with commits is parsed as `parseTableMetadataWhole` parses it, and those lists stay
 * text until first used: reading `snapshots`, `snapshot-log` or `metadata-log` parses the list
 * then (and throws then what the whole parse would have thrown for it), and `snapshotById` finds
 * one snapshot without parsing the rest. What a read of one snapshot pays is the scan, not the
 * parse of every snapshot; a commit, the history and expiry read the lists and pay what the whole
 * parse pays. Undefined when the text is not plainly a JSON object: the whole parse then says
 * what is wrong with it, as it always did.
 */
export function parseTableMetadataLazily(text: string, source = 'metadata.json'): TableMetadata | undefined {
  const members = scanTopLevel(text);
  if (!members) return undefined;
  const raw: Record<string, unknown> = {};
  const lists = new Map<LazyKey, LazyList>();
  for (const m of members) {
    // As JSON.parse does: a repeated key keeps its first place and its last value.
    if (m.elements && Object.hasOwn(LAZY_LISTS, m.key)) {
      lists.set(m.key as LazyKey, { start: m.start, end: m.end, elements: m.elements });
      define(raw, m.key, []);
      continue;
    }
    lists.delete(m.key as LazyKey);
    let value: unknown;
    try {
      value = parseJson(text.slice(m.start, m.end), source);
    } catch {
      return undefined;
    }
    define(raw, m.key, value);
  }
  const metadata = normalizeTableMetadata(raw, source);
  const fail = failFor(source);
  for (const [key, list] of lists) {
    const load = () => {
      let items: unknown;
      try {
        items = parseJson(text.slice(list.start, list.end), source);
      } catch {
        // Said as the whole parse says it: where in the file.
        parseTableMetadataWhole(text, source);
        throw dataInvalid(`iceberg metadata: ${key} is not valid JSON (${source})`, { source });
      }
      const normalize = LAZY_LISTS[key];
      const parsed = key === 'snapshots' ? lazySnapshots.get(metadata)?.parsed : undefined;
      const aligned = parsed !== undefined && (items as unknown[]).length * 2 === list.elements.length;
      if (key === 'snapshots') lazySnapshots.delete(metadata);
      return (items as unknown[]).map((e, i) => (aligned ? parsed.get(i) : undefined) ?? normalize(e, fail));
    };
    Object.defineProperty(metadata, key, {
      configurable: true,
      enumerable: true,
      get() {
        const value = load();
        Object.defineProperty(metadata, key, { value, writable: true, enumerable: true, configurable: true });
        return value;
      },
      set(value: unknown) {
        Object.defineProperty(metadata, key, { value, writable: true, enumerable: true, configurable: true });
      },
    });
  }
  const snapshots = lists.get('snapshots');
  if (snapshots) lazySnapshots.set(metadata, { text, source, list: snapshots, parsed: new Map(), found: new Map(), lookups: 0 });
  return metadata;
}

/** Whether the list `key` of a metadata object is still unparsed text (a lazy parse's, not yet read). */
export function isLazyList(m: TableMetadata, key: LazyKey): boolean {
  return Object.getOwnPropertyDescriptor(m, key)?.get !== undefined;
}

/** `obj[key] = value` as JSON.parse sets it: `__proto__` too is an own property. */
function define(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}

const NOT_DECIDED = Symbol('not decided');

/**
 * The snapshot `id` of a lazily parsed file whose snapshot list is still text, found as
 * `m.snapshots.find` finds it: the first snapshot with that ID. A JSON number that parses to an
 * ID that no double holds exactly is written with the ID's digits (a fraction or an exponent makes
 * it a double), so only objects whose text holds those digits can be that snapshot; each such
 * object is parsed, in order, until one is. NOT_DECIDED sends the caller to the whole list: an
 * ID a double could spell otherwise, an object that does not parse (the list then throws what
 * the whole parse throws), too many lookups or candidates (a walk over many snapshots).
 */
function findLazySnapshot(lazy: LazySnapshots, id: bigint): Snapshot | undefined | typeof NOT_DECIDED {
  if (++lazy.lookups > 8 || BigInt(Number(id)) === id) return NOT_DECIDED;
  const { text, list } = lazy;
  const digits = (id < 0n ? -id : id).toString();
  const elements = list.elements;
  let tries = 0;
  for (let from = list.start; ; ) {
    const at = text.indexOf(digits, from);
    if (at < 0 || at >= list.end) return undefined;
    // The object holding `at`: the last one starting at or before it.
    let lo = 0;
    let hi = elements.length / 2 - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (elements[mid * 2]! <= at) lo = mid;
      else hi = mid - 1;
    }
    if (hi < 0 || elements[lo * 2]! > at || at >= elements[lo * 2 + 1]!) return NOT_DECIDED;
    if (++tries > 16) return NOT_DECIDED;
    let snapshot = lazy.parsed.get(lo);
    if (!snapshot) {
      try {
        snapshot = parseSnapshot(parseJson(text.slice(elements[lo * 2], elements[lo * 2 + 1]), lazy.source), failFor(lazy.source));
      } catch {
        return NOT_DECIDED;
      }
      lazy.parsed.set(lo, snapshot);
    }
    if (snapshot['snapshot-id'] === id) return snapshot;
    from = elements[lo * 2 + 1]!;
  }
}

/** One member of a metadata file's top-level object: its key and where its value's text is. */
interface TopLevelMember {
  key: string;
  start: number;
  end: number;
  /** For an array value: each object directly in it, as [start, end) pairs. */
  elements?: number[];
}

/** A JSON string: escapes checked, no raw control characters. */
const JSON_STRING = String.raw`"[^"\\\u0000-\u001f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\u0000-\u001f]*)*"`;
/** A character JSON allows between strings and brackets: of numbers, literals, `:`, `,`, whitespace. */
const BETWEEN = String.raw`[-+ \t\n\r:,.0-9Eaeflnrstu]`;
const STRING = new RegExp(JSON_STRING, 'y');
const SCALAR = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null/y;
const WS = /[ \t\n\r]*/y;
/**
 * A run of a nested value's text up to its next bracket: whole strings and the characters JSON
 * allows between them. Matching runs, not characters one call at a time, keeps an 8 MB list to
 * some 20,000 calls. Written so that a text matches it one way only (`B*(?:SB*)*`, never
 * `(?:S|B+)*`): a failing match then backtracks in linear time, not exponential.
 */
const RUN = new RegExp(`${BETWEEN}*(?:${JSON_STRING}${BETWEEN}*)*`, 'y');
/**
 * RUN, also taking whole every object or array with no bracket inside (a snapshot's summary, a
 * log entry): a snapshot log is then one match, a snapshot list two per snapshot.
 */
const FLAT = `${BETWEEN}*(?:${JSON_STRING}${BETWEEN}*)*`;
const RUN_FLAT = new RegExp(`${BETWEEN}*(?:(?:${JSON_STRING}|\\{${FLAT}\\}|\\[${FLAT}\\])${BETWEEN}*)*`, 'y');

/** The index after the sticky pattern matched at i, or -1. */
function match(pattern: RegExp, text: string, i: number): number {
  pattern.lastIndex = i;
  return pattern.test(text) ? pattern.lastIndex : -1;
}

/**
 * The members of the top-level object of `text`, in order, or undefined when the text is not
 * plainly one JSON object (the caller parses it whole, to say where it is wrong). Values are only
 * delimited: the caller parses what it uses, which checks it fully.
 */
function scanTopLevel(text: string): TopLevelMember[] | undefined {
  const n = text.length;
  const out: TopLevelMember[] = [];
  try {
    let i = match(WS, text, 0);
    if (text.charCodeAt(i) !== 123) return undefined;
    i = match(WS, text, i + 1);
    if (text.charCodeAt(i) === 125) return match(WS, text, i + 1) === n ? out : undefined;
    for (;;) {
      const keyEnd = match(STRING, text, i);
      if (keyEnd < 0) return undefined;
      const rawKey = text.slice(i + 1, keyEnd - 1);
      const key = rawKey.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : rawKey;
      i = match(WS, text, keyEnd);
      if (text.charCodeAt(i) !== 58) return undefined;
      const start = match(WS, text, i + 1);
      const c = text.charCodeAt(start);
      let end: number;
      let elements: number[] | undefined;
      if (c === 123 || c === 91) {
        if (c === 91) elements = [];
        end = skipNested(text, start, elements);
      } else end = match(c === 34 ? STRING : SCALAR, text, start);
      if (end < 0) return undefined;
      out.push(elements ? { key, start, end, elements } : { key, start, end });
      i = match(WS, text, end);
      const d = text.charCodeAt(i);
      if (d === 125) return match(WS, text, i + 1) === n ? out : undefined;
      if (d !== 44) return undefined;
      i = match(WS, text, i + 1);
    }
  } catch {
    // A regular expression out of stack on a pathological text: the whole parse decides.
    return undefined;
  }
}

/**
 * The index after the object or array opening at i, or -1 when its text is not JSON's. `elements`
 * (given for an array) receives the [start, end) of each object directly inside it.
 */
function skipNested(text: string, i: number, elements?: number[]): number {
  const n = text.length;
  const closers: number[] = [];
  for (let j = i; j < n; ) {
    const c = text.charCodeAt(j);
    if (c === 123 || c === 91) {
      // `{` + 2 is `}`, `[` + 2 is `]`.
      closers.push(c + 2);
      if (elements && closers.length === 2 && c === 123) elements.push(j);
    } else if (c === 125 || c === 93) {
      if (closers.pop() !== c) return -1;
      if (closers.length === 0) return j + 1;
      if (elements && closers.length === 1 && c === 125) elements.push(j + 1);
    } else return -1;
    // Objects directly in a list whose objects are recorded are stopped at; any other flat one is taken whole.
    j = match(elements && closers.length === 1 ? RUN : RUN_FLAT, text, j + 1);
  }
  return -1;
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
  const lazy = isLazyList(m, 'snapshots') ? lazySnapshots.get(m) : undefined;
  if (lazy?.found.has(id)) return lazy.found.get(id);
  const found = lazy ? findLazySnapshot(lazy, id) : NOT_DECIDED;
  if (found !== NOT_DECIDED) {
    lazy!.found.set(id, found);
    return found;
  }
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
