import { execFile, execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/io/local-store.ts';
import { objectStoreContract } from './object-store-contract.ts';
import { errorOf, repoRoot } from '../helpers.ts';


async function tempDir(): Promise<string> {
  return fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-local-store-'));
}

objectStoreContract('LocalStore', async () => {
  const dir = await tempDir();
  return { store: new LocalStore(dir), cleanup: () => fs.rm(dir, { recursive: true, force: true }) };
});

async function allNames(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true });
  return entries.map(String).sort();
}

/** Runs a Node child that imports our TypeScript sources (through tsx) and prints JSON. */
function runChild(script: string, args: string[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, '--', ...args], { cwd: repoRoot, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`child failed: ${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

describe('LocalStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await tempDir();
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('is rooted at the file:// URI of its absolute directory and maps keys below it', () => {
    const store = new LocalStore(dir);
    expect(store.root).toBe(`file://${dir}`);
    expect(store.localPath('a/b c/d=1.parquet')).toBe(path.join(dir, 'a', 'b c', 'd=1.parquet'));
    expect(() => store.localPath('../x')).toThrow(/local store/);
    expect(() => store.localPath('/etc/passwd')).toThrow(/local store/);
  });

  it('refuses the filesystem root as its directory', () => {
    expect(() => new LocalStore('/')).toThrow(/below the filesystem root/);
  });

  it('writes objects as plain files at their local path', async () => {
    const store = new LocalStore(dir);
    await store.put('nested/deep/file.json', '{"a":1}');
    expect(await fs.readFile(path.join(dir, 'nested/deep/file.json'), 'utf8')).toBe('{"a":1}');
    expect(await store.putIfAbsent('nested/other/created.json', 'c')).toBe(true);
    expect(await fs.readFile(path.join(dir, 'nested/other/created.json'), 'utf8')).toBe('c');
  });

  it('leaves no temporary files after put, putIfAbsent and lost putIfAbsent races', async () => {
    const store = new LocalStore(dir);
    await store.put('m/a.json', 'one');
    await store.put('m/a.json', 'two');
    await store.putIfAbsent('m/b.json', 'b');
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.putIfAbsent('m/c.json', String(i))));
    expect(await allNames(dir)).toEqual(['m', 'm/a.json', 'm/b.json', 'm/c.json']);
  });

  it('does not list temporary files a crashed writer left behind', async () => {
    const store = new LocalStore(dir);
    await store.put('t/real.json', 'x');
    await fs.writeFile(path.join(dir, 't', '.real.json.0123456789abcdef.tmp'), 'half');
    const listed: string[] = [];
    for await (const m of store.list('t/')) listed.push(m.path);
    expect(listed).toEqual(['t/real.json']);
  });

  it('keeps the emptied folder after deleting its last object', async () => {
    const store = new LocalStore(dir);
    await store.put('keep/x', 'x');
    await store.delete('keep/x');
    expect((await fs.stat(path.join(dir, 'keep'))).isDirectory()).toBe(true);
  });

  it('gives exactly one of two processes each putIfAbsent key', async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `race/${String(i).padStart(5, '0')}.json`);
    const startAt = Date.now() + 1500;
    const script = `
      const { LocalStore } = await import(${JSON.stringify(path.join(repoRoot, 'src/io/local-store.ts'))});
      const [dir, who, startAt, ...keys] = process.argv.slice(1);
      const store = new LocalStore(dir);
      while (Date.now() < Number(startAt)) await new Promise((r) => setTimeout(r, 1));
      const won = [];
      for (const k of keys) if (await store.putIfAbsent(k, who + ' ' + k)) won.push(k);
      process.stdout.write(JSON.stringify(won));
    `;
    const [a, b] = (await Promise.all([
      runChild(script, [dir, 'A', String(startAt), ...keys]),
      runChild(script, [dir, 'B', String(startAt), ...keys]),
    ])) as [string[], string[]];
    expect([...a, ...b].sort()).toEqual(keys);
    expect(a.filter((k) => b.includes(k))).toEqual([]);
    const store = new LocalStore(dir);
    for (const k of keys) {
      const owner = a.includes(k) ? 'A' : 'B';
      expect(new TextDecoder().decode(await store.get(k))).toBe(`${owner} ${k}`);
    }
    expect((await allNames(path.join(dir, 'race'))).length).toBe(keys.length);
  }, 60_000);

  // Tests run as root, which ignores permission bits; both cases below also stop root.
  it('fails with a clear io error when a parent of the key is a regular file', async () => {
    await fs.writeFile(path.join(dir, 'blocker'), 'file, not a folder');
    const store = new LocalStore(path.join(dir, 'blocker', 'warehouse'));
    for (const write of [store.put('t/x.json', 'x'), store.putIfAbsent('t/x.json', 'x')]) {
      const e = await errorOf(write);
      expect(e.kind).toBe('io');
      expect(e.message).toContain(path.join(dir, 'blocker', 'warehouse', 't', 'x.json'));
      expect(e.message).toMatch(/not a directory/);
      expect(e.retryable).toBe(false);
    }
  });

  it('fails with a clear io error when the folder is not writable (immutable attribute)', async (ctx) => {
    const locked = path.join(dir, 'locked');
    await fs.mkdir(locked);
    try {
      execFileSync('chattr', ['+i', locked], { stdio: 'ignore' });
    } catch {
      ctx.skip('chattr +i is not available on this filesystem');
    }
    try {
      const store = new LocalStore(locked);
      const e = await errorOf(store.put('x.json', 'x'));
      expect(e.kind).toBe('io');
      expect(e.message).toContain(path.join(locked, 'x.json'));
      expect(e.message).toMatch(/not writable/);
      expect((await errorOf(store.putIfAbsent('sub/y.json', 'y'))).message).toMatch(/not writable/);
      expect(await allNames(locked)).toEqual([]);
    } finally {
      execFileSync('chattr', ['-i', locked], { stdio: 'ignore' });
    }
  });
});
