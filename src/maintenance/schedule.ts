import { isTwinlakeError } from '../core/errors.ts';
import {
  dueOperations,
  nextDueAt,
  schedulesOfConfig,
  schedulesOfProperties,
  SCHEDULE_PROPERTY,
  type Schedule,
  type ScheduledOperation,
} from '../format/dual/maintenance-schedule.ts';
import type { Clock } from '../core/clock.ts';
import type { Lakehouse } from '../table/lakehouse.ts';
import type { Table } from '../table/table.ts';
import { tablePropertiesOf, type MaintenanceOptions } from './maintain.ts';
import { lastRuns, runAndLog, type MaintenanceRun, type RunTrigger } from './run-log.ts';

/**
 * A table's maintenance schedule and what of it is due, from its properties, the config and the
 * run log (run-log.ts). The parsing and the time arithmetic are pure
 * (src/format/dual/maintenance-schedule.ts); this reads the table and runs what is due.
 */

/** What the config file says of a table's maintenance (resolve-config.ts `maintenanceDefaultsFor`). */
export interface MaintenanceDefaults {
  /** snapshot_expiry's retention (ms) when the table has no history.expire.max-snapshot-age-ms. */
  retention?: number;
  /** compaction's target (bytes) when the table has no write.target-file-size-bytes. */
  targetFileSize?: number;
  /** The table's `tables` entry's maintenance.schedule. */
  schedule?: unknown;
  /** The warehouse-wide maintenance.schedule. */
  warehouseSchedule?: unknown;
}

export type ScheduleSource = 'table property' | 'config tables entry' | 'config' | 'none';

export interface TableSchedule {
  schedules: Map<ScheduledOperation, Schedule>;
  /** Where it came from: the first of these that gives any schedule is the table's whole schedule. */
  source: ScheduleSource;
}

/**
 * The table's schedule: its `maintenance.schedule*` properties, else its `tables` entry in the
 * config, else the config's warehouse-wide schedule. One source gives the whole schedule, so a
 * table that says `maintenance.schedule.compaction` alone runs nothing else on a schedule.
 */
export async function tableSchedule(table: Table, defaults: MaintenanceDefaults = {}): Promise<TableSchedule> {
  const own = schedulesOfProperties(await tablePropertiesOf(table));
  if (own.size > 0) return { schedules: own, source: 'table property' };
  if (defaults.schedule !== undefined) return { schedules: schedulesOfConfig(defaults.schedule, `tables["${table.name}"].${SCHEDULE_PROPERTY}`), source: 'config tables entry' };
  if (defaults.warehouseSchedule !== undefined) return { schedules: schedulesOfConfig(defaults.warehouseSchedule, SCHEDULE_PROPERTY), source: 'config' };
  return { schedules: new Map(), source: 'none' };
}

export interface DuePlan {
  table: string;
  source: ScheduleSource;
  /** The operations due now, in the order they run. */
  due: ScheduledOperation[];
  /** Each scheduled operation's next due time (ISO), `null` when off. */
  next: { operation: ScheduledOperation; schedule: string; lastRun: string | null; dueAt: string | null }[];
}

/** What of the table's schedule is due at `nowMs`, by the last runs in its run log. */
export async function duePlan(table: Table, defaults: MaintenanceDefaults, nowMs: number): Promise<DuePlan> {
  const { schedules, source } = await tableSchedule(table, defaults);
  const runs = schedules.size > 0 ? await lastRuns(table) : new Map<string, number>();
  const due = dueOperations(schedules, runs, nowMs);
  const next = [...schedules].map(([operation, s]) => {
    const last = runs.get(operation);
    const at = nextDueAt(s, last);
    return { operation, schedule: s.text, lastRun: last === undefined ? null : new Date(last).toISOString(), dueAt: Number.isFinite(at) ? new Date(Math.max(at, 0)).toISOString() : null };
  });
  return { table: table.name, source, due, next };
}

/** The options a run takes from the config: its retention and target, below the table's own properties. */
export function configuredOptions(defaults: MaintenanceDefaults): MaintenanceOptions {
  const configured = {
    ...(defaults.retention !== undefined ? { retention: defaults.retention } : {}),
    ...(defaults.targetFileSize !== undefined ? { targetFileSize: defaults.targetFileSize } : {}),
  };
  return Object.keys(configured).length > 0 ? { configured } : {};
}

export interface DueRun {
  operation: ScheduledOperation;
  outcome: 'completed' | 'failed';
  run?: MaintenanceRun;
  error?: { kind: string; message: string };
}

/**
 * Runs the table's due operations one after another, each logged. The first that fails ends the
 * table's turn (the rest wait for the next time, after the failure is looked at); its error is in
 * the answer, not thrown. `stop` is asked before each operation, `onStart` told of each.
 */
export async function runDue(table: Table, plan: DuePlan, defaults: MaintenanceDefaults, trigger: RunTrigger = 'schedule', opts: { stop?: () => boolean; onStart?: (operation: ScheduledOperation) => void } = {}): Promise<DueRun[]> {
  const out: DueRun[] = [];
  for (const operation of plan.due) {
    // Stopping (a server shutting down): the operation under way finished, the next waits.
    if (opts.stop?.()) break;
    opts.onStart?.(operation);
    try {
      const { run } = await runAndLog(table, operation, configuredOptions(defaults), trigger);
      out.push({ operation, outcome: 'completed', run });
    } catch (e) {
      out.push({ operation, outcome: 'failed', error: { kind: isTwinlakeError(e) ? e.kind : 'internal', message: (e as Error).message } });
      break;
    }
  }
  return out;
}

export interface DueReport extends Partial<DuePlan> {
  table: string;
  runs: DueRun[];
  /** The table's schedule could not be read or is not valid: nothing ran. */
  error?: { kind: string; message: string };
}

/** One table as a look at the lakehouse finds it: its due plan, or why its schedule could not be read. */
export type DueTable = { name: string; table: Table; defaults: MaintenanceDefaults } & ({ plan: DuePlan } | { error: { kind: string; message: string } });

/** Each table of the lakehouse in turn, with what is due on it now (the one walk `maintain --due` and the server's scheduler share). */
export async function* dueTables(lake: Lakehouse, defaultsFor: (name: string) => MaintenanceDefaults, clock: Clock): AsyncGenerator<DueTable> {
  for (const name of await lake.listTables()) {
    const table = lake.table(name);
    const defaults = defaultsFor(name);
    try {
      yield { name, table, defaults, plan: await duePlan(table, defaults, clock.nowMs()) };
    } catch (e) {
      yield { name, table, defaults, error: { kind: isTwinlakeError(e) ? e.kind : 'internal', message: (e as Error).message } };
    }
  }
}

/**
 * Every table of the lakehouse: its due operations run (or, with dryRun, only listed), one table
 * after another (`twinlake maintain --all --due`). A table that fails does not stop the others.
 */
export async function maintainDue(lake: Lakehouse, defaultsFor: (name: string) => MaintenanceDefaults, opts: { dryRun?: boolean; clock: Clock }): Promise<DueReport[]> {
  const out: DueReport[] = [];
  for await (const t of dueTables(lake, defaultsFor, opts.clock)) {
    if ('error' in t) out.push({ table: t.name, runs: [], error: t.error });
    else out.push({ ...t.plan, runs: opts.dryRun ? [] : await runDue(t.table, t.plan, t.defaults) });
  }
  return out;
}
