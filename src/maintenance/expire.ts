import { invalidInput, unsupported } from '../core/errors.ts';
import { checkpointPath, parseLogFileName } from '../format/delta/actions.ts';
import { ancestors } from '../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { deltaIntervalMs, Props, tableFormats } from '../format/dual/table-properties.ts';
import { committedOrThrow, Transaction } from '../table/commit/transaction.ts';
import { expireSnapshots as expireSnapshotsAction } from '../table/commit/table-actions.ts';
import { writeDeltaCheckpoint } from '../table/delta/delta-checkpoint.ts';
import { deltaLogFiles, icebergSnapshotOf } from '../table/delta/delta-log.ts';
import type { Table } from '../table/table.ts';
import { identString } from '../table/table-context.ts';

/** The seed's snapshot retention: 7 days (the config file's `snapshotRetention` default too). */
export const DEFAULT_SNAPSHOT_RETENTION_MS = 7 * 86400e3;
const MAX_AGE_KEY = 'history.expire.max-snapshot-age-ms';
const MIN_KEEP_KEY = 'history.expire.min-snapshots-to-keep';
const LOG_RETENTION_KEY = Props.deltaLogRetention;

export interface ExpireOptions {
  /** Snapshots younger than this (ms) are kept; default the table's `history.expire.max-snapshot-age-ms`, else 7 days. */
  retention?: number;
  /** Snapshots of each branch kept whatever their age; default `history.expire.min-snapshots-to-keep`, else 1. */
  minSnapshotsToKeep?: number;
  /** List what would be expired and removed, changing nothing. */
  dryRun?: boolean;
  /** The time retention counts back from (ms); default the lakehouse's clock. */
  now?: number;
}

export interface KeptSnapshot {
  snapshotId: bigint;
  timestampMs: number;
  /** Why expiry kept it: `current`, `ref tag-x`, `within retention`, `min-snapshots-to-keep`, `delta version N is retained`. */
  reason: string;
}

export interface ExpireResult {
  operation: 'snapshot_expiry';
  dryRun: boolean;
  /** Snapshots older than this (ms since the epoch) were candidates. */
  cutoffMs: number;
  retentionMs: number;
  /** Where the retention came from: the option, the table property, the config file, the default, or `delta.logRetentionDuration` when it is longer. */
  retentionSource: 'option' | typeof MAX_AGE_KEY | 'config' | 'default' | typeof LOG_RETENTION_KEY;
  minSnapshotsToKeep: number;
  expiredSnapshots: bigint[];
  kept: KeptSnapshot[];
  delta?: {
    /** The oldest Delta version kept (its checkpoint lets readers start there). */
    keptFromVersion?: number;
    /** The checkpoint at `keptFromVersion`; `written` when expiry wrote it before removing anything. */
    checkpoint?: { version: number; file: string; written: boolean };
    /** `_delta_log/` files removed (or, with dryRun, that would be). */
    removedLogFiles: string[];
  };
  /** Bytes of the removed log files. */
  bytesFreed: number;
  /** Expiry removes no data file: orphan_cleanup deletes what nothing retained references, after its safety window. */
  dataFilesDeleted: 0;
  note: string;
}

const NOTE = 'expiry removes no data, delete or manifest file; orphan_cleanup deletes the files no retained snapshot or Delta version references, after its safety window';

/**
 * Snapshot expiry across both formats. Iceberg: the spec's retention policy (iceberg-spec.md
 * §Snapshot Retention Policy) — every ref's snapshot is kept, and each branch's ancestors until
 * one is both older than the retention and beyond the first `min-snapshots-to-keep`; of the
 * rest, what is older than the retention is removed through the one Transaction. Delta: its log
 * keeps only versions that mirror retained snapshots, cut as PROTOCOL.md §Metadata Cleanup says
 * (a checkpoint at the oldest kept version first, then the log files before it).
 */
export async function expireSnapshots(table: Table, opts: ExpireOptions = {}): Promise<ExpireResult> {
  const ctx = table.context;
  if (!(await ctx.catalog.tableExists(ctx.ident))) {
    if (await ctx.deltaRegistry?.location(ctx.ident)) throw unsupported(`maintenance: snapshot_expiry of ${table.name}: a Delta-only table has no Iceberg snapshots to expire`);
  }
  const { metadata } = await ctx.catalog.loadTable(ctx.ident);
  const now = opts.now ?? ctx.clock.nowMs();
  const { retentionMs, retentionSource } = retentionOf(metadata, opts.retention);
  const minKeep = opts.minSnapshotsToKeep ?? positiveInt(metadata.properties[MIN_KEEP_KEY], MIN_KEEP_KEY) ?? 1;
  if (!Number.isInteger(minKeep) || minKeep < 1) throw invalidInput(`maintenance: minSnapshotsToKeep expects a positive integer, found ${minKeep}`);
  const cutoffMs = now - retentionMs;

  const kept = retainedSnapshots(metadata, now, cutoffMs, minKeep);
  const delta = tableFormats(metadata.properties).includes('delta');
  const { store, key } = ctx.io.storeAt(metadata.location);

  // Which snapshot each Delta version mirrors (commitInfo.icebergSnapshotId, never counted).
  const versions: { version: number; snapshotId: bigint | undefined }[] = [];
  const logFiles = delta ? await deltaLogFiles(store, key) : new Map<string, number>();
  for (const name of logFiles.keys()) {
    const f = parseLogFileName(name);
    if (f?.kind === 'commit') versions.push({ version: f.version, snapshotId: await icebergSnapshotOf(store, key, f.version) });
  }
  versions.sort((a, b) => a.version - b.version);

  // Both formats travel to every retained snapshot, and the Delta log is linear: it keeps every
  // version from the oldest one mirroring a retained snapshot (main's oldest kept ancestor, or a
  // ref's older snapshot). A snapshot a version from there on mirrors is kept too, so that every
  // retained Delta version still mirrors a retained snapshot: an old tag holds back both logs.
  let keptFromVersion: number | undefined;
  if (delta) {
    keptFromVersion = versions.find((v) => v.snapshotId !== undefined && kept.has(v.snapshotId))?.version;
    if (keptFromVersion !== undefined) {
      for (const v of versions) {
        if (v.version < keptFromVersion || v.snapshotId === undefined || kept.has(v.snapshotId)) continue;
        const s = metadata.snapshots.find((x) => x['snapshot-id'] === v.snapshotId);
        if (s) kept.set(v.snapshotId, { snapshotId: v.snapshotId, timestampMs: s['timestamp-ms'], reason: `delta version ${v.version} is retained (the Delta log is kept from version ${keptFromVersion})` });
      }
    }
  }
  const expired = metadata.snapshots.filter((s) => !kept.has(s['snapshot-id']) && s['timestamp-ms'] < cutoffMs).map((s) => s['snapshot-id']);
  for (const s of metadata.snapshots) {
    if (!kept.has(s['snapshot-id']) && !expired.includes(s['snapshot-id'])) kept.set(s['snapshot-id'], { snapshotId: s['snapshot-id'], timestampMs: s['timestamp-ms'], reason: 'within retention' });
  }

  // Log files before the kept version: commits, checkpoints and checksums (PROTOCOL.md
  // §Metadata Cleanup step 3). `_last_checkpoint` and anything unrecognised stay.
  const removable = keptFromVersion === undefined ? [] : [...logFiles.keys()].filter((n) => {
    const f = parseLogFileName(n);
    return f !== undefined && f.version < keptFromVersion! && (f.kind === 'commit' || f.kind === 'checkpoint' || f.kind === 'checksum' || (f.kind === 'compacted' && f.version <= keptFromVersion!));
  }).sort();
  const checkpointFile = keptFromVersion === undefined ? undefined : checkpointPath(keptFromVersion);
  const checkpointThere = checkpointFile !== undefined && logFiles.has(checkpointFile.slice('_delta_log/'.length));

  const result: ExpireResult = {
    operation: 'snapshot_expiry',
    dryRun: opts.dryRun === true,
    cutoffMs,
    retentionMs,
    retentionSource,
    minSnapshotsToKeep: minKeep,
    expiredSnapshots: expired,
    kept: [...kept.values()].sort((a, b) => b.timestampMs - a.timestampMs),
    ...(delta
      ? {
          delta: {
            ...(keptFromVersion !== undefined ? { keptFromVersion } : {}),
            ...(keptFromVersion !== undefined && removable.length > 0 ? { checkpoint: { version: keptFromVersion, file: checkpointFile!, written: false } } : {}),
            removedLogFiles: removable.map((n) => `_delta_log/${n}`),
          },
        }
      : {}),
    bytesFreed: 0,
    dataFilesDeleted: 0,
    note: NOTE,
  };
  const sizes = await Promise.all(removable.map(async (n) => (await store.head(`${logPrefix(key)}${n}`))?.size ?? 0));
  result.bytesFreed = sizes.reduce((a, b) => a + b, 0);
  if (opts.dryRun) return result;

  // Iceberg first, the source of truth: were the Delta log cut first and the commit lost, Delta
  // would have dropped versions of snapshots that are still retained.
  if (expired.length > 0) {
    committedOrThrow(await new Transaction(ctx, [expireSnapshotsAction(expired)], { what: `maintenance: snapshot_expiry of ${identString(ctx.ident)}` }).commit());
  }
  if (removable.length > 0 && keptFromVersion !== undefined) {
    // Readers of the kept versions start from this checkpoint once the log before it is gone:
    // it is written (and found whole) before the first file is removed.
    if (!checkpointThere) {
      await writeDeltaCheckpoint(ctx, metadata.location, keptFromVersion);
      result.delta!.checkpoint!.written = true;
    }
    if (!(await store.head(`${logPrefix(key)}${checkpointFile!.slice('_delta_log/'.length)}`))) {
      throw invalidInput(`maintenance: snapshot_expiry of ${table.name}: expected checkpoint ${checkpointFile} before removing the log before it, found none; nothing was removed from _delta_log/`);
    }
    // Oldest first, so what is left is always a checkpoint and the commits after it.
    for (const n of removable) await store.delete(`${logPrefix(key)}${n}`);
  }
  return result;
}

const logPrefix = (key: string) => (key === '' ? '_delta_log/' : `${key.replace(/\/+$/, '')}/_delta_log/`);

/**
 * The retention in force. `delta.logRetentionDuration` (PROTOCOL.md §Metadata Cleanup; Delta's
 * log retention) promises Delta readers time travel that far back, and the Iceberg retention
 * promises the same to Iceberg readers. Since every Delta version mirrors a snapshot and both
 * must resolve the same files, the longer of the two wins, for both formats: a table that
 * promises Delta 30 days keeps 30 days of Iceberg snapshots too. Delta's own 30-day default
 * applies only when the table sets the property: otherwise the seed's 7 days would never hold.
 */
function retentionOf(metadata: TableMetadata, option: number | undefined): Pick<ExpireResult, 'retentionMs' | 'retentionSource'> {
  if (option !== undefined && (!Number.isFinite(option) || option < 0)) throw invalidInput(`maintenance: retention expects a duration of 0 ms or more, found ${option}`);
  const prop = positiveInt(metadata.properties[MAX_AGE_KEY], MAX_AGE_KEY);
  let retentionMs = option ?? prop ?? DEFAULT_SNAPSHOT_RETENTION_MS;
  let retentionSource: ExpireResult['retentionSource'] = option !== undefined ? 'option' : prop !== undefined ? MAX_AGE_KEY : 'default';
  const log = metadata.properties[LOG_RETENTION_KEY];
  if (log !== undefined) {
    const logMs = deltaIntervalMs(log, LOG_RETENTION_KEY);
    if (logMs > retentionMs) {
      retentionMs = logMs;
      retentionSource = LOG_RETENTION_KEY;
    }
  }
  return { retentionMs, retentionSource };
}

function positiveInt(value: string | undefined, key: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw invalidInput(`maintenance: table property ${key} expects a positive integer, found ${JSON.stringify(value)}`);
  return Number(value);
}

/** The snapshots the retention policy keeps, with why (iceberg-spec.md §Snapshot Retention Policy). */
function retainedSnapshots(metadata: TableMetadata, now: number, cutoffMs: number, minKeep: number): Map<bigint, KeptSnapshot> {
  const kept = new Map<bigint, KeptSnapshot>();
  const keep = (id: bigint, reason: string) => {
    const s = metadata.snapshots.find((x) => x['snapshot-id'] === id);
    if (s && !kept.has(id)) kept.set(id, { snapshotId: id, timestampMs: s['timestamp-ms'], reason });
  };
  const currentId = metadata['current-snapshot-id'];
  if (currentId !== undefined && currentId !== null && currentId !== -1n) keep(BigInt(currentId), 'current');
  for (const [name, ref] of Object.entries(metadata.refs)) keep(ref['snapshot-id'], `ref ${name}`);
  for (const [, ref] of Object.entries(metadata.refs)) {
    if (ref.type !== 'branch') continue;
    const branchMin = ref['min-snapshots-to-keep'] ?? minKeep;
    const branchCutoff = ref['max-snapshot-age-ms'] !== undefined ? Math.min(cutoffMs, now - Number(ref['max-snapshot-age-ms'])) : cutoffMs;
    const chain = ancestors(metadata, ref['snapshot-id']);
    for (const [i, s] of chain.entries()) {
      if (s['timestamp-ms'] < branchCutoff && i >= branchMin) break;
      keep(s['snapshot-id'], s['timestamp-ms'] >= branchCutoff ? 'within retention' : 'min-snapshots-to-keep');
    }
  }
  return kept;
}
