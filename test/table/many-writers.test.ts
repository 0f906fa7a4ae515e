import { afterAll, describe, expect, it } from 'vitest';
import { manyWriters, type ManyWritersResult } from '../../bench/many-writers.ts';
import { tempDir } from '../helpers.ts';

/**
 * Many writer processes on one table with the default `commit.retry.*` settings: every commit
 * succeeds, the Delta log stays gap-free in Iceberg order, and both formats hold every row once.
 * The sizes (8 × 50 appends; 4 + 4 mixed) take about a minute each on a shared 2-core
 * machine, so they run as `npm run bench writers` (three times each, with the commit throughput);
 * these are their small twins.
 */
function expectAllCommitted(r: ManyWritersResult, seeded: boolean): void {
  for (const w of r.writers) expect(w.code, `writer ${w.name}: ${w.stderr}`).toBe(0);
  const snapshots = r.commits + (seeded ? 1 : 0);
  expect(r.deltaVersionsOfSnapshots).toEqual(Array.from({ length: snapshots }, (_, i) => i + 1));
  expect(r.deltaLog).toEqual(Array.from({ length: snapshots + 1 }, (_, i) => i));
  for (const format of ['iceberg', 'delta'] as const) {
    const got = r.read[format];
    expect(got.appendedKeys, format).toEqual(r.expectedKeys);
    expect(got.mergedIds, format).toEqual(r.expectedIds);
    // A merger only ever writes its own keys; a key keeps the seed's row until its merger upserts it.
    got.mergedIds.forEach((id, i) => expect(['seed', String.fromCharCode(65 + Math.floor(id / 1000))]).toContain(got.mergedOwners[i]));
    expect(got.rows, format).toBe(r.expectedKeys.length + r.expectedIds.length);
  }
}

describe('many writer processes on one table, default retry settings', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('8 processes × 10 appends: all 80 commit, Delta versions 1..80 gap-free, every row once in both formats', async () => {
    const r = await manyWriters({ warehouse: `${tmp.path}/appends`, appenders: 8, batches: 10, rows: 5 });
    console.log(`8 × 10 appends: ${r.commits} commits in ${(r.ms / 1000).toFixed(1)} s, ${r.commitsPerSecond.toFixed(1)} commits/s`);
    expect(r.commits).toBe(80);
    expectAllCommitted(r, false);
  }, 240_000);

  it('4 merging + 4 appending processes: every merge and append commits, both formats agree', async () => {
    const r = await manyWriters({ warehouse: `${tmp.path}/mixed`, appenders: 4, batches: 5, rows: 5, mergers: 4, rounds: 5 });
    console.log(`4 mergers × 5 + 4 appenders × 5: ${r.commits} commits in ${(r.ms / 1000).toFixed(1)} s, ${r.commitsPerSecond.toFixed(1)} commits/s`);
    expect(r.commits).toBe(40);
    expectAllCommitted(r, true);
  }, 240_000);
});
