import { randomBytes } from 'node:crypto';
import { isTwinlakeError } from '../core/errors.ts';
import { parseJson, stringifyJson } from '../core/json.ts';
import { latestDeltaVersion } from '../table/delta/delta-log.ts';
import type { Table } from '../table/table.ts';
import { runMaintenance, type MaintenanceOptions, type MaintenanceOperation, type MaintenanceResult } from './maintain.ts';
import { TWINLAKE_FOLDER } from './orphans.ts';
import { tableSubject } from './reachable.ts';

/**
 * The maintenance run log: one create-only JSON object per run, below the table's own folder
 * (`<table>/_twinlake/maintenance/runs/`), written through the table's store. It lives with the
 * table, so it works the same with every catalog (SQL, REST, Glue) and for a table read by path,
 * and moves with it. Orphan and metadata cleanup never remove it (orphans.ts keeps the folder),
 * Delta readers skip `_` folders and Iceberg readers never list. A run's file name starts with
 * its start time, so a listing (sorted by path) is the runs in order, and "when did compaction
 * last run" needs no file read: schedules take their last runs from here.
 */

/** The folder of the log, relative to the table's location. */
export const RUN_LOG_FOLDER = `${TWINLAKE_FOLDER}maintenance/runs/`;

/** Paths a run lists at most (the counts and bytes are always whole). */
const MAX_LISTED = 1000;

export type RunTrigger = 'manual' | 'schedule';

export interface MaintenanceRun {
  /** The log file's name without `.json`: `<start ms>-<operation>-<random>`. */
  id: string;
  table: string;
  operation: MaintenanceOperation;
  trigger: RunTrigger;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  outcome: 'completed' | 'failed';
  error?: { kind: string; message: string };
  /** Files deleted (orphans, old metadata and checkpoints, Delta log files) and their bytes. */
  removed: { files: number; bytes: number };
  /** The first paths removed (relative to the table), at most 1000. */
  removedFiles: string[];
  /** Data files compaction rewrote, and those it wrote. */
  rewritten: { files: number; bytes: number };
  added: { files: number; bytes: number };
  expiredSnapshots: string[];
  bytesFreed: number;
  /** The Iceberg snapshot and Delta version the run committed (absent when it committed none). */
  snapshotId?: string;
  deltaVersion?: number;
  /** full_maintenance: each step's outcome. */
  steps?: { operation: string; status: string; reason?: string }[];
}

/** One run's start (ms) and operation, read from its file name alone. */
export interface RunStart {
  id: string;
  operation: string;
  startedMs: number;
}

const NAME = /^(\d{13})-([a-z_]+)-([0-9a-f]+)\.json$/;

async function logPlace(table: Table): Promise<{ store: ReturnType<Table['context']['io']['storeAt']>['store']; prefix: string; location: string }> {
  const { io, location } = await tableSubject(table);
  const { store, key } = io.storeAt(location);
  return { store, prefix: `${key === '' ? '' : `${key.replace(/\/+$/, '')}/`}${RUN_LOG_FOLDER}`, location };
}

/** The runs' starts, oldest first, from the file names (no file is read). */
export async function runStarts(table: Table): Promise<RunStart[]> {
  const { store, prefix } = await logPlace(table);
  const out: RunStart[] = [];
  for await (const o of store.list(prefix)) {
    const m = NAME.exec(o.path.slice(prefix.length));
    if (m) out.push({ id: m[0].slice(0, -5), operation: m[2]!, startedMs: Number(m[1]) });
  }
  return out;
}

/** Each operation's last start, for due-ness. */
export async function lastRuns(table: Table): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const r of await runStarts(table)) out.set(r.operation, Math.max(out.get(r.operation) ?? 0, r.startedMs));
  return out;
}

/** The runs, newest first, at most `limit` (default 100); only those of `operations` when given. */
export async function listRuns(table: Table, opts: { limit?: number; operations?: string[] } = {}): Promise<MaintenanceRun[]> {
  const { store, prefix } = await logPlace(table);
  const starts = (await runStarts(table))
    .filter((r) => opts.operations === undefined || opts.operations.includes(r.operation))
    .reverse()
    .slice(0, opts.limit ?? 100);
  const out: MaintenanceRun[] = [];
  for (const s of starts) {
    const path = `${prefix}${s.id}.json`;
    out.push(parseJson(new TextDecoder().decode(await store.get(path)), path) as MaintenanceRun);
  }
  return out;
}

/**
 * The runs that committed the given snapshots (compaction's), found by reading the log newest
 * first from the last run that started before the newest of them: a run starts before the
 * snapshot it commits, so later runs are never read, and reading stops once every snapshot is
 * found (a snapshot whose run was never logged costs a read of the older runs, at most `limit`).
 */
export async function runsOfSnapshots(table: Table, snapshots: readonly { id: string; timestampMs: number }[], limit = MAX_RUNS_SEARCHED): Promise<Map<string, MaintenanceRun>> {
  const out = new Map<string, MaintenanceRun>();
  if (snapshots.length === 0) return out;
  const wanted = new Set(snapshots.map((s) => s.id));
  const newest = Math.max(...snapshots.map((s) => s.timestampMs));
  const { store, prefix } = await logPlace(table);
  const starts = (await runStarts(table)).filter((r) => r.startedMs <= newest && COMMITTING.has(r.operation)).reverse().slice(0, limit);
  for (const s of starts) {
    if (wanted.size === 0) break;
    const path = `${prefix}${s.id}.json`;
    const run = parseJson(new TextDecoder().decode(await store.get(path)), path) as MaintenanceRun;
    if (run.snapshotId !== undefined && wanted.delete(run.snapshotId)) out.set(run.snapshotId, run);
  }
  return out;
}

/** The runs a search for snapshots reads at most. */
const MAX_RUNS_SEARCHED = 1000;

/** The operations whose runs commit a snapshot of their own. */
const COMMITTING = new Set(['compaction', 'full_maintenance']);

/** Writes one run's entry; create-only, so an entry is never rewritten. */
export async function recordRun(table: Table, run: MaintenanceRun): Promise<void> {
  const { store, prefix } = await logPlace(table);
  await store.putIfAbsent(`${prefix}${run.id}.json`, new TextEncoder().encode(stringifyJson(run, 2)));
}

/** Where the table stands: its current snapshot and newest Delta version. */
async function position(table: Table): Promise<{ snapshotId?: bigint; deltaVersion?: number }> {
  const s = await tableSubject(table);
  const id = s.metadata?.['current-snapshot-id'];
  const snapshotId = id === undefined || id === null || BigInt(id) === -1n ? undefined : BigInt(id);
  if (!s.delta) return { snapshotId };
  const { store, key } = s.io.storeAt(s.location);
  return { snapshotId, deltaVersion: await latestDeltaVersion(store, key) };
}

export interface LoggedRun {
  result: MaintenanceResult;
  run?: MaintenanceRun;
}

/**
 * Runs an operation (maintain.ts) and logs it: what it removed, rewrote and freed, and the
 * snapshot and version it committed. A failed run is logged too, then its error rethrown. A dry
 * run changes nothing and is not logged (it is no run for a schedule either).
 */
export async function runAndLog(table: Table, operation: string, opts: MaintenanceOptions = {}, trigger: RunTrigger = 'manual'): Promise<LoggedRun> {
  if (opts.dryRun) return { result: await runMaintenance(table, operation, opts) };
  const clock = table.context.clock;
  const startedMs = clock.nowMs();
  const before = await position(table).catch(() => ({}) as { snapshotId?: bigint; deltaVersion?: number });
  const entry = (outcome: MaintenanceRun['outcome']): MaintenanceRun => {
    const endedMs = clock.nowMs();
    return {
      id: `${String(startedMs).padStart(13, '0')}-${operation}-${randomBytes(4).toString('hex')}`,
      table: table.name,
      operation: operation as MaintenanceOperation,
      trigger,
      startedAt: new Date(startedMs).toISOString(),
      endedAt: new Date(endedMs).toISOString(),
      durationMs: Math.max(0, endedMs - startedMs),
      outcome,
      removed: { files: 0, bytes: 0 },
      removedFiles: [],
      rewritten: { files: 0, bytes: 0 },
      added: { files: 0, bytes: 0 },
      expiredSnapshots: [],
      bytesFreed: 0,
    };
  };
  let result: MaintenanceResult;
  try {
    result = await runMaintenance(table, operation, opts);
  } catch (e) {
    const run = entry('failed');
    run.error = { kind: isTwinlakeError(e) ? e.kind : 'internal', message: (e as Error).message };
    // An unknown operation is no run of anything: only real runs are logged.
    if (!(isTwinlakeError(e, 'invalid-input') && /expected an operation of/.test((e as Error).message))) {
      await recordRun(table, run).catch((le: unknown) => table.context.warn(`maintenance: could not log the failed ${operation} run of ${table.name}: ${(le as Error).message}`));
    }
    throw e;
  }
  const run = entry('completed');
  summarize(run, result);
  const after = await position(table).catch(() => ({}) as { snapshotId?: bigint; deltaVersion?: number });
  if (after.snapshotId !== undefined && after.snapshotId !== before.snapshotId) run.snapshotId = String(after.snapshotId);
  if (after.deltaVersion !== undefined && after.deltaVersion !== before.deltaVersion) run.deltaVersion = after.deltaVersion;
  try {
    await recordRun(table, run);
  } catch (e) {
    // The run happened; a log that could not be written only makes a schedule run it again.
    table.context.warn(`maintenance: could not log the ${operation} run of ${table.name}: ${(e as Error).message}`);
  }
  return { result, run };
}

/** Adds what one operation's result says it did to the run's counts. */
function summarize(run: MaintenanceRun, r: MaintenanceResult): void {
  const removed = (files: number, bytes: number, paths: string[]) => {
    run.removed.files += files;
    run.removed.bytes += bytes;
    run.bytesFreed += bytes;
    for (const p of paths) if (run.removedFiles.length < MAX_LISTED) run.removedFiles.push(p);
  };
  switch (r.operation) {
    case 'snapshot_expiry':
      for (const id of r.expiredSnapshots) if (run.expiredSnapshots.length < MAX_LISTED) run.expiredSnapshots.push(String(id));
      removed(r.delta?.removedLogFiles.length ?? 0, r.bytesFreed, r.delta?.removedLogFiles ?? []);
      break;
    case 'orphan_cleanup':
    case 'metadata_cleanup':
      removed(r.removed.files, r.removed.bytes, r.files.map((f) => f.path));
      break;
    case 'compaction':
      run.rewritten.files += r.filesRewritten;
      run.rewritten.bytes += r.bytesRewritten;
      run.added.files += r.filesAdded;
      run.added.bytes += r.bytesAdded;
      break;
    case 'delta_checkpoint':
      break;
    case 'full_maintenance':
      run.steps = r.steps.map((s) => ({ operation: s.operation, status: s.status, ...(s.status === 'completed' ? {} : { reason: s.reason }) }));
      for (const s of r.steps) if (s.status === 'completed') summarize(run, s.result);
      break;
  }
}
