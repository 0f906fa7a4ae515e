import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, ndjson, repoRoot, tempDir, type CliResult } from '../helpers.ts';

describe('twinlake alter, files, tables --long, describe and history by path', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const run = (...args: string[]) => cli(['--warehouse', wh, ...args]);
  const input = join(tmp.path, 'a.ndjson');
  writeFileSync(input, ndjson([{ id: 1, v: 'a' }, { id: 2, v: 'b' }, { id: 3, v: 'c' }]));

  it('alter sets, unsets and refuses properties; a write with other properties points to alter', () => {
    expect(run('write', 'c.t', '--input', input).code).toBe(0);
    const ignored = run('write', 'c.t', '--input', input, '--property', 'write.delete.mode=merge-on-read');
    expect(ignored.code).not.toBe(0);
    expect(ignored.stderr).toMatch(/^twinlake: table c\.t: property write\.delete\.mode is not set.*twinlake alter c\.t --property write\.delete\.mode=merge-on-read/);
    const a = run('alter', 'c.t', '--property', 'write.delete.mode=merge-on-read');
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout).toMatch(/altered c\.t: write\.delete\.mode=merge-on-read/);
    expect(parseJson(run('describe', 'c.t', '--json').stdout).properties['write.delete.mode']).toBe('merge-on-read');
    const d = run('delete', 'c.t', '--where', 'id = 1');
    expect(d.stdout).toMatch(/1 delete file\(s\) written/);
    expect(run('write', 'c.t', '--input', input, '--property', 'write.delete.mode=merge-on-read').code).toBe(0);
    const bad = run('alter', 'c.t', '--property', 'write.merge.mode=sometimes');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/write\.merge\.mode: expected copy-on-write or merge-on-read/);
    expect(run('alter', 'c.t').code).not.toBe(0);
    const u = run('alter', 'c.t', '--unset', 'write.delete.mode', '--json');
    expect(parseJson(u.stdout).changed).toEqual(['write.delete.mode']);
    const f = run('alter', 'c.t', '--formats', 'iceberg');
    expect(f.code, f.stderr).toBe(0);
    expect(f.stdout).toMatch(/formats\s+iceberg$/m);
  });

  it('--json names merges and deletes; a Delta-only write prints no Iceberg snapshot', () => {
    const m = parseJson(run('write', 'c.m', '--input', input, '--mode', 'merge', '--key', 'id', '--json').stdout);
    expect(m.mode).toBe('merge');
    const d = parseJson(run('delete', 'c.m', '--where', 'id = 2', '--json').stdout);
    expect(d.mode).toBe('delete');
    const w = run('write', 'c.delta', '--input', input, '--formats', 'delta');
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).not.toMatch(/undefined|iceberg snapshot/);
    expect(w.stdout).toMatch(/delta version\s+0/);
  });

  it('--exclude-columns keeps the columns that steer a CDC merge out of the table', () => {
    const feed = join(tmp.path, 'cdc.ndjson');
    writeFileSync(feed, ndjson([{ id: 1, v: 'x', op: 'U', seq: 2 }, { id: 1, v: 'old', op: 'U', seq: 1 }, { id: 3, v: 'gone', op: 'D', seq: 3 }]));
    expect(run('write', 'c.cdc', '--input', input).code).toBe(0);
    const r = run('write', 'c.cdc', '--input', feed, '--mode', 'merge', '--key', 'id', '--delete-when', "op = 'D'", '--order-by', 'seq', '--exclude-columns', 'op,seq');
    expect(r.code, r.stderr).toBe(0);
    const rows = run('read', 'c.cdc', '--format', 'delta', '--output', 'ndjson').stdout.trim().split('\n').map((l) => JSON.parse(l)).sort((a, b) => a.id - b.id);
    expect(rows).toEqual([{ id: 1, v: 'x' }, { id: 2, v: 'b' }]);
  });

  it('files lists the live files; tables --long; describe and history by path', () => {
    expect(run('write', 'c.f', '--input', input).code).toBe(0);
    expect(run('write', 'c.f', '--input', input, '--mode', 'overwrite').code).toBe(0);
    const files = parseJson(run('files', 'c.f', '--json').stdout);
    expect(files.files).toHaveLength(1);
    expect(files.files[0].records).toBe(3);
    const text = run('files', 'c.f').stdout.trim().split('\n');
    expect(text).toHaveLength(2);
    expect(text[0]).toBe(files.files[0].path.replace(/^file:\/\//, ''));
    expect(readdirSync(join(wh, 'c', 'f', 'data')).filter((n) => n.endsWith('.parquet'))).toHaveLength(2);
    const older = parseJson(run('files', 'c.f', '--version', '1', '--format', 'delta', '--json').stdout);
    expect(older.files[0].path).not.toBe(files.files[0].path);

    const long = run('tables', '--long');
    expect(long.code, long.stderr).toBe(0);
    expect(long.stdout).toMatch(/^c\.f\s+delta,iceberg\s+3\s+1\s+\d+$/m);
    const longJson = parseJson(run('tables', '--long', '--json').stdout);
    expect(longJson.find((t: { name: string }) => t.name === 'c.delta')).toMatchObject({ formats: ['delta'], rows: 3 });

    const dir = join(wh, 'c', 'f');
    const d = run('describe', dir, '--json');
    expect(d.code, d.stderr).toBe(0);
    expect(parseJson(d.stdout)).toMatchObject({ records: 3, formats: ['delta', 'iceberg'] });
    const h = run('history', dir, '--json');
    expect(h.code, h.stderr).toBe(0);
    expect(parseJson(h.stdout).map((e: { operation: string }) => e.operation)).toEqual(['overwrite', 'append']);
  });

  it('the quickstart hint for DuckDB reads the live files, not a data/*.parquet glob', () => {
    const other = join(tmp.path, 'qs');
    const r = cli(['--warehouse', other, 'quickstart', '--rows', '500']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/\*\.parquet/);
    expect(r.stdout).toMatch(/twinlake files analytics\.events/);
    const live = parseJson(cli(['--warehouse', other, 'files', 'analytics.events', '--json']).stdout);
    for (const f of live.files) expect(r.stdout).toContain(f.path.replace(/^file:\/\//, ''));
  });
});

/**
 * A read-only view of a warehouse, as an analyst with a read-only mount has it. Root ignores
 * file permissions, so either a read-only bind mount, or the CLI run as `nobody`.
 */
interface ReadOnlyView {
  run: (args: string[]) => CliResult;
  cleanup: () => void;
}

function readOnlyViews(dir: string): Record<string, ReadOnlyView> {
  const out: Record<string, ReadOnlyView> = {};
  // Permissions first: the mount makes the folder read-only for root too.
  const nobody = asNobody(dir);
  if (nobody) out['the CLI run as nobody'] = nobody;
  const mount = readOnlyMount(dir);
  if (mount) out['a read-only bind mount'] = mount;
  return out;
}

function readOnlyMount(dir: string): ReadOnlyView | undefined {
  // Mounted over itself, so the absolute locations the catalog holds stay valid.
  try {
    execFileSync('mount', ['--bind', dir, dir], { stdio: 'ignore' });
    try {
      execFileSync('mount', ['-o', 'remount,ro,bind', dir], { stdio: 'ignore' });
    } catch (e) {
      execFileSync('umount', [dir], { stdio: 'ignore' });
      throw e;
    }
    return {
      run: (args) => cli(['--warehouse', dir, ...args]),
      cleanup: () => execFileSync('umount', [dir], { stdio: 'ignore' }),
    };
  } catch {
    return undefined; // not root, or not allowed to mount here
  }
}

function asNobody(dir: string): ReadOnlyView | undefined {
  const asNobody = ['--reuid=65534', '--regid=65534', '--clear-groups'];
  if (spawnSync('setpriv', [...asNobody, 'true']).status === 0) {
    // nobody may read (not write) the warehouse and everything above it.
    const open = (p: string) => chmodSync(p, statSync(p).isDirectory() ? 0o755 : 0o644);
    const walk = (p: string) => {
      open(p);
      if (statSync(p).isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
    };
    walk(dir);
    for (let p = join(dir, '..'); p !== '/'; p = join(p, '..')) chmodSync(p, statSync(p).mode | 0o005);
    // An analyst has a temp folder of their own, whatever the machine's /tmp allows.
    const tmp = join(dir, '..', 'nobody-tmp');
    mkdirSync(tmp, { recursive: true });
    chmodSync(tmp, 0o1777);
    return {
      run: (args) => {
        const r = spawnSync('setpriv', [...asNobody, process.execPath, join(repoRoot, 'bin/twinlake.mjs'), '--warehouse', dir, ...args], { cwd: '/', encoding: 'utf8', env: { ...process.env, TMPDIR: tmp } });
        return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
      },
      cleanup: () => {},
    };
  }
  return undefined;
}

describe('a read-only warehouse', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const input = join(tmp.path, 'a.ndjson');
  writeFileSync(input, ndjson([{ id: 1 }, { id: 2 }]));
  expect(cli(['--warehouse', wh, 'write', 'ro.t', '--input', input]).code).toBe(0);
  expect(cli(['--warehouse', wh, 'write', 'ro.d', '--input', input, '--formats', 'delta']).code).toBe(0);
  const views = readOnlyViews(wh);
  afterAll(() => {
    for (const v of Object.values(views)) v.cleanup(); // unmount before the folder goes
    tmp.cleanup();
  });
  if (Object.keys(views).length === 0) {
    console.warn('skipped the read-only warehouse tests: neither a read-only bind mount (needs root) nor running the CLI as nobody (setpriv) is possible here');
  }

  for (const [how, v] of Object.entries(views)) {
    it(`through ${how}: reads, describes, lists and shows history and files; a write fails with an I/O error`, () => {
      for (const args of [['read', 'ro.t', '--output', 'ndjson'], ['read', 'ro.d', '--output', 'ndjson'], ['describe', 'ro.t'], ['history', 'ro.t'], ['tables', '--long'], ['files', 'ro.t']]) {
        const r = v.run(args);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(r.stderr).toBe('');
      }
      expect(v.run(['read', 'ro.t', '--output', 'ndjson']).stdout.trim().split('\n')).toHaveLength(2);
      expect(v.run(['tables']).stdout.trim().split('\n')).toEqual(['ro.d', 'ro.t']);
      const before = readdirSync(join(wh, 'ro', 't', 'data'));
      const w = v.run(['write', 'ro.t', '--input', input]);
      expect(w.code).not.toBe(0);
      expect(w.stderr.trim().split('\n')).toHaveLength(1);
      expect(w.stderr).toMatch(/^twinlake: .*not writable/);
      expect(readdirSync(join(wh, 'ro', 't', 'data'))).toEqual(before);
    });
  }
});

/**
 * Read-only commands run by a user who may write leave an empty `catalog.db-wal` behind (and
 * maybe no `-shm`); a reader in a folder it cannot write must still open the catalog.
 */
describe('a read-only warehouse with an empty WAL file left over', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const input = join(tmp.path, 'a.ndjson');
  writeFileSync(input, ndjson([{ id: 1 }, { id: 2 }]));
  expect(cli(['--warehouse', wh, 'write', 'ro.t', '--input', input]).code).toBe(0);
  writeFileSync(join(wh, 'catalog.db-wal'), '');
  rmSync(join(wh, 'catalog.db-shm'), { force: true });
  const views = readOnlyViews(wh);
  afterAll(() => {
    for (const v of Object.values(views)) v.cleanup();
    tmp.cleanup();
  });

  for (const [how, v] of Object.entries(views)) {
    it(`through ${how}: reads as if the WAL file were absent`, () => {
      const r = v.run(['read', 'ro.t', '--output', 'ndjson']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim().split('\n')).toHaveLength(2);
      const t = v.run(['tables']);
      expect(t.code, t.stderr).toBe(0);
      expect(t.stdout.trim().split('\n')).toEqual(['ro.t']);
    });
  }
});
