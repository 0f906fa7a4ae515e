import { describe, expect, test } from 'vitest';
import {
  dueOperations,
  isDue,
  nextCronTime,
  nextDueAt,
  parseSchedule,
  schedulesOfConfig,
  schedulesOfProperties,
  type CronFields,
  type Schedule,
} from '../../src/format/dual/maintenance-schedule.ts';
import { parseConfigFile } from '../../src/config/config-file.ts';
import { maintenanceDefaultsFor, resolveConfig } from '../../src/config/resolve-config.ts';
import { errorOf } from '../helpers.ts';

/**
 * Schedules, pure: parsing intervals and 5-field cron expressions (UTC), the next due time given
 * the last run, and which operations are due now.
 */

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

function cron(text: string): CronFields {
  const s = parseSchedule(text, 'test');
  if (s.kind !== 'cron') throw new Error(`${text} is not cron`);
  return s.cron;
}

/** The next `n` times after `from`. */
function times(text: string, from: string, n: number): string[] {
  const out: string[] = [];
  let t = at(from);
  for (let i = 0; i < n; i++) {
    t = nextCronTime(cron(text), t)!;
    out.push(iso(t)!);
  }
  return out;
}

describe('intervals', () => {
  test.each([
    ['every 6h', 6 * 3600e3],
    ['1d', 86400e3],
    ['90m', 90 * 60e3],
    ['every 2 hours', 2 * 3600e3],
    ['every 1 week', 7 * 86400e3],
    ['30 minutes', 30 * 60e3],
  ])('%s', (text, ms) => {
    expect(parseSchedule(text, 'test')).toEqual({ kind: 'interval', text, everyMs: ms });
  });

  test('due an interval after the last run; never run is due at once', () => {
    const s = parseSchedule('every 6h', 'test');
    const last = at('2026-03-01T10:00:00Z');
    expect(nextDueAt(s, last)).toBe(at('2026-03-01T16:00:00Z'));
    expect(isDue(s, last, at('2026-03-01T15:59:59Z'))).toBe(false);
    expect(isDue(s, last, at('2026-03-01T16:00:00Z'))).toBe(true);
    expect(isDue(s, undefined, 0)).toBe(true);
  });

  test('off is never due', () => {
    const s = parseSchedule('off', 'test');
    expect(s.kind).toBe('off');
    expect(isDue(s, undefined, at('2100-01-01T00:00:00Z'))).toBe(false);
  });
});

describe('cron (UTC)', () => {
  test('every day at 03:00', () => {
    expect(times('0 3 * * *', '2026-03-01T03:00:00Z', 3)).toEqual(['2026-03-02T03:00:00.000Z', '2026-03-03T03:00:00.000Z', '2026-03-04T03:00:00.000Z']);
    // Strictly after: a run at 02:59 is followed by 03:00 the same day.
    expect(times('0 3 * * *', '2026-03-01T02:59:30Z', 1)).toEqual(['2026-03-01T03:00:00.000Z']);
  });

  test('lists, ranges and steps', () => {
    expect(times('*/15 9-10 * * *', '2026-03-01T09:50:00Z', 4)).toEqual(['2026-03-01T10:00:00.000Z', '2026-03-01T10:15:00.000Z', '2026-03-01T10:30:00.000Z', '2026-03-01T10:45:00.000Z']);
    expect(times('*/15 9-10 * * *', '2026-03-01T10:45:00Z', 1)).toEqual(['2026-03-02T09:00:00.000Z']);
    expect(times('5,35 0-6/3 * * *', '2026-03-01T00:00:00Z', 6)).toEqual([
      '2026-03-01T00:05:00.000Z', '2026-03-01T00:35:00.000Z', '2026-03-01T03:05:00.000Z', '2026-03-01T03:35:00.000Z', '2026-03-01T06:05:00.000Z', '2026-03-01T06:35:00.000Z',
    ]);
    // A/STEP runs from A to the field's end.
    expect([...cron('10/20 * * * *').minutes]).toEqual([10, 30, 50]);
    expect([...cron('1-10/4 * * * *').minutes]).toEqual([1, 5, 9]);
  });

  test('weekdays by number and name; 7 is Sunday', () => {
    // 2026-03-06 is a Friday.
    expect(times('0 8 * * 1-5', '2026-03-06T09:00:00Z', 2)).toEqual(['2026-03-09T08:00:00.000Z', '2026-03-10T08:00:00.000Z']);
    expect(times('0 0 * * SUN', '2026-03-06T00:00:00Z', 1)).toEqual(['2026-03-08T00:00:00.000Z']);
    expect(times('0 0 * * 7', '2026-03-06T00:00:00Z', 1)).toEqual(['2026-03-08T00:00:00.000Z']);
    expect(times('0 0 * * mon-wed', '2026-03-06T00:00:00Z', 3)).toEqual(['2026-03-09T00:00:00.000Z', '2026-03-10T00:00:00.000Z', '2026-03-11T00:00:00.000Z']);
  });

  test('day of month and day of week both restricted: either matches (cron\'s rule)', () => {
    // The 13th, or any Friday: 2026-03-06 (Fri), 2026-03-13 (Fri and the 13th), 2026-03-20 (Fri), 2026-04-03 (Fri)...
    expect(times('0 0 13 * 5', '2026-03-01T00:00:00Z', 4)).toEqual(['2026-03-06T00:00:00.000Z', '2026-03-13T00:00:00.000Z', '2026-03-20T00:00:00.000Z', '2026-03-27T00:00:00.000Z']);
    expect(times('0 0 1 * 1', '2026-05-30T00:00:00Z', 3)).toEqual(['2026-06-01T00:00:00.000Z', '2026-06-08T00:00:00.000Z', '2026-06-15T00:00:00.000Z']);
    // Only one restricted: that one decides (`*` day of week does not make every day match).
    expect(times('0 0 13 * *', '2026-03-01T00:00:00Z', 2)).toEqual(['2026-03-13T00:00:00.000Z', '2026-04-13T00:00:00.000Z']);
    expect(times('0 0 * * 5', '2026-03-01T00:00:00Z', 1)).toEqual(['2026-03-06T00:00:00.000Z']);
  });

  test('month ends: the 31st skips short months, 29 February waits for a leap year', () => {
    expect(times('0 0 31 * *', '2026-01-31T00:00:00Z', 3)).toEqual(['2026-03-31T00:00:00.000Z', '2026-05-31T00:00:00.000Z', '2026-07-31T00:00:00.000Z']);
    expect(times('0 0 29 2 *', '2026-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
    expect(times('59 23 * 12 *', '2026-12-31T23:59:00Z', 1)).toEqual(['2027-12-01T23:59:00.000Z']);
    expect(times('0 12 30 jan,feb,apr *', '2026-01-30T12:00:00Z', 2)).toEqual(['2026-04-30T12:00:00.000Z', '2027-01-30T12:00:00.000Z']);
  });

  test('macros', () => {
    expect(times('@daily', '2026-03-01T12:00:00Z', 1)).toEqual(['2026-03-02T00:00:00.000Z']);
    expect(times('@hourly', '2026-03-01T12:00:00Z', 1)).toEqual(['2026-03-01T13:00:00.000Z']);
    expect(times('@weekly', '2026-03-06T12:00:00Z', 1)).toEqual(['2026-03-08T00:00:00.000Z']);
  });

  test('due at the first cron time after the last run', () => {
    const s = parseSchedule('0 3 * * *', 'test');
    const last = at('2026-03-01T03:00:10Z');
    expect(iso(nextDueAt(s, last))).toBe('2026-03-02T03:00:00.000Z');
    expect(isDue(s, last, at('2026-03-02T02:59:00Z'))).toBe(false);
    // Missed slots do not pile up: one run catches up, then the next slot after it.
    expect(isDue(s, last, at('2026-03-05T12:00:00Z'))).toBe(true);
    expect(isDue(s, undefined, at('2026-03-01T00:00:00Z'))).toBe(true);
  });
});

describe('bad schedules name the property, the value and what was expected', () => {
  test.each([
    ['every 6', 'an interval is a number and a unit: m, h, d or w (every 6h)'],
    ['every day', 'an interval is a number and a unit'],
    ['6 hours later', 'a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one 3'],
    ['every 6x', 'unknown unit "x"'],
    ['0 min', 'at least 1 minute'],
    ['60 * * * *', 'minute field "60": 60 is outside 0-59'],
    ['0 24 * * *', 'hour field "24": 24 is outside 0-23'],
    ['0 0 0 * *', 'day of month field "0": 0 is outside 1-31'],
    ['0 0 * 13 *', 'month field "13": 13 is outside 1-12'],
    ['0 0 * * 8', 'day of week field "8": 8 is outside 0-7'],
    ['0 0 * * fry', '"fry" is not a number or a name'],
    ['5-1 * * * *', 'range 5-1 runs backwards'],
    ['*/0 * * * *', 'step 0 must be 1-59'],
    ['0 0 31 2 *', 'day of month 31 never falls in month 2'],
    ['0 0 30,31 2 *', 'never falls in month 2'],
    ['@sometimes', 'unknown macro'],
    ['', 'it is empty'],
  ])('%j', async (text, detail) => {
    const e = await errorOf(() => parseSchedule(text, 'table property maintenance.schedule'));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toContain(`maintenance: table property maintenance.schedule expects an interval such as "every 6h" or "1d", a 5-field cron expression in UTC such as "0 3 * * *", or "off", found ${JSON.stringify(text)}: `);
    expect(e.message).toContain(detail);
  });
});

describe('schedules of a table and of the config', () => {
  test('maintenance.schedule is full_maintenance; maintenance.schedule.<operation> one operation', () => {
    const s = schedulesOfProperties({ 'maintenance.schedule': '0 3 * * *', 'maintenance.schedule.compaction': 'every 6h', 'write.target-file-size-bytes': '1000' });
    expect([...s.keys()]).toEqual(['full_maintenance', 'compaction']);
    expect(s.get('compaction')).toMatchObject({ kind: 'interval', everyMs: 6 * 3600e3 });
  });

  test('an unknown operation or a bad value names the property', async () => {
    expect((await errorOf(() => schedulesOfProperties({ 'maintenance.schedule.compactoin': '1d' }))).message).toBe(
      'maintenance: table property maintenance.schedule.compactoin names no operation; expected maintenance.schedule (full_maintenance) or maintenance.schedule.<operation> with one of compaction, snapshot_expiry, delta_checkpoint, metadata_cleanup, orphan_cleanup',
    );
    expect((await errorOf(() => schedulesOfProperties({ 'maintenance.schedule.orphan_cleanup': 'sometimes' }))).message).toMatch(/^maintenance: table property maintenance\.schedule\.orphan_cleanup expects .*, found "sometimes": /);
  });

  test('the config gives one schedule or a mapping of operations', async () => {
    expect([...schedulesOfConfig('1d', 'maintenance.schedule').keys()]).toEqual(['full_maintenance']);
    expect([...schedulesOfConfig({ compaction: '@hourly', snapshot_expiry: '1d' }, 'maintenance.schedule').keys()]).toEqual(['compaction', 'snapshot_expiry']);
    expect((await errorOf(() => schedulesOfConfig({ vacuum: '1d' }, 'maintenance.schedule'))).message).toContain('maintenance: maintenance.schedule.vacuum names no operation');
    expect((await errorOf(() => schedulesOfConfig(6, 'maintenance.schedule'))).message).toContain('found 6');
  });
});

describe('due operations', () => {
  const schedules = (entries: Record<string, string>) => schedulesOfConfig(entries, 'test') as Map<never, Schedule>;
  const now = at('2026-03-02T12:00:00Z');

  test('never run: every scheduled operation is due, in a safe order', () => {
    expect(dueOperations(schedules({ orphan_cleanup: '1d', compaction: '6h', snapshot_expiry: '1d' }), new Map(), now)).toEqual(['compaction', 'snapshot_expiry', 'orphan_cleanup']);
  });

  test('by the run log: each operation from its last run', () => {
    const runs = new Map([['compaction', now - 7 * 3600e3], ['snapshot_expiry', now - 3600e3]]);
    expect(dueOperations(schedules({ compaction: '6h', snapshot_expiry: '1d' }), runs, now)).toEqual(['compaction']);
    expect(dueOperations(schedules({ compaction: '6h', snapshot_expiry: '1d' }), runs, now - 2 * 3600e3)).toEqual([]);
  });

  test('full_maintenance covers the single operations', () => {
    // Due full_maintenance runs alone (it runs them all).
    expect(dueOperations(schedules({ full_maintenance: '1d', compaction: '1h' }), new Map(), now)).toEqual(['full_maintenance']);
    // A recent full_maintenance counts as a run of each operation.
    const runs = new Map([['full_maintenance', now - 1800e3], ['compaction', now - 5 * 3600e3]]);
    expect(dueOperations(schedules({ full_maintenance: '1d', compaction: '1h' }), runs, now)).toEqual([]);
    expect(dueOperations(schedules({ full_maintenance: '1d', compaction: '1h' }), runs, now + 1800e3)).toEqual(['compaction']);
  });

  test('off schedules nothing', () => {
    expect(dueOperations(schedules({ full_maintenance: 'off' }), new Map(), now)).toEqual([]);
  });
});

describe('the config file\'s maintenance keys', () => {
  const resolve = (text: string) => resolveConfig({ file: parseConfigFile(text, '/etc/lake/twinlake.yaml'), env: {} });

  test('a warehouse-wide schedule, a per-table one, and background on by default', () => {
    const c = resolve(`catalog: { namespace: sales }
maintenance:
  schedule: { full_maintenance: "0 3 * * *", compaction: every 6h }
tables:
  orders:
    snapshotRetention: 3d
    maintenance: { schedule: every 1h }
`);
    expect(c.maintenance).toEqual({ schedule: { full_maintenance: '0 3 * * *', compaction: 'every 6h' }, background: true });
    expect(maintenanceDefaultsFor(c, 'orders')).toEqual({ retention: 3 * 86400e3, schedule: 'every 1h', warehouseSchedule: { full_maintenance: '0 3 * * *', compaction: 'every 6h' } });
    // Unset stays unset: the table's properties, then the seed's defaults, decide.
    expect(maintenanceDefaultsFor(c, 'returns')).toEqual({ warehouseSchedule: { full_maintenance: '0 3 * * *', compaction: 'every 6h' } });
    expect(resolveConfig({ env: { TWINLAKE_MAINTENANCE_BACKGROUND: 'false', TWINLAKE_MAINTENANCE_SCHEDULE: '@daily' } }).maintenance).toEqual({ background: false, schedule: '@daily' });
  });

  test('a bad schedule in the file names the key, line and column, the value and what was expected', async () => {
    const e = await errorOf(() => resolve('maintenance:\n  schedule: "61 * * * *"\n'));
    expect(e.message).toBe(
      'config /etc/lake/twinlake.yaml, line 2, column 3: "maintenance.schedule" must be an interval such as "every 6h" or "1d", a 5-field cron expression in UTC such as "0 3 * * *", or "off" (minute field "61": 61 is outside 0-59), found "61 * * * *"',
    );
    const op = await errorOf(() => resolve('tables:\n  a.b:\n    maintenance:\n      schedule: { vacuum: 1d }\n'));
    expect(op.message).toBe('config /etc/lake/twinlake.yaml, line 4, column 7: tables["a.b"].maintenance.schedule names "vacuum", which is no operation (expected full_maintenance, compaction, snapshot_expiry, delta_checkpoint, metadata_cleanup, orphan_cleanup), found {"vacuum":"1d"}');
    const env = await errorOf(() => resolveConfig({ env: { TWINLAKE_MAINTENANCE_BACKGROUND: 'sometimes' } }));
    expect(env.message).toBe('environment: TWINLAKE_MAINTENANCE_BACKGROUND must be true or false, found "sometimes"');
  });
});
