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

  it('rejects with the first failure', async () => {
    await expect(mapLimit([1, 2, 3], 2, async (x) => {
      if (x === 2) throw new Error('two');
      return x;
    })).rejects.toThrow('two');
  });
});
