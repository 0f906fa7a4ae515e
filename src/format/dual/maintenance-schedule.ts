import { invalidInput } from '../../core/errors.ts';

/**
 * When a table's maintenance runs: the `maintenance.schedule` table property (and the config
 * file's key of the same name). Pure: parsing, and the next time a schedule is due given the
 * last run; the times come in as arguments (UTC milliseconds), nothing here reads a clock.
 *
 * A schedule is an interval (`every 6h`, `1d`, `90m`) counted from the last run, a 5-field cron
 * expression read in UTC (`0 3 * * *`, `*\/15 * * * 1-5`, `@daily`), or `off`.
 */

/** The operations a schedule may name; full_maintenance is what a bare `maintenance.schedule` runs. */
export const SCHEDULED_OPERATIONS = ['full_maintenance', 'compaction', 'snapshot_expiry', 'delta_checkpoint', 'metadata_cleanup', 'orphan_cleanup'] as const;
export type ScheduledOperation = (typeof SCHEDULED_OPERATIONS)[number];

/** The table property of the full_maintenance schedule; `maintenance.schedule.<operation>` names one operation's. */
export const SCHEDULE_PROPERTY = 'maintenance.schedule';

export type Schedule =
  | { kind: 'interval'; text: string; everyMs: number }
  | { kind: 'cron'; text: string; cron: CronFields }
  | { kind: 'off'; text: string };

/** Each field's allowed values, and whether day-of-month and day-of-week were restricted (the cron day rule). */
export interface CronFields {
  minutes: ReadonlySet<number>;
  hours: ReadonlySet<number>;
  days: ReadonlySet<number>;
  months: ReadonlySet<number>;
  weekdays: ReadonlySet<number>;
  daysRestricted: boolean;
  weekdaysRestricted: boolean;
}

export const SCHEDULE_EXPECTS = 'an interval such as "every 6h" or "1d", a 5-field cron expression in UTC such as "0 3 * * *", or "off"';

const MINUTE_MS = 60_000;
const INTERVAL_UNITS: Record<string, number> = { m: 1, min: 1, minute: 1, h: 60, hour: 60, d: 1440, day: 1440, w: 10080, week: 10080 };

const MACROS: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTH_NAMES = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAY_NAMES = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface FieldRule {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** The first name's number (months count from 1, weekdays from 0). */
  namesFrom?: number;
}

const FIELDS: FieldRule[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES, namesFrom: 1 },
  // 7 is Sunday too, as in every cron.
  { name: 'day of week', min: 0, max: 7, names: DAY_NAMES, namesFrom: 0 },
];

/** Thrown inside parsing; `parseSchedule` turns it into one message naming the value and where it came from. */
class BadSchedule extends Error {}

/**
 * Parses one schedule; `where` names it for the message (`table property maintenance.schedule`).
 * The error says the value, what was expected, and what is wrong with it.
 */
export function parseSchedule(text: string, where: string): Schedule {
  try {
    return parse(text);
  } catch (e) {
    if (!(e instanceof BadSchedule)) throw e;
    throw invalidInput(`maintenance: ${where} expects ${SCHEDULE_EXPECTS}, found ${JSON.stringify(text)}: ${e.message}`, { value: text });
  }
}

/** What is wrong with a schedule's text, or undefined when it is a schedule (for messages that say it their own way). */
export function scheduleProblem(text: string): string | undefined {
  try {
    parse(text);
    return undefined;
  } catch (e) {
    if (e instanceof BadSchedule) return e.message;
    throw e;
  }
}

function parse(raw: string): Schedule {
  const text = raw.trim();
  if (text === '') throw new BadSchedule('it is empty');
  if (/^(off|never|none)$/i.test(text)) return { kind: 'off', text };
  const interval = /^(?:every\s+)?(\d+)\s*([a-z]+)$/i.exec(text);
  if (interval) {
    const unit = interval[2]!.toLowerCase().replace(/s$/, '');
    const minutes = INTERVAL_UNITS[unit];
    if (minutes === undefined) throw new BadSchedule(`unknown unit ${JSON.stringify(interval[2])} (use m, h, d or w)`);
    const n = Number(interval[1]);
    if (n < 1) throw new BadSchedule('an interval must be at least 1 minute');
    return { kind: 'interval', text, everyMs: n * minutes * MINUTE_MS };
  }
  if (/^every\b/i.test(text)) throw new BadSchedule('an interval is a number and a unit: m, h, d or w (every 6h)');
  const expanded = text.startsWith('@') ? MACROS[text.toLowerCase()] : text;
  if (expanded === undefined) throw new BadSchedule(`unknown macro (known: ${Object.keys(MACROS).join(', ')})`);
  const parts = expanded.split(/\s+/);
  if (parts.length !== 5) throw new BadSchedule(`a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one ${parts.length}`);
  const sets = parts.map((p, i) => parseField(p, FIELDS[i]!));
  const weekdays = new Set([...sets[4]!].map((d) => (d === 7 ? 0 : d)));
  const cron: CronFields = {
    minutes: sets[0]!,
    hours: sets[1]!,
    days: sets[2]!,
    months: sets[3]!,
    weekdays,
    daysRestricted: !parts[2]!.startsWith('*'),
    weekdaysRestricted: !parts[4]!.startsWith('*'),
  };
  // Days of the month no chosen month has (`0 0 31 2 *`) would never run: say so now.
  if (cron.daysRestricted && !cron.weekdaysRestricted && ![...cron.months].some((m) => [...cron.days].some((d) => d <= DAYS_IN_MONTH_MAX[m - 1]!))) {
    throw new BadSchedule(`day of month ${parts[2]} never falls in month ${parts[3]}, so it would never run`);
  }
  return { kind: 'cron', text, cron };
}

/** The most days each month can have (February in a leap year). */
const DAYS_IN_MONTH_MAX = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** One field: a comma list of `*`, `N`, `A-B`, each optionally `/STEP` (`A/STEP` runs from A to the end). */
function parseField(field: string, rule: FieldRule): Set<number> {
  const out = new Set<number>();
  for (const item of field.split(',')) {
    const m = /^([^/]+)(?:\/(\d+))?$/.exec(item);
    if (!m) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: ${JSON.stringify(item)} is not a value, range or step`);
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (step < 1 || step > rule.max) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: step ${m[2]} must be 1-${rule.max}`);
    let from: number;
    let to: number;
    if (m[1] === '*') {
      from = rule.min;
      to = rule.name === 'day of week' ? 6 : rule.max;
    } else {
      const range = m[1]!.split('-');
      if (range.length > 2) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: ${JSON.stringify(item)} is not a range`);
      from = value(range[0]!, rule, field);
      const last = rule.name === 'day of week' ? 6 : rule.max;
      to = range.length === 2 ? value(range[1]!, rule, field) : m[2] === undefined ? from : last;
      if (to < from) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: range ${m[1]} runs backwards`);
    }
    for (let v = from; v <= to; v += step) out.add(v);
  }
  return out;
}

function value(text: string, rule: FieldRule, field: string): number {
  const name = rule.names?.indexOf(text.toLowerCase()) ?? -1;
  if (name >= 0) return name + rule.namesFrom!;
  if (!/^\d+$/.test(text)) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: ${JSON.stringify(text)} is not a number${rule.names ? ' or a name' : ''}`);
  const n = Number(text);
  if (n < rule.min || n > rule.max) throw new BadSchedule(`${rule.name} field ${JSON.stringify(field)}: ${n} is outside ${rule.min}-${rule.max}`);
  return n;
}

/**
 * When the schedule is next due, given the start of its last run (undefined: never run, so due
 * at once — returned as 0): an interval after the last run, or the first cron minute after it.
 * `off` is never due (Infinity).
 */
export function nextDueAt(schedule: Schedule, lastRunMs: number | undefined): number {
  if (schedule.kind === 'off') return Infinity;
  if (lastRunMs === undefined) return 0;
  if (schedule.kind === 'interval') return lastRunMs + schedule.everyMs;
  return nextCronTime(schedule.cron, lastRunMs) ?? Infinity;
}

export function isDue(schedule: Schedule, lastRunMs: number | undefined, nowMs: number): boolean {
  return nextDueAt(schedule, lastRunMs) <= nowMs;
}

/**
 * The first minute strictly after `afterMs` (UTC) that the cron fields match. Day-of-month and
 * day-of-week follow cron's rule: when both are restricted a day matching either runs; when one
 * is `*`, the other decides. Searches at most ten years ahead (a 29 February on a Monday can be
 * years away); undefined when nothing matches within them.
 */
export function nextCronTime(cron: CronFields, afterMs: number): number | undefined {
  const t = new Date(Math.floor(afterMs / MINUTE_MS) * MINUTE_MS + MINUTE_MS);
  const limit = afterMs + 10 * 366 * 86_400_000;
  while (t.getTime() <= limit) {
    if (!cron.months.has(t.getUTCMonth() + 1)) {
      t.setUTCMonth(t.getUTCMonth() + 1, 1);
      t.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!dayMatches(cron, t)) {
      t.setUTCDate(t.getUTCDate() + 1);
      t.setUTCHours(0, 0, 0, 0);
      continue;
    }
    if (!cron.hours.has(t.getUTCHours())) {
      t.setUTCHours(t.getUTCHours() + 1, 0, 0, 0);
      continue;
    }
    if (!cron.minutes.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() + 1, 0, 0);
      continue;
    }
    return t.getTime();
  }
  return undefined;
}

function dayMatches(cron: CronFields, t: Date): boolean {
  const day = cron.days.has(t.getUTCDate());
  const weekday = cron.weekdays.has(t.getUTCDay());
  if (cron.daysRestricted && cron.weekdaysRestricted) return day || weekday;
  if (cron.daysRestricted) return day;
  if (cron.weekdaysRestricted) return weekday;
  return true;
}

/**
 * A table's schedules from its properties: `maintenance.schedule` for full_maintenance,
 * `maintenance.schedule.<operation>` for one operation. An unknown operation or a bad schedule is
 * an error naming the property, so `alter` and table creation refuse it.
 */
export function schedulesOfProperties(properties: Record<string, string>): Map<ScheduledOperation, Schedule> {
  const out = new Map<ScheduledOperation, Schedule>();
  for (const [key, text] of Object.entries(properties)) {
    if (key !== SCHEDULE_PROPERTY && !key.startsWith(`${SCHEDULE_PROPERTY}.`)) continue;
    const operation = key === SCHEDULE_PROPERTY ? 'full_maintenance' : key.slice(SCHEDULE_PROPERTY.length + 1);
    if (!(SCHEDULED_OPERATIONS as readonly string[]).includes(operation) || (operation === 'full_maintenance' && key !== SCHEDULE_PROPERTY)) {
      const ops = SCHEDULED_OPERATIONS.filter((o) => o !== 'full_maintenance');
      throw invalidInput(`maintenance: table property ${key} names no operation; expected ${SCHEDULE_PROPERTY} (full_maintenance) or ${SCHEDULE_PROPERTY}.<operation> with one of ${ops.join(', ')}`, { key });
    }
    out.set(operation as ScheduledOperation, parseSchedule(text, `table property ${key}`));
  }
  return out;
}

/**
 * Schedules as the config file gives them: one schedule (for full_maintenance), or a mapping of
 * operations to schedules (`{ compaction: "every 6h", full_maintenance: "0 3 * * *" }`).
 * `where` names the key for messages.
 */
export function schedulesOfConfig(value: unknown, where: string): Map<ScheduledOperation, Schedule> {
  const out = new Map<ScheduledOperation, Schedule>();
  if (typeof value === 'string') {
    out.set('full_maintenance', parseSchedule(value, where));
    return out;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidInput(`maintenance: ${where} expects a schedule (${SCHEDULE_EXPECTS}) or a mapping of operations (${SCHEDULED_OPERATIONS.join(', ')}) to schedules, found ${JSON.stringify(value)}`);
  }
  for (const [operation, text] of Object.entries(value as Record<string, unknown>)) {
    if (!(SCHEDULED_OPERATIONS as readonly string[]).includes(operation)) {
      throw invalidInput(`maintenance: ${where}.${operation} names no operation; expected one of ${SCHEDULED_OPERATIONS.join(', ')}`);
    }
    if (typeof text !== 'string') throw invalidInput(`maintenance: ${where}.${operation} expects ${SCHEDULE_EXPECTS}, found ${JSON.stringify(text)}`);
    out.set(operation as ScheduledOperation, parseSchedule(text, `${where}.${operation}`));
  }
  return out;
}

/**
 * The operations due now, in a safe order. A full_maintenance due covers the single operations
 * (it runs them all); an operation's last run is the later of its own and full_maintenance's.
 */
export function dueOperations(schedules: ReadonlyMap<ScheduledOperation, Schedule>, lastRuns: ReadonlyMap<string, number>, nowMs: number): ScheduledOperation[] {
  const last = (op: ScheduledOperation) => {
    const own = lastRuns.get(op);
    const full = op === 'full_maintenance' ? undefined : lastRuns.get('full_maintenance');
    return own === undefined ? full : full === undefined ? own : Math.max(own, full);
  };
  const due = SCHEDULED_OPERATIONS.filter((op) => {
    const s = schedules.get(op);
    return s !== undefined && isDue(s, last(op), nowMs);
  });
  return due.includes('full_maintenance') ? ['full_maintenance'] : due;
}
