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
