import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { localPath } from '../src/core/uri.ts';
import { Lakehouse, type Table } from '../src/index.ts';

/**
 * Load on one table, and what it left behind (issue 14, item 8):
 * - `mixedLoad`: `writers` processes × `ops` seeded appends, merges and deletes, each process on
 *   keys of its own, while one more process runs compaction, expiry and full_maintenance in turn.
 *   Each operation reports success or its error; the expected table is then the successful
 *   operations of each process applied in its own order, whatever the interleaving.
 * - `serverLoad`: a real `twinlake serve` process taking record posts from `clients` concurrent
 *   clients for `seconds`, one post in ten malformed (it must fail, and none of its rows appear).
 * Both then read the table through Iceberg, through Delta and with DuckDB over each format's live
 * files, and run `verify`.
 */
const root = resolve(import.meta.dirname, '..');

export interface Latency {
  count: number;
  failed: number;
  /** Lost races retried, summed and the most of one operation. */
  retries: number;
  maxRetries: number;
  /** Maintenance: files compaction rewrote plus snapshots expiry removed, summed. */
  did: number;
  p50: number;
  p99: number;
}

/** What each reader of the table found, against what the successful operations left. */
export interface TableCheck {
  /** Rows the successful operations leave, by id, with their version `v`. */
  expected: number;
  /** Per reader (iceberg, delta, duckdb over each format's files): ids read more than once, ids missing, ids not expected, ids with another `v`. */
  readers: Record<string, { rows: number; duplicated: number[]; missing: number[]; unexpected: number[]; wrongVersion: number[] }>;
  /** `verify` findings. */
  verify: string[];
}

export interface MixedLoadResult {
  ms: number;
  /** Writer operations finished (succeeded or failed). */
  ops: number;
  opsPerSecond: number;
  byKind: Record<string, Latency>;
  /** Failures by error kind; unclean ones (not a TwinlakeError) listed with their message. */
  failures: Record<string, number>;
  /** The first failures' messages, by kind, for a report that says what failed. */
  failureMessages: Record<string, string[]>;
  unclean: string[];
  /** The slowest writer operations: kind, time, retries and the last race each lost. */
  slowest: { kind: string; ms: number; retries: number; lastLost?: string }[];
  /** Worker processes that did not exit 0, with their stderr. */
  crashed: string[];
  check: TableCheck;
}

export interface ServerLoadResult {
  ms: number;
  requests: number;
  succeeded: number;
  /** Non-2xx answers by status, each with a JSON error body. */
  failedByStatus: Record<string, number>;
  /** The first failed answers: status, the error body's message, and whether the post was a malformed one. */
  failures: { status: number; message: string; malformed: boolean }[];
  /** Malformed posts that were accepted (must be 0), and answers that were not clean (no status, or no JSON error). */
  badAccepted: number;
  unclean: string[];
  rowsPerSecond: number;
  requestsPerSecond: number;
  latency: { p50: number; p99: number };
  check: TableCheck;
}

const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]! : 0);

interface OpLine {
  kind: string;
  ok: boolean;
  ms: number;
  ids?: number[];
  updated?: number[];
  inserted?: number[];
  v?: number;
  did?: number;
  retries?: number;
  lastLost?: string;
  error?: { kind: string; message: string; clean: boolean };
}

function worker(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'test/workers/load-worker.ts'), ...args], { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => done({ code: code ?? -1, stdout, stderr }));
  });
}

/** Ids DuckDB reads from exactly the listed live files, with their `v` (copy-on-write tables: no delete files). */
async function duckdbRows(t: Table, format: 'iceberg' | 'delta'): Promise<{ id: number; v: number }[]> {
  const { files } = await t.files({ format });
  if (files.some((f) => f.deletes.length > 0)) throw new Error(`load: expected no delete files in a copy-on-write table, found some in ${format}`);
  if (files.length === 0) return [];
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    const list = files.map((f) => `'${localPath(f.path)}'`).join(', ');
    return (await c.runAndReadAll(`SELECT id::BIGINT AS id, v::BIGINT AS v FROM read_parquet([${list}])`)).getRowObjectsJson().map((r) => ({ id: Number(r.id), v: Number(r.v) }));
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** Every reader's rows against `expected` (id → v). */
async function checkTable(warehouse: string, name: string, expected: Map<number, number>): Promise<TableCheck> {
  const lake = await Lakehouse.open({ warehouse, readOnly: true });
  try {
    const t = lake.table(name);
    const sets: Record<string, { id: number; v: number }[]> = {};
    for (const format of ['iceberg', 'delta'] as const) {
      sets[format] = (await t.read({ format })).map((r) => ({ id: Number(r.id), v: Number(r.v) }));
      sets[`duckdb over ${format} files`] = await duckdbRows(t, format);
    }
    const readers: TableCheck['readers'] = {};
    for (const [reader, rows] of Object.entries(sets)) {
      const seen = new Map<number, number>();
      const duplicated: number[] = [];
      const unexpected: number[] = [];
      const wrongVersion: number[] = [];
      for (const r of rows) {
        if (seen.has(r.id)) duplicated.push(r.id);
        seen.set(r.id, r.v);
        if (!expected.has(r.id)) unexpected.push(r.id);
        else if (expected.get(r.id) !== r.v) wrongVersion.push(r.id);
      }
      const missing = [...expected.keys()].filter((id) => !seen.has(id));
      readers[reader] = { rows: rows.length, duplicated, missing, unexpected, wrongVersion };
    }
    const verified = await t.verify();
    return { expected: expected.size, readers, verify: verified.remaining.map((f) => `${f.kind}${f.file ? ` ${f.file}` : ''}: expected ${f.expected}, found ${f.found}`) };
  } finally {
    await lake.close();
  }
}

/** Whether every reader holds exactly the expected rows and verify is clean. */
export function tableOk(c: TableCheck): boolean {
  return c.verify.length === 0 && Object.values(c.readers).every((r) => r.rows === c.expected && !r.duplicated.length && !r.missing.length && !r.unexpected.length && !r.wrongVersion.length);
}

export async function mixedLoad(o: { warehouse: string; writers: number; ops: number; seed?: number }): Promise<MixedLoadResult> {
  const name = 'load.mixed';
  rmSync(o.warehouse, { recursive: true, force: true });
  mkdirSync(o.warehouse, { recursive: true });
  // The table exists before the load, so the run measures operations, not a creation race.
  const seedLake = await Lakehouse.open({ warehouse: o.warehouse });
  await seedLake.table(name).append([{ id: -1, writer: -1, v: -1 }]);
  await seedLake.close();
  const stop = join(o.warehouse, '..', `load-stop-${process.pid}`);
  rmSync(stop, { force: true });

  const t0 = performance.now();
  const maintainer = worker([o.warehouse, name, 'maintain', stop]);
  const writers = await Promise.all(Array.from({ length: o.writers }, (_, w) => worker([o.warehouse, name, String(w), String(o.ops), String(o.seed ?? 1)])));
  const ms = performance.now() - t0;
  writeFileSync(stop, '');
  const maintained = await maintainer;
  rmSync(stop, { force: true });

  const expected = new Map<number, number>([[-1, -1]]);
  const byKindMs: Record<string, number[]> = {};
  const byKindFailed: Record<string, number> = {};
  const byKindDid: Record<string, number> = {};
  const byKindRetries: Record<string, number[]> = {};
  const all: MixedLoadResult['slowest'] = [];
  const failures: Record<string, number> = {};
  const failureMessages: Record<string, string[]> = {};
  const unclean: string[] = [];
  const crashed: string[] = [];
  let ops = 0;
  const lines = (out: string) => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as OpLine);
  for (const [i, run] of [...writers, maintained].entries()) {
    if (run.code !== 0) crashed.push(`${i < writers.length ? `writer ${i}` : 'maintenance'} exited ${run.code}: ${run.stderr.trim().split('\n').slice(-5).join(' | ')}`);
    for (const l of lines(run.stdout)) {
      (byKindMs[l.kind] ??= []).push(l.ms);
      byKindDid[l.kind] = (byKindDid[l.kind] ?? 0) + (l.did ?? 0);
      (byKindRetries[l.kind] ??= []).push(l.retries ?? 0);
      if (i < writers.length) all.push({ kind: l.kind, ms: l.ms, retries: l.retries ?? 0, ...(l.lastLost ? { lastLost: l.lastLost } : {}) });
      if (i < writers.length) ops++;
      if (!l.ok) {
        byKindFailed[l.kind] = (byKindFailed[l.kind] ?? 0) + 1;
        failures[l.error!.kind] = (failures[l.error!.kind] ?? 0) + 1;
        const messages = (failureMessages[l.error!.kind] ??= []);
        if (messages.length < 5) messages.push(`${l.kind}: ${l.error!.message}`);
        if (!l.error!.clean) unclean.push(`${l.kind}: ${l.error!.message}`);
        continue;
      }
      // A writer's own operations, in its order: the table must end as they leave its keys.
      if (l.kind === 'append') for (const id of l.ids!) expected.set(id, l.v!);
      if (l.kind === 'merge') for (const id of [...l.updated!, ...l.inserted!]) expected.set(id, l.v!);
      if (l.kind === 'delete') for (const id of l.ids!) expected.delete(id);
    }
  }
  const byKind: Record<string, Latency> = {};
  for (const [kind, xs] of Object.entries(byKindMs)) byKind[kind] = { count: xs.length, failed: byKindFailed[kind] ?? 0, did: byKindDid[kind] ?? 0, retries: byKindRetries[kind]!.reduce((a, b) => a + b, 0), maxRetries: Math.max(...byKindRetries[kind]!), p50: pct(xs, 50), p99: pct(xs, 99) };
  const check = await checkTable(o.warehouse, name, expected);
  const slowest = all.sort((a, b) => b.ms - a.ms).slice(0, 5);
  return { ms, ops, opsPerSecond: ops / (ms / 1000), byKind, failures, failureMessages, unclean, slowest, crashed, check };
}

/** `twinlake serve` as a real process on a free port. */
function serve(warehouse: string): Promise<{ url: string; stop: () => Promise<number | null> }> {
  const proc = spawn(process.execPath, [join(root, 'bin/twinlake.mjs'), 'serve', '--port', '0', '--warehouse', warehouse], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  proc.stderr!.on('data', (d) => (err = (err + d).slice(-20_000)));
  return new Promise((done, fail) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) done({ url: m[1]!, stop: () => (proc.kill('SIGTERM'), exit) });
    });
    void exit.then((code) => fail(new Error(`serve exited ${code}: ${err}`)));
  });
}

export async function serverLoad(o: { dir: string; clients: number; seconds: number; batch?: number }): Promise<ServerLoadResult> {
  const batch = o.batch ?? 50;
  rmSync(o.dir, { recursive: true, force: true });
  mkdirSync(o.dir, { recursive: true });
  const warehouse = join(o.dir, 'wh');
  const token = execFileSync(process.execPath, [join(root, 'bin/twinlake.mjs'), 'token', 'create', '--name', 'load', '--scope', 'admin', '--warehouse', warehouse], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const server = await serve(warehouse);
  const auth = { authorization: `Bearer ${token}` };
  const expected = new Map<number, number>();
  const latencies: number[] = [];
  const failedByStatus: Record<string, number> = {};
  const unclean: string[] = [];
  const failures: ServerLoadResult['failures'] = [];
  let requests = 0;
  let succeeded = 0;
  let badAccepted = 0;
  let ms = 0;
  try {
    const created = await fetch(`${server.url}/api/managed-lakehouse/tables`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: 'load', tableName: 'posts', storageProvider: 'local', icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: 'load' }),
    });
    if (created.status !== 201) throw new Error(`load: creating the table answered ${created.status} ${await created.text()}`);
    const { tableId } = (await created.json()) as { tableId: string };
    const url = `${server.url}/api/managed-lakehouse/tables/${tableId}/records`;
    const t0 = performance.now();
    const until = t0 + o.seconds * 1000;
    const client = async (c: number) => {
      for (let r = 0; performance.now() < until; r++) {
        // Ids: client c, request r, row i — each row of the run has its own.
        const ids = Array.from({ length: batch }, (_, i) => c * 10_000_000 + r * batch + i);
        const malformed = requests % 10 === 9;
        let body = ids.map((id) => `{"id":${id},"client":${c},"v":${r}}`).join('\n');
        // A broken last line: the whole post must fail and none of its rows appear.
        if (malformed) body += `\n{"id":${ids[0]! + batch - 1},"client":`;
        const s = performance.now();
        requests++;
        try {
          const res = await fetch(url, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body: `${body}\n` });
          const text = await res.text();
          latencies.push(performance.now() - s);
          if (res.ok) {
            succeeded++;
            if (malformed) badAccepted++;
            for (const id of ids) expected.set(id, r);
          } else {
            failedByStatus[res.status] = (failedByStatus[res.status] ?? 0) + 1;
            let message: unknown;
            try {
              message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
            } catch {
              message = undefined;
            }
            if (typeof message !== 'string' || res.status < 400) unclean.push(`${res.status} ${text.slice(0, 200)}`);
            else if (failures.length < 20) failures.push({ status: res.status, message, malformed });
          }
        } catch (e) {
          unclean.push(`no answer: ${(e as Error).message}`);
        }
      }
    };
    await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
    ms = performance.now() - t0;
  } finally {
    const code = await server.stop();
    if (code !== 0) unclean.push(`serve exited ${code} on SIGTERM`);
  }
  const check = await checkTable(warehouse, 'load.posts', expected);
  return {
    ms,
    requests,
    succeeded,
    failedByStatus,
    failures,
    badAccepted,
    unclean,
    rowsPerSecond: (succeeded * batch) / (ms / 1000),
    requestsPerSecond: requests / (ms / 1000),
    latency: { p50: pct(latencies, 50), p99: pct(latencies, 99) },
    check,
  };
}

function printCheck(c: TableCheck): void {
  for (const [reader, r] of Object.entries(c.readers)) {
    console.log(`    ${reader.padEnd(24)} ${r.rows} rows (expected ${c.expected}); duplicated ${r.duplicated.length}, missing ${r.missing.length}, unexpected ${r.unexpected.length}, wrong version ${r.wrongVersion.length}`);
  }
  console.log(`    verify: ${c.verify.length === 0 ? 'clean' : c.verify.join('; ')}`);
}

const WORK: Record<string, string> = { compaction: 'files rewritten', snapshot_expiry: 'snapshots expired', full_maintenance: 'files rewritten + snapshots expired' };

/** `npm run bench load`: both loads at the issue's size (BENCH_LOAD_* to change it). */
export async function loadBench(dir: string): Promise<void> {
  const writers = Number(process.env.BENCH_LOAD_WRITERS ?? 8);
  const ops = Number(process.env.BENCH_LOAD_OPS ?? 100);
  const m = await mixedLoad({ warehouse: join(dir, 'load-mixed', 'wh'), writers, ops, seed: Number(process.env.BENCH_LOAD_SEED ?? 1) });
  console.log(`load: ${writers} processes × ${ops} mixed operations (append, merge, delete) on one table, one more process running compaction, expiry and full_maintenance`);
  console.log(`  ${m.ops} operations in ${(m.ms / 1000).toFixed(1)} s = ${m.opsPerSecond.toFixed(1)} ops/s`);
  for (const [kind, l] of Object.entries(m.byKind)) console.log(`    ${kind.padEnd(18)} ${String(l.count).padStart(5)} done, ${String(l.failed).padStart(3)} failed   p50 ${l.p50.toFixed(0).padStart(6)} ms   p99 ${l.p99.toFixed(0).padStart(6)} ms   retries ${l.retries} (most ${l.maxRetries})${l.did ? `   (${l.did} ${WORK[kind] ?? ''})` : ''}`);
  for (const o of m.slowest) console.log(`    slowest: ${o.kind} ${(o.ms / 1000).toFixed(1)} s after ${o.retries} retries; last lost: ${o.lastLost ?? '-'}`);
  console.log(`  failures by kind: ${JSON.stringify(m.failures)}; unclean ${m.unclean.length}; processes crashed ${m.crashed.length}`);
  for (const u of [...m.unclean, ...m.crashed].slice(0, 5)) console.log(`    ${u.slice(0, 400)}`);
  printCheck(m.check);
  const mixedOk = m.unclean.length === 0 && m.crashed.length === 0 && tableOk(m.check);
  console.log(`  ${mixedOk ? 'OK: every operation succeeded or failed cleanly; every row once in both formats' : 'FAILED'}`);

  const clients = Number(process.env.BENCH_LOAD_CLIENTS ?? 32);
  const seconds = Number(process.env.BENCH_LOAD_SECONDS ?? 60);
  const s = await serverLoad({ dir: join(dir, 'load-serve'), clients, seconds });
  console.log(`load: \`twinlake serve\` taking record posts of 50 rows from ${clients} concurrent clients for ${seconds} s (one post in ten malformed)`);
  console.log(`  ${s.requests} requests in ${(s.ms / 1000).toFixed(1)} s = ${s.requestsPerSecond.toFixed(1)} requests/s, ${s.rowsPerSecond.toFixed(0)} rows/s committed   p50 ${s.latency.p50.toFixed(0)} ms   p99 ${s.latency.p99.toFixed(0)} ms`);
  console.log(`  2xx ${s.succeeded}; failed by status ${JSON.stringify(s.failedByStatus)}; malformed accepted ${s.badAccepted}; unclean ${s.unclean.length}`);
  for (const u of s.unclean.slice(0, 5)) console.log(`    ${u}`);
  printCheck(s.check);
  const serveOk = s.unclean.length === 0 && s.badAccepted === 0 && tableOk(s.check);
  console.log(`  ${serveOk ? 'OK: every request answered with a status; every row of a 2xx post once in both formats, none of a failed one' : 'FAILED'}`);
  if (!mixedOk || !serveOk) process.exitCode = 1;
}
