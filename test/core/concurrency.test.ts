import { describe, expect, it } from 'vitest';
import { mapLimit } from '../../src/core/concurrency.ts';

describe('mapLimit', () => {
  it('keeps the order of the items and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapLimit([50, 10, 30, 0, 20, 40], 3, async (ms, i) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return i * 2;
    });
    expect(out).toEqual([0, 2, 4, 6, 8, 10]);
    expect(peak).toBe(3);
  });

  it('rejects with the first failure after the running calls settle, and starts no more', async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const run = mapLimit([1, 2, 3, 4, 5, 6], 2, async (x) => {
      started.push(x);
      await new Promise((r) => setTimeout(r, x === 2 ? 5 : 30));
      if (x === 2) throw new Error('two');
      finished.push(x);
      return x;
    });
    await expect(run).rejects.toThrow('two');
    // 1 was running when 2 failed: it finished before the rejection; nothing else started.
    expect(finished).toEqual([1]);
    expect(started.sort()).toEqual([1, 2]);
  });
});
