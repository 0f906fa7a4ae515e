import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';
import { hasTestdata, repoRoot, testdata } from './testdata.ts';

/**
 * Says at the end of a run how many conformance tests were skipped because ../shared/testdata
 * (the tables other engines wrote) is absent: a green run without them has checked much less, and
 * vitest's own summary does not say why tests were skipped. A conformance test is one in a file
 * that reads the test data (names `testdata` or `../shared/testdata`).
 */
export default class ConformanceReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    if (hasTestdata) return;
    let skipped = 0;
    const files: string[] = [];
    for (const m of modules) {
      if (!readsTestdata(m.moduleId)) continue;
      let n = 0;
      for (const t of m.children.allTests()) if (t.result().state === 'skipped') n++;
      if (n === 0) continue;
      skipped += n;
      files.push(relative(repoRoot, m.moduleId));
    }
    if (skipped === 0) return;
    process.stdout.write(
      `\n  Conformance: ${skipped} test${skipped === 1 ? '' : 's'} skipped in ${files.length} file${files.length === 1 ? '' : 's'} because ${testdata} is absent` +
        ` (the tables other engines wrote; put them there to run them):\n${files.sort().map((f) => `    ${f}\n`).join('')}`,
    );
  }
}

function readsTestdata(file: string): boolean {
  try {
    return /\btestdata\b|\.\.\/shared\/testdata/.test(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
}
