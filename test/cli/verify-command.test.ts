import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/cli/exit-codes.ts';
import { parseJson } from '../../src/core/json.ts';
import { cli, listFiles, ndjson, tempDir } from '../helpers.ts';

describe('twinlake verify', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const run = (...args: string[]) => cli(['--warehouse', wh, ...args]);
  const input = join(tmp.path, 'a.ndjson');
  writeFileSync(input, ndjson([{ id: 1, v: 'a' }, { id: 2, v: 'b' }]));
  const drift = EXIT_CODES.find((c) => c.name === 'drift')!.code;
  const log = join(wh, 'v', 't', '_delta_log');
  const commit = (v: number) => join(log, `${String(v).padStart(20, '0')}.json`);

  it('a healthy table: no drift, exit 0', () => {
    expect(run('write', 'v.t', '--input', input).code).toBe(0);
    expect(run('write', 'v.t', '--input', input).code).toBe(0);
    const r = run('verify', 'v.t', '--all-versions');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^v\.t: no drift \(checked 2 snapshot\(s\), 3 delta version\(s\)\)$/m);
  });

  it('a commit emptied: exit 8 with the finding named; read-only without --repair; --repair fixes it and says how', () => {
    const text = readFileSync(commit(2), 'utf8');
    writeFileSync(commit(2), '');
    // Without --repair nothing is written.
    const table = join(wh, 'v', 't');
    const state = () => listFiles(table).map((f) => `${f} ${statSync(join(table, f)).mtimeMs}`);
    const before = state();
    const r = run('verify', 'v.t');
    expect(r.code, r.stderr).toBe(drift);
    expect(r.stdout).toMatch(/1 finding\(s\), 1 left/);
    expect(r.stdout).toContain(`delta-commit-empty  _delta_log/${String(2).padStart(20, '0')}.json, version 2`);
    expect(state()).toEqual(before);

    const j = run('verify', 'v.t', '--json');
    expect(j.code).toBe(drift);
    const out = parseJson(j.stdout);
    expect(out.ok).toBe(false);
    expect(out.findings[0]).toMatchObject({ kind: 'delta-commit-empty', version: 2, expected: 'the actions of the version', found: 'an empty file' });

    const fixed = run('verify', 'v.t', '--repair');
    expect(fixed.code, fixed.stderr).toBe(0);
    expect(fixed.stdout).toMatch(/repaired rewrote _delta_log\/0+2\.json from iceberg snapshot \d+/);
    expect(readFileSync(commit(2), 'utf8')).toBe(text);
    expect(run('verify', 'v.t', '--all-versions').code).toBe(0);
  });

  it('options follow the command rules; --help shows the drift exit code', () => {
    expect(run('verify', 'v.t', '--json', '--bogus').code).toBe(2);
    expect(run('verify').code).toBe(2);
    expect(run('verify', 'v.nope').code).toBe(4);
    const help = run('verify', '--help');
    expect(help.stdout).toContain('twinlake verify sales.orders --all-versions');
    expect(run('--help').stdout).toMatch(/8\s+drift:/);
    expect(readdirSync(log).length).toBeGreaterThan(0);
  });
});
