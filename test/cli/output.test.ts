import { mkdirSync, readFileSync, watch, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayWidth, formatTable, printFiles, printHistory } from '../../src/cli/format.ts';
import { formatBytes, formatDuration, formatProgress, ProgressTracker } from '../../src/cli/progress.ts';
import { cli, ndjson, repoRoot, tempDir } from '../helpers.ts';
import { Lakehouse } from '../../src/index.ts';

/** The CLI in a child process that runs while this test does (a watcher can see what it makes). */
function cliAsync(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), ...args], { cwd: repoRoot, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('table output', () => {
  it('keeps each row on one line, control characters escaped', () => {
    const text = formatTable([{ id: 1, note: 'two\nlines\tand\r\u0007' }, { id: 2, note: { a: 'x\ny' } }]);
    expect(text.split('\n')).toEqual([
      'id  note',
      `--  ${'-'.repeat(23)}`,
      '1   two\\nlines\\tand\\r\\u0007',
      '2   {"a":"x\\ny"}',
      '(2 rows)',
    ]);
  });

  it('aligns wide characters: CJK and emoji take two columns, combining marks none', () => {
    expect(displayWidth('日本語')).toBe(6);
    expect(displayWidth('😀')).toBe(2);
    expect(displayWidth('👩‍👩‍👧')).toBe(2);
    expect(displayWidth('e\u0301')).toBe(1);
    expect(displayWidth('Søren')).toBe(5);
    const lines = formatTable([{ name: '日本', n: 1 }, { name: '😀x', n: 2 }, { name: 'abcde', n: 3 }]).split('\n');
    expect(lines).toEqual(['name   n', '-----  -', '日本   1', '😀x    2', 'abcde  3', '(3 rows)']);
    // Every row's second column starts at the same terminal column.
    for (const l of lines.slice(2, 5)) expect(displayWidth(l.slice(0, l.lastIndexOf(' ') + 1))).toBe(7);
  });

  it('cuts wide cells by terminal columns, never inside a character', () => {
    const [, , row] = formatTable([{ s: '日'.repeat(40) }]).split('\n');
    expect(row).toBe('日'.repeat(22) + '...');
    expect(displayWidth(row!)).toBe(47);
  });

  it('says when it stopped at the default limit', () => {
    expect(formatTable([{ a: 1 }], { stoppedAt: 100 }).split('\n').at(-1)).toBe('(showing the first 100 rows; use --limit N to show more)');
  });
});

describe('history and files output', () => {
  const entry = { timestamp: '2026-01-01T00:00:00.000Z', addedFiles: 0, addedRecords: 0, totalRecords: 1 };
  it('names an operation once, and what made it when that differs', () => {
    const operations = (text: string) => text.split('\n').slice(2).map((l) => l.split(/\s{2,}|\s*\|\s*/).find((c) => /^(append|overwrite|delete)/.test(c.trim()))?.trim());
    const text = printHistory([
      { ...entry, snapshotId: 3n, operation: 'delete', change: 'delete' },
      { ...entry, snapshotId: 2n, operation: 'overwrite', change: 'merge' },
      { ...entry, snapshotId: 1n, operation: 'append' },
    ]);
    expect(text).not.toMatch(/delete \(delete\)/);
    expect(operations(text)).toEqual(['delete', 'overwrite (merge)', 'append']);
  });

  it('names the format and its version once', () => {
    const last = (f: Parameters<typeof printFiles>[0]) => printFiles(f).split('\n').at(-1);
    expect(last({ format: 'delta', deltaVersion: 4, files: [] })).toBe('(0 live data files, 0 rows stored, 0 with deletes; delta version 4)');
    expect(last({ format: 'iceberg', snapshotId: 7n, deltaVersion: 4, files: [] })).toBe('(0 live data files, 0 rows stored, 0 with deletes; iceberg snapshot 7, delta version 4)');
    expect(last({ format: 'iceberg', files: [] })).toBe('(0 live data files, 0 rows stored, 0 with deletes; iceberg)');
  });
});

describe('progress', () => {
  it('uses binary units with their names', () => {
    expect([formatBytes(999), formatBytes(1024), formatBytes(1536 * 1024), formatBytes(5 * 1024 ** 3)]).toEqual(['999 B', '1.0 KiB', '1.5 MiB', '5.0 GiB']);
    expect([formatDuration(4.2), formatDuration(185), formatDuration(3725)]).toEqual(['5s', '3m05s', '1h02m']);
  });

  it('shows bytes read of the total, percent, rate and ETA', () => {
    const mib = 1024 * 1024;
    expect(formatProgress('writing e.ndjson', { elapsedMs: 4100, totalBytes: 48 * mib, fraction: 0.5, passMs: 2000 })).toBe(
      'writing e.ndjson  24.0 MiB / 48.0 MiB  50%  12.0 MiB/s  ETA 2s  4.1s',
    );
    // Not 100% until the write returns: the commit follows the last byte.
    expect(formatProgress('w', { elapsedMs: 1000, totalBytes: mib, fraction: 1, passMs: 1000 })).toBe('w  1.0 MiB / 1.0 MiB  99%  1.0 MiB/s  1.0s');
    // Standard input: no total, so a percent of the pass only.
    expect(formatProgress('w', { elapsedMs: 3000, fraction: 0.25, passMs: 3000 })).toBe('w  25%  ETA 9s  3.0s');
    // Before the engine reports: the input size and the time.
    expect(formatProgress('writing e.ndjson', { elapsedMs: 300, totalBytes: 48 * mib })).toBe('writing e.ndjson (48.0 MiB) ... 0.3s');
  });

  it('starts the rate and ETA again when the engine begins a new pass over the input', () => {
    const t = new ProgressTracker(0, 1000);
    expect(t.sample(100, undefined)).toEqual({ elapsedMs: 100, totalBytes: 1000 });
    expect(t.sample(1000, { fraction: 0.9 })).toEqual({ elapsedMs: 1000, totalBytes: 1000, fraction: 0.9, passMs: 1000 });
    expect(t.sample(1500, { fraction: 0.1 })).toEqual({ elapsedMs: 1500, totalBytes: 1000, fraction: 0.1, passMs: 0 });
    expect(t.sample(2500, { fraction: 0.5 })).toEqual({ elapsedMs: 2500, totalBytes: 1000, fraction: 0.5, passMs: 1000 });
  });
});

describe('read output through the real command', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  beforeAll(() => {
    const schema = join(tmp.path, 'schema.json');
    writeFileSync(schema, JSON.stringify({ type: 'struct', fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      { id: 2, name: 'customer', required: false, type: { type: 'struct', fields: [
        { id: 3, name: 'name', required: false, type: 'string' },
        { id: 4, name: 'tags', required: false, type: { type: 'list', 'element-id': 5, element: 'string', 'element-required': false } },
      ] } },
      { id: 6, name: 'attrs', required: false, type: { type: 'map', 'key-id': 7, key: 'string', 'value-id': 8, value: 'string', 'value-required': false } },
      { id: 9, name: 'note', required: false, type: 'string' },
    ] }));
    const rows = [
      { id: 1, customer: { name: 'Søren, "the" one\nsecond line', tags: ['a', '日本'] }, attrs: { k: 'v', 'x,y': '1' }, note: 'a\nb' },
      { id: 2, customer: null, attrs: null, note: null },
      { id: 3, customer: { name: null, tags: [] }, attrs: {}, note: '' },
    ];
    const input = join(tmp.path, 'nested.ndjson');
    writeFileSync(input, ndjson(rows));
    expect(cli(['--warehouse', wh, 'write', 'o.nested', '--input', input, '--schema', schema]).code).toBe(0);
    const many = join(tmp.path, 'many.ndjson');
    writeFileSync(many, ndjson(Array.from({ length: 150 }, (_, i) => ({ id: i }))));
    expect(cli(['--warehouse', wh, 'write', 'o.many', '--input', many]).code).toBe(0);
  });

  it('--output csv writes nested values as JSON text that a CSV reader and JSON.parse give back', async () => {
    const r = cli(['--warehouse', wh, 'read', 'o.nested', '--output', 'csv']);
    expect(r.code, r.stderr).toBe(0);
    const csv = join(tmp.path, 'out.csv');
    writeFileSync(csv, r.stdout);
    const expected = cli(['--warehouse', wh, 'read', 'o.nested', '--output', 'ndjson']).stdout.trim().split('\n').map((l) => JSON.parse(l));
    // DuckDB's CSV reader, all columns as text: the cells exactly as a CSV reader sees them.
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const got = (await conn.runAndReadAll(`SELECT * FROM read_csv('${csv}', header = true, all_varchar = true, quote = '"', escape = '"') ORDER BY id::INT`)).getRowObjectsJS();
    conn.closeSync();
    expect(got).toHaveLength(3);
    const byId = new Map(expected.map((e) => [e.id, e]));
    for (const row of got) {
      const want = byId.get(Number(row.id));
      for (const col of ['customer', 'attrs']) expect(row[col] === null ? null : JSON.parse(row[col] as string), `${row.id} ${col}`).toEqual(want[col]);
    }
    expect(JSON.parse(got[0]!.customer as string).name).toBe('Søren, "the" one\nsecond line');
    expect(JSON.parse(got[0]!.attrs as string)).toEqual([{ key: 'k', value: 'v' }, { key: 'x,y', value: '1' }]);
  });

  it('read streams its rows to standard output: no temporary file, the bytes of the file export, in both formats', async () => {
    // The read runs with a temp folder of its own, watched while it runs (a file made and
    // removed again would leave no trace afterwards).
    const temp = join(tmp.path, 'temp');
    mkdirSync(temp);
    const lake = await Lakehouse.open({ warehouse: wh, readOnly: true });
    try {
      for (const format of ['iceberg', 'delta'] as const) {
        for (const output of ['ndjson', 'csv'] as const) {
          const created: string[] = [];
          const watcher = watch(temp, (_, name) => void created.push(String(name)));
          const r = await cliAsync(['--warehouse', wh, 'read', 'o.many', '--format', format, '--output', output], { TMPDIR: temp, TWINLAKE_TEMP_DIR: temp });
          watcher.close();
          expect(r.code, r.stderr).toBe(0);
          expect(created, `${format} ${output}`).toEqual([]);
          const file = join(tmp.path, `export-${format}.${output}`);
          await lake.table('o.many').export(file, { format, output: output === 'csv' ? 'csv' : 'json' });
          expect(r.stdout, `${format} ${output}`).toBe(readFileSync(file, 'utf8'));
          expect(r.stdout.trim().split('\n')).toHaveLength(output === 'csv' ? 151 : 150);
        }
      }
      // The library streams the same bytes to any writable stream.
      const chunks: Buffer[] = [];
      const sink = new Writable({ write: (chunk, _, done) => (chunks.push(chunk), done()) });
      await lake.table('o.nested').export(sink, { output: 'json' });
      expect(Buffer.concat(chunks).toString('utf8')).toBe(cli(['--warehouse', wh, 'read', 'o.nested', '--output', 'ndjson']).stdout);
    } finally {
      await lake.close();
    }
  });

  it('--output table says when it stopped at its default limit of 100 rows', () => {
    const lines = cli(['--warehouse', wh, 'read', 'o.many', '--output', 'table']).stdout.trim().split('\n');
    expect(lines).toHaveLength(2 + 100 + 1);
    expect(lines.at(-1)).toBe('(showing the first 100 rows; use --limit N to show more)');
    const all = cli(['--warehouse', wh, 'read', 'o.many', '--output', 'table', '--limit', '150']).stdout.trim().split('\n');
    expect(all).toHaveLength(2 + 150 + 1);
    expect(all.at(-1)).toBe('(150 rows)');
    const nested = cli(['--warehouse', wh, 'read', 'o.nested', '--output', 'table']).stdout.trim().split('\n');
    expect(nested).toHaveLength(2 + 3 + 1);
    expect(nested.at(-1)).toBe('(3 rows)');
    expect(nested.join('\n')).toContain('a\\nb');
  });
});
