import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { buildServer } from '../../src/server/app.ts';
import { TokenAuth, TokenStore } from '../../src/server/auth.ts';
import { RUN_LOG_FOLDER, type MaintenanceRun } from '../../src/maintenance/run-log.ts';
import { cli, repoRoot, tempDir } from '../helpers.ts';

/**
 * Background maintenance in the server: a scheduler that runs what each table's schedule says is
 * due, on a controlled clock (real time plus an offset the test moves on), one run at a time per
 * table — also against manual runs through the API — with every run in the table's run log, the
 * API and the commit history; shutdown lets the run in progress finish.
 */

const HOUR = 3600e3;
const clock = { offset: 0, nowMs: () => Date.now() + clock.offset };

let dir: ReturnType<typeof tempDir>;
let lake: Lakehouse;
let app: FastifyInstance;
let token: string;
let url: string;
const logs: string[] = [];

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(url + path, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, json: await res.json() };
}

const idOf = async (name: string) => (await lake.table(name).describe()).tableUuid;

async function smallFiles(name: string, n: number, properties?: Record<string, string>): Promise<void> {
  const t = lake.table(name);
  for (let i = 0; i < n; i++) await t.append([{ id: i, name: `r${i}` }], i === 0 && properties ? { properties } : {});
}

beforeAll(async () => {
  dir = tempDir();
  lake = await Lakehouse.open({ warehouse: join(dir.path, 'wh'), clock, onWarning: () => {} });
  const store = new TokenStore(join(dir.path, 'tokens.json'));
  token = (await store.create('ops', 'admin')).token;
  const log = new Writable({ write: (c, _e, done) => (logs.push(String(c)), done()) });
  await smallFiles('ops.one', 3, { 'maintenance.schedule.compaction': 'every 6h' });
  await smallFiles('ops.two', 3, { 'maintenance.schedule.compaction': 'every 6h' });
  await smallFiles('ops.unscheduled', 3);
  // An hour-long tick never fires during the test: the test ticks itself.
  app = await buildServer({ lake, tokens: new TokenAuth(store), log, maintenance: { background: { intervalMs: HOUR, clock } } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await app?.close();
  await lake?.close();
  dir?.cleanup();
});

const runsOf = async (name: string): Promise<MaintenanceRun[]> => (await call('GET', `/api/managed-lakehouse/tables/${await idOf(name)}/maintenance/runs`)).json.runs;

describe('background maintenance', () => {
  test('two due tables are both maintained, each run logged and in the API and the commit history', async () => {
    const scheduler = app.maintenanceScheduler!;
    const report = await scheduler.tick();
    expect(report.ran.map((r) => [r.table, r.runs.map((x) => `${x.operation} ${x.outcome}`)])).toEqual([
      ['ops.one', ['compaction completed']],
      ['ops.two', ['compaction completed']],
    ]);
    for (const name of ['ops.one', 'ops.two']) {
      const runs = await runsOf(name);
      expect(runs).toHaveLength(1);
      expect(runs[0]).toMatchObject({ table: name, operation: 'compaction', trigger: 'schedule', outcome: 'completed', rewritten: { files: 3 }, added: { files: 1 } });
      expect((await lake.table(name).describe()).files).toBe(1);
      const commits = (await call('GET', `/api/managed-lakehouse/tables/${await idOf(name)}/commits`)).json.commits;
      expect(commits[0]).toMatchObject({ icebergSnapshotId: runs[0]!.snapshotId, operation: 'replace', change: 'compaction', maintenance: { operation: 'compaction', runId: runs[0]!.id } });
      expect(commits.slice(1).every((c: { maintenance?: unknown }) => c.maintenance === undefined)).toBe(true);
    }
    expect(await runsOf('ops.unscheduled')).toEqual([]);
    // Not due again until 6 hours after the run.
    expect((await scheduler.tick()).ran).toEqual([]);
    expect(logs.join('')).toContain('maintenance: scheduled run completed');
    // The runs route needs the maintenance route's scope.
    const res = await fetch(`${url}/api/managed-lakehouse/tables/${await idOf('ops.one')}/maintenance/runs`);
    expect(res.status).toBe(401);
  });

  test('a run in progress makes the due one wait; one table never has two runs at once', async () => {
    const scheduler = app.maintenanceScheduler!;
    await smallFiles('ops.one', 2);
    await smallFiles('ops.two', 2);
    clock.offset += 6 * HOUR;
    // A manual run holds ops.one: the tick runs ops.two and leaves ops.one waiting.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = scheduler.locks.run('ops.one', () => gate);
    const waiting = await scheduler.tick();
    expect(waiting.waited).toEqual(['ops.one']);
    expect(waiting.ran.map((r) => r.table)).toEqual(['ops.two']);
    // A manual run through the API waits for the one in progress too.
    let answered = false;
    const manual = call('POST', `/api/managed-lakehouse/tables/${await idOf('ops.one')}/maintenance`, { operation: 'snapshot_expiry' }).then((r) => ((answered = true), r));
    await new Promise((r) => setTimeout(r, 300));
    expect(answered).toBe(false);
    release();
    await held;
    const m = await manual;
    expect(m.status).toBe(200);
    expect(m.json.runId).toMatch(/-snapshot_expiry-/);

    // Now ticks and manual runs at once: the log shows them one after another.
    await smallFiles('ops.one', 2);
    const all = await Promise.all([
      scheduler.tick(),
      call('POST', `/api/managed-lakehouse/tables/${await idOf('ops.one')}/maintenance`, { operation: 'compaction' }),
      call('POST', `/api/managed-lakehouse/tables/${await idOf('ops.one')}/maintenance`, { operation: 'delta_checkpoint' }),
    ]);
    expect(all.slice(1).map((r) => (r as { status: number }).status)).toEqual([200, 200]);
    const runs = (await runsOf('ops.one')).sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    expect(runs.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < runs.length; i++) expect(Date.parse(runs[i]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.endedAt));
    expect(runs.map((r) => r.trigger)).toContain('manual');
    expect(runs.filter((r) => r.trigger === 'schedule').length).toBeGreaterThanOrEqual(1);
  });

  test('a failing run is logged and the server goes on', async () => {
    const scheduler = app.maintenanceScheduler!;
    await lake.table('ops.iceberg_only').append([{ id: 1 }], { formats: ['iceberg'], properties: { 'maintenance.schedule.delta_checkpoint': '1h' } });
    const report = await scheduler.tick();
    const failed = report.ran.find((r) => r.table === 'ops.iceberg_only')!;
    expect(failed.runs).toMatchObject([{ operation: 'delta_checkpoint', outcome: 'failed', error: { kind: 'invalid-input' } }]);
    expect(await runsOf('ops.iceberg_only')).toMatchObject([{ operation: 'delta_checkpoint', outcome: 'failed' }]);
    expect(logs.join('')).toContain('maintenance: scheduled run failed');
    expect((await fetch(`${url}/health`)).status).toBe(200);
  });

  test('closing the server waits for the run in progress and starts no other', async () => {
    await smallFiles('ops.one', 3);
    await smallFiles('ops.two', 3);
    clock.offset += 6 * HOUR;
    const scheduler = app.maintenanceScheduler!;
    const before = { one: (await runsOf('ops.one')).length, two: (await runsOf('ops.two')).length };
    let ticked = false;
    const tick = scheduler.tick().finally(() => (ticked = true));
    while (scheduler.runningNow?.table !== 'ops.one') {
      expect(ticked, 'the tick ended before ops.one was seen running').toBe(false);
      await new Promise((r) => setTimeout(r, 2));
    }
    await app.close();
    const report = await tick;
    // ops.one's run finished and was logged; ops.two, after it, never started.
    expect(report.ran.filter((r) => r.table !== 'ops.iceberg_only').map((r) => [r.table, r.runs.map((x) => x.outcome)])).toEqual([['ops.one', ['completed']]]);
    const log = (name: string) => readdirSync(join(dir.path, 'wh', 'ops', name, RUN_LOG_FOLDER)).length;
    expect([log('one'), log('two')]).toEqual([before.one + 1, before.two]);
  });
});

describe('twinlake serve', () => {
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const p of started.splice(0)) if (p.exitCode === null) p.kill('SIGKILL');
  });

  test('runs due maintenance in the background, and --no-maintenance turns it off', async () => {
    const d = tempDir();
    try {
      const wh = join(d.path, 'wh');
      const l = await Lakehouse.open({ warehouse: wh, onWarning: () => {} });
      await l.table('bg.events').append([{ id: 1 }], { properties: { 'maintenance.schedule.compaction': 'every 1h' } });
      await l.table('bg.events').append([{ id: 2 }]);
      await l.close();
      const runs = join(wh, 'bg', 'events', RUN_LOG_FOLDER);
      const serve = (args: string[]) => {
        const proc = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), 'serve', '--port', '0', '--warehouse', wh, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        started.push(proc);
        let out = '';
        proc.stdout!.on('data', (c) => (out += c));
        const exit = new Promise<number | null>((r) => proc.on('exit', r));
        return { proc, out: () => out, exit };
      };
      const off = serve(['--no-maintenance', '--maintenance-interval', '1s']);
      while (!off.out().includes('background maintenance')) await new Promise((r) => setTimeout(r, 50));
      expect(off.out()).toContain('twinlake: background maintenance off');
      await new Promise((r) => setTimeout(r, 1500));
      expect(existsSync(runs)).toBe(false);
      off.proc.kill('SIGTERM');
      expect(await off.exit).toBe(0);

      const on = serve(['--maintenance-interval', '1s']);
      const deadline = Date.now() + 30_000;
      while (!(existsSync(runs) && readdirSync(runs).length > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(on.out()).toContain('twinlake: background maintenance on');
      expect(readdirSync(runs)).toHaveLength(1);
      expect(readdirSync(runs)[0]).toMatch(/-compaction-/);
      on.proc.kill('SIGTERM');
      expect(await on.exit).toBe(0);
      expect(cli(['maintain', '--all', '--due', '--dry-run', '--warehouse', wh]).stdout).toMatch(/^bg\.events: nothing due \(next: compaction at /);
    } finally {
      d.cleanup();
    }
  });
});
