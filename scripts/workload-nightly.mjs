#!/usr/bin/env node
// The model-checked multi-process workload (test/reliability/model-workload.ts) over many seeds,
// longer than CI runs it: `npm run workload -- --seeds 50 --steps 500 --from 100`. Prints one
// line per seed; a failing seed is shrunk to a minimal step list, printed with the command that
// replays it. Exits 1 when any seed failed.
//
//   --seeds N         how many seeds (default 20)
//   --from S          the first seed (default 100; CI runs 1-5)
//   --steps M         steps per seed (default 500)
//   --parallel P      seeds run at once, each with its own three workers (default 2)
//   --shrink-seconds  the time budget for shrinking one failure (default 300)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { register } from 'tsx/esm/api';

register();
const root = join(import.meta.dirname, '..');
const load = (p) => import(pathToFileURL(join(root, p)).href);
const { WorkerPool, planSteps, report, runWorkload, shrink } = await load('test/reliability/model-workload.ts');
const { openLake } = await load('test/crash/crash-lake.ts');
const { fileUri } = await load('src/core/uri.ts');
const { DuckDBInstance } = await import('@duckdb/node-api');

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '20' },
    from: { type: 'string', default: '100' },
    steps: { type: 'string', default: '500' },
    parallel: { type: 'string', default: '2' },
    'shrink-seconds': { type: 'string', default: '300' },
  },
});
const count = Number(values.seeds);
const from = Number(values.from);
const steps = Number(values.steps);
const parallel = Math.max(1, Number(values.parallel));
const shrinkMs = Number(values['shrink-seconds']) * 1000;
for (const [k, v] of Object.entries({ seeds: count, from, steps, parallel, 'shrink-seconds': shrinkMs })) {
  if (!Number.isSafeInteger(v) || v < 0) {
    process.stderr.write(`workload: --${k} expects a whole number, found ${values[k]}\n`);
    process.exit(2);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'twinlake-workload-'));
const w = { warehouse: fileUri(join(dir, 'wh')), dbPath: join(dir, 'catalog.db') };
const opened = await openLake(w);
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const pools = Array.from({ length: parallel }, () => new WorkerPool(w));
const failed = [];
const t0 = performance.now();
process.stdout.write(`model workload: seeds ${from}..${from + count - 1}, ${steps} steps each, ${parallel} at once\n`);

let next = from;
async function lane(pool) {
  const h = { w, pool, lake: opened.lake, conn };
  while (next < from + count) {
    const seed = next++;
    const plan = planSteps(seed, steps);
    const r = await runWorkload(h, { seed, steps: plan, fullEvery: 50 });
    const s = r.stats;
    const what = `${s.steps} steps, ${s.ops} operations (${s.concurrent} concurrent steps), ${s.crashes} deaths (${s.kills} SIGKILL, ${s.crashesApplied} committed), ${s.transientFired} transient faults absorbed, ${s.fullChecks} full checks, ${(s.ms / 1000).toFixed(1)} s`;
    if (r.ok) {
      process.stdout.write(`seed ${seed}: ok: ${what}\n`);
      continue;
    }
    process.stdout.write(`seed ${seed}: FAILED at step #${r.failure.step.index} (${r.failure.check}); shrinking…\n`);
    const shrunk = await shrink(h, { seed, steps: plan, fullEvery: 50 }, r.failure, shrinkMs);
    const text = report(seed, plan, r.failure, shrunk);
    failed.push(text);
    process.stdout.write(`${text}\n`);
  }
}

try {
  await Promise.all(pools.map(lane));
} finally {
  await Promise.all(pools.map((p) => p.close()));
  conn.closeSync();
  await opened.close();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`model workload: ${count - failed.length} of ${count} seeds passed in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
if (failed.length) {
  process.stdout.write(`\nfailures:\n${failed.join('\n\n')}\n`);
  process.exit(1);
}
