import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { runWorker, tempDir } from '../helpers.ts';

describe('two writer processes on one table', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('both succeed: 40 snapshots, 40 Delta versions in Iceberg order, every row once in both formats', async () => {
    const [a, b] = await Promise.all([
      runWorker('append-worker.ts', [tmp.path, 'conc.t', 'A', '20', '25']),
      runWorker('append-worker.ts', [tmp.path, 'conc.t', 'B', '20', '25']),
    ]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);

    const lake = await Lakehouse.open({ warehouse: tmp.path });
    try {
      const t = lake.table('conc.t');
      const history = (await t.history()).reverse();
      expect(history).toHaveLength(40);
      expect(history.map((h) => h.deltaVersion)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));

      // The Delta log has no gaps: versions 0..40, and each mirrors the snapshot that names it.
      const log = readdirSync(join(tmp.path, 'conc', 't', '_delta_log')).filter((f) => /^\d{20}\.json$/.test(f));
      expect(log.map((f) => Number(f.slice(0, 20)))).toEqual(Array.from({ length: 41 }, (_, i) => i));

      const expected = new Set<string>();
      for (const w of ['A', 'B']) for (let bt = 0; bt < 20; bt++) for (let i = 0; i < 25; i++) expected.add(`${w}-${bt}-${i}`);
      for (const format of ['iceberg', 'delta'] as const) {
        const keys = (await t.read({ format })).map((r) => String(r.key));
        expect(keys).toHaveLength(1000);
        expect(new Set(keys)).toEqual(expected);
      }
      // Each Delta version holds the batch of the snapshot it mirrors.
      for (const h of history.slice(0, 5)) {
        const viaDelta = await t.read({ format: 'delta', version: h.deltaVersion });
        const viaIceberg = await t.read({ snapshotId: h.snapshotId });
        expect(viaDelta.map((r) => r.key).sort()).toEqual(viaIceberg.map((r) => r.key).sort());
      }
    } finally {
      await lake.close();
    }
  });
});
