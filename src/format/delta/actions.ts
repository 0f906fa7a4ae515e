import { dataInvalid, invalidInput } from '../../core/errors.ts';
import { isJsonObject } from '../../core/json.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';

/**
 * Delta log actions (PROTOCOL.md §Actions) with their wire names, so a parsed commit line is usable
 * as is and `serializeCommit` writes exactly what other engines read.
 */

export interface Protocol {
  minReaderVersion: number;
  minWriterVersion: number;
  /** Present only at reader version 3. */
  readerFeatures?: string[];
  /** Present only at writer version 7. */
  writerFeatures?: string[];
}

export interface Format {
  provider: string;
  options: Record<string, string>;
}

export interface Metadata {
  id: string;
  name?: string;
  description?: string;
  format: Format;
  schemaString: string;
  /** Logical names of the (top-level) partition columns. */
  partitionColumns: string[];
  configuration: Record<string, string>;
  createdTime?: number;
}

/** PROTOCOL.md §Deletion Vector Descriptor Schema. */
export interface DeletionVectorDescriptor {
  storageType: 'u' | 'i' | 'p' | (string & {});
  pathOrInlineDv: string;
  offset?: number;
  sizeInBytes: number;
  cardinality: number;
  maxRowIndex?: number;
}

export interface AddFile {
  /** A relative path from the table root or an absolute URI; URL-encoded (RFC 2396). */
  path: string;
  /** Keyed by physical column name; `null` (or "") is a null partition value. */
  partitionValues: Record<string, string | null>;
  size: number;
  modificationTime: number;
  dataChange: boolean;
  /** Per-file statistics as a JSON string (see stats.ts). */
  stats?: string;
  tags?: Record<string, string | null>;
  deletionVector?: DeletionVectorDescriptor;
  baseRowId?: number;
  defaultRowCommitVersion?: number;
  clusteringProvider?: string;
}

export interface RemoveFile {
  path: string;
  deletionTimestamp?: number;
  dataChange: boolean;
  extendedFileMetadata?: boolean;
  partitionValues?: Record<string, string | null>;
  size?: number;
  stats?: string;
  tags?: Record<string, string | null>;
  deletionVector?: DeletionVectorDescriptor;
  baseRowId?: number;
  defaultRowCommitVersion?: number;
}

/** Free-form provenance; the fields below are the ones Twinlake writes or reads. */
export interface CommitInfo {
  timestamp?: number;
  /** In-commit timestamp (PROTOCOL.md §In-Commit Timestamps); wins over `timestamp` when present. */
  inCommitTimestamp?: number;
  operation?: string;
  operationParameters?: Record<string, unknown>;
  engineInfo?: string;
  /** The Iceberg snapshot this Delta version mirrors (DESIGN.md §1). Always a bigint once parsed. */
  icebergSnapshotId?: bigint;
  [key: string]: unknown;
}

export interface Txn {
  appId: string;
  /** Application-defined; a bigint when it exceeds 2^53. */
  version: number | bigint;
  lastUpdated?: number;
}

export interface DomainMetadata {
  domain: string;
  configuration: string;
  removed: boolean;
}

export interface AddCdcFile {
  path: string;
  partitionValues: Record<string, string | null>;
  size: number;
  dataChange: boolean;
  tags?: Record<string, string | null>;
}

/** V2 checkpoints only (PROTOCOL.md §Sidecar File Information). */
export interface Sidecar {
  path: string;
  sizeInBytes: number;
  modificationTime: number;
  tags?: Record<string, string | null>;
}

/** V2 checkpoints only (PROTOCOL.md §Checkpoint Metadata). */
export interface CheckpointMetadata {
  version: number;
  tags?: Record<string, string | null>;
}

export type Action =
  | { protocol: Protocol }
  | { metaData: Metadata }
  | { add: AddFile }
  | { remove: RemoveFile }
  | { commitInfo: CommitInfo }
  | { txn: Txn }
  | { domainMetadata: DomainMetadata }
  | { cdc: AddCdcFile }
  | { sidecar: Sidecar }
  | { checkpointMetadata: CheckpointMetadata };

export type ActionKind =
  | 'protocol'
  | 'metaData'
  | 'add'
  | 'remove'
  | 'commitInfo'
  | 'txn'
  | 'domainMetadata'
  | 'cdc'
  | 'sidecar'
  | 'checkpointMetadata';

const ACTION_KINDS: ReadonlySet<string> = new Set<ActionKind>([
  'protocol',
  'metaData',
  'add',
  'remove',
  'commitInfo',
  'txn',
  'domainMetadata',
  'cdc',
  'sidecar',
  'checkpointMetadata',
]);

/** One JSON object per line, newline-terminated (PROTOCOL.md §Delta Log Entries). */
export function serializeCommit(actions: Action[]): string {
  let out = '';
  for (const a of actions) out += actionLine(a) + '\n';
  return out;
}

/** `serializeCommit` as the UTF-8 bytes of the commit file, without the text of the whole commit. */
export function encodeCommit(actions: Iterable<Action>): Uint8Array {
  const w = new CommitWriter();
  for (const a of actions) w.action(a);
  return w.bytes();
}

/** One action's line, without its newline. */
function actionLine(a: Action): string {
  const keys = Object.keys(a);
  if (keys.length !== 1 || !ACTION_KINDS.has(keys[0]!)) {
    throw invalidInput(`delta commit: expected each action to wrap exactly one known action, found keys ${JSON.stringify(keys)}`);
  }
  return 'add' in a ? addJson(a) : stringifyJson(a);
}

/**
 * A commit file's bytes, written line by line into one growing buffer: a commit of 100,000 adds
 * is 36 MB of text, and holding every line (or the whole text as one string) until the write
 * kept them alive through every young-generation collection while the commit was built, then
 * copied them once more into bytes. Each line is encoded as UTF-8 as it comes and then dropped.
 */
export class CommitWriter {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private length = 0;

  /** An action, as `serializeCommit` writes it. */
  action(a: Action): void {
    this.line(actionLine(a));
  }

  /** A line of JSON text already made (see `addLine`), without its newline. */
  line(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair is 4 bytes for 2 units).
    const room = text.length * 3 + 1;
    if (this.length + room > this.buf.length) this.grow(room);
    this.length += this.buf.write(text, this.length, 'utf8');
    this.buf[this.length++] = 0x0a;
  }

  /** Bytes written so far. */
  get size(): number {
    return this.length;
  }

  /** Room for `extra` more bytes at once, rather than doubling (and copying) step by step. */
  reserve(extra: number): void {
    if (this.length + extra > this.buf.length) this.grow(extra);
  }

  bytes(): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset, this.length);
  }

  private grow(room: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + room));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
}

/**
 * The line of `{ add: { path, partitionValues, size, modificationTime, dataChange, stats } }`,
 * keys in that order (as the projection builds an add), written from its parts without the
 * objects: the text `serializeCommit` writes for that action (tests hold them together).
 * `partitionValues` is given as its JSON text; `tail` is `addLineTail(…)`,
 * the same for every add of a commit.
 */
export function addLine(path: string, partitionValues: string, size: number, tail: string, stats: string): string {
  return `{"add":{"path":${JSON.stringify(path)},"partitionValues":${partitionValues},"size":${jsonNumber(size)}${tail},"stats":${JSON.stringify(stats)}}}`;
}

/** The `modificationTime` and `dataChange` members of `addLine`, with their leading comma. */
export function addLineTail(modificationTime: number, dataChange: boolean): string {
  return `,"modificationTime":${jsonNumber(modificationTime)},"dataChange":${dataChange}`;
}

/** A number as `stringifyJson` writes it (a bigint whole, a non-finite number as null). */
function jsonNumber(n: number | bigint): string {
  return typeof n === 'bigint' ? n.toString() : Number.isFinite(n) ? String(n) : 'null';
}

/**
 * An `add` action's line. Adds hold no bigints (sizes, times and row IDs are safe integers), so
 * the engine's own JSON.stringify writes them, several times faster than the bigint-aware writer
 * over the 100,000 adds of a large add-files commit; for those values both write the same text
 * (the same escaping, key order, skipped undefineds and non-finite numbers as null). One that
 * does hold a bigint goes to the bigint-aware writer.
 */
function addJson(a: Action): string {
  try {
    return JSON.stringify(a);
  } catch (e) {
    if (e instanceof TypeError) return stringifyJson(a);
    throw e;
  }
}

/**
 * Parses newline-delimited actions. Unknown action types are skipped, as PROTOCOL.md §Protocol
 * Evolution requires readers to ignore what they do not recognize. `source` names the file in
 * errors.
 */
export function parseCommit(text: string, source: string): Action[] {
  const actions: Action[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '') continue;
    const where = `${source} line ${i + 1}`;
    let obj: unknown;
    try {
      obj = parseJson(line, where);
    } catch (e) {
      throw dataInvalid(`delta log: ${(e as Error).message}`, { source, line: i + 1 });
    }
    const action = toAction(obj, where);
    if (action !== undefined) actions.push(action);
  }
  return actions;
}

/**
 * Validates the required fields of one decoded action object (from JSON or a checkpoint row) and
 * normalizes its numbers. Returns undefined for unknown action types.
 */
export function toAction(obj: unknown, where: string): Action | undefined {
  if (!isJsonObject(obj)) throw dataInvalid(`delta log ${where}: expected a JSON object, found ${describe(obj)}`);
  const kind = Object.keys(obj).find((k) => ACTION_KINDS.has(k) && obj[k] !== null && obj[k] !== undefined);
  if (kind === undefined) return undefined;
  const body = obj[kind];
  if (!isJsonObject(body)) throw dataInvalid(`delta log ${where}: ${kind}: expected an object, found ${describe(body)}`);
  const v = new FieldReader(body, `${where}: ${kind}`);
  switch (kind) {
    case 'protocol':
      v.int('minReaderVersion');
      v.int('minWriterVersion');
      v.optStringArray('readerFeatures');
      v.optStringArray('writerFeatures');
      return { protocol: body as unknown as Protocol };
    case 'metaData':
      v.string('id');
      v.string('schemaString');
      v.stringArray('partitionColumns');
      if (!isJsonObject(body.format)) v.fail('format', 'an object');
      if (body.configuration === undefined || body.configuration === null) body.configuration = {};
      v.record('configuration');
      v.optLong('createdTime');
      return { metaData: body as unknown as Metadata };
    case 'add':
      v.string('path');
      v.record('partitionValues');
      v.long('size');
      v.long('modificationTime');
      v.bool('dataChange');
      v.optString('stats');
      v.optLong('baseRowId');
      v.optLong('defaultRowCommitVersion');
      if (body.deletionVector !== undefined) checkDv(v, body.deletionVector);
      return { add: body as unknown as AddFile };
    case 'remove':
      v.string('path');
      v.optLong('deletionTimestamp');
      v.optLong('size');
      if (body.dataChange === undefined) body.dataChange = true;
      v.bool('dataChange');
      if (body.deletionVector !== undefined) checkDv(v, body.deletionVector);
      return { remove: body as unknown as RemoveFile };
    case 'commitInfo':
      v.optLong('timestamp');
      v.optLong('inCommitTimestamp');
      if (body.icebergSnapshotId !== undefined) {
        const id = body.icebergSnapshotId;
        if (typeof id === 'number' && Number.isSafeInteger(id)) body.icebergSnapshotId = BigInt(id);
        else if (typeof id === 'string' && /^-?\d+$/.test(id)) body.icebergSnapshotId = BigInt(id);
        else if (typeof id !== 'bigint') v.fail('icebergSnapshotId', 'an integer');
      }
      return { commitInfo: body as CommitInfo };
    case 'txn':
      v.string('appId');
      if (typeof body.version !== 'number' && typeof body.version !== 'bigint') v.fail('version', 'an integer');
      if (typeof body.version === 'bigint' && body.version >= BigInt(Number.MIN_SAFE_INTEGER) && body.version <= BigInt(Number.MAX_SAFE_INTEGER)) {
        body.version = Number(body.version);
      }
      v.optLong('lastUpdated');
      return { txn: body as unknown as Txn };
    case 'domainMetadata':
      v.string('domain');
      v.string('configuration');
      v.bool('removed');
      return { domainMetadata: body as unknown as DomainMetadata };
    case 'cdc':
      v.string('path');
      return { cdc: body as unknown as AddCdcFile };
    case 'sidecar':
      v.string('path');
      v.long('sizeInBytes');
      v.long('modificationTime');
      return { sidecar: body as unknown as Sidecar };
    case 'checkpointMetadata':
      v.long('version');
      return { checkpointMetadata: body as unknown as CheckpointMetadata };
  }
  return undefined;
}

function checkDv(v: FieldReader, dv: unknown): void {
  if (!isJsonObject(dv)) return v.fail('deletionVector', 'an object');
  const r = new FieldReader(dv, `${v.where}.deletionVector`);
  r.string('storageType');
  r.string('pathOrInlineDv');
  r.optLong('offset');
  r.long('sizeInBytes');
  r.long('cardinality');
}

/**
 * The unique id of a deletion vector (PROTOCOL.md §Derived Fields), part of the key of a logical
 * file; undefined when the file has none.
 */
export function dvUniqueId(dv: DeletionVectorDescriptor | undefined | null): string | undefined {
  if (!dv) return undefined;
  const base = `${dv.storageType}${dv.pathOrInlineDv}`;
  return dv.offset === undefined || dv.offset === null ? base : `${base}@${dv.offset}`;
}

const VERSION_DIGITS = 20;

function pad(version: number, digits: number): string {
  if (!Number.isSafeInteger(version) || version < 0) throw invalidInput(`delta log: expected a non-negative integer version, found ${version}`);
  return String(version).padStart(digits, '0');
}

/** `_delta_log/00000000000000000012.json` */
export function commitPath(version: number): string {
  return `_delta_log/${pad(version, VERSION_DIGITS)}.json`;
}

/** The classic single-file checkpoint: `_delta_log/00000000000000000012.checkpoint.parquet`. */
export function checkpointPath(version: number): string {
  return `_delta_log/${pad(version, VERSION_DIGITS)}.checkpoint.parquet`;
}

/** Part `part` (1-based) of a multi-part checkpoint of `parts` files. */
export function multipartCheckpointPath(version: number, part: number, parts: number): string {
  return `_delta_log/${pad(version, VERSION_DIGITS)}.checkpoint.${pad(part, 10)}.${pad(parts, 10)}.parquet`;
}

export type LogFileKind = 'commit' | 'checkpoint' | 'checksum' | 'compacted';

export interface LogFileName {
  version: number;
  kind: LogFileKind;
  /** Multi-part checkpoints: this file's part (1-based) and the number of parts. */
  part?: number;
  parts?: number;
  /** UUID-named (V2) checkpoints. */
  uuid?: string;
  format?: 'json' | 'parquet';
  /** Log compaction files cover [version, endVersion]. */
  endVersion?: number;
}

const LOG_FILE_PATTERNS: [RegExp, (m: RegExpExecArray) => LogFileName][] = [
  [/^(\d{20})\.json$/, (m) => ({ version: Number(m[1]), kind: 'commit' })],
  [/^(\d{20})\.checkpoint\.parquet$/, (m) => ({ version: Number(m[1]), kind: 'checkpoint', format: 'parquet' })],
  [
    /^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$/,
    (m) => ({ version: Number(m[1]), kind: 'checkpoint', format: 'parquet', part: Number(m[2]), parts: Number(m[3]) }),
  ],
  [
    /^(\d{20})\.checkpoint\.([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.(json|parquet)$/,
    (m) => ({ version: Number(m[1]), kind: 'checkpoint', uuid: m[2]!, format: m[3] as 'json' | 'parquet' }),
  ],
  [/^(\d{20})\.crc$/, (m) => ({ version: Number(m[1]), kind: 'checksum' })],
  [/^(\d{20})\.(\d{20})\.compacted\.json$/, (m) => ({ version: Number(m[1]), kind: 'compacted', endVersion: Number(m[2]) })],
];

/**
 * Classifies a file name inside `_delta_log/` (a base name, no directory). Returns undefined for
 * anything else (`_last_checkpoint`, temp files, `.crc` companions of Hadoop writers).
 */
export function parseLogFileName(name: string): LogFileName | undefined {
  for (const [re, build] of LOG_FILE_PATTERNS) {
    const m = re.exec(name);
    if (m) return build(m);
  }
  return undefined;
}

// --- field checks ---------------------------------------------------------------------------


function describe(x: unknown): string {
  if (x === undefined) return 'nothing';
  if (typeof x === 'bigint') return x.toString();
  const s = JSON.stringify(x) ?? String(x);
  return s.length > 60 ? s.slice(0, 57) + '...' : s;
}

class FieldReader {
  constructor(
    readonly body: Record<string, any>,
    readonly where: string,
  ) {}

  fail(field: string, expected: string): never {
    throw dataInvalid(`delta log ${this.where}.${field}: expected ${expected}, found ${describe(this.body[field])}`);
  }

  string(f: string): void {
    if (typeof this.body[f] !== 'string') this.fail(f, 'a string');
  }

  optString(f: string): void {
    if (this.body[f] === null) delete this.body[f];
    if (this.body[f] !== undefined) this.string(f);
  }

  bool(f: string): void {
    if (typeof this.body[f] !== 'boolean') this.fail(f, 'a boolean');
  }

  int(f: string): void {
    if (!Number.isSafeInteger(this.body[f])) this.fail(f, 'an integer');
  }

  /** Longs that are sizes or times fit in 2^53; a bigint here means corrupt data. */
  long(f: string): void {
    const x = this.body[f];
    if (typeof x === 'bigint' && x >= BigInt(Number.MIN_SAFE_INTEGER) && x <= BigInt(Number.MAX_SAFE_INTEGER)) this.body[f] = Number(x);
    else if (!Number.isSafeInteger(x)) this.fail(f, 'an integer');
  }

  optLong(f: string): void {
    if (this.body[f] === null) delete this.body[f];
    if (this.body[f] !== undefined) this.long(f);
  }

  record(f: string): void {
    if (!isJsonObject(this.body[f])) this.fail(f, 'an object');
  }

  stringArray(f: string): void {
    const x = this.body[f];
    if (!Array.isArray(x) || !x.every((s) => typeof s === 'string')) this.fail(f, 'an array of strings');
  }

  optStringArray(f: string): void {
    if (this.body[f] === null) delete this.body[f];
    if (this.body[f] !== undefined) this.stringArray(f);
  }
}
