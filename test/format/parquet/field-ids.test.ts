import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { beforeAll, describe, expect, it } from 'vitest';
import { duckdbFixture } from '../../duckdb-fixture.ts';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import type { Schema, StructType } from '../../../src/format/iceberg/types.ts';
import { conversionChecks, fieldIdsClause, parseCastFailure, selectList } from '../../../src/format/parquet/field-ids.ts';
import { structFromDescribe } from '../../../src/format/parquet/duckdb-types.ts';

const fx = duckdbFixture();

const WEIRD = 'we ird "name".';
const UNICODE = 'ünï cödé 𝄞';

/** Every nesting kind, names that need quoting, and physical names that differ from logical ones. */
const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: WEIRD, required: false, type: 'string' },
    {
      id: 3, name: 's', required: false, type: {
        type: 'struct', fields: [
          { id: 4, name: 'x', required: false, type: 'int' },
          { id: 5, name: 'y.y', required: false, type: { type: 'list', 'element-id': 6, element: 'double', 'element-required': false } },
          { id: 7, name: 'inner', required: false, type: { type: 'struct', fields: [{ id: 8, name: 'z', required: false, type: 'date' }] } },
        ],
      },
    },
    {
      id: 9, name: 'm', required: false, type: {
        type: 'map', 'key-id': 10, key: 'string', 'value-id': 11, 'value-required': false,
        value: { type: 'struct', fields: [{ id: 12, name: 'v', required: false, type: 'long' }] },
      },
    },
    { id: 13, name: 'tags', required: false, type: { type: 'list', 'element-id': 14, element: 'string', 'element-required': false } },
    { id: 15, name: UNICODE, required: false, type: 'decimal(10, 2)' },
    { id: 16, name: 'ts', required: false, type: 'timestamptz' },
    { id: 17, name: 'added_later', required: false, type: 'string' },
  ],
};
const physicalNames = new Map<number, string>([[1, 'id'], [2, WEIRD], [3, 's_v1'], [4, 'x_v1'], [13, 'tags'], [15, UNICODE]]);

// The input as a pipeline would deliver it: logical names, narrower types, no `added_later`.
const input = `(SELECT * FROM (VALUES
  (1::INTEGER, 'a', {'x': 1, 'y.y': [1.5, 2.5], 'inner': {'z': DATE '2020-01-02'}}, MAP {'k': {'v': 7}}, ['t1', 't2'], 12.5::DECIMAL(6,1), '2020-01-01 00:00:00+00'::TIMESTAMPTZ),
  (2::INTEGER, NULL, NULL, NULL, NULL, NULL, NULL)
) AS v("id", "${WEIRD.replace(/"/g, '""')}", "s", "m", "tags", "${UNICODE}", "ts"))`;

async function inputType(source: string): Promise<StructType> {
  const rows = await fx.session.all(`DESCRIBE SELECT * FROM ${source}`);
  return structFromDescribe(rows.map((r) => ({ name: String(r.column_name), type: String(r.column_type) })));
}

describe('FIELD_IDS and the select list, through a real DuckDB COPY', () => {
  let file: string;
  beforeAll(async () => {
    file = join(fx.dir.path, 'ids.parquet');
    const select = selectList(schema, physicalNames, { alias: 'src', type: await inputType(input) });
    await fx.session.run(`COPY (SELECT ${select} FROM ${input} AS src) TO '${file}' (FORMAT parquet, FIELD_IDS ${fieldIdsClause(schema, physicalNames)})`);
  });

  const expected = [
    ['id', 1], [WEIRD, 2], ['s_v1', 3], ['x_v1', 4], ['y.y', 5], ['element', 6], ['inner', 7], ['z', 8],
    ['m', 9], ['key', 10], ['value', 11], ['v', 12], ['tags', 13], ['element', 14], [UNICODE, 15], ['ts', 16], ['added_later', 17],
  ];

  it('DuckDB parquet_schema() sees an ID on every column, nested ones included', async () => {
    const rows = await fx.session.all(`SELECT name, field_id FROM parquet_schema('${file}') WHERE field_id IS NOT NULL`);
    expect(rows.map((r) => [r.name, Number(r.field_id)])).toEqual(expected);
    // Only the repeated groups of the 3-level list/map encoding (and the root) carry no ID.
    const bare = await fx.session.all(`SELECT name FROM parquet_schema('${file}') WHERE field_id IS NULL`);
    expect(bare.map((r) => r.name).sort()).toEqual(['duckdb_schema', 'key_value', 'list', 'list'].sort());
  });

  it('hyparquet, an independent reader, sees the same IDs', () => {
    const buf = readFileSync(file);
    const meta = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    const withIds = meta.schema.filter((e) => e.field_id !== undefined).map((e) => [e.name, e.field_id]);
    expect(withIds).toEqual(expected);
  });

  it('rows come back converted, renamed and with absent columns as nulls', async () => {
    const buf = readFileSync(file);
    const rows = await parquetReadObjects({ file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength), compressors });
    expect(rows[0].id).toBe(1n);
    expect(rows[0][WEIRD]).toBe('a');
    expect(rows[0].s_v1).toEqual({ x_v1: 1, 'y.y': [1.5, 2.5], inner: { z: new Date('2020-01-02T00:00:00Z') } });
    expect(rows[0].tags).toEqual(['t1', 't2']);
    expect(rows[0].added_later).toBeNull();
    expect(rows[1].s_v1).toBeNull();
    const types = await fx.session.all(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '${file}')`);
    expect(Object.fromEntries(types.map((r) => [r.column_name, r.column_type]))).toMatchObject({
      id: 'BIGINT', [UNICODE]: 'DECIMAL(10,2)', ts: 'TIMESTAMP WITH TIME ZONE', s_v1: 'STRUCT(x_v1 INTEGER, "y.y" DOUBLE[], "inner" STRUCT(z DATE))',
      m: 'MAP(VARCHAR, STRUCT(v BIGINT))', added_later: 'VARCHAR',
    });
  });

  it('refuses a column named like DuckDB’s field-ID key', () => {
    const bad: StructType = { type: 'struct', fields: [{ id: 1, name: '__duckdb_field_id', required: false, type: 'int' }] };
    expect(() => fieldIdsClause(bad, new Map())).toThrow(/may not be named/);
  });
});

describe('strict conversion of text input', () => {
  const target: StructType = {
    type: 'struct',
    fields: [
      { id: 1, name: 'n', required: true, type: 'long' },
      { id: 2, name: 'd', required: false, type: 'decimal(10, 2)' },
      { id: 3, name: 't', required: false, type: 'timestamp' },
      { id: 4, name: 'tz', required: false, type: 'timestamptz' },
      { id: 5, name: 'l', required: false, type: { type: 'list', 'element-id': 6, element: 'int', 'element-required': false } },
      { id: 7, name: 'day', required: false, type: 'date' },
    ],
  };
  const text: StructType = {
    type: 'struct',
    fields: target.fields.map((f) => ({ ...f, type: f.name === 'l' ? { type: 'list', 'element-id': 0, element: 'string', 'element-required': false } : 'string' })),
  };
  const run = (row: string) => {
    const source = `(SELECT * FROM (VALUES ${row}) AS v(n, d, t, tz, l, day))`;
    return fx.session.all(`SELECT ${selectList(target, new Map(), { alias: 'src', type: text })} FROM ${source} AS src`);
  };
  const failure = async (row: string) => {
    try {
      await run(row);
    } catch (e) {
      if (isTwinlakeError(e)) return parseCastFailure(e.message);
    }
    throw new Error('expected the conversion to fail');
  };

  it('converts exact values', async () => {
    const [r] = await run(`(' 42 ', '12.340', '2020-01-01T10:00:00.5', '2020-01-01T00:00:00+02:00', ['1', NULL], '2020-02-29')`);
    expect(r).toMatchObject({ n: 42n, d: 12.34, l: [1, null] });
    const [s] = await fx.session.all(`SELECT CAST(${`'2020-01-01T00:00:00+02:00'`}::TIMESTAMPTZ AS VARCHAR) AS v`);
    expect(s.v).toBe('2019-12-31 22:00:00+00');
  });

  it('refuses values a plain cast would round or reinterpret', async () => {
    expect(await failure(`('2.5', NULL, NULL, NULL, NULL, NULL)`)).toEqual({ path: 'n', expected: 'long', value: '2.5' });
    expect(await failure(`('1', '12.345', NULL, NULL, NULL, NULL)`)).toEqual({ path: 'd', expected: 'decimal(10, 2)', value: '12.345' });
    expect(await failure(`('1', NULL, '2020-01-01T00:00:00+02:00', NULL, NULL, NULL)`)).toEqual({ path: 't', expected: 'timestamp', value: '2020-01-01T00:00:00+02:00' });
    expect(await failure(`('1', NULL, NULL, NULL, ['1', 'x'], NULL)`)).toEqual({ path: 'l.element', expected: 'int', value: 'x' });
    expect(await failure(`('1', NULL, NULL, NULL, ['99999999999'], NULL)`)).toEqual({ path: 'l.element', expected: 'int', value: '99999999999' });
    expect(await failure(`('1', NULL, NULL, NULL, NULL, '2020-01-01 10:00')`)).toEqual({ path: 'day', expected: 'date', value: '2020-01-01 10:00' });
    expect(await failure(`(NULL, NULL, NULL, NULL, NULL, NULL)`)).toEqual({ path: 'n', expected: 'long', value: undefined });
  });

  it('conversion checks find the failing row without raising', async () => {
    const source = `(SELECT * FROM (VALUES ('1', NULL, NULL, NULL, ['1'], NULL), ('2', NULL, NULL, NULL, ['1', 'x'], NULL)) AS v(n, d, t, tz, l, day))`;
    const checks = conversionChecks(target, new Map(), { alias: 'src', type: text });
    const l = checks.find((c) => c.name === 'l')!;
    const rows = await fx.session.all(`SELECT n FROM ${source} AS src WHERE NOT (${l.check})`);
    expect(rows.map((r) => r.n)).toEqual(['2']);
  });

  it('refuses an input whose nesting does not match', async () => {
    const wrong: StructType = { type: 'struct', fields: [{ id: 1, name: 'l', required: false, type: 'long' }] };
    const listTarget: StructType = { type: 'struct', fields: [{ id: 1, name: 'l', required: false, type: { type: 'list', 'element-id': 2, element: 'long', 'element-required': false } }] };
    expect(() => selectList(listTarget, new Map(), { alias: 'src', type: wrong })).toThrow(/column "l": expected list, found long/);
  });
});
