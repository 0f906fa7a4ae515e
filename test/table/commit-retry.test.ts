import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { CommitRetry, commitRetryPolicy, DEFAULT_COMMIT_RETRY, retryWaitMs } from '../../src/table/commit/commit-retry.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';
import { contended } from '../both-formats.ts';

describe('the commit retry policy', () => {
  it('reads commit.retry.* from the table properties, with Twinlake defaults for what is unset', () => {
    expect(commitRetryPolicy({})).toEqual(DEFAULT_COMMIT_RETRY);
    expect(
      commitRetryPolicy({ 'commit.retry.num-retries': '3', 'commit.retry.min-wait-ms': '50', 'commit.retry.max-wait-ms': '400', 'commit.retry.total-timeout-ms': '9000' }),
    ).toEqual({ numRetries: 3, minWaitMs: 50, maxWaitMs: 400, totalTimeoutMs: 9000 });
    expect(commitRetryPolicy({ 'commit.retry.num-retries': '0', 'commit.retry.min-wait-ms': '0' })).toMatchObject({ numRetries: 0, minWaitMs: 0 });
    expect(() => commitRetryPolicy({ 'commit.retry.num-retries': 'many' })).toThrow(/table property commit.retry.num-retries: expected a positive number, found "many"/);
  });

  it('waits grow exponentially between the minimum and the maximum, with jitter', () => {
    const p = { numRetries: 10, minWaitMs: 100, maxWaitMs: 1000, totalTimeoutMs: 60_000 };
    expect([1, 2, 3, 4, 5].map((n) => retryWaitMs(p, n, 0))).toEqual([100, 100, 100, 100, 100]);
    expect([1, 2, 3, 4, 5].map((n) => retryWaitMs(p, n, 0.999999))).toEqual([200, 400, 800, 1000, 1000]);
    expect(retryWaitMs(p, 2, 0.5)).toBe(250);
  });

  it('gives up after commit.retry.num-retries lost attempts, naming the setting', async () => {
    const retry = new CommitRetry({ numRetries: 2, minWaitMs: 0, maxWaitMs: 0, totalTimeoutMs: 60_000 }, 'write a.b');
    await retry.lost('one');
    await retry.lost('two');
    const e = await errorOf(retry.lost('three'));
    expect(e.kind).toBe('commit-conflict');
    expect(e.message).toBe('write a.b: gave up after 2 retries (commit.retry.num-retries) lost to concurrent commits; last: three');
  });

  it('gives up once commit.retry.total-timeout-ms has passed', async () => {
    const retry = new CommitRetry({ numRetries: 100, minWaitMs: 30, maxWaitMs: 30, totalTimeoutMs: 50 }, 'write a.b');
    const started = performance.now();
    const e = await errorOf(async () => {
      for (;;) await retry.lost('again');
    });
    expect(e.message).toMatch(/^write a.b: gave up after \d+ ms \(commit.retry.total-timeout-ms 50\) lost to concurrent commits; last: again$/);
    // The last wait is cut to what is left of the timeout: two or three retries, not 100.
    expect(retry.spent).toBeLessThanOrEqual(3);
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('commits honour the table’s commit.retry.num-retries', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  async function run(table: string, properties: Record<string, string>, rivals: number) {
    const setup = await Lakehouse.open({ warehouse: tmp.path });
    await setup.table(table).append([{ id: 0 }], { properties });
    await setup.close();
    const rival = await Lakehouse.open({ warehouse: tmp.path });
    const shared = await Lakehouse.open({ warehouse: tmp.path });
    const catalog = contended(shared.catalog, async (n) => void (await rival.table(table).append([{ id: 100 + n }])), rivals);
    const lake = await Lakehouse.open({ warehouse: tmp.path, catalog });
    return { lake, catalog, close: () => Promise.all([lake.close(), rival.close(), shared.close()]) };
  }

  it('num-retries 2: a write losing three times fails as a conflict and leaves nothing of itself', async () => {
    const { lake, catalog, close } = await run('retry.two', { 'commit.retry.num-retries': '2', 'commit.retry.min-wait-ms': '1' }, 3);
    try {
      const e = await errorOf(lake.table('retry.two').append([{ id: 1 }]));
      expect(e.kind).toBe('commit-conflict');
      expect(e.message).toMatch(/^write retry\.two: gave up after 2 retries \(commit\.retry\.num-retries\) lost to concurrent commits; last: iceberg commit: requirement assert-ref-snapshot-id failed/);
      expect(catalog.commits).toBe(3);
      const t = lake.table('retry.two');
      for (const format of ['iceberg', 'delta'] as const) expect((await t.read({ format })).map((r) => Number(r.id)).sort()).toEqual([0, 100, 101, 102]);
      // Only the committed data files remain: the failed write removed its own.
      expect(listFiles(join(tmp.path, 'retry', 'two', 'data'))).toHaveLength((await t.files()).files.length);
    } finally {
      await close();
    }
  });

  it('by default the same write retries and commits', async () => {
    const { lake, catalog, close } = await run('retry.default', {}, 6);
    try {
      const r = await lake.table('retry.default').append([{ id: 1 }]);
      expect(catalog.commits).toBe(7);
      expect(r.deltaVersion).toBe(8);
      for (const format of ['iceberg', 'delta'] as const) expect((await lake.table('retry.default').read({ format })).length).toBe(8);
    } finally {
      await close();
    }
  });
});
