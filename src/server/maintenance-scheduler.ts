import { systemClock, type Clock } from '../core/clock.ts';
import { redact } from '../config/redact.ts';
import { duePlan, dueTables, runDue, type DueRun, type MaintenanceDefaults } from '../maintenance/schedule.ts';
import type { Lakehouse } from '../table/lakehouse.ts';
import { KeyedLocks } from './keyed-locks.ts';

/**
 * One maintenance run at a time per table (by name), within this server: the background scheduler
 * and the API's maintenance route both run through `run`, so a manual run waits for a scheduled
 * one on the same table and the other way round. (Runs of other processes, a `twinlake maintain`
 * beside the server, are not seen here; maintenance commits through the one Transaction, so they
 * still cannot corrupt the table, only repeat work.)
 */
export class MaintenanceLocks extends KeyedLocks<string> {
  constructor() {
    super((name) => name);
  }
}

export interface SchedulerLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface SchedulerOptions {
  lake: Lakehouse;
  locks: MaintenanceLocks;
  /** The config's maintenance settings of a table (retention, target, schedules). */
  defaultsFor?: (name: string) => MaintenanceDefaults;
  /** How often the tables are looked at (ms; default a minute). */
  intervalMs?: number;
  /** The time due-ness is judged by (default the system clock; runs are logged by the lakehouse's clock). */
  clock?: Clock;
  log?: SchedulerLog;
}

/** What one look at the tables did. */
export interface TickReport {
  /** Tables whose due operations ran, with each run's outcome. */
  ran: { table: string; runs: DueRun[] }[];
  /** Tables with something due that waited for a run in progress. */
  waited: string[];
  /** Tables whose schedule could not be read. */
  failed: { table: string; message: string }[];
}

export const DEFAULT_TICK_MS = 60_000;

/**
 * The background maintenance of `twinlake serve`: every tick it looks at each table of the
 * catalog, and runs what its schedule says is due (schedule.ts), one table after another and one
 * operation at a time. A table with a run in progress waits for the next tick. Errors are logged
 * and never stop the server; `stop` lets the run in progress finish and starts no other.
 */
export class MaintenanceScheduler {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<TickReport> | undefined;
  private stopping = false;
  private running: { table: string; operation: string } | undefined;
  private readonly clock: Clock;
  private readonly intervalMs: number;

  constructor(private readonly opts: SchedulerOptions) {
    this.clock = opts.clock ?? systemClock;
    this.intervalMs = opts.intervalMs ?? DEFAULT_TICK_MS;
  }

  /** The per-table runs this scheduler shares with the API's maintenance route. */
  get locks(): MaintenanceLocks {
    return this.opts.locks;
  }

  /** The scheduled run under way, if any. */
  get runningNow(): { table: string; operation: string } | undefined {
    return this.running;
  }

  start(): void {
    if (this.timer || this.stopping) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    // The server's sockets keep the process alive, not the scheduler.
    this.timer.unref();
  }

  /** Looks at every table once; a tick still running is not started twice (its answer is shared). */
  tick(): Promise<TickReport> {
    if (this.current) return this.current;
    const report: TickReport = { ran: [], waited: [], failed: [] };
    this.current = this.lookAtTables(report)
      .catch((e: unknown) => {
        this.opts.log?.error({ error: { message: redact((e as Error).message) } }, 'maintenance: the scheduler could not list the tables');
        return report;
      })
      .finally(() => {
        this.current = undefined;
      });
    return this.current;
  }

  /** Stops ticking; waits for the run in progress (nothing new starts once stopping). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.current;
  }

  private async lookAtTables(report: TickReport): Promise<TickReport> {
    const { lake, locks, log } = this.opts;
    for await (const t of dueTables(lake, (name) => this.opts.defaultsFor?.(name) ?? {}, this.clock)) {
      if (this.stopping) break;
      const { name, table, defaults } = t;
      if ('error' in t) {
        report.failed.push({ table: name, message: t.error.message });
        log?.error({ table: name, error: { message: redact(t.error.message) } }, 'maintenance: could not read the table\'s schedule');
        continue;
      }
      if (t.plan.due.length === 0) continue;
      if (locks.busy(name)) {
        report.waited.push(name);
        log?.info({ table: name, due: t.plan.due }, 'maintenance: due, waiting for the run in progress');
        continue;
      }
      try {
        const runs = await locks.run(name, async () => {
          // Looked at again under the lock: a run that just ended may have done it.
          const fresh = await duePlan(table, defaults, this.clock.nowMs());
          try {
            return await runDue(table, fresh, defaults, 'schedule', {
              stop: () => this.stopping,
              onStart: (operation) => {
                this.running = { table: name, operation };
                log?.info({ table: name, operation }, 'maintenance: scheduled run started');
              },
            });
          } finally {
            this.running = undefined;
          }
        });
        report.ran.push({ table: name, runs });
        for (const r of runs) {
          if (r.outcome === 'failed') log?.error({ table: name, operation: r.operation, error: { kind: r.error?.kind, message: redact(r.error?.message ?? '') } }, 'maintenance: scheduled run failed');
          else log?.info({ table: name, operation: r.operation, runId: r.run?.id, bytesFreed: r.run?.bytesFreed }, 'maintenance: scheduled run completed');
        }
      } catch (e) {
        report.failed.push({ table: name, message: (e as Error).message });
        log?.error({ table: name, error: { message: redact((e as Error).message) } }, 'maintenance: could not read the table\'s schedule');
      }
    }
    return report;
  }
}
