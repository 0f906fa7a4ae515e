import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { buildServer } from '../../src/server/app.ts';
import { TokenAuth, TokenStore } from '../../src/server/auth.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { RUN_LOG_FOLDER, listRuns, runAndLog } from '../../src/maintenance/run-log.ts';
import { tempDir } from '../helpers.ts';

/**
 * The commits route marks the commits maintenance made by the run log; it reads only the entries
 * of the runs its page needs, not the whole log on every request.
 */

let dir: ReturnType<typeof tempDir>;
let lake: Lakehouse;
let app: FastifyInstance;
let token: string;
let id: string;

beforeAll(async () => {
  dir = tempDir();
  lake = await Lakehouse.open({ warehouse: join(dir.path, 'wh'), onWarning: () => {} });
  const t = lake.table('ops.logged');
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 2; i++) await t.append([{ id: round * 10 + i }]);
    await runAndLog(t, 'compaction', { targetFileSize: 1 << 20 });
  }
  await runAndLog(t, 'snapshot_expiry', { retention: 7 * 86400e3 });
  for (let i = 0; i < 2; i++) await t.append([{ id: 100 + i }]);
  const store = new TokenStore(join(dir.path, 'tokens.json'));
  token = (await store.create('ops', 'admin')).token;
  app = await buildServer({ lake, tokens: new TokenAuth(store) });
  id = (await t.describe()).tableUuid;
});
afterAll(async () => {
  await app?.close();
  await lake?.close();
  dir?.cleanup();
});

async function commits(query: string): Promise<{ commits: { change?: string; maintenance?: { runId: string } }[]; runReads: number }> {
  const get = vi.spyOn(LocalStore.prototype, 'get');
  try {
    const res = await app.inject({ method: 'GET', url: `/api/managed-lakehouse/tables/${id}/commits${query}`, headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    const runReads = get.mock.calls.filter(([path]) => String(path).includes(RUN_LOG_FOLDER)).length;
    return { ...res.json(), runReads };
  } finally {
    get.mockRestore();
  }
}

describe('commits route and the run log', () => {
  test('a page without a compaction commit reads no run-log entry', async () => {
    const page = await commits('?limit=2');
    expect(page.commits).toHaveLength(2);
    expect(page.commits.every((c) => c.change === undefined && c.maintenance === undefined)).toBe(true);
    expect(page.runReads).toBe(0);
  });

  test('a page with the newest compaction reads only its run', async () => {
    const page = await commits('?limit=3');
    const runs = await listRuns(lake.table('ops.logged'), { operations: ['compaction'] });
    expect(runs).toHaveLength(5);
    expect(page.commits[2]).toMatchObject({ change: 'compaction', maintenance: { operation: 'compaction', runId: runs[0]!.id } });
    expect(page.runReads).toBe(1);
  });

  test('every compaction of the history is marked with its own run', async () => {
    const page = await commits('?limit=100');
    const runs = await listRuns(lake.table('ops.logged'), { operations: ['compaction'] });
    const marked = page.commits.filter((c) => c.maintenance).map((c) => c.maintenance!.runId);
    expect(marked).toEqual(runs.map((r) => r.id));
    expect(page.commits.filter((c) => c.change === 'compaction')).toHaveLength(5);
    expect(page.runReads).toBe(5);
  });
});
