import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { cli, errorOf, listFiles, ndjson, tempDir } from '../helpers.ts';

/** zstd through DuckDB's own writer, so the test needs no zstd tool on the machine. */
async function zstdFile(lake: Lakehouse, text: string, path: string, format: 'csv' | 'json'): Promise<void> {
  const plain = `${path}.plain`;
  writeFileSync(plain, text);
  const s = await lake.session();
  const read = format === 'csv' ? `read_csv('${plain}', header = true, all_varchar = true)` : `read_json('${plain}', format = 'newline_delimited')`;
  await s.run(`COPY (SELECT * FROM ${read}) TO '${path}' (FORMAT ${format}, COMPRESSION zstd)`);
}

describe('many inputs in one write', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const w = (args: string[]) => cli(['--warehouse', wh, ...args]);
  const describeTable = (t: string) => parseJson(w(['describe', t, '--json']).stdout);
  const history = (t: string) => parseJson(w(['history', t, '--json']).stdout) as { snapshotId: bigint; deltaVersion: number; addedRecords: number }[];
  const rowsOf = (t: string) =>
    w(['read', t, '--output', 'ndjson'])
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .sort((a, b) => a.id - b.id);

  it('repeated --input, a folder and a glob go into one snapshot and one Delta version', () => {
    const a = join(tmp.path, 'a.ndjson');
    const b = join(tmp.path, 'b.ndjson.gz');
    writeFileSync(a, ndjson([{ id: 1, name: 'a' }, { id: 2, name: 'b' }]));
    writeFileSync(b, gzipSync(ndjson([{ id: 3, name: 'c', extra: true }])));
    const first = w(['write', 'many.t', '--input', a, '--input', b, '--json']);
    expect(first.code, first.stderr).toBe(0);
    expect(parseJson(first.stdout)).toMatchObject({ rows: 3, deltaVersion: 1 });

    const folder = join(tmp.path, 'batch');
    mkdirSync(join(folder, 'day=2'), { recursive: true });
    writeFileSync(join(folder, 'part-0.ndjson'), ndjson([{ id: 4, name: 'd' }]));
    writeFileSync(join(folder, 'day=2', 'part-1.ndjson'), ndjson([{ id: 5, name: 'e' }]));
    writeFileSync(join(folder, '_SUCCESS'), '');
    writeFileSync(join(folder, '.part-0.ndjson.crc'), 'not data');
    const globbed = join(tmp.path, 'glob');
    mkdirSync(globbed);
    writeFileSync(join(globbed, 'x1.ndjson'), ndjson([{ id: 6, name: 'f' }]));
    writeFileSync(join(globbed, 'x2.ndjson'), ndjson([{ id: 7, name: 'g' }]));
    writeFileSync(join(globbed, 'y.ndjson'), ndjson([{ id: 99, name: 'not matched' }]));
    const second = w(['write', 'many.t', '--input', folder, '--input', join(globbed, 'x*.ndjson'), '--json']);
    expect(second.code, second.stderr).toBe(0);
    expect(parseJson(second.stdout)).toMatchObject({ rows: 4, deltaVersion: 2 });

    const h = history('many.t');
    expect(h.map((e) => e.addedRecords)).toEqual([4, 3]);
    expect(h.map((e) => e.deltaVersion)).toEqual([2, 1]);
    expect(rowsOf('many.t').map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(w(['read', 'many.t', '--format', 'delta', '--output', 'ndjson']).stdout.trim().split('\n')).toHaveLength(7);
    expect(describeTable('many.t').schema.fields.map((f: { name: string }) => f.name)).toEqual(['id', 'name', 'extra']);
  });

  it('reads .gz and .zst NDJSON and CSV by their extension', async () => {
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh-compressed') });
    try {
      const gzCsv = join(tmp.path, 'x.csv.gz');
      writeFileSync(gzCsv, gzipSync('id,name\n1,a\n2,b\n'));
      const zstCsv = join(tmp.path, 'x.csv.zst');
      await zstdFile(lake, 'id,name\n3,c\n', zstCsv, 'csv');
      const zstJson = join(tmp.path, 'orders.ndjson.zst');
      await zstdFile(lake, ndjson([{ id: 4, name: 'd' }]), zstJson, 'json');
      expect(readFileSync(zstCsv).readUInt32LE(0)).toBe(0xfd2fb528); // really zstd
      const csv = lake.table('c.csv');
      expect((await csv.append({ paths: [gzCsv, zstCsv] })).rows).toBe(3);
      const json = lake.table('c.json');
      expect((await json.append({ path: zstJson })).rows).toBe(1);
      expect((await csv.read()).map((r) => [r.id, r.name]).sort()).toEqual([[1, 'a'], [2, 'b'], [3, 'c']]);
      expect(await json.read()).toEqual([{ id: 4, name: 'd' }]);
    } finally {
      await lake.close();
    }
  });

  it('names the file and line of a bad record among many inputs, and commits nothing', () => {
    const good = join(tmp.path, 'good.ndjson');
    const bad = join(tmp.path, 'bad.ndjson');
    writeFileSync(good, ndjson([{ id: 10, name: 'x' }, { id: 11, name: 'y' }]));
    writeFileSync(bad, ndjson([{ id: 12, name: 'z' }]) + '\n' + JSON.stringify({ id: 'twelve', name: 'w' }) + '\n');
    const before = listFiles(join(wh, 'many', 't'));
    let r = w(['write', 'many.t', '--input', good, '--input', bad]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toBe(`twinlake: input ${bad}: column "id" at line 3: expected long, found "twelve"`);
    // A compressed file is read line by line like a plain one: the blank line counts.
    const badGz = join(tmp.path, 'bad.ndjson.gz');
    writeFileSync(badGz, gzipSync(ndjson([{ id: 12, name: 'z' }]) + '\n\n' + JSON.stringify({ id: 'twelve', name: 'w' }) + '\n'));
    r = w(['write', 'many.t', '--input', good, '--input', badGz]);
    expect(r.stderr.trim()).toBe(`twinlake: input ${badGz}: column "id" at line 4: expected long, found "twelve"`);
    const broken = join(tmp.path, 'broken.ndjson.gz');
    writeFileSync(broken, gzipSync('{"id": 13, "name": "v"}\n{"id": 14, "name": \n'));
    r = w(['write', 'many.t', '--input', good, '--input', broken]);
    expect(r.stderr.trim()).toMatch(new RegExp(`^twinlake: input ${broken.replace(/[.]/g, '\\.')}: line 2: malformed JSON`));
    const ragged = join(tmp.path, 'ragged.csv');
    writeFileSync(ragged, 'id,name\n15,u\n16,t,s\n');
    const fine = join(tmp.path, 'fine.csv');
    writeFileSync(fine, 'id,name\n17,r\n');
    r = w(['write', 'many.t', '--input', fine, '--input', ragged]);
    expect(r.stderr.trim()).toBe(`twinlake: input ${ragged}: line 3: expected 2 columns (id,name), found 3`);
    expect(listFiles(join(wh, 'many', 't'))).toEqual(before);
  });

  it('refuses inputs of different formats in one write, and names both', () => {
    const csv = join(tmp.path, 'mixed.csv');
    writeFileSync(csv, 'id,name\n20,q\n');
    const json = join(tmp.path, 'mixed.ndjson');
    writeFileSync(json, ndjson([{ id: 21, name: 'p' }]));
    const before = listFiles(join(wh, 'many', 't'));
    const r = w(['write', 'many.t', '--input', json, '--input', csv]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`found ndjson (${json}) and csv (${csv})`);
    expect(listFiles(join(wh, 'many', 't'))).toEqual(before);
    const none = w(['write', 'many.t', '--input', join(tmp.path, 'nothing-*.ndjson')]);
    expect(none.stderr).toMatch(/no ndjson, json, csv or parquet files match .*nothing-\*\.ndjson/);
    expect(w(['write', 'many.t']).stderr).toMatch(/required option '--input <file>' not specified/);
    expect(w(['write', 'many.t', '--input', '-', '--input', json, '--input-format', 'ndjson']).stderr).toMatch(/standard input\) cannot be combined with other inputs/);
    expect(listFiles(join(wh, 'many', 't'))).toEqual(before);
  });

  it('names records and standard input by record and line, never a temporary file', async () => {
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh-records') });
    try {
      const t = lake.table('r.t');
      await t.append([{ id: 1, name: 'a' }]);
      let e = await errorOf(t.append([{ id: 2, name: 'b' }, { id: 3, name: 'c' }, { id: 'four', name: 'd' }]));
      expect(e.message).toBe('records: column "id" at record 3: expected long, found "four"');
      e = await errorOf(t.append([{ id: 2 }, 7 as unknown as Record<string, unknown>]));
      expect(e.message).toBe('records: record 2: expected an object, found number');
    } finally {
      await lake.close();
    }
    const target = join(tmp.path, 'wh-stdin');
    expect(cli(['--warehouse', target, 'write', 's.t', '--input', '-', '--input-format', 'ndjson'], { input: ndjson([{ id: 1 }]) }).code).toBe(0);
    let r = cli(['--warehouse', target, 'write', 's.t', '--input', '-', '--input-format', 'ndjson'], { input: '{"id": 2}\n\n{"id": "x"}\n' });
    expect(r.stderr.trim()).toBe('twinlake: standard input: column "id" at line 3: expected long, found "x"');
    r = cli(['--warehouse', target, 'write', 's.t', '--input', '-', '--input-format', 'ndjson'], { input: '{"id": 2}\n{"id": \n' });
    expect(r.stderr.trim()).toMatch(/^twinlake: standard input: line 2: malformed JSON/);
    r = cli(['--warehouse', target, 'write', 's.t', '--input', '-', '--input-format', 'csv'], { input: 'id\n' });
    expect(r.stderr.trim()).toBe('twinlake: standard input: no records; nothing was written');
    expect(r.stderr).not.toMatch(/tmp|twinlake-input/);
  });

  it('a glob matches what a shell would', () => {
    const root = join(tmp.path, 'globs');
    for (const p of ['a/1.ndjson', 'a/b/2.ndjson', 'a/b/c/3.ndjson', 'a/.hidden/4.ndjson', 'a/5.csv']) {
      mkdirSync(join(root, p, '..'), { recursive: true });
      writeFileSync(join(root, p), ndjson([{ id: Number(p.match(/(\d)\./)![1]) }]));
    }
    const ids = (pattern: string) => {
      const table = `g.t${Math.random().toString(36).slice(2, 8)}`;
      const r = w(['write', table, '--input', join(root, pattern)]);
      expect(r.code, r.stderr).toBe(0);
      return rowsOf(table).map((x) => x.id);
    };
    expect(ids('a/*.ndjson')).toEqual([1]);
    expect(ids('a/**/*.ndjson')).toEqual([1, 2, 3]);
    expect(ids('a/*/[0-9].ndjson')).toEqual([2]);
    expect(ids('a/b/**')).toEqual([2, 3]);
  });
});
