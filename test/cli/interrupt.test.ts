import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, listFiles, repoRoot, tempDir } from '../helpers.ts';

/**
 * A write stopped by Ctrl-C, SIGTERM or SIGKILL leaves the table as it was: no file under data/
 * that no commit names, and no staging folder inside the table (its files are encoded in a local
 * staging folder elsewhere and moved in only when complete). SIGINT and SIGTERM also remove the
 * staging folder itself.
 */
describe('an interrupted write', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const tableDir = join(wh, 'big', 'events');
  const input = join(tmp.path, 'events.ndjson');
  afterAll(() => tmp.cleanup());

  beforeAll(async () => {
    const out = createWriteStream(input);
    // Large enough that encoding takes a good part of a second even on a fast machine.
    for (let chunk = 0; chunk < 30; chunk++) {
      let text = '';
      for (let i = 0; i < 50_000; i++) {
        const id = chunk * 50_000 + i;
        text += `{"id":${id},"user":"user_${id % 5000}","amount":${(id % 1000) / 10},"tags":["t${id % 7}"],"at":{"city":"c${id % 97}","zip":${id % 100000}}}\n`;
      }
      if (!out.write(text)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
    out.end();
    await finished(out);
    const first = cli(['--warehouse', wh, 'write', 'big.events', '--input', input]);
    expect(first.code, first.stderr).toBe(0);
  });

  const state = () => ({
    data: listFiles(join(tableDir, 'data')),
    hint: readFileSync(join(tableDir, 'metadata', 'version-hint.text'), 'utf8'),
    delta: listFiles(join(tableDir, '_delta_log')),
  });

  /** Files inside any staging folder of the child's temporary directory. */
  const staged = (scratch: string): string[] =>
    readdirSync(scratch)
      .filter((n) => n.startsWith('twinlake-staging-'))
      .flatMap((n) => listFiles(join(scratch, n)));

  async function interrupt(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; scratch: string }> {
    const scratch = join(tmp.path, `scratch-${signal}`);
    mkdirSync(scratch);
    const child = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), '--warehouse', wh, 'write', 'big.events', '--input', input], {
      env: { ...process.env, TMPDIR: scratch },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, sig) => r({ code, signal: sig })));
    // Stop the write while the engine is encoding: once a file appears in its staging folder (or,
    // wherever staging is, once any new file appears in the table).
    const before = listFiles(tableDir).length;
    let sent = false;
    for (let i = 0; i < 6000 && child.exitCode === null; i++) {
      if (staged(scratch).length > 0 || listFiles(tableDir).length !== before) {
        child.kill(signal);
        sent = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const result = await exited;
    expect(sent, `the write finished before it could be interrupted: ${stderr}`).toBe(true);
    return { ...result, stderr, scratch };
  }

  for (const [signal, code] of [['SIGTERM', 143], ['SIGINT', 130]] as const) {
    it(`by ${signal} removes its staging files and commits nothing`, async () => {
      const before = state();
      const r = await interrupt(signal);
      expect(r.code).toBe(code);
      expect(r.stderr, r.stderr).toMatch(new RegExp(`interrupted by ${signal}`));
      expect(state()).toEqual(before);
      expect(readdirSync(r.scratch)).toEqual([]);
      const count = cli(['--warehouse', wh, 'read', 'big.events', '--format', 'delta', '--where', 'id >= 0', '--explain']);
      expect(count.code, count.stderr).toBe(0);
    });
  }

  it('by SIGKILL leaves nothing inside the table, which stays readable', async () => {
    const before = state();
    const r = await interrupt('SIGKILL');
    expect(r.signal).toBe('SIGKILL');
    expect(state()).toEqual(before);
    expect(listFiles(tableDir).filter((f) => /staging|\.tmp$/.test(f))).toEqual([]);
    // What the killed process staged lies outside the table, in its temporary directory.
    expect(existsSync(r.scratch)).toBe(true);
    for (const format of ['iceberg', 'delta']) {
      const read = cli(['--warehouse', wh, 'read', 'big.events', '--format', format, '--where', 'id >= 1499999', '--output', 'ndjson']);
      expect(read.code, read.stderr).toBe(0);
      expect(read.stdout.trim().split('\n').map((l) => JSON.parse(l).id)).toEqual([1499999]);
    }
  });
});

/**
 * The same for a write into many partitions (the engine still finishing files in many folders when
 * the signal comes) and for a merge-on-read delete (delete files written straight into data/).
 */
describe('an interrupted partitioned write or merge-on-read delete', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const tableDir = join(wh, 'big', 'parts');
  const input = join(tmp.path, 'parts.ndjson');
  afterAll(() => tmp.cleanup());

  beforeAll(async () => {
    const out = createWriteStream(input);
    for (let chunk = 0; chunk < 8; chunk++) {
      let text = '';
      for (let i = 0; i < 50_000; i++) {
        const id = chunk * 50_000 + i;
        text += `{"id":${id},"d":${id % 300},"user":"user_${id % 5000}","amount":${(id % 1000) / 10}}\n`;
      }
      if (!out.write(text)) await new Promise<void>((r) => out.once('drain', () => r()));
    }
    out.end();
    await finished(out);
    // One row in each of 300 partitions, so a delete of every row writes 300 delete files.
    const first = join(tmp.path, 'first.ndjson');
    const seed = createWriteStream(first);
    for (let d = 0; d < 300; d++) seed.write(`{"id":${d},"d":${d},"user":"u","amount":1.5}\n`);
    seed.end();
    await finished(seed);
    const created = cli([
      '--warehouse', wh, 'write', 'big.parts', '--input', first, '--partition', 'd',
      '--property', 'format-version=2', '--property', 'write.delete.mode=merge-on-read',
    ]);
    expect(created.code, created.stderr).toBe(0);
  });

  const state = () => ({
    data: listFiles(join(tableDir, 'data')),
    hint: readFileSync(join(tableDir, 'metadata', 'version-hint.text'), 'utf8'),
    delta: listFiles(join(tableDir, '_delta_log')),
  });

  async function interrupt(name: string, args: string[], ready: (scratch: string) => boolean): Promise<{ code: number | null; stderr: string; scratch: string }> {
    const scratch = join(tmp.path, `scratch-${name}`);
    mkdirSync(scratch);
    const child = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), '--warehouse', wh, ...args], { env: { ...process.env, TMPDIR: scratch } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    let sent = false;
    for (let i = 0; i < 12000 && child.exitCode === null; i++) {
      if (ready(scratch)) {
        child.kill('SIGINT');
        sent = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    const code = await exited;
    expect(sent, `the command finished before it could be interrupted: ${stderr}`).toBe(true);
    return { code, stderr, scratch };
  }

  it('into 300 partitions leaves no staged file and commits nothing', async () => {
    const before = state();
    // Once the engine has begun writing files into its partition folders.
    const staged = (scratch: string) =>
      readdirSync(scratch)
        .filter((n) => n.startsWith('twinlake-staging-'))
        .some((n) => listFiles(join(scratch, n)).length >= 20);
    const r = await interrupt('partitioned', ['write', 'big.parts', '--input', input], staged);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toMatch(/interrupted by SIGINT/);
    expect(listFiles(r.scratch)).toEqual([]);
    expect(readdirSync(r.scratch)).toEqual([]);
    expect(state()).toEqual(before);
  });

  it('of a merge-on-read delete leaves no delete file in the table', async () => {
    const before = state();
    const deletesIn = () => listFiles(join(tableDir, 'data')).filter((f) => f.endsWith('-deletes.parquet') || f.endsWith('.bin'));
    const r = await interrupt('delete', ['delete', 'big.parts', '--where', 'id < 1000000'], () => deletesIn().length >= 5);
    expect(r.code, r.stderr).toBe(130);
    expect(deletesIn()).toEqual([]);
    expect(listFiles(tableDir).filter((f) => f.includes('deletion_vector'))).toEqual([]);
    expect(state()).toEqual(before);
    expect(readdirSync(r.scratch)).toEqual([]);
    const count = cli(['--warehouse', wh, 'read', 'big.parts', '--output', 'ndjson', '--limit', '1000']);
    expect(count.code, count.stderr).toBe(0);
    expect(count.stdout.trim().split('\n')).toHaveLength(300);
  });
});
