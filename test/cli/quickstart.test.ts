import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, tempDir } from '../helpers.ts';

describe('quickstart', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('refuses a --rows that is not a whole number of at least 1, before writing anything', () => {
    const wh = join(tmp.path, 'wh-bad');
    for (const rows of ['abc', '0', '-5', '1.5', '', '1e3']) {
      const r = cli(['--warehouse', wh, 'quickstart', '--rows', rows]);
      expect(r.code, rows).not.toBe(0);
      // An empty value is refused by the rule every option follows, before quickstart looks at it.
      const why = rows === '' ? 'expects a count, found an empty value' : `expects a whole number of at least 1, found ${JSON.stringify(rows)}`;
      expect(r.stderr.trim()).toBe(`twinlake: quickstart: --rows ${why}`);
    }
    expect(existsSync(join(wh, 'analytics'))).toBe(false);
  });

  it('says what a second run did: appended, with the new row count; --replace starts over', () => {
    const wh = join(tmp.path, 'wh');
    const first = cli(['--warehouse', wh, 'quickstart', '--rows', '1000']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.split('\n')[0]).toMatch(/^created analytics\.events with 1000 events \(snapshot \d+, delta version 1\)$/);
    const second = cli(['--warehouse', wh, 'quickstart', '--rows', '1000']);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.split('\n')[0]).toMatch(/^appended 1000 more events to analytics\.events, which already existed: it now holds 2000 rows \(snapshot \d+, delta version 2\)$/);
    expect(second.stdout).toMatch(/--replace/);
    expect(second.stdout).toMatch(/read \(delta\)\s+2000 rows/);
    const third = cli(['--warehouse', wh, 'quickstart', '--rows', '500', '--replace']);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout.split('\n')[0]).toMatch(/^replaced the rows of analytics\.events with 500 events \(snapshot \d+, delta version 3\)/);
    expect(third.stdout).toMatch(/read \(iceberg\)\s+500 rows/);
    expect(third.stdout).toMatch(/read \(delta\)\s+500 rows/);
  });
});
