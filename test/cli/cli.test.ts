import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, hasTestdata, tempDir, testdata } from '../helpers.ts';

describe('twinlake CLI', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());

  it('prints help and its version', () => {
    const help = cli(['--help']);
    expect(help.code).toBe(0);
    for (const cmd of ['quickstart', 'write', 'read', 'history', 'tables', 'describe']) expect(help.stdout).toContain(cmd);
    const v = cli(['--version']);
    expect(v.code).toBe(0);
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('quickstart writes 100k events and reads them back through both formats', () => {
    const r = cli(['--warehouse', wh, 'quickstart']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/read \(iceberg\)\s+100000 rows/);
    expect(r.stdout).toMatch(/read \(delta\)\s+100000 rows/);
    expect(r.stdout).toMatch(/read_parquet/);
    const tables = cli(['--warehouse', wh, 'tables']);
    expect(tables.stdout.trim().split('\n')).toEqual(['analytics.events']);
    const d = parseJson(cli(['--warehouse', wh, 'describe', 'analytics.events', '--json']).stdout);
    expect(d.records).toBe(100000);
    expect(d.formats).toEqual(['delta', 'iceberg']);
    expect(d.schema.fields.map((f: { name: string }) => f.name)).toEqual(['id', 'ts', 'user', 'region', 'event', 'amount', 'attributes']);
    expect(d.schema.fields.find((f: { name: string }) => f.name === 'ts').type).toBe('timestamptz');
  });

  it('quickstart counts live rows once the table has deletion vectors', () => {
    const other = join(wh, '..', 'wh-quickstart-dv');
    expect(cli(['--warehouse', other, 'quickstart', '--rows', '1000']).code).toBe(0);
    const d = cli(['--warehouse', other, 'delete', 'analytics.events', '--where', 'id < 10', '--strategy', 'merge-on-read']);
    expect(d.stdout).toMatch(/deleted 9 row\(s\)/); // ids start at 1
    const again = cli(['--warehouse', other, 'quickstart', '--rows', '1000']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/read \(iceberg\)\s+1991 rows/);
    expect(again.stdout).toMatch(/read \(delta\)\s+1991 rows/);
  });

  it('reads a table by path, through either format, with a limit, as CSV', () => {
    const dir = join(wh, 'analytics', 'events');
    const a = cli(['--warehouse', wh, 'read', dir, '--limit', '3', '--output', 'ndjson']);
    expect(a.code, a.stderr).toBe(0);
    expect(a.stdout.trim().split('\n')).toHaveLength(3);
    const b = cli(['--warehouse', wh, 'read', dir, '--format', 'delta', '--limit', '2', '--output', 'csv']);
    expect(b.code, b.stderr).toBe(0);
    const lines = b.stdout.trim().split('\n');
    expect(lines[0]).toBe('id,ts,user,region,event,amount,attributes');
    expect(lines).toHaveLength(3);
  });

  it.skipIf(!hasTestdata)('reads a Delta table another engine wrote, by path, at a version', () => {
    const dir = join(testdata, 'dat', 'basic_append', 'delta');
    expect(existsSync(dir)).toBe(true);
    const latest = cli(['--warehouse', wh, 'read', dir, '--output', 'ndjson']);
    expect(latest.code, latest.stderr).toBe(0);
    const v0 = cli(['--warehouse', wh, 'read', dir, '--version', '0', '--output', 'ndjson']);
    expect(v0.code, v0.stderr).toBe(0);
    const n = (s: string) => s.trim().split('\n').filter(Boolean).length;
    expect(n(latest.stdout)).toBeGreaterThan(n(v0.stdout));
  });

  it('history lists snapshots with their Delta versions', () => {
    const h = parseJson(cli(['--warehouse', wh, 'history', 'analytics.events', '--json']).stdout);
    expect(h).toHaveLength(1);
    expect(h[0].deltaVersion).toBe(1);
    expect(h[0].operation).toBe('append');
    const text = cli(['--warehouse', wh, 'history', 'analytics.events']);
    expect(text.stdout).toContain(String(h[0].snapshotId));
  });

  it('creates a partitioned table, writes into it, and explains a pruned read', () => {
    const schema = join(tmp.path, 'orders-schema.json');
    writeFileSync(schema, JSON.stringify({ type: 'struct', fields: [
      { id: 1, name: 'id', required: true, type: 'long' },
      { id: 2, name: 'ts', required: false, type: 'timestamptz' },
      { id: 3, name: 'region', required: false, type: 'string' },
    ] }));
    const created = cli(['--warehouse', wh, 'create', 'sales.orders', '--schema', schema, '--partition', 'day(ts), region']);
    expect(created.code, created.stderr + created.stdout).toBe(0);
    const d = parseJson(cli(['--warehouse', wh, 'describe', 'sales.orders', '--json']).stdout);
    expect(d.partitionSpec).toBe('day(ts), region');
    expect(d.currentSnapshotId).toBeUndefined();
    const input = join(tmp.path, 'orders.ndjson');
    writeFileSync(input, Array.from({ length: 60 }, (_, i) => JSON.stringify({ id: i, ts: `2024-03-${String(1 + (i % 6)).padStart(2, '0')}T10:00:00Z`, region: i % 2 ? 'us' : 'eu' })).join('\n') + '\n');
    const w = cli(['--warehouse', wh, 'write', 'sales.orders', '--input', input]);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).toMatch(/files\s+6/);
    const explain = parseJson(cli(['--warehouse', wh, 'read', 'sales.orders', '--where', "ts >= '2024-03-05' AND region = 'us'", '--explain']).stdout);
    expect(explain).toMatchObject({ files: 6, filesSkipped: 5, filesScanned: 1 });
    const rows = cli(['--warehouse', wh, 'read', 'sales.orders', '--where', "ts >= '2024-03-05' AND region = 'us'", '--format', 'delta', '--output', 'ndjson']);
    expect(rows.stdout.trim().split('\n')).toHaveLength(10);
    const bad = cli(['--warehouse', wh, 'write', 'sales.orders2', '--input', input, '--partition', 'day(region)']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/day/);
  });

  it('fails with one line and a non-zero exit on bad arguments', () => {
    for (const args of [
      ['write', 'a.b', '--input', join(tmp.path, 'missing.ndjson')],
      ['write', 'a.b', '--input', 'x.ndjson', '--mode', 'upsert'],
      ['read', 'analytics.events', '--format', 'orc'],
      ['read', 'analytics.events', '--snapshot', '123', '--version', '1'],
      ['read', 'analytics.events', '--snapshot', '42'],
    ]) {
      const r = cli(['--warehouse', wh, ...args]);
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.stderr).toMatch(/^twinlake: /);
    }
  });
});

describe('twinlake merge and delete', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());

  it('upserts on a key with a delete marker, then deletes by predicate', () => {
    const a = join(tmp.path, 'a.ndjson');
    const b = join(tmp.path, 'b.ndjson');
    writeFileSync(a, '{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n');
    writeFileSync(b, '{"id":2,"v":"B","op":"U"}\n{"id":3,"v":"c","op":"U"}\n{"id":1,"v":"x","op":"D"}\n{"id":3,"v":"C","op":"U"}\n');
    expect(cli(['--warehouse', wh, 'write', 'm.t', '--input', a]).code).toBe(0);
    const m = cli(['--warehouse', wh, 'write', 'm.t', '--input', b, '--mode', 'merge', '--key', 'id', '--delete-when', "op = 'D'"]);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout).toMatch(/1 inserted, 1 updated, 1 deleted, 1 files rewritten/);
    const rows = (format: string) => cli(['--warehouse', wh, 'read', 'm.t', '--format', format, '--output', 'ndjson']).stdout.trim().split('\n').map((l) => JSON.parse(l)).sort((x, y) => x.id - y.id);
    expect(rows('delta').map((r) => [r.id, r.v])).toEqual([[2, 'B'], [3, 'C']]);
    expect(rows('iceberg').map((r) => [r.id, r.v])).toEqual([[2, 'B'], [3, 'C']]);
    const d = cli(['--warehouse', wh, 'delete', 'm.t', '--where', 'id = 3']);
    expect(d.code, d.stderr).toBe(0);
    expect(rows('delta').map((r) => r.id)).toEqual([2]);
    const bad = cli(['--warehouse', wh, 'write', 'm.t', '--input', b, '--mode', 'merge']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--key/);
  });

  it('merges and deletes with deletion vectors on a v3 table (merge-on-read), and per call with --strategy', () => {
    const a = join(tmp.path, 'mor-a.ndjson');
    const b = join(tmp.path, 'mor-b.ndjson');
    writeFileSync(a, Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: i, v: 'a' })).join('\n') + '\n');
    writeFileSync(b, '{"id":2,"v":"B"}\n{"id":20,"v":"new"}\n');
    const created = cli(['--warehouse', wh, 'write', 'mor.t', '--input', a, '--property', 'format-version=3', '--property', 'write.merge.mode=merge-on-read']);
    expect(created.code, created.stderr).toBe(0);
    const m = cli(['--warehouse', wh, 'write', 'mor.t', '--input', b, '--mode', 'merge', '--key', 'id']);
    expect(m.code, m.stderr).toBe(0);
    expect(m.stdout).toMatch(/1 inserted, 1 updated, 0 deleted, 1 delete files written \(merge-on-read\)/);
    const d = cli(['--warehouse', wh, 'delete', 'mor.t', '--where', 'id < 2', '--strategy', 'merge-on-read']);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toMatch(/deleted 2 row\(s\) from mor\.t, 1 delete file\(s\) written/);
    const ids = (format: string) => cli(['--warehouse', wh, 'read', 'mor.t', '--format', format, '--output', 'ndjson']).stdout.trim().split('\n').map((l) => JSON.parse(l).id).sort((x: number, y: number) => x - y);
    expect(ids('iceberg')).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 20]);
    expect(ids('delta')).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 20]);
    const described = cli(['--warehouse', wh, 'describe', 'mor.t']).stdout;
    expect(described).toMatch(/iceberg format v3/);
    expect(described).toMatch(/rows\s+9 \(12 stored, 3 deleted by row-level deletes\)/);
    const bad = cli(['--warehouse', wh, 'delete', 'mor.t', '--where', 'id = 3', '--strategy', 'lazy']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/delete strategy: expected copy-on-write or merge-on-read, found "lazy"/);
  });
});

describe('twinlake write inputs', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());

  it('reads NDJSON from standard input, a JSON array, CSV with a header and Parquet', async () => {
    const rows = [{ id: 1, name: 'a', amount: 1.5 }, { id: 2, name: 'b', amount: 2.5 }];
    const viaStdin = cli(['--warehouse', wh, 'write', 'in.t', '--input', '-', '--input-format', 'ndjson'], { input: rows.map((r) => JSON.stringify(r)).join('\n') + '\n' });
    expect(viaStdin.code, viaStdin.stderr).toBe(0);
    const json = join(tmp.path, 'rows.json');
    writeFileSync(json, JSON.stringify([{ id: 3, name: 'c', amount: 3.5 }]));
    expect(cli(['--warehouse', wh, 'write', 'in.t', '--input', json]).code).toBe(0);
    const csv = join(tmp.path, 'rows.csv');
    writeFileSync(csv, 'id,name,amount\n4,d,4.5\n5,"e, with comma",5.5\n');
    const c = cli(['--warehouse', wh, 'write', 'in.t', '--input', csv]);
    expect(c.code, c.stderr).toBe(0);
    // A Parquet file written by DuckDB, outside Twinlake.
    const parquet = join(tmp.path, 'rows.parquet');
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    await conn.run(`COPY (SELECT 6::BIGINT AS id, 'f' AS name, 6.5::DOUBLE AS amount) TO '${parquet}' (FORMAT parquet)`);
    conn.closeSync();
    const p = cli(['--warehouse', wh, 'write', 'in.t', '--input', parquet]);
    expect(p.code, p.stderr).toBe(0);
    const out = cli(['--warehouse', wh, 'read', 'in.t', '--format', 'delta', '--output', 'ndjson']);
    const got = out.stdout.trim().split('\n').map((l) => JSON.parse(l)).sort((x, y) => x.id - y.id);
    expect(got.map((r) => [r.id, r.name, r.amount])).toEqual([
      [1, 'a', 1.5],
      [2, 'b', 2.5],
      [3, 'c', 3.5],
      [4, 'd', 4.5],
      [5, 'e, with comma', 5.5],
      [6, 'f', 6.5],
    ]);
  });
});
