import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from '../helpers.ts';

/**
 * `npm test` without the other engines' tables still passes, and says at the end how many
 * conformance tests that left out. Runs vitest itself on one conformance file, with the test data
 * pointed at a folder that does not exist.
 */
describe('the conformance reporter', () => {
  it('says how many conformance tests were skipped because the test data is absent', () => {
    const tmp = tempDir();
    try {
      const r = spawnSync(process.execPath, [join(repoRoot, 'node_modules/vitest/vitest.mjs'), 'run', 'test/format/dv-conformance.test.ts'], {
        cwd: repoRoot,
        encoding: 'utf8',
        env: { ...process.env, TWINLAKE_TESTDATA: join(tmp.path, 'absent'), NO_COLOR: '1', CI: '1' },
      });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      const lines = r.stdout.trimEnd().split('\n');
      expect(lines.slice(-2)).toEqual([
        `  Conformance: 2 tests skipped in 1 file because ${join(tmp.path, 'absent')} is absent (the tables other engines wrote; put them there to run them):`,
        '    test/format/dv-conformance.test.ts',
      ]);
    } finally {
      tmp.cleanup();
    }
  });
});
