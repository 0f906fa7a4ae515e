import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, listFiles, ndjson, tempDir } from '../helpers.ts';

/**
 * Bad input never changes a table: after each failure the Iceberg pointer, the Delta log and the
 * set of files are exactly as before, and the error names what and where.
 */
describe('bad input', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const tableDir = join(wh, 'sales', 'orders');
  const good = join(tmp.path, 'good.ndjson');

  const state = () => ({
    files: listFiles(tableDir),
    hint: readFileSync(join(tableDir, 'metadata', 'version-hint.text'), 'utf8'),
    describe: JSON.parse(cli(['--warehouse', wh, 'describe', 'sales.orders', '--json']).stdout),
  });

  beforeAll(() => {
    writeFileSync(good, ndjson([{ id: 1, name: 'a', amount: 1.5 }, { id: 2, name: 'b', amount: 2.5 }]));
    const r = cli(['--warehouse', wh, 'write', 'sales.orders', '--input', good]);
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(() => tmp.cleanup());

  function expectUnchanged(run: () => { code: number; stderr: string }, message: RegExp) {
    const before = state();
    const r = run();
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    const after = state();
    expect(after.files).toEqual(before.files);
    expect(after.hint).toEqual(before.hint);
    expect(after.describe.currentSnapshotId).toEqual(before.describe.currentSnapshotId);
    expect(after.describe.deltaVersion).toEqual(before.describe.deltaVersion);
  }

  it('malformed JSON names the line', () => {
    const f = join(tmp.path, 'bad.ndjson');
    writeFileSync(f, '{"id": 3, "name": "c", "amount": 1}\n{"id": 4, "name": "d", "amount": 2}\n{"id": 5, "name": \n');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', f]), /line 3/);
  });

  it('a CSV row with the wrong column count names the line', () => {
    const f = join(tmp.path, 'bad.csv');
    writeFileSync(f, 'id,name,amount\n3,c,1.5\n4,d\n5,e,2.5\n');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', f]), /line 3/);
  });

  it('a CSV row wider than the header early in a small file names the line', () => {
    // DuckDB's sniffer would take the wider row for the header and read no rows (or only those below it).
    const early = join(tmp.path, 'wide-early.csv');
    writeFileSync(early, 'id,name,amount\n3,c,1.5,extra\n');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', early]), /wide-early\.csv: line 2: expected 3 columns \(id,name,amount\), found 4/);
    const middle = join(tmp.path, 'wide-middle.csv');
    writeFileSync(middle, 'id,name,amount\n3,c,1.5\n4,d,2.5,x\n5,e,3.5,y\n');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', middle]), /wide-middle\.csv: line 3: expected 3 columns \(id,name,amount\), found 4/);
    const fresh = cli(['--warehouse', wh, 'write', 'sales.wide', '--input', middle]);
    expect(fresh.code).not.toBe(0);
    expect(fresh.stderr).toMatch(/line 3: expected 3 columns/);
    expect(cli(['--warehouse', wh, 'tables']).stdout).not.toMatch(/sales\.wide/);
  });

  it('a value that does not fit the column type names column, row and value', () => {
    const f = join(tmp.path, 'badtype.ndjson');
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: i + 10, name: `n${i}`, amount: 1 }));
    writeFileSync(f, ndjson(rows) + JSON.stringify({ id: 'not-a-number', name: 'x', amount: 3 }) + '\n');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', f]), /id.*(row|line) 51.*not-a-number|not-a-number.*id.*(row|line) 51/);
  });

  it('an empty input commits nothing and says so', () => {
    const f = join(tmp.path, 'empty.ndjson');
    writeFileSync(f, '');
    expectUnchanged(() => cli(['--warehouse', wh, 'write', 'sales.orders', '--input', f]), /no records|empty/i);
  });

  it('table names with path characters are refused', () => {
    for (const name of ['../x', 'a/b', 'sales.../x', 'sales.a\\b']) {
      const r = cli(['--warehouse', wh, 'write', name, '--input', good]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/name|identifier/i);
    }
    expect(listFiles(wh).filter((f) => f.includes('..') || f.startsWith('a/'))).toEqual([]);
  });

  it('an unknown table or namespace is named', () => {
    let r = cli(['--warehouse', wh, 'read', 'sales.nope']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/sales\.nope/);
    r = cli(['--warehouse', wh, 'describe', 'nowhere.orders']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/nowhere/);
  });

  it('a warehouse that is not writable is a clear error', () => {
    const blocker = join(tmp.path, 'not-a-dir');
    writeFileSync(blocker, 'x');
    const r = cli(['--warehouse', join(blocker, 'wh'), 'write', 'sales.orders', '--input', good]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/warehouse|not writable|cannot/i);
    expect(r.stderr).toContain(blocker);
  });

  it('a data directory that cannot be written fails without changing the table', (ctx) => {
    const ro = join(tmp.path, 'ro');
    mkdirSync(ro);
    const first = cli(['--warehouse', ro, 'write', 'a.t', '--input', good]);
    expect(first.code, first.stderr).toBe(0);
    const before = listFiles(ro);
    const dataDir = join(ro, 'a', 't', 'data');
    // Permission bits do not bind root; an immutable directory does.
    if (spawnSync('chattr', ['+i', dataDir]).status !== 0) return ctx.skip('chattr +i is not supported on this filesystem');
    try {
      const r = cli(['--warehouse', ro, 'write', 'a.t', '--input', good]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(/not writable|permission|cannot/i);
    } finally {
      spawnSync('chattr', ['-i', dataDir]);
    }
    expect(listFiles(ro).filter((f) => !f.startsWith('catalog.db'))).toEqual(before.filter((f) => !f.startsWith('catalog.db')));
  });
});
