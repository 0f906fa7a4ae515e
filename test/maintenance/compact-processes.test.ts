import { afterAll, describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { compact, type CompactResult } from '../../src/maintenance/compact.ts';
import { Lakehouse } from '../../src/index.ts';
import { runWorker, tempDir } from '../helpers.ts';

describe('compaction racing four appending processes', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('loses no row: every appended row is in both formats once, compacted or not', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('proc.t');
      // Five writers on one table: room to retry lost swaps for all of them.
      const properties = { 'commit.retry.num-retries': '100', 'commit.retry.min-wait-ms': '5', 'commit.retry.max-wait-ms': '200' };
      for (let b = 0; b < 5; b++) await t.append(Array.from({ length: 10 }, (_, i) => ({ writer: 'S', batch: b, i, key: `S-${b}-${i}` })), { properties });

      const workers = Promise.all(['A', 'B', 'C', 'D'].map((w) => runWorker('append-worker.ts', [tmp.path, 'proc.t', w, '8', '10'])));
      let running = true;
      void workers.finally(() => (running = false));
      const results: CompactResult[] = [];
      // A compaction that runs out of retries against the writers is a conflict, and simply runs again.
      // Compaction runs again and again while the writers append; at least once after they are done.
      do {
        try {
          results.push(await compact(t));
        } catch (e) {
          if (!isTwinlakeError(e, 'commit-conflict')) throw e;
        }
      } while (running);
      // Compactions that committed while the writers were still appending (their files included).
      const during = results.filter((r) => r.filesRewritten > 0 && r.snapshotId !== undefined);
      results.push(await compact(t));
      for (const w of await workers) expect(w.code, w.stderr).toBe(0);

      expect(during.length).toBeGreaterThan(1);
      expect(results.every((r) => r.groupsSkipped === 0)).toBe(true);
      const expected = new Set<string>();
      for (let b = 0; b < 5; b++) for (let i = 0; i < 10; i++) expected.add(`S-${b}-${i}`);
      for (const w of ['A', 'B', 'C', 'D']) for (let b = 0; b < 8; b++) for (let i = 0; i < 10; i++) expected.add(`${w}-${b}-${i}`);
      for (const format of ['iceberg', 'delta'] as const) {
        const keys = (await t.read({ format })).map((r) => String(r.key));
        expect(keys).toHaveLength(expected.size);
        expect(new Set(keys)).toEqual(expected);
      }
      // The last compaction, after the writers, left one file.
      expect((await t.files()).files).toHaveLength(1);
      expect((await t.verify({ allVersions: true })).findings).toEqual([]);
    } finally {
      await lake.close();
    }
  }, 120_000);
});
