import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, listFiles, ndjson, tempDir } from '../helpers.ts';

async function copyParquet(path: string, select: string): Promise<void> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run(`COPY (${select}) TO '${path}' (FORMAT parquet)`);
  } finally {
    conn.closeSync();
  }
}

describe('twinlake add-files', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const run = (...args: string[]) => cli(['--warehouse', wh, ...args]);

  it('adds files named by a glob to both formats, and refuses a mismatched file with nothing committed', async () => {
    const input = join(tmp.path, 'a.ndjson');
    writeFileSync(input, ndjson([{ id: 1, v: 'a' }]));
    expect(run('write', 'c.t', '--input', input).code).toBe(0);
    const dir = join(wh, 'c', 't', 'imported');
    mkdirSync(dir);
    for (let i = 0; i < 3; i++) await copyParquet(join(dir, `part-${i}.parquet`), `SELECT ${10 + i}::BIGINT AS id, 'x${i}' AS v`);
    const r = run('add-files', 'c.t', join(dir, 'part-*.parquet'));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^added 3 file\(s\), 3 row\(s\), \d+ bytes to c\.t$/m);
    expect(r.stdout).toMatch(/footers \d+ ms, iceberg commit \d+ ms, delta commit \d+ ms/);
    for (const format of ['iceberg', 'delta']) {
      const rows = run('read', 'c.t', '--format', format, '--output', 'ndjson');
      expect(rows.stdout.trim().split('\n').map((l) => parseJson(l).id).sort()).toEqual([1, 10, 11, 12]);
    }

    await copyParquet(join(dir, 'bad.parquet'), "SELECT 'no' AS id, 'y' AS v");
    const before = listFiles(join(wh, 'c', 't'));
    const bad = run('add-files', 'c.t', join(dir, 'bad.parquet'));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(`twinlake: add-files c.t: ${join(dir, 'bad.parquet')}: column id: expected long (BIGINT), found VARCHAR`);
    expect(listFiles(join(wh, 'c', 't'))).toEqual(before);
    const again = run('add-files', 'c.t', join(dir, 'part-0.parquet'), '--json');
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/part-0\.parquet: already a live file of the table/);
  });
});
