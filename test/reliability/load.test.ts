import { afterAll, describe, expect, test } from 'vitest';
import { join } from 'node:path';
import { mixedLoad, serverLoad, type TableCheck } from '../../bench/load.ts';
import { tempDir } from '../helpers.ts';

/**
 * Issue 14's load, small: the full-size runs (8 processes × 100 operations; 32 clients for a
 * minute) are `npm run bench load`, with their throughput. Here only what must hold whatever the
 * timing: every operation succeeds or fails with a named error, and the table then holds exactly
 * the rows the successful operations left — once each, in both formats, for our readers and for
 * DuckDB over the live files — and `verify` finds nothing.
 */
function expectTableExact(c: TableCheck): void {
  expect(Object.keys(c.readers).sort()).toEqual(['delta', 'duckdb over delta files', 'duckdb over iceberg files', 'iceberg']);
  for (const [reader, r] of Object.entries(c.readers)) {
    expect({ reader, duplicated: r.duplicated, missing: r.missing, unexpected: r.unexpected, wrongVersion: r.wrongVersion }).toEqual({ reader, duplicated: [], missing: [], unexpected: [], wrongVersion: [] });
    expect(r.rows, reader).toBe(c.expected);
  }
  expect(c.verify).toEqual([]);
}

describe('load', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('4 processes × 15 mixed operations with maintenance running: each clean, the table exact in both formats', async () => {
    const r = await mixedLoad({ warehouse: join(tmp.path, 'mixed', 'wh'), writers: 4, ops: 15, seed: 3 });
    expect(r.crashed).toEqual([]);
    expect(r.unclean).toEqual([]);
    expect(r.ops).toBe(60);
    // The seed gives every writer each kind of operation, and maintenance ran each of its own.
    for (const kind of ['append', 'merge', 'delete', 'compaction', 'snapshot_expiry', 'full_maintenance']) expect(r.byKind[kind]?.count, kind).toBeGreaterThan(0);
    // Merges and deletes that landed, so updated and deleted keys are part of the check.
    for (const kind of ['merge', 'delete']) expect(r.byKind[kind]!.count - r.byKind[kind]!.failed, kind).toBeGreaterThan(0);
    // Only commit conflicts may fail an operation (retries spent), and then it changed nothing.
    expect(Object.entries(r.failureMessages).filter(([k]) => k !== 'commit-conflict')).toEqual([]);
    // Maintenance did real work under the writers: files rewritten, snapshots expired.
    expect(r.byKind.compaction!.did + r.byKind.full_maintenance!.did).toBeGreaterThan(0);
    expect(r.byKind.snapshot_expiry!.did).toBeGreaterThan(0);
    // Rows left: the seed row, and appends and merges less deletes; some of each.
    expect(r.check.expected).toBeGreaterThan(1);
    expectTableExact(r.check);
  });

  test('twinlake serve under 16 concurrent posting clients: each answered, every row of a 2xx post once, none of a failed one', async () => {
    const r = await serverLoad({ dir: join(tmp.path, 'serve'), clients: 16, seconds: 5 });
    expect(r.unclean).toEqual([]);
    expect(r.requests).toBeGreaterThanOrEqual(16);
    expect(r.succeeded).toBeGreaterThan(0);
    // Every tenth post is malformed: refused whole, with the line it broke on.
    expect(r.badAccepted).toBe(0);
    expect(r.requests).toBeGreaterThanOrEqual(10);
    expect(r.failures.some((f) => f.malformed)).toBe(true);
    for (const f of r.failures.filter((f) => f.malformed)) {
      expect(f.status).toBe(400);
      expect(f.message).toMatch(/line \d+/);
    }
    // Every well-formed post committed: the default retry budget outlasts 16 concurrent posts,
    // and concurrent writers taking every metadata file name is a lost race that is retried.
    expect(r.failures.filter((f) => !f.malformed)).toEqual([]);
    const malformed = Math.floor(r.requests / 10);
    expect(r.failedByStatus).toEqual(malformed ? { 400: malformed } : {});
    expect(r.succeeded).toBe(r.requests - malformed);
    expect(r.check.expected).toBe(r.succeeded * 50);
    expectTableExact(r.check);
  });
});
