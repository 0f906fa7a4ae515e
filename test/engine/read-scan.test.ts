import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { parseJson } from '../../src/core/json.ts';
import { fileUri } from '../../src/core/uri.ts';
import { copyScanTo, filesWithoutFieldIds, readScan, scanRelationSql } from '../../src/engine/read-scan.ts';
import type { Schema } from '../../src/format/iceberg/types.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';

const fx = duckdbFixture();

async function write(name: string, select: string, fieldIds?: string): Promise<string> {
  const path = join(fx.dir.path, name);
  await fx.session.run(`COPY (${select}) TO '${path}' (FORMAT parquet${fieldIds ? `, FIELD_IDS ${fieldIds}` : ''})`);
  return path;
}

// Table history: v1 wrote `id int, name string, s struct<a int>`; then `id` widened to long,
// `name` renamed (another engine wrote the new name into its file), `added` added with an initial
// default, `s.a` renamed to `s.alpha`. Field IDs stay; the current schema says how to read.
const current: Schema = {
  type: 'struct',
  'schema-id': 3,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'display_name', required: false, type: 'string' },
    { id: 3, name: 's', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'alpha', required: false, type: 'int' }, { id: 7, name: 'b', required: false, type: 'string' }] } },
    { id: 5, name: 'added', required: false, type: 'string', 'initial-default': 'dflt' },
    { id: 6, name: 'region', required: false, type: 'string' },
    { id: 8, name: 'day', required: false, type: 'date' },
  ],
};
const physicalNames = new Map<number, string>([[1, 'id'], [2, 'name'], [3, 's'], [4, 'a'], [5, 'added'], [6, 'region'], [7, 'b'], [8, 'day']]);

describe('readScan with schema evolution', () => {
  let v1: string;
  let v2: string;
  beforeAll(async () => {
    v1 = await write('v1.parquet', `SELECT 1::INTEGER AS id, 'ann' AS name, {'a': 10} AS s, DATE '2020-01-01' AS day`, '{id: 1, name: 2, s: {__duckdb_field_id: 3, a: 4}, day: 8}');
    v2 = await write('v2.parquet', `SELECT 9007199254740993::BIGINT AS id, 'bob' AS fullname, {'a': 20, 'b': 'x'} AS s, 'set' AS added`, '{id: 1, fullname: 2, s: {__duckdb_field_id: 3, a: 4, b: 7}, added: 5}');
  });

  const task = (): ScanTask => ({
    schema: current,
    resolution: 'field-id',
    physicalNames,
    files: [
      { path: fileUri(v1), constants: new Map([[6, 'eu']]) },
      { path: fileUri(v2), constants: new Map<number, null | string | number>([[6, null], [8, 18500]]) },
    ],
  });

  it('finds columns by field ID, widens types, fills missing columns and injects constants', async () => {
    const rows = await readScan(fx.session, task());
    expect(rows).toEqual([
      { id: 1, display_name: 'ann', s: { alpha: 10, b: null }, added: 'dflt', region: 'eu', day: '2020-01-01' },
      { id: 9007199254740993n, display_name: 'bob', s: { alpha: 20, b: 'x' }, added: 'set', region: null, day: '2020-08-26' },
    ]);
  });

  it('keeps the logical names in SQL for other queries and applies a limit', async () => {
    const [row] = await fx.session.all(`SELECT count(*) AS n, max(s.alpha) AS m FROM (${scanRelationSql(task())})`);
    expect(row).toEqual({ n: 2n, m: 20 });
    expect(await readScan(fx.session, task(), { limit: 1 })).toHaveLength(1);
  });

  it('falls back to physical names for files written without field IDs', async () => {
    const plain = await write('plain.parquet', `SELECT 3::BIGINT AS id, 'cy' AS name, {'a': 30} AS s`);
    expect(await filesWithoutFieldIds(fx.session, [v1, plain])).toEqual(new Set([plain]));
    const t = { ...task(), files: [...task().files, { path: fileUri(plain) }] };
    const rows = await readScan(fx.session, t);
    expect(rows[2]).toEqual({ id: 3, display_name: 'cy', s: { alpha: 30, b: null }, added: 'dflt', region: null, day: null });
  });

  it('reads by physical name (Delta column mapping) with partition values as constants', async () => {
    const a = await write('delta-a.parquet', `SELECT 1::BIGINT AS "col-1", {'col-2': 5} AS "col-3"`);
    const b = await write('delta-b.parquet', `SELECT 2::BIGINT AS "col-1", NULL::STRUCT("col-2" INTEGER) AS "col-3"`);
    const schema: Schema = {
      type: 'struct', 'schema-id': 0,
      fields: [
        { id: 1, name: 'n', required: false, type: 'long' },
        { id: 3, name: 'st', required: false, type: { type: 'struct', fields: [{ id: 2, name: 'v', required: false, type: 'int' }] } },
        { id: 4, name: 'part', required: false, type: 'date' },
      ],
    };
    const t: ScanTask = {
      schema, resolution: 'name', physicalNames: new Map([[1, 'col-1'], [2, 'col-2'], [3, 'col-3'], [4, 'col-4']]),
      files: [{ path: a, constants: new Map([[4, 0]]) }, { path: b, constants: new Map([[4, null]]) }],
    };
    expect(await readScan(fx.session, t)).toEqual([{ n: 1, st: { v: 5 }, part: '1970-01-01' }, { n: 2, st: null, part: null }]);
  });

  it('an empty task still has the schema’s columns', async () => {
    const sql = scanRelationSql({ ...task(), files: [] });
    const cols = await fx.session.all(`SELECT column_name, column_type FROM (DESCRIBE ${sql})`);
    expect(cols.map((c) => c.column_name)).toEqual(current.fields.map((f) => f.name));
    expect(await readScan(fx.session, { ...task(), files: [] })).toEqual([]);
  });

  it('joins constants for many files in one query', async () => {
    const files = [];
    for (let i = 0; i < 120; i++) files.push({ path: await write(`many-${i}.parquet`, `SELECT ${i}::BIGINT AS id`, '{id: 1}'), constants: new Map([[6, `r${i % 7}`]]) });
    const t: ScanTask = { schema: current, resolution: 'field-id', physicalNames, files };
    const [row] = await fx.session.all(`SELECT count(*) AS n, count(DISTINCT region) AS r, sum(id) AS s, bool_and(region = 'r' || (id % 7)) AS ok FROM (${scanRelationSql(t)})`);
    expect(row).toEqual({ n: 120n, r: 7n, s: 7140n, ok: true });
  });
});

describe('value forms', () => {
  const schema: Schema = {
    type: 'struct', 'schema-id': 0,
    fields: [
      { id: 1, name: 'tz', required: false, type: 'timestamptz' },
      { id: 2, name: 'ntz', required: false, type: 'timestamp' },
      { id: 3, name: 'dec', required: false, type: 'decimal(20, 3)' },
      { id: 4, name: 'bin', required: false, type: 'binary' },
      { id: 5, name: 'm', required: false, type: { type: 'map', 'key-id': 6, key: 'int', 'value-id': 7, value: 'string', 'value-required': false } },
      { id: 8, name: 'd', required: false, type: 'double' },
      { id: 9, name: 'l', required: false, type: { type: 'list', 'element-id': 10, element: 'date', 'element-required': false } },
      { id: 11, name: 't', required: false, type: 'time' },
      { id: 12, name: 'u', required: false, type: 'uuid' },
    ],
  };
  let task: ScanTask;
  beforeAll(async () => {
    const path = await write('forms.parquet', `SELECT TIMESTAMPTZ '2020-01-01 10:00:00.000001+00' AS tz, TIMESTAMP '1969-12-31 23:59:59.5' AS ntz, 12.5::DECIMAL(20,3) AS dec,
      '\\x00\\xff'::BLOB AS bin, MAP {2: 'two', 1: 'one'} AS m, 'nan'::DOUBLE AS d, [DATE '2020-02-29', NULL] AS l, TIME '01:02:03.25' AS t, 'f79c3e09-677c-4bbd-a479-3f349cb785e7'::UUID AS u`,
      '{tz: 1, ntz: 2, dec: 3, bin: 4, m: {__duckdb_field_id: 5, key: 6, value: 7}, d: 8, l: {__duckdb_field_id: 9, element: 10}, t: 11, u: 12}');
    task = { schema, resolution: 'field-id', physicalNames: new Map(), files: [{ path: fileUri(path) }] };
  });

  it('readScan returns the documented JS forms', async () => {
    const [row] = await readScan(fx.session, task);
    expect(row).toEqual({
      tz: '2020-01-01T10:00:00.000001Z', ntz: '1969-12-31T23:59:59.500000', dec: '12.500', bin: Uint8Array.of(0, 255),
      m: [{ key: 2, value: 'two' }, { key: 1, value: 'one' }], d: NaN, l: ['2020-02-29', null], t: '01:02:03.250000', u: 'f79c3e09-677c-4bbd-a479-3f349cb785e7',
    });
  });

  it('copyScanTo writes the same forms as NDJSON and CSV', async () => {
    const json = join(fx.dir.path, 'out.ndjson');
    await copyScanTo(fx.session, task, { format: 'json', path: json });
    const lines = readFileSync(json, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    const obj = parseJson(lines[0].replace(/\bNaN\b/, 'null'));
    expect(obj).toMatchObject({ tz: '2020-01-01T10:00:00.000001Z', ntz: '1969-12-31T23:59:59.500000', dec: '12.500', bin: 'AP8=', m: [{ key: 2, value: 'two' }, { key: 1, value: 'one' }], l: ['2020-02-29', null], t: '01:02:03.250000' });
    const csv = join(fx.dir.path, 'out.csv');
    await copyScanTo(fx.session, task, { format: 'csv', path: csv });
    const [header, first] = readFileSync(csv, 'utf8').trim().split('\n');
    expect(header).toBe(schema.fields.map((f) => f.name).join(','));
    expect(first.startsWith('2020-01-01T10:00:00.000001Z,1969-12-31T23:59:59.500000,12.500,AP8=,')).toBe(true);
  });
});
