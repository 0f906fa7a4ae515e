import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { TwinlakeError } from '../../src/core/errors.ts';
import type { ObjectMeta, ObjectStore } from '../../src/io/object-store.ts';
import type { Lakehouse, Table } from '../../src/index.ts';
import { compact } from '../../src/maintenance/compact.ts';
import { expireSnapshots } from '../../src/maintenance/expire.ts';
import { runMaintenance } from '../../src/maintenance/maintain.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import type { CrashWarehouse } from '../crash/crash-lake.ts';
import { duckdbRows, leftovers, missingFiles } from './table-checks.ts';
import { seededDraws } from '../seeded.ts';

/**
 * The model-checked multi-process workload (issue 14, item 3). A seed gives a sequence of steps;
 * a step is one operation, or two or three at once, each run by its own long-lived worker process
 * (test/workers/model-worker.ts) through its own lakehouse on one shared table: appends, merges
 * and deletes (copy-on-write and merge-on-read), compaction, snapshot expiry, Delta sync and
 * checkpoints. An operation may carry a fault: its process dies at storage call k (in the
 * process, as the crash matrix does, or for real by SIGKILL), before or after that call's effect;
 * or call k fails once for a passing reason (EBUSY, EAGAIN, ...), which the retry layer must
 * absorb. The operations of one step touch disjoint keys (or keep the rows), so what the table
 * must hold afterwards does not depend on their order.
 *
 * After every step the table is held to an in-memory model of its rows: Iceberg by name is the
 * model with each succeeded operation applied and each crashed one applied or not (which one the
 * rows tell: every change writes values no other change writes); Delta by name is the same, or,
 * after a crash, a state the table had before (never a row the catalog did not commit) until
 * the next commit or sync catches it up. After a crash, the readers by path too. Every
 * `fullEvery` steps and at the end: Delta and Iceberg by name and by path and DuckDB over each
 * format's live files equal the model, every retained snapshot reads a state the table had and
 * every file it names exists, `verify` is clean, and orphan cleanup leaves only referenced files.
 *
 * A failure is shrunk (delta debugging over the steps, each try a replay on a fresh table) to a
 * minimal step list that still fails the same check, printed one line a step with the command
 * that replays it.
 */

export type Row = { id: number; g: string; v: number };

export type Strategy = 'copy-on-write' | 'merge-on-read';

export type Op =
  | { kind: 'append'; rows: Row[] }
  | { kind: 'merge'; strategy: Strategy; upserts: Row[]; deletes: number[] }
  | { kind: 'delete'; strategy: Strategy; ids?: number[]; range?: [number, number] }
  | { kind: 'compaction' }
  | { kind: 'expiry'; keep: number }
  | { kind: 'sync' }
  | { kind: 'checkpoint' };

/** What goes wrong during an operation: its process dies (`crash` in the process, `kill` by SIGKILL) or a call fails once. */
export type Fault = { kind: 'crash' | 'kill'; at: number; landed: boolean } | { kind: 'transient'; at: number; landed: boolean; code: string };

export interface StepOp {
  /** Its place in the step as generated (what a replay of a shrunk step names). */
  slot: number;
  worker: number;
  op: Op;
  fault?: Fault;
}

export interface Step {
  index: number;
  ops: StepOp[];
}

/** What a worker reports of one operation. */
export interface Outcome {
  ok: boolean;
  /** The process died during it (in the process, or killed). */
  crashed: boolean;
  /** The transient fault it carried fired (the call was reached). */
  faultFired?: boolean;
  /** Storage calls it made (store calls and catalog statements). */
  calls?: number;
  error?: { kind: string; message: string };
}

export const WORKERS = 3;

// ---------------------------------------------------------------------------------------------
// The model

type State = Map<number, Row>;

/** A wrong model, to show that a failure is found and shrunk: a copy-on-write merge forgets the first row it updates. */
export type PlantedBug = 'cow-merge-forgets-update';

export function whereOf(op: Extract<Op, { kind: 'delete' }>): string {
  if (op.range) return `id >= ${op.range[0]} AND id <= ${op.range[1]}`;
  return `id IN (${op.ids!.join(', ')})`;
}

export function apply(state: State, op: Op, bug?: PlantedBug): State {
  const next = new Map(state);
  switch (op.kind) {
    case 'append':
      for (const r of op.rows) next.set(r.id, r);
      break;
    case 'merge': {
      let forgot = false;
      for (const r of op.upserts) {
        if (bug === 'cow-merge-forgets-update' && op.strategy === 'copy-on-write' && !forgot && next.has(r.id)) {
          forgot = true;
          next.delete(r.id);
        } else next.set(r.id, r);
      }
      for (const id of op.deletes) next.delete(id);
      break;
    }
    case 'delete':
      for (const id of [...next.keys()]) if (op.range ? id >= op.range[0] && id <= op.range[1] : op.ids!.includes(id)) next.delete(id);
      break;
    default:
      // Maintenance and sync keep the rows.
      break;
  }
  return next;
}

export const canon = (rows: Iterable<Record<string, unknown>>): string =>
  [...rows]
    .map((r) => `${Number(r.id)}|${String(r.g)}|${Number(r.v)}`)
    .sort()
    .join(' ');

export const SCHEMA = {
  type: 'struct' as const,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' as const },
    { id: 2, name: 'g', required: false, type: 'string' as const },
    { id: 3, name: 'v', required: false, type: 'long' as const },
  ],
};

const gOf = (id: number) => ['a', 'b', 'c'][id % 3]!;

// ---------------------------------------------------------------------------------------------
// The generator

/** mulberry32: the same seed, the same steps. */
export function rng(seed: number) {
  let s = (seed * 2654435761) >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  return seededDraws(next);
}

type Kind = 'append' | 'merge-mor' | 'merge-cow' | 'delete-mor' | 'delete-cow' | 'compaction' | 'expiry' | 'sync' | 'checkpoint';
const WEIGHTS: [Kind, number][] = [
  ['append', 26],
  ['merge-mor', 12],
  ['merge-cow', 9],
  ['delete-mor', 8],
  ['delete-cow', 7],
  ['compaction', 9],
  ['expiry', 6],
  ['sync', 4],
  ['checkpoint', 3],
];

/**
 * Storage calls of each operation on these small tables (store calls and catalog statements, as
 * the crash point counts them; measured, rounded up): a crash point is drawn from 1..N, so most
 * land inside the operation. Transient faults count store calls only, fewer.
 */
const CALLS: Record<Op['kind'], number> = { append: 40, merge: 50, delete: 46, compaction: 50, expiry: 40, sync: 18, checkpoint: 22 };

export const CRASH_SHARE = 0.12;
export const KILL_SHARE = 0.05;
export const TRANSIENT_SHARE = 0.12;
export const CONCURRENT_SHARE = 0.25;

/**
 * The steps of a seed. The generator keeps its own copy of the model, assuming every operation
 * succeeds, to pick keys that exist; at run time an operation applies to whatever the table
 * holds (a merge of a key a crash left out inserts it), so any sub-list of the steps is a
 * workload too, which is what the shrinker replays.
 */
export function planSteps(seed: number, count: number): Step[] {
  const r = rng(seed);
  const planned = new Map<number, Row>();
  let nextId = 0;
  const total = WEIGHTS.reduce((n, [, w]) => n + w, 0);
  const drawKind = (): Kind => {
    let x = r.next() * total;
    for (const [k, w] of WEIGHTS) if ((x -= w) < 0) return k;
    return 'append';
  };
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    const n = i > 0 && r.next() < CONCURRENT_SHARE ? r.int(2, WORKERS) : 1;
    const workers = r.sample(
      Array.from({ length: WORKERS }, (_, w) => w),
      n,
    );
    const taken = new Set<number>();
    const free = () => [...planned.keys()].filter((id) => !taken.has(id));
    const ops: StepOp[] = [];
    for (const [j, worker] of workers.entries()) {
      const marker = i * 10 + j + 1;
      let kind = i < 2 ? 'append' : drawKind();
      if (free().length < 4 && (kind.startsWith('merge') || kind.startsWith('delete'))) kind = 'append';
      let op: Op;
      if (kind === 'append') {
        const rows = Array.from({ length: r.int(1, 5) }, () => nextId++).map((id) => ({ id, g: gOf(id), v: marker }));
        op = { kind: 'append', rows };
      } else if (kind === 'merge-mor' || kind === 'merge-cow') {
        const updates = r.sample(free(), r.int(1, 3));
        updates.forEach((id) => taken.add(id));
        const deletes = r.sample(free(), r.int(0, 2));
        deletes.forEach((id) => taken.add(id));
        const inserts = Array.from({ length: r.int(0, 2) }, () => nextId++);
        op = { kind: 'merge', strategy: kind === 'merge-cow' ? 'copy-on-write' : 'merge-on-read', upserts: [...updates, ...inserts].map((id) => ({ id, g: gOf(id), v: marker })), deletes };
      } else if (kind === 'delete-mor' || kind === 'delete-cow') {
        const strategy: Strategy = kind === 'delete-cow' ? 'copy-on-write' : 'merge-on-read';
        const ids = r.sample(free(), r.int(1, 3)).sort((a, b) => a - b);
        // Alone, a range of ids at times (all of which the step may take); with others, a list.
        if (n === 1 && r.next() < 0.3) {
          const lo = ids[0]!;
          op = { kind: 'delete', strategy, range: [lo, lo + r.int(0, 3)] };
        } else op = { kind: 'delete', strategy, ids };
        ids.forEach((id) => taken.add(id));
      } else if (kind === 'expiry') op = { kind: 'expiry', keep: r.int(1, 3) };
      else op = { kind } as Op;
      // Keys the operation writes are the step's too: no other operation of the step touches them.
      if (op.kind === 'append') op.rows.forEach((row) => taken.add(row.id));
      if (op.kind === 'merge') op.upserts.forEach((row) => taken.add(row.id));
      const after = apply(planned, op);
      planned.clear();
      for (const [id, row] of after) planned.set(id, row);
      let fault: Fault | undefined;
      const f = r.next();
      if (i >= 2 && f < CRASH_SHARE) fault = { kind: r.next() < KILL_SHARE ? 'kill' : 'crash', at: r.int(1, CALLS[op.kind]), landed: r.next() < 0.5 };
      else if (i >= 2 && f < CRASH_SHARE + TRANSIENT_SHARE) fault = { kind: 'transient', at: r.int(1, Math.ceil(CALLS[op.kind] * 0.7)), landed: r.next() < 0.3, code: r.pick(['EBUSY', 'EAGAIN', 'EINTR', 'ETIMEDOUT']) };
      ops.push({ slot: j, worker, op, ...(fault ? { fault } : {}) });
    }
    steps.push({ index: i, ops });
  }
  return steps;
}

const ids = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j]! + 1) j++;
    out.push(j > i ? `${sorted[i]}-${sorted[j]}` : `${sorted[i]}`);
    i = j + 1;
  }
  return out.join(',') || '-';
};

export function describeOp(o: StepOp): string {
  const { op, fault } = o;
  let s: string;
  if (op.kind === 'append') s = `append ids ${ids(op.rows.map((r) => r.id))} (v=${op.rows[0]?.v})`;
  else if (op.kind === 'merge') s = `merge ${op.strategy}: upsert ${ids(op.upserts.map((r) => r.id))} (v=${op.upserts[0]?.v}), delete ${ids(op.deletes)}`;
  else if (op.kind === 'delete') s = `delete ${op.strategy} where ${whereOf(op)}`;
  else if (op.kind === 'expiry') s = `snapshot expiry keeping the last ${op.keep}`;
  else s = op.kind;
  if (fault?.kind === 'crash' || fault?.kind === 'kill') s += ` [${fault.kind === 'kill' ? 'SIGKILL' : 'dies'} at call ${fault.at}${fault.landed ? ', after its effect' : ''}]`;
  else if (fault?.kind === 'transient') s += ` [call ${fault.at} fails once: ${fault.code}${fault.landed ? ', after its effect' : ''}]`;
  return `w${o.worker} ${s}`;
}

export const describeStep = (s: Step): string => `#${s.index} ${s.ops.map(describeOp).join('  ||  ')}`;

// ---------------------------------------------------------------------------------------------
// Running operations (in the workers)

/** Fails the store call `at` once, below the retry layer (where a disk or a service fails), before or after its effect. */
export class TransientFaults {
  n = 0;
  at?: number;
  landed = false;
  code = 'EBUSY';
  fired = false;
  arm(f?: Extract<Fault, { kind: 'transient' }>): void {
    this.n = 0;
    this.fired = false;
    this.at = f?.at;
    this.landed = f?.landed ?? false;
    this.code = f?.code ?? 'EBUSY';
  }
  async run<T>(call: string, path: string, effect: () => Promise<T>): Promise<T> {
    if (this.at === undefined || ++this.n !== this.at) return effect();
    this.fired = true;
    // A create-only write that failed created nothing (the local store's promise): only other calls lose their answer.
    if (this.landed && call !== 'putIfAbsent') await effect();
    throw new TwinlakeError('io', `local store: cannot ${call} ${path}: ${this.code}`, { path, code: this.code });
  }
}

export class FlakyStore implements ObjectStore {
  constructor(
    private readonly inner: ObjectStore,
    private readonly faults: TransientFaults,
  ) {}
  get root() {
    return this.inner.root;
  }
  get createRetry() {
    return this.inner.createRetry;
  }
  get(p: string, r?: { offset: number; length: number }) {
    return this.faults.run('get', p, () => this.inner.get(p, r));
  }
  head(p: string) {
    return this.faults.run('head', p, () => this.inner.head(p));
  }
  put(p: string, b: Uint8Array | string) {
    return this.faults.run('put', p, () => this.inner.put(p, b));
  }
  putFile(p: string, f: string) {
    return this.faults.run('putFile', p, () => this.inner.putFile!(p, f));
  }
  putIfAbsent(p: string, b: Uint8Array | string, token?: string) {
    return this.faults.run('putIfAbsent', p, () => this.inner.putIfAbsent(p, b, token));
  }
  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    yield* await this.faults.run('list', prefix, async () => {
      const out: ObjectMeta[] = [];
      for await (const m of this.inner.list(prefix)) out.push(m);
      return out;
    });
  }
  delete(p: string) {
    return this.faults.run('delete', p, () => this.inner.delete(p));
  }
  localPath(p: string) {
    return this.inner.localPath?.(p);
  }
}

/** Runs one operation on a table. */
export async function runOp(lake: Lakehouse, table: string, op: Op): Promise<void> {
  const t = lake.table(table);
  switch (op.kind) {
    case 'append':
      await t.append(op.rows);
      return;
    case 'merge':
      await t.merge([...op.upserts.map((r) => ({ ...r, op: 'U' })), ...op.deletes.map((id) => ({ id, g: gOf(id), v: 0, op: 'D' }))], {
        keys: ['id'],
        deleteWhen: "op = 'D'",
        excludeColumns: ['op'],
        strategy: op.strategy,
      });
      return;
    case 'delete':
      await t.delete(whereOf(op), { strategy: op.strategy });
      return;
    case 'compaction':
      await compact(t);
      return;
    case 'expiry':
      await expireSnapshots(t, { retention: 0, minSnapshotsToKeep: op.keep });
      return;
    case 'sync':
      await t.syncDelta();
      return;
    case 'checkpoint':
      await runMaintenance(t, 'delta_checkpoint');
      return;
  }
}

// ---------------------------------------------------------------------------------------------
// The worker processes

const WORKER = join(import.meta.dirname, '..', 'workers', 'model-worker.ts');

interface Pending {
  resolve: (o: Outcome) => void;
  reject: (e: Error) => void;
}

/** One long-lived worker process; restarted after it is killed. */
class Worker {
  private child?: ChildProcess;
  private ready?: Promise<void>;
  private pending = new Map<number, Pending>();
  private seq = 0;
  private stderr = '';
  restarts = 0;

  constructor(private readonly w: CrashWarehouse) {}

  private start(): Promise<void> {
    const child = fork(WORKER, [this.w.warehouse, this.w.dbPath], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child = child;
    this.stderr = '';
    child.stderr!.on('data', (d) => (this.stderr = (this.stderr + String(d)).slice(-4000)));
    this.ready = new Promise((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code, signal) => reject(new Error(`model worker exited (${signal ?? code}) before it was ready: ${this.stderr}`)));
    });
    child.on('message', (m: { id?: number; outcome?: Outcome }) => {
      if (m.id === undefined) return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      p?.resolve(m.outcome!);
    });
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        if (signal === 'SIGKILL') p.resolve({ ok: false, crashed: true });
        else p.reject(new Error(`model worker exited (${signal ?? code}) during an operation: ${this.stderr}`));
      }
    });
    return this.ready;
  }

  async run(table: string, op: Op, fault?: Fault): Promise<Outcome> {
    if (!this.child) {
      if (this.seq > 0) this.restarts++;
      await this.start();
    }
    await this.ready;
    const id = ++this.seq;
    return new Promise<Outcome>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child!.send({ id, table, op, fault });
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.send({ close: true });
    });
  }
}

export class WorkerPool {
  private readonly workers: Worker[];
  constructor(w: CrashWarehouse, n = WORKERS) {
    this.workers = Array.from({ length: n }, () => new Worker(w));
  }
  run(worker: number, table: string, op: Op, fault?: Fault): Promise<Outcome> {
    return this.workers[worker]!.run(table, op, fault);
  }
  get restarts(): number {
    return this.workers.reduce((n, w) => n + w.restarts, 0);
  }
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
  }
}

// ---------------------------------------------------------------------------------------------
// The runner and its checks

export interface Harness {
  w: CrashWarehouse;
  pool: WorkerPool;
  /** A lakehouse of the checking process, over the raw store and catalog. */
  lake: Lakehouse;
  conn: DuckDBConnection;
}

export interface RunOptions {
  seed: number;
  steps: Step[];
  /** The full checks every this many steps (and after the last). */
  fullEvery?: number;
  bug?: PlantedBug;
}

export interface Failure {
  /** Index in the list run (not the step's own index). */
  at: number;
  step: Step;
  /** Which check failed: what shrinking keeps failing. */
  check: string;
  message: string;
}

export interface RunStats {
  steps: number;
  ops: number;
  concurrent: number;
  crashes: number;
  kills: number;
  crashesApplied: number;
  transientFired: number;
  fullChecks: number;
  ms: number;
  /** Of which: waiting for the operations, and the full checks. */
  opMs: number;
  fullMs: number;
}

export type RunResult = { ok: true; stats: RunStats } | { ok: false; failure: Failure; stats: RunStats };

class CheckFailed extends Error {
  constructor(
    readonly check: string,
    detail: string,
  ) {
    super(`${check}: ${detail}`);
  }
}

function expectState(check: string, found: string, allowed: readonly string[]): void {
  if (allowed.includes(found)) return;
  const shown = allowed.length <= 4 ? allowed.map((a) => `[${a}]`).join(' or ') : `${allowed.length} states, the last [${allowed[allowed.length - 1]}]`;
  throw new CheckFailed(check, `expected ${allowed.length === 1 ? shown : `one of ${shown}`}, found [${found}]`);
}

let tableCounter = 0;
const shapeOf = (seed: number) => (seed % 2 === 1 ? { partition: 'g', formatVersion: '2' } : { formatVersion: '3' });

/** Runs the steps on a fresh table, checking after each; the first failed check ends the run. */
export async function runWorkload(h: Harness, opts: RunOptions): Promise<RunResult> {
  const t0 = performance.now();
  const fullEvery = opts.fullEvery ?? 50;
  const stats: RunStats = { steps: 0, ops: 0, concurrent: 0, crashes: 0, kills: 0, crashesApplied: 0, transientFired: 0, fullChecks: 0, ms: 0, opMs: 0, fullMs: 0 };
  const name = `model.s${opts.seed}_${process.pid}_${++tableCounter}`;
  const t = h.lake.table(name);
  const shape = shapeOf(opts.seed);
  await t.create(SCHEMA, {
    ...(shape.partition ? { partition: shape.partition } : {}),
    properties: {
      'format-version': shape.formatVersion,
      'delta.checkpointInterval': '5',
      'write.metadata.delete-after-commit.enabled': 'true',
      'write.metadata.previous-versions-max': '5',
    },
  });
  const location = (await t.describe()).location;
  let model: State = new Map();
  /** Every state the table has been in (or may have been in, between the operations of a step): what a retained snapshot may show. */
  const seen = new Set<string>([canon([])]);
  /** States a lagging Delta log may still show (after a crash); empty when Delta must equal Iceberg. */
  let deltaLag = new Set<string>();
  let current = (await t.metadata())['current-snapshot-id'];

  for (const [at, step] of opts.steps.entries()) {
    try {
      const started = performance.now();
      const outcomes = await Promise.all(step.ops.map((o) => h.pool.run(o.worker, name, o.op, o.fault)));
      stats.opMs += performance.now() - started;
      stats.steps++;
      stats.ops += step.ops.length;
      if (step.ops.length > 1) stats.concurrent++;
      const before = model;
      let crashed = 0;
      for (const [j, o] of step.ops.entries()) {
        const out = outcomes[j]!;
        if (o.fault?.kind === 'transient' && out.faultFired) stats.transientFired++;
        if (out.crashed) {
          crashed++;
          stats.crashes++;
          if (o.fault?.kind === 'kill') stats.kills++;
        } else if (!out.ok) throw new CheckFailed('every operation succeeds or its process dies', `${describeOp(o)} failed: ${out.error?.kind}: ${out.error?.message}`);
      }
      // The operations of a step touch disjoint keys, so any subset of them, applied in any
      // order, gives one state: the states the table may pass through. It must end in one where
      // every operation that succeeded is applied (and a crashed one applied or not).
      const all = new Set<string>();
      const candidates: State[] = [];
      for (let mask = 0; mask < 1 << step.ops.length; mask++) {
        let s = before;
        for (const [j, o] of step.ops.entries()) if (mask & (1 << j)) s = apply(s, o.op, opts.bug);
        all.add(canon(s.values()));
        if (step.ops.every((_, j) => outcomes[j]!.crashed || mask & (1 << j))) candidates.push(s);
      }
      for (const s of all) seen.add(s);
      const allowed = [...new Set(candidates.map((s) => canon(s.values())))];
      const iceberg = canon(await t.read());
      expectState('Iceberg by name equals the model', iceberg, allowed);
      const chosen = candidates.find((s) => canon(s.values()) === iceberg)!;
      if (crashed > 0 && iceberg !== canon(before.values())) stats.crashesApplied++;
      model = chosen;

      const metadata = await t.metadata();
      const committed = metadata['current-snapshot-id'] !== current;
      current = metadata['current-snapshot-id'];
      const synced = step.ops.some((o, j) => o.op.kind === 'sync' && outcomes[j]!.ok);
      const delta = canon(await t.read({ format: 'delta' }));
      if (crashed === 0 && (committed || synced || deltaLag.size === 0)) {
        // A commit (or a sync) writes the Delta versions a crash left out before its own.
        expectState('Delta by name equals Iceberg (a commit or sync catches up a lagging log)', delta, [iceberg]);
        deltaLag = new Set();
      } else {
        const lagging = [...new Set([...deltaLag, ...all])];
        expectState('Delta by name shows a committed state (it may lag after a crash, never run ahead)', delta, lagging);
        deltaLag = delta === iceberg ? new Set() : new Set(lagging);
      }
      if (crashed > 0) {
        // Readers by path may lag too (version hint, Delta log), never show an uncommitted row.
        const byPath = [...new Set([...deltaLag, ...all, iceberg])];
        expectState('Iceberg by path shows a committed state after a crash', canon(await h.lake.readPath(location)), byPath);
        expectState('Delta by path shows a committed state after a crash', canon(await h.lake.readPath(location, { format: 'delta' })), byPath);
      }
      if ((at + 1) % fullEvery === 0 || at === opts.steps.length - 1) {
        if (deltaLag.size > 0) {
          await t.syncDelta();
          deltaLag = new Set();
        }
        const full = performance.now();
        await fullCheck(h, t, location, canon(model.values()), seen);
        stats.fullMs += performance.now() - full;
        stats.fullChecks++;
      }
    } catch (e) {
      stats.ms = performance.now() - t0;
      const check = e instanceof CheckFailed ? e.check : 'the checks run';
      const message = e instanceof Error ? (e instanceof CheckFailed ? e.message : `${e.message}\n${e.stack ?? ''}`) : String(e);
      return { ok: false, failure: { at, step, check, message }, stats };
    }
  }
  stats.ms = performance.now() - t0;
  return { ok: true, stats };
}

/** The expensive checks: every reader, DuckDB over the live files, retained snapshots, verify, orphan cleanup. */
async function fullCheck(h: Harness, t: Table, location: string, expected: string, seen: Set<string>): Promise<void> {
  expectState('Iceberg by name equals the model', canon(await t.read()), [expected]);
  expectState('Delta by name equals the model after a sync', canon(await t.read({ format: 'delta' })), [expected]);
  expectState('Iceberg by path equals the model', canon(await h.lake.readPath(location)), [expected]);
  expectState('Delta by path equals the model', canon(await h.lake.readPath(location, { format: 'delta' })), [expected]);
  for (const format of ['iceberg', 'delta'] as const) {
    const plan = await t.plan({ format });
    const missing = missingFiles(plan.task);
    if (missing.length) throw new CheckFailed(`every file the ${format} view reads exists`, missing.join(', '));
    expectState(`DuckDB over the ${format} live files equals the model`, canon(await duckdbRows(h.conn, plan.task, ['id', 'g', 'v'])), [expected]);
  }
  for (const s of (await t.metadata()).snapshots ?? []) {
    const id = s['snapshot-id'];
    const plan = await t.plan({ snapshotId: id });
    const missing = missingFiles(plan.task);
    if (missing.length) throw new CheckFailed('every file a retained snapshot reads exists', `snapshot ${id}: ${missing.join(', ')}`);
    expectState('every retained snapshot shows a state the table had', `snapshot ${id}: ${canon(await t.read({ snapshotId: id }))}`, [...seen].map((x) => `snapshot ${id}: ${x}`));
  }
  const verified = await t.verify();
  if (!verified.ok || verified.findings.length) throw new CheckFailed('verify is clean', JSON.stringify(verified.findings).slice(0, 2000));
  await removeOrphans(t, { olderThan: 3600_000, now: Date.now() + 2 * 86400_000 });
  const left = await leftovers(t, location);
  if (left.length) throw new CheckFailed('orphan cleanup leaves only referenced files', left.join(', '));
  expectState('orphan cleanup keeps every committed row (Iceberg)', canon(await t.read()), [expected]);
  expectState('orphan cleanup keeps every committed row (Delta)', canon(await t.read({ format: 'delta' })), [expected]);
}

// ---------------------------------------------------------------------------------------------
// Shrinking and the report

export interface Shrunk {
  steps: Step[];
  failure: Failure;
  replays: number;
  ms: number;
  /** The time budget ran out before no step could be dropped. */
  budgetSpent: boolean;
}

/**
 * Delta debugging over the failing prefix: drop chunks of steps (halves, then quarters, …) while
 * a replay on a fresh table still fails the same check, cutting each failing replay at the step
 * it failed at. Ends when no single step can be dropped, or at the time budget.
 */
export async function shrink(h: Harness, opts: RunOptions, failure: Failure, budgetMs: number): Promise<Shrunk> {
  const t0 = performance.now();
  let cur = opts.steps.slice(0, failure.at + 1);
  let best = failure;
  let replays = 0;
  const over = () => performance.now() - t0 > budgetMs;
  /** Replays a candidate list; when it fails the same check, it becomes the list (cut at the step it failed at). */
  const tryList = async (steps: Step[]): Promise<boolean> => {
    if (steps.length === 0 || over()) return false;
    replays++;
    const r = await runWorkload(h, { ...opts, steps });
    if (r.ok || r.failure.check !== failure.check) return false;
    cur = steps.slice(0, r.failure.at + 1);
    best = r.failure;
    return true;
  };
  const edit = (i: number, ops: StepOp[]) => [...cur.slice(0, i), { ...cur[i]!, ops }, ...cur.slice(i + 1)];
  // Until nothing more can go: whole steps (drop halves, then quarters, ...: delta debugging),
  // then single operations of the steps left, then their faults; each dropped piece may let
  // another go.
  for (let changed = true; changed && !over(); ) {
    changed = false;
    for (let n = 2; cur.length >= 2 && !over(); ) {
      const size = Math.ceil(cur.length / n);
      let reduced = false;
      for (let i = 0; i < cur.length && !reduced && !over(); i += size) reduced = await tryList([...cur.slice(0, i), ...cur.slice(i + size)]);
      changed ||= reduced;
      if (reduced) n = Math.max(n - 1, 2);
      else if (size === 1) break;
      else n = Math.min(cur.length, n * 2);
    }
    for (let i = 0; i < cur.length && !over(); i++) {
      for (let j = 0; cur[i] && j < cur[i]!.ops.length && cur[i]!.ops.length > 1 && !over(); ) {
        const before = cur.length;
        if (!(await tryList(edit(i, cur[i]!.ops.filter((_, k) => k !== j))))) j++;
        else if (((changed = true), cur.length < before)) break;
      }
    }
    for (let i = 0; i < cur.length && !over(); i++) {
      for (const [j, o] of (cur[i]?.ops ?? []).entries()) {
        if (!o.fault) continue;
        const { fault: _, ...plain } = o;
        if (await tryList(edit(i, cur[i]!.ops.map((x, k) => (k === j ? plain : x))))) changed = true;
      }
    }
  }
  return { steps: cur, failure: best, replays, ms: performance.now() - t0, budgetSpent: over() };
}

/**
 * A step list as `TWINLAKE_MODEL_KEEP` names it: a step's index, or for a step some operations or
 * faults of which shrinking dropped, `index:slot+slot`, a slot with `!` without its fault.
 */
export function keepList(steps: Step[], all: Step[]): string {
  return steps
    .map((s) => {
      const whole = all[s.index]!;
      if (s.ops.length === whole.ops.length && s.ops.every((o, k) => Boolean(o.fault) === Boolean(whole.ops[k]!.fault))) return `${s.index}`;
      return `${s.index}:${s.ops.map((o) => `${o.slot}${o.fault || !whole.ops.find((x) => x.slot === o.slot)?.fault ? '' : '!'}`).join('+')}`;
    })
    .join(',');
}

export function replayCommand(seed: number, steps: Step[], all: Step[], test = 'test/reliability/model-workload.test.ts'): string {
  return `TWINLAKE_MODEL_SEEDS=${seed} TWINLAKE_MODEL_KEEP=${keepList(steps, all)} npx vitest run ${test}`;
}

export function report(seed: number, all: Step[], f: Failure, shrunk?: Shrunk): string {
  const lines = [`model workload seed ${seed} failed at step #${f.step.index} of ${all.length}: ${f.message}`];
  if (shrunk) {
    lines.push(
      `minimal steps (${shrunk.steps.length} of ${f.at + 1}, ${shrunk.replays} replays in ${(shrunk.ms / 1000).toFixed(1)} s${shrunk.budgetSpent ? ', time budget spent' : ''}), failing "${shrunk.failure.check}" at #${shrunk.failure.step.index}:`,
      ...shrunk.steps.map((s) => `  ${describeStep(s)}`),
      `replay: ${replayCommand(seed, shrunk.steps, all)}`,
    );
  }
  return lines.join('\n');
}

/** The steps to run for a seed: all `count`, or only those a keep list (keepList) names. */
export function stepsFor(seed: number, count: number, keep?: string): Step[] {
  if (keep === undefined) return planSteps(seed, count);
  const items = keep.split(',').map((item) => {
    const [index, slots] = item.split(':');
    return { index: Number(index), slots: slots?.split('+') };
  });
  const all = planSteps(seed, Math.max(count, ...items.map((k) => k.index + 1)));
  return items.map(({ index, slots }) => {
    const step = all[index]!;
    if (!slots) return step;
    const ops = slots.map((x) => {
      const o = step.ops.find((y) => y.slot === Number(x.replace('!', '')))!;
      if (!x.endsWith('!')) return o;
      const { fault: _, ...plain } = o;
      return plain;
    });
    return { ...step, ops };
  });
}
