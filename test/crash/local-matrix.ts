import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fileUri } from '../../src/core/uri.ts';
import { tempDir } from '../helpers.ts';
import { callTable, crashMatrix, type CrashCase, type CrashRun } from './crash-matrix.ts';

/**
 * The crash matrix of `cases` on the local store, one test per operation; the calls of each
 * (N, the effectful ones, the points run) are printed as README table rows at the end.
 */
export function describeLocalMatrix(title: string, cases: CrashCase[]): void {
  describe(`a crash at every storage call, local store: ${title}`, () => {
    const tmp = tempDir('twinlake-crash-');
    const runs: CrashRun[] = [];
    afterAll(() => {
      console.log(`| operation | storage calls N | effectful | points run |\n${callTable(runs)}`);
      tmp.cleanup();
    });
    let n = 0;
    for (const c of cases) {
      it(c.name, async () => {
        const dir = join(tmp.path, `w${n++}`);
        const run = await crashMatrix({ warehouse: fileUri(join(dir, 'wh')), dbPath: join(dir, 'catalog.db') }, c);
        runs.push(run);
        expect(run.points).toBeGreaterThanOrEqual(2 * run.effectful);
      }, 600_000);
    }
  });
}
