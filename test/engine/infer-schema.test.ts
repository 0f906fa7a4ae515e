import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { inferSchema, inputRelation } from '../../src/engine/infer-schema.ts';
import type { IcebergType, StructType } from '../../src/format/iceberg/types.ts';

const fx = duckdbFixture();

function file(name: string, text: string): string {
  const p = join(fx.dir.path, name);
  writeFileSync(p, text);
  return p;
}

/** name → type, nested types shown as their Iceberg shape. */
function types(s: StructType): Record<string, unknown> {
  const show = (t: IcebergType): unknown => {
    if (typeof t === 'string') return t;
    if (t.type === 'struct') return Object.fromEntries(t.fields.map((f) => [f.name, show(f.type)]));
    if (t.type === 'list') return [show(t.element)];
    return { map: [show(t.key), show(t.value)] };
  };
  return Object.fromEntries(s.fields.map((f) => [f.name, show(f.type)]));
}

describe('inferSchema', () => {
  it('NDJSON: numbers, instants, dates, objects, arrays, mixed and null-only fields', async () => {
    const lines = [
      { n: 1, x: 1, t: '2020-01-01T00:00:00Z', naive: '2020-01-01 10:00:00', d: '2020-01-02', o: { p: 1, q: [1, 2], when: '2021-06-01T12:00:00.5+02:00' }, arr: [{ z: 'a' }], mixed: 1, nothing: null, flag: true },
      { n: 2, x: 2.5, t: '2021-01-01T00:00:00.123456+05:30', naive: '2020-01-01T10:00:00.25', d: '2020-01-03', o: { p: 2, q: [], when: '2021-06-01T12:00:00Z' }, arr: [], mixed: 'one', nothing: null, flag: false },
      { n: 3, x: 7, t: null, naive: null, d: null, o: null, arr: null, mixed: [1], nothing: null },
    ];
    const path = file('in.ndjson', lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    const schema = await inferSchema(fx.session, { path, format: 'ndjson' });
    expect(types(schema)).toEqual({
      n: 'long', x: 'double', t: 'timestamptz', naive: 'timestamp', d: 'date',
      o: { p: 'long', q: ['long'], when: 'timestamptz' }, arr: [{ z: 'string' }], mixed: 'unknown', nothing: 'unknown', flag: 'boolean',
    });
    expect(schema.fields.every((f) => f.id === 0 && !f.required)).toBe(true);
  });

  it('integers of either sign are long, at the top, in structs, lists and maps', async () => {
    const lines = [
      '{"t": -3, "o": {"a": -1, "l": [1, -2], "deep": [{"x": 5}]}, "m": {"k": -7}, "ll": [[1], [-1]]}',
      '{"t": 4, "o": {"a": 2, "l": [3], "deep": [{"x": -5}, null]}, "m": {"k": 8}, "ll": [[]]}',
      '{"t": null, "o": null, "m": null, "ll": null}',
    ];
    // `m` has so many distinct keys across the sample that DuckDB infers a map.
    const many = Array.from({ length: 300 }, (_, i) => `{"m": {"key${i}": ${i % 2 ? -i : i}}}`);
    const s = await inferSchema(fx.session, { path: file('signs.ndjson', [...lines, ...many].join('\n') + '\n'), format: 'ndjson' });
    expect(types(s)).toEqual({ t: 'long', o: { a: 'long', l: ['long'], deep: [{ x: 'long' }] }, m: { map: ['string', 'long'] }, ll: [['long']] });
  });

  it('integers become decimal(38, 0) only when one does not fit 64 bits', async () => {
    const lines = [
      '{"big": 9223372036854775808, "neg": -9223372036854775808, "u": 18446744073709551615, "huge": 99999999999999999999999999999999999999, "frac": 1.5, "l": [-1, 9223372036854775808]}',
      '{"big": -1, "neg": 1, "u": 1, "huge": 1, "frac": 2, "l": [2]}',
    ];
    const s = await inferSchema(fx.session, { path: file('wide.ndjson', lines.join('\n') + '\n'), format: 'ndjson' });
    expect(types(s)).toEqual({ big: 'decimal(38, 0)', neg: 'long', u: 'decimal(38, 0)', huge: 'decimal(38, 0)', frac: 'double', l: ['decimal(38, 0)'] });
    // More than 38 digits is beyond any decimal: a double, as DuckDB reads it.
    const beyond = file('beyond.ndjson', '{"n": 999999999999999999999999999999999999999}\n{"n": -1}\n');
    expect(types(await inferSchema(fx.session, { path: beyond, format: 'ndjson' }))).toEqual({ n: 'double' });
  });

  it('timestamps inside lists and maps are recognised too', async () => {
    const path = file('ts-lists.ndjson', '{"l": ["2020-01-01T00:00:00Z", null], "ls": [{"at": "2020-01-01 10:00:00"}]}\n');
    expect(types(await inferSchema(fx.session, { path, format: 'ndjson' }))).toEqual({ l: ['timestamptz'], ls: [{ at: 'timestamp' }] });
  });

  it('nulls and empty values leave the type unknown, for a table to decide', async () => {
    const path = file('empty.ndjson', '{"n": null, "l": [], "o": {"a": null}, "e": {}}\n');
    expect(types(await inferSchema(fx.session, { path, format: 'ndjson' }))).toEqual({ n: 'unknown', l: ['unknown'], o: { a: 'unknown' }, e: { map: ['string', 'unknown'] } });
  });

  it('instants of one uniform shape stay timestamptz (DuckDB alone would drop the zone)', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => JSON.stringify({ ts: `2026-01-${String((i % 28) + 1).padStart(2, '0')}T00:47:40.${String(i).padStart(3, '0')}Z`, naive: `2026-01-01T10:00:${String(i % 60).padStart(2, '0')}` }));
    const s = await inferSchema(fx.session, { path: file('uniform.ndjson', rows.join('\n') + '\n'), format: 'ndjson' });
    expect(types(s)).toEqual({ ts: 'timestamptz', naive: 'timestamp' });
  });

  it('keeps text that is not all timestamps as string', async () => {
    const path = file('text.ndjson', '{"s": "2020-01-01T00:00:00Z"}\n{"s": "not a time"}\n{"s": "2020-13-01T00:00:00Z"}\n');
    expect(types(await inferSchema(fx.session, { path, format: 'ndjson' }))).toEqual({ s: 'string' });
    const bad = file('bad-month.ndjson', '{"s": "2020-13-01T00:00:00Z"}\n');
    expect(types(await inferSchema(fx.session, { path: bad, format: 'ndjson' }))).toEqual({ s: 'string' });
  });

  it('JSON arrays of records', async () => {
    const path = file('in.json', JSON.stringify([{ a: 1, b: 'x' }, { a: 2, b: 'y', c: 1.5 }]));
    expect(types(await inferSchema(fx.session, { path, format: 'json' }))).toEqual({ a: 'long', b: 'string', c: 'double' });
  });

  it('CSV with a header', async () => {
    const path = file('in.csv', 'id,price,when,day,name\n1,1.5,2020-01-01T00:00:00Z,2020-01-01,"a, b"\n2,2,2020-01-02T10:00:00+02:00,2020-01-02,c\n');
    expect(types(await inferSchema(fx.session, { path, format: 'csv' }))).toEqual({ id: 'long', price: 'double', when: 'timestamptz', day: 'date', name: 'string' });
  });

  it('Parquet: the file’s own types, naive timestamps stay naive', async () => {
    const path = join(fx.dir.path, 'in.parquet');
    await fx.session.run(`COPY (SELECT 1::INTEGER AS i, TIMESTAMP '2020-01-01' AS ntz, TIMESTAMPTZ '2020-01-01 00:00:00+00' AS tz, 1.5::DECIMAL(9,2) AS d, [{'a': 'x'}] AS l, MAP {'k': 1.5::DOUBLE} AS m, '\\x00'::BLOB AS b, NULL::VARCHAR AS n) TO '${path}' (FORMAT parquet)`);
    expect(types(await inferSchema(fx.session, { path, format: 'parquet' }))).toEqual({
      i: 'int', ntz: 'timestamp', tz: 'timestamptz', d: 'decimal(9, 2)', l: [{ a: 'string' }], m: { map: ['string', 'double'] }, b: 'binary', n: 'string',
    });
  });
});

describe('inputRelation', () => {
  it('reads JSON with explicit text columns once a schema is known', async () => {
    const path = file('typed.ndjson', '{"a": 2.5, "s": {"x y": 1}, "extra": 1}\n');
    const schema: StructType = {
      type: 'struct',
      fields: [
        { id: 1, name: 'a', required: false, type: 'long' },
        { id: 2, name: 's', required: false, type: { type: 'struct', fields: [{ id: 3, name: 'x y', required: false, type: 'int' }] } },
      ],
    };
    const rows = await fx.session.all(`SELECT * FROM ${inputRelation({ path, format: 'ndjson' }, schema)}`);
    // Text, so the strict conversion (not DuckDB's JSON reader) decides what fits.
    expect(rows).toEqual([{ a: '2.5', s: { 'x y': '1' } }]);
  });

  it('accepts file: URIs', async () => {
    const path = file('uri.ndjson', '{"a": 1}\n');
    const rows = await fx.session.all(`SELECT * FROM ${inputRelation({ path: `file://${path}`, format: 'ndjson' })}`);
    expect(rows).toEqual([{ a: 1n }]);
  });
});
