import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileUri } from '../../src/core/uri.ts';
import { repoRoot, tempDir } from '../helpers.ts';
import { crashMatrix } from './crash-matrix.ts';
import { ALL_CASES, caseInputs } from './crash-cases.ts';
import type { CrashWarehouse } from './crash-lake.ts';
import type { CrashCall } from './crash-point.ts';

/**
 * Real deaths for a sample of the matrix: a child process runs the operation and SIGKILLs itself
 * at storage call k (crash-worker.ts), so nothing of it runs after that call, and this process
 * makes the same checks as for the in-process crashes. The sample: a write before its commit,
 * at the catalog's compare-and-swap (lost and landed), and at the Delta commit; a merge-on-read
 * delete at its swap; a compaction at its swap.
 */
const SAMPLE: { name: string; at: (call: CrashCall, landed: boolean) => boolean }[] = [
  { name: 'append', at: (call, landed) => call === 'swap' || (call === 'putIfAbsent' && landed) },
  { name: 'delete merge-on-read', at: (call) => call === 'swap' },
  { name: 'compaction', at: (call) => call === 'swap' },
];

function killedAt(w: CrashWarehouse, name: string, k: number, landed: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', join(repoRoot, 'test/workers/crash-worker.ts'), w.warehouse, w.dbPath, name, String(k), landed ? 'landed' : 'lost', JSON.stringify(caseInputs(w.warehouse))];
    const child = spawn(process.execPath, args, { cwd: repoRoot });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (signal === 'SIGKILL') resolve();
      else reject(new Error(`${name} at call ${k}: expected the worker killed by SIGKILL, it exited with ${code}: ${stderr}`));
    });
  });
}

describe('a process killed at a storage call', () => {
  const tmp = tempDir('twinlake-kill-');
  afterAll(() => tmp.cleanup());
  let n = 0;
  for (const s of SAMPLE) {
    it(s.name, async () => {
      const dir = join(tmp.path, `w${n++}`);
      const w = { warehouse: fileUri(join(dir, 'wh')), dbPath: join(dir, 'catalog.db') };
      const c = ALL_CASES.find((x) => x.name === s.name)!;
      const run = await crashMatrix(w, c, {
        only: (_k, call, landed) => s.at(call, landed),
        die: (k, landed) => killedAt(w, c.name, k, landed),
      });
      expect(run.points).toBeGreaterThanOrEqual(2);
    }, 300_000);
  }
});
