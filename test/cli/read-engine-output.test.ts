import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, ndjson, repoRoot, tempDir } from '../helpers.ts';
import { Lakehouse } from '../../src/index.ts';

/**
 * `twinlake read` into a pipe or /dev/null lets the engine write the rows into the descriptor
 * itself; into a socket (a child's standard output as node spawns it), a regular file or a
 * terminal the rows go through the stream as before. Both must give the same bytes.
 */

// Preloaded into each CLI process: it reports how many bytes JavaScript wrote to stdout.
const counter = pathToFileURL(join(repoRoot, 'test/cli/stdout-bytes.mjs')).href;
const twinlake = join(repoRoot, 'bin/twinlake.mjs');

type Target = 'pipe' | 'socket' | 'file' | 'append' | 'null' | 'head';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** Bytes JavaScript handed to process.stdout. */
  jsBytes: number;
}

function read(args: string[], to: Target, file = ''): Run {
  const node = [process.execPath, '--import', counter, twinlake, ...args];
  const shell: Record<Exclude<Target, 'socket'>, string> = {
    pipe: 'set -o pipefail; "$@" | cat',
    head: 'set -o pipefail; "$@" | head -n 1',
    file: '"$@" > "$OUT"',
    append: '"$@" >> "$OUT"',
    null: '"$@" > /dev/null',
  };
  const r = to === 'socket'
    ? spawnSync(node[0]!, node.slice(1), { cwd: repoRoot, encoding: 'utf8', maxBuffer: 1 << 30 })
    : spawnSync('bash', ['-c', shell[to], 'bash', ...node], { cwd: repoRoot, encoding: 'utf8', maxBuffer: 1 << 30, env: { ...process.env, OUT: file } });
  const m = /\nstdout-bytes=(\d+)\n$/.exec(r.stderr);
  return { code: r.status ?? -1, stdout: r.stdout, stderr: m ? r.stderr.slice(0, m.index) : r.stderr, jsBytes: m ? Number(m[1]) : -1 };
}

// Strings that JSON escaping and CSV quoting treat differently, short and long.
const STRINGS = ['', 'plain', 'a,b', 'say "hi"', 'line\nbreak', 'cr\rhere', 'tab\there', 'ünïcödé 日本語 🙂', 'x'.repeat(300), 'NULL', '\u0001\u2028\u007f', 'back\\slash', 'hash#tag', '#'];
// Map keys become struct member names while a write infers its input, so they stay printable.
const MAP_KEYS = ['plain', 'a,b', 'ünïcödé 日本語'];
const ROWS = 3000;

function row(i: number): Record<string, unknown> {
  const nth = (k: number) => i % k === 0;
  return {
    id: i,
    i: nth(7) ? null : i - 1500,
    f: nth(5) ? null : [1.5, -0.25, 3.4e38, 1e-7][i % 4],
    d: nth(6) ? null : i / 3,
    dec: nth(4) ? null : ((i * 37 - 99999) / 100).toFixed(2),
    b: nth(3) ? null : i % 2 === 0,
    dt: nth(8) ? null : new Date(Date.UTC(1960, 1, 29) + i * 17 * 86_400_000).toISOString().slice(0, 10),
    tz: nth(11) ? null : `${new Date(Date.UTC(2020, 0, 1) + i * 1_000_003).toISOString().slice(0, 19)}.${String(i * 7919 % 1_000_000).padStart(6, '0')}Z`,
    ntz: nth(12) ? null : new Date(Date.UTC(1999, 11, 31) + i * 999_937).toISOString().slice(0, 23),
    's, "q" #1': nth(13) ? null : STRINGS[i % STRINGS.length],
    bin: nth(14) ? null : Buffer.from(`\u0000${STRINGS[(i + 1) % STRINGS.length]}`).toString('base64'),
    st: nth(16) ? null : { a: i * 1000003, tags: nth(3) ? [] : [STRINGS[(i + 2) % STRINGS.length], null] },
    l: nth(17) ? null : ['2024-02-29', null],
    m: nth(18) ? null : { [MAP_KEYS[i % MAP_KEYS.length]!]: ((i % 1000) / 7).toFixed(2), k: null },
  };
}

describe('read output written by the engine into a pipe', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  let lake: Lakehouse;
  afterAll(async () => {
    await lake?.close();
    tmp.cleanup();
  });

  beforeAll(async () => {
    const schema = join(tmp.path, 'schema.json');
    const list = (id: number, element: string) => ({ type: 'list', 'element-id': id, element, 'element-required': false });
    writeFileSync(schema, JSON.stringify({ type: 'struct', fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      { id: 2, name: 'i', required: false, type: 'int' },
      { id: 3, name: 'f', required: false, type: 'float' },
      { id: 4, name: 'd', required: false, type: 'double' },
      { id: 5, name: 'dec', required: false, type: 'decimal(12, 2)' },
      { id: 6, name: 'b', required: false, type: 'boolean' },
      { id: 7, name: 'dt', required: false, type: 'date' },
      { id: 8, name: 'tz', required: false, type: 'timestamptz' },
      { id: 9, name: 'ntz', required: false, type: 'timestamp' },
      { id: 10, name: 's, "q" #1', required: false, type: 'string' },
      { id: 12, name: 'bin', required: false, type: 'binary' },
      { id: 13, name: 'st', required: false, type: { type: 'struct', fields: [
        { id: 14, name: 'a', required: false, type: 'long' },
        { id: 15, name: 'tags', required: false, type: list(16, 'string') },
      ] } },
      { id: 17, name: 'l', required: false, type: list(18, 'date') },
      { id: 19, name: 'm', required: false, type: { type: 'map', 'key-id': 20, key: 'string', 'value-id': 21, value: 'decimal(12, 2)', 'value-required': false } },
    ] }));
    const first = join(tmp.path, 'first.ndjson');
    writeFileSync(first, ndjson(Array.from({ length: ROWS }, (_, i) => row(i))));
    const second = join(tmp.path, 'second.ndjson');
    writeFileSync(second, ndjson(Array.from({ length: 50 }, (_, i) => row(ROWS + i))));
    for (const args of [
      ['write', 'o.all', '--input', first, '--schema', schema],
      ['write', 'o.all', '--input', second],
      // Iceberg position deletes and Delta deletion vectors, in both files.
      ['delete', 'o.all', '--where', 'b = false', '--strategy', 'merge-on-read'],
    ]) {
      const r = cli(['--warehouse', wh, ...args]);
      expect(r.code, r.stderr).toBe(0);
    }
    lake = await Lakehouse.open({ warehouse: wh, readOnly: true });
  });

  /** The same read through the stream (no descriptor the engine could open). */
  async function streamed(format: 'iceberg' | 'delta', output: 'json' | 'csv', opts: { limit?: number; where?: string }): Promise<string> {
    const chunks: Buffer[] = [];
    const sink = new Writable({ write: (chunk, _, done) => (chunks.push(chunk), done()) });
    await lake.table('o.all').export(sink, { format, output, ...opts });
    return Buffer.concat(chunks).toString('utf8');
  }

  const live = Array.from({ length: ROWS + 50 }, (_, i) => row(i)).filter((r) => r.b !== false).length;
  const cases: { format: 'iceberg' | 'delta'; output: 'ndjson' | 'csv'; limit?: number; where?: string; lines: number }[] = [
    { format: 'iceberg', output: 'ndjson', lines: live },
    { format: 'iceberg', output: 'csv', lines: live + 1 },
    { format: 'delta', output: 'ndjson', lines: live },
    { format: 'delta', output: 'csv', lines: live + 1 },
    { format: 'iceberg', output: 'ndjson', limit: 7, lines: 7 },
    { format: 'delta', output: 'csv', limit: 0, lines: 1 },
    { format: 'delta', output: 'ndjson', where: "b IS NULL AND id > 2990", lines: -1 },
    { format: 'iceberg', output: 'csv', where: "\"s, \"\"q\"\" #1\" = 'a,b'", lines: -1 },
  ];
  for (const c of cases) {
    const opts = [...(c.limit !== undefined ? ['--limit', String(c.limit)] : []), ...(c.where !== undefined ? ['--where', c.where] : [])];
    it(`${c.format} ${c.output} ${opts.join(' ') || '(all rows)'}: the engine's bytes are the stream's, and none pass through JavaScript`, async () => {
      const r = read(['--warehouse', wh, 'read', 'o.all', '--format', c.format, '--output', c.output, ...opts], 'pipe');
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const expected = await streamed(c.format, c.output === 'csv' ? 'csv' : 'json', { limit: c.limit, where: c.where });
      expect(r.stdout).toBe(expected);
      expect(r.jsBytes).toBe(0);
      const lines = r.stdout.split('\n').length - 1;
      // A CSV cell may hold a line break, so a CSV read has at least as many lines as records.
      if (c.lines >= 0 && c.output === 'csv') expect(lines).toBeGreaterThanOrEqual(c.lines);
      else if (c.lines >= 0) expect(lines).toBe(c.lines);
      else expect(lines).toBeGreaterThan(c.output === 'csv' ? 1 : 0);
    });
  }

  it('a socket, a regular file and a file appended to get the stream, byte for byte the same; /dev/null the engine', () => {
    const args = ['--warehouse', wh, 'read', 'o.all', '--output', 'ndjson'];
    const piped = read(args, 'pipe');
    expect(piped.code, piped.stderr).toBe(0);
    const bytes = Buffer.byteLength(piped.stdout);
    expect(bytes).toBeGreaterThan(100_000);

    const socket = read(args, 'socket');
    expect(socket.code, socket.stderr).toBe(0);
    expect(socket.stdout).toBe(piped.stdout);
    expect(socket.jsBytes).toBe(bytes);

    const file = join(tmp.path, 'out.ndjson');
    const toFile = read(args, 'file', file);
    expect(toFile.code, toFile.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(piped.stdout);
    // The engine would open the file anew at offset 0 and truncate it; `>>` keeps what it held.
    writeFileSync(file, 'before\n');
    const appended = read(args, 'append', file);
    expect(appended.code, appended.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(`before\n${piped.stdout}`);
    expect(appended.jsBytes).toBe(bytes);

    const discarded = read(args, 'null');
    expect(discarded.code, discarded.stderr).toBe(0);
    expect(discarded.stderr).toBe('');
    expect(discarded.jsBytes).toBe(0);
  });

  it('a reader that closes the pipe early (| head) ends the read quietly, exit 0', async () => {
    const r = read(['--warehouse', wh, 'read', 'o.all', '--output', 'ndjson'], 'head');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${(await streamed('iceberg', 'json', {})).split('\n')[0]}\n`);
  });
});
