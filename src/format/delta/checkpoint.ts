import { createHash } from 'node:crypto';
import { dataInvalid } from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import { type Action, type AddFile, type Sidecar, toAction } from './actions.ts';
import { formatDate } from './partition-values.ts';
import type { DeltaSnapshot } from './replay.ts';
import { floorDiv } from '../iceberg/single-value.ts';

/**
 * Classic single-file checkpoints (PROTOCOL.md §Checkpoints, V1 spec; §Checkpoint Schema) and the
 * `_last_checkpoint` pointer; reading also covers multi-part and V2 (UUID-named, sidecar) files.
 */

// --- writing -----------------------------------------------------------------------------------

const STRING_MAP = 'MAP(VARCHAR, VARCHAR)';
const DV = 'STRUCT("storageType" VARCHAR, "pathOrInlineDv" VARCHAR, "offset" INTEGER, "sizeInBytes" INTEGER, "cardinality" BIGINT)';

/**
 * The checkpoint's Parquet columns as DuckDB types, in file order; each row sets exactly one of
 * them. Names are quoted because DuckDB folds unquoted identifiers and `offset` is a keyword.
 */
export const CHECKPOINT_COLUMNS: readonly { name: string; type: string }[] = [
  { name: 'txn', type: 'STRUCT("appId" VARCHAR, "version" BIGINT, "lastUpdated" BIGINT)' },
  {
    name: 'add',
    type:
      `STRUCT("path" VARCHAR, "partitionValues" ${STRING_MAP}, "size" BIGINT, "modificationTime" BIGINT, "dataChange" BOOLEAN, ` +
      `"stats" VARCHAR, "tags" ${STRING_MAP}, "deletionVector" ${DV}, "baseRowId" BIGINT, "defaultRowCommitVersion" BIGINT)`,
  },
  {
    name: 'remove',
    type:
      `STRUCT("path" VARCHAR, "deletionTimestamp" BIGINT, "dataChange" BOOLEAN, "extendedFileMetadata" BOOLEAN, ` +
      `"partitionValues" ${STRING_MAP}, "size" BIGINT, "deletionVector" ${DV}, "baseRowId" BIGINT, "defaultRowCommitVersion" BIGINT)`,
  },
  {
    name: 'metaData',
    type:
      `STRUCT("id" VARCHAR, "name" VARCHAR, "description" VARCHAR, "format" STRUCT("provider" VARCHAR, "options" ${STRING_MAP}), ` +
      `"schemaString" VARCHAR, "partitionColumns" VARCHAR[], "configuration" ${STRING_MAP}, "createdTime" BIGINT)`,
  },
  { name: 'protocol', type: 'STRUCT("minReaderVersion" INTEGER, "minWriterVersion" INTEGER, "readerFeatures" VARCHAR[], "writerFeatures" VARCHAR[])' },
  { name: 'domainMetadata', type: 'STRUCT("domain" VARCHAR, "configuration" VARCHAR, "removed" BOOLEAN)' },
];

export type CheckpointRow = Record<(typeof CHECKPOINT_COLUMNS)[number]['name'], unknown>;

/**
 * The rows of a classic checkpoint of `snapshot`: protocol, metaData, txns, live domains, live adds
 * (stats as the JSON string) and the tombstones deleted at or after `tombstoneCutoffMs`. Without a
 * cutoff no tombstone is kept: readers never need them, and VACUUM of a Twinlake table works from
 * Iceberg's snapshots (DESIGN.md §1), so dropping them only shortens the time a foreign VACUUM
 * waits. Tombstones keep no stats or tags (PROTOCOL.md §Checkpoints).
 */
export function checkpointActions(snapshot: DeltaSnapshot, opts: { tombstoneCutoffMs?: number } = {}): CheckpointRow[] {
  const rows: CheckpointRow[] = [];
  const row = (column: string, value: unknown): CheckpointRow => {
    const r = Object.fromEntries(CHECKPOINT_COLUMNS.map((c) => [c.name, null])) as CheckpointRow;
    r[column] = value;
    return r;
  };
  const p = snapshot.protocol;
  rows.push(
    row('protocol', {
      minReaderVersion: p.minReaderVersion,
      minWriterVersion: p.minWriterVersion,
      readerFeatures: p.minReaderVersion >= 3 ? (p.readerFeatures ?? []) : null,
      writerFeatures: p.minWriterVersion >= 7 ? (p.writerFeatures ?? []) : null,
    }),
  );
  const m = snapshot.metadata;
  rows.push(
    row('metaData', {
      id: m.id,
      name: m.name ?? null,
      description: m.description ?? null,
      format: { provider: m.format.provider, options: m.format.options ?? {} },
      schemaString: m.schemaString,
      partitionColumns: m.partitionColumns,
      configuration: m.configuration,
      createdTime: m.createdTime ?? null,
    }),
  );
  for (const t of snapshot.txns.values()) rows.push(row('txn', { appId: t.appId, version: t.version, lastUpdated: t.lastUpdated ?? null }));
  for (const d of snapshot.domainMetadata.values()) rows.push(row('domainMetadata', { domain: d.domain, configuration: d.configuration, removed: false }));
  for (const a of snapshot.files) rows.push(row('add', addRow(a)));
  if (opts.tombstoneCutoffMs !== undefined) {
    for (const r of snapshot.tombstones) {
      if ((r.deletionTimestamp ?? 0) < opts.tombstoneCutoffMs) continue;
      rows.push(
        row('remove', {
          path: r.path,
          deletionTimestamp: r.deletionTimestamp ?? null,
          dataChange: r.dataChange,
          extendedFileMetadata: r.extendedFileMetadata ?? null,
          partitionValues: r.partitionValues ?? null,
          size: r.size ?? null,
          deletionVector: dvRow(r.deletionVector),
          baseRowId: r.baseRowId ?? null,
          defaultRowCommitVersion: r.defaultRowCommitVersion ?? null,
        }),
      );
    }
  }
  return rows;
}

function addRow(a: AddFile): Record<string, unknown> {
  return {
    path: a.path,
    partitionValues: a.partitionValues,
    size: a.size,
    modificationTime: a.modificationTime,
    // Every file in a checkpoint is already part of the table (PROTOCOL.md §Checkpoints).
    dataChange: false,
    stats: a.stats ?? null,
    tags: a.tags ?? null,
    deletionVector: dvRow(a.deletionVector),
    baseRowId: a.baseRowId ?? null,
    defaultRowCommitVersion: a.defaultRowCommitVersion ?? null,
  };
}

function dvRow(dv: AddFile['deletionVector']): unknown {
  if (!dv) return null;
  return { storageType: dv.storageType, pathOrInlineDv: dv.pathOrInlineDv, offset: dv.offset ?? null, sizeInBytes: dv.sizeInBytes, cardinality: dv.cardinality };
}

// --- reading -----------------------------------------------------------------------------------

/** Fields that are string maps: their null values mean something and are kept. */
const MAP_FIELDS = new Set(['partitionValues', 'tags', 'options', 'configuration']);
const ROW_COLUMNS = ['protocol', 'metaData', 'txn', 'add', 'remove', 'domainMetadata', 'checkpointMetadata', 'sidecar'];

/**
 * How a checkpoint's Parquet values are spelled as actions: only `stats_parsed` /
 * `partitionValues_parsed` hold dates and timestamps, and they take the JSON stats spelling
 * (timestamps truncated to milliseconds, PROTOCOL.md §Per-file Statistics).
 */
export const CHECKPOINT_VALUE_PARSERS = {
  dateFromDays: (days: number) => formatDate(days),
  timestampFromMilliseconds: (ms: bigint) => isoMillis(BigInt(ms)),
  timestampFromMicroseconds: (us: bigint) => isoMillis(floorDiv(BigInt(us), 1000n)),
  timestampFromNanoseconds: (ns: bigint) => isoMillis(floorDiv(BigInt(ns), 1_000_000n)),
};

/**
 * The actions of a Parquet checkpoint file's rows: a classic or multi-part checkpoint part, a V2
 * top-level checkpoint (whose `sidecar` actions the caller resolves), or a sidecar file. When a
 * writer kept only `stats_parsed`, it is turned back into the JSON `stats` string.
 */
export function checkpointRowsToActions(rows: Record<string, unknown>[], source = 'checkpoint'): Action[] {
  const actions: Action[] = [];
  rows.forEach((r, i) => {
    for (const col of ROW_COLUMNS) {
      const v = r[col];
      if (v === null || v === undefined) continue;
      const body = clean(v, false) as Record<string, unknown>;
      if (col === 'add') restoreStats(body);
      const action = toAction({ [col]: body }, `${source} row ${i}`);
      if (action) actions.push(action);
      break;
    }
  });
  return actions;
}

/** The sidecar files a V2 checkpoint references, in order. */
export function checkpointSidecars(actions: Action[]): Sidecar[] {
  const out: Sidecar[] = [];
  for (const a of actions) if ('sidecar' in a) out.push(a.sidecar);
  return out;
}

/** The checkpoint's actions with each sidecar reference replaced by the sidecar's actions. */
export function resolveSidecars(actions: Action[], sidecarActions: Action[][]): Action[] {
  const out = actions.filter((a) => !('sidecar' in a));
  for (const s of sidecarActions) for (const a of s) if ('add' in a || 'remove' in a) out.push(a);
  return out;
}

function clean(v: unknown, isMap: boolean): unknown {
  if (typeof v === 'bigint') return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (Array.isArray(v)) return v.map((x) => clean(x, false));
  if (v instanceof Uint8Array || typeof v !== 'object' || v === null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if ((x === null || x === undefined) && !isMap) continue;
    out[k] = clean(x, MAP_FIELDS.has(k) && !isMap);
  }
  return out;
}

function restoreStats(add: Record<string, unknown>): void {
  const parsed = add.stats_parsed as Record<string, unknown> | undefined;
  delete add.stats_parsed;
  delete add.partitionValues_parsed;
  if (add.stats !== undefined || !parsed) return;
  const stats: Record<string, unknown> = {};
  for (const k of ['numRecords', 'minValues', 'maxValues', 'nullCount', 'tightBounds']) if (parsed[k] !== undefined) stats[k] = parsed[k];
  add.stats = stringifyJson(stats);
}

function isoMillis(ms: bigint): string {
  const days = floorDiv(ms, 86_400_000n);
  const rem = Number(ms - days * 86_400_000n);
  const two = (n: number) => String(n).padStart(2, '0');
  const h = Math.floor(rem / 3_600_000);
  const mi = Math.floor(rem / 60_000) % 60;
  const s = Math.floor(rem / 1000) % 60;
  return `${formatDate(Number(days))}T${two(h)}:${two(mi)}:${two(s)}.${String(rem % 1000).padStart(3, '0')}Z`;
}

// --- _last_checkpoint --------------------------------------------------------------------------

/** PROTOCOL.md §Last Checkpoint File Schema; unknown fields (v2Checkpoint, schema...) are kept. */
export interface LastCheckpoint {
  version: number;
  size: number;
  parts?: number;
  sizeInBytes?: number;
  numOfAddFiles?: number;
  checkpointSchema?: unknown;
  tags?: Record<string, string>;
  checksum?: string;
  [key: string]: unknown;
}

/** The `_last_checkpoint` JSON, with its checksum. */
export function buildLastCheckpoint(info: Omit<LastCheckpoint, 'checksum'>): string {
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info)) if (v !== undefined) body[k] = v;
  body.checksum = lastCheckpointChecksum(body);
  return stringifyJson(body);
}

/** Parses `_last_checkpoint`; `checksumValid` is false when a checksum is present and wrong. */
export function parseLastCheckpoint(text: string, source = '_delta_log/_last_checkpoint'): LastCheckpoint & { checksumValid: boolean } {
  let obj: any;
  try {
    obj = parseJson(text, source);
  } catch (e) {
    throw dataInvalid(`delta last checkpoint: ${(e as Error).message}`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw dataInvalid(`delta last checkpoint ${source}: expected a JSON object`);
  for (const k of ['version', 'size', 'parts', 'sizeInBytes', 'numOfAddFiles']) {
    if (typeof obj[k] === 'bigint') obj[k] = Number(obj[k]);
    if (obj[k] !== undefined && !Number.isSafeInteger(obj[k])) {
      throw dataInvalid(`delta last checkpoint ${source}: ${k}: expected an integer, found ${JSON.stringify(obj[k])}`);
    }
  }
  if (obj.version === undefined) throw dataInvalid(`delta last checkpoint ${source}: version: expected an integer, found nothing`);
  const checksumValid = typeof obj.checksum !== 'string' || obj.checksum === lastCheckpointChecksum(obj);
  return { ...obj, checksumValid };
}

/** MD5 of the canonical form (PROTOCOL.md §JSON checksum); the top-level `checksum` is skipped. */
export function lastCheckpointChecksum(obj: Record<string, unknown>): string {
  const pairs: [string, string][] = [];
  const walk = (v: unknown, path: string) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, path === '' ? String(i) : `${path}+${i}`));
    else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) walk(x, path === '' ? `"${urlEncode(k)}"` : `${path}+"${urlEncode(k)}"`);
    } else {
      const value = typeof v === 'string' ? `"${urlEncode(v)}"` : v === null || v === undefined ? 'null' : String(v);
      pairs.push([path, value]);
    }
  };
  for (const [k, v] of Object.entries(obj)) if (k !== 'checksum') walk(v, `"${urlEncode(k)}"`);
  pairs.sort((a, b) => Buffer.compare(Buffer.from(a[0], 'utf8'), Buffer.from(b[0], 'utf8')));
  const canonical = pairs.map(([p, v]) => `${p}=${v}`).join(',');
  return createHash('md5').update(canonical, 'utf8').digest('hex');
}

/** RFC 3986 encoding where only A-Z a-z 0-9 - . _ ~ stay literal (PROTOCOL.md §How to URL encode). */
function urlEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}
