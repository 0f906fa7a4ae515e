import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUri } from '../../src/core/uri.ts';
import { openLake, type OpenedLake } from '../crash/crash-lake.ts';
import { tempDir } from '../helpers.ts';
import { WorkerPool, keepList, planSteps, report, runWorkload, shrink, stepsFor, type Harness } from './model-workload.ts';

/**
 * The model-checked multi-process workload (model-workload.ts): 5 seeds × 200 steps from three
 * worker processes with crashes (in the process and by SIGKILL) and transient faults, every step
 * checked against the model. `TWINLAKE_MODEL_SEEDS=17,18` runs other seeds,
 * `TWINLAKE_MODEL_STEPS=500` longer runs, `TWINLAKE_MODEL_KEEP=3,57,123` only those steps of one
 * seed (the replay a failure prints); `npm run workload` runs many seeds.
 */
const SEEDS = (process.env.TWINLAKE_MODEL_SEEDS ?? '1,2,3,4,5').split(',').map(Number);
const STEPS = Number(process.env.TWINLAKE_MODEL_STEPS ?? 200);
const KEEP = process.env.TWINLAKE_MODEL_KEEP;

const tmp = tempDir('twinlake-model-');
const w = { warehouse: fileUri(join(tmp.path, 'wh')), dbPath: join(tmp.path, 'catalog.db') };
let opened: OpenedLake;
let db: DuckDBInstance;
let conn: DuckDBConnection;
let h: Omit<Harness, 'pool'>;
/**
 * Two pools of three workers: two seeds run at once (each seed's steps one after another, so one
 * seed alone leaves most of the machine idle while it checks and its workers open files).
 */
const free: WorkerPool[] = [];
const waiting: ((p: WorkerPool) => void)[] = [];
async function withPool<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const pool = free.pop() ?? (await new Promise<WorkerPool>((resolve) => waiting.push(resolve)));
  try {
    return await fn({ ...h, pool });
  } finally {
    const next = waiting.shift();
    if (next) next(pool);
    else free.push(pool);
  }
}

beforeAll(async () => {
  opened = await openLake(w);
  db = await DuckDBInstance.create(':memory:');
  conn = await db.connect();
  h = { w, lake: opened.lake, conn };
  free.push(new WorkerPool(w), new WorkerPool(w));
});
afterAll(async () => {
  await Promise.all(free.map((p) => p.close()));
  conn?.closeSync();
  await opened?.close();
  tmp.cleanup();
});

describe('a model-checked workload from three processes, with crashes and transient faults', () => {
  for (const seed of SEEDS) {
    it.concurrent(`seed ${seed}: ${KEEP ? `steps ${KEEP}` : `${STEPS} steps`}, the table equals the model after each`, () => withPool(async (h) => {
      const steps = stepsFor(seed, STEPS, KEEP);
      const r = await runWorkload(h, { seed, steps, fullEvery: 50 });
      if (!r.ok) {
        const shrunk = await shrink(h, { seed, steps, fullEvery: 50 }, r.failure, 120_000);
        throw new Error(report(seed, planSteps(seed, Math.max(...steps.map((s) => s.index + 1))), r.failure, shrunk));
      }
      console.log(`model workload seed ${seed}: ${JSON.stringify(r.stats)}`);
      // The run was the workload it claims: concurrent steps, deaths of both kinds, absorbed faults.
      if (!KEEP) {
        expect(r.stats.steps).toBe(STEPS);
        expect(r.stats.concurrent).toBeGreaterThan(STEPS / 10);
        expect(r.stats.crashes).toBeGreaterThan(STEPS / 20);
        expect(r.stats.transientFired).toBeGreaterThan(STEPS / 20);
      }
    }), 600_000);
  }
});

describe('a failure is reported with its seed and a minimal step list', () => {
  // A wrong model (a copy-on-write merge forgets a row it updates) stands in for a wrong table:
  // the run must fail, and shrinking must find a shorter list that fails the same check.
  // Seed 57's first copy-on-write merge of an existing row is its step 17, one of three operations.
  const seed = 57;
  const steps = planSteps(seed, 40);
  it('a planted bug fails, and the list printed is shorter and still fails', () => withPool(async (h) => {
    const r = await runWorkload(h, { seed, steps, fullEvery: 50, bug: 'cow-merge-forgets-update' });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.failure.step.ops.some((o) => o.op.kind === 'merge' && o.op.strategy === 'copy-on-write')).toBe(true);
    const shrunk = await shrink(h, { seed, steps, fullEvery: 50, bug: 'cow-merge-forgets-update' }, r.failure, 150_000);
    const text = report(seed, steps, r.failure, shrunk);
    console.log(text);
    expect(text).toContain(`seed ${seed}`);
    expect(text).toContain(`TWINLAKE_MODEL_SEEDS=${seed} TWINLAKE_MODEL_KEEP=${keepList(shrunk.steps, steps)} `);
    expect(shrunk.steps.length).toBeLessThan(r.failure.at + 1);
    // The failing merge and the write of the row it updates, each alone: nothing else is needed.
    expect(r.failure.at).toBeGreaterThanOrEqual(10);
    expect(shrunk.steps.length).toBeLessThanOrEqual(2);
    expect(shrunk.steps.flatMap((s) => s.ops).length).toBeLessThanOrEqual(2);
    for (const s of shrunk.steps) expect(text).toContain(`#${s.index} `);
    const again = await runWorkload(h, { seed, steps: stepsFor(seed, 40, keepList(shrunk.steps, steps)), bug: 'cow-merge-forgets-update' });
    expect(again.ok).toBe(false);
    if (!again.ok) expect(again.failure.check).toBe(r.failure.check);
    // Without the bug, the same steps pass: the failure was the bug's.
    expect((await runWorkload(h, { seed, steps: shrunk.steps })).ok).toBe(true);
  }), 300_000);
});
