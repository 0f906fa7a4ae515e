import { afterAll, describe, expect, it } from 'vitest';
import { manyPartitions } from '../../bench/many-partitions.ts';
import { tempDir } from '../helpers.ts';

// The 10,000-partition case under 512 MB runs as `npm run bench partitions`; this is its small twin.
describe('a write into thousands of partitions', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('writes 2,000 hour partitions of a 12-column nested table under a 256 MB engine limit', async () => {
    const r = await manyPartitions({ dir: tmp.path, rows: 12_000, hours: 2_000, memoryLimit: '256MB', threads: 2 });
    console.log(`2,000 partitions, 12,000 rows, 256 MB engine limit: ${r.files} files in ${(r.writeMs / 1000).toFixed(1)} s, peak RSS ${r.peakRssMb} MB`);
    expect(r.partitions).toBe(2_000);
    expect(r.files).toBeGreaterThanOrEqual(2_000);
    expect(r.misplacedFiles).toBe(0);
    for (const [reader, totals] of Object.entries(r.read)) expect(totals, reader).toEqual(r.expected);
  }, 180_000);
});
