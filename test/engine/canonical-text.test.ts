import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { encodeParquet } from '../../src/engine/encode.ts';
import { inputRelation, type InputFile } from '../../src/engine/infer-schema.ts';
import type { PrimitiveType, Schema } from '../../src/format/iceberg/types.ts';

/**
 * Most values skip the strict parse: those in their type's canonical text (a value that prints
 * back as the same text). DuckDB's casts are lenient, so every value below that is not canonical
 * must still take the strict parse: refused with column, line and value when it does not fit,
 * read exactly when it does.
 */
const fx = duckdbFixture();

let seq = 0;
const schemaOf = (type: PrimitiveType): Schema => ({ type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type }, { id: 2, name: 'b', required: false, type: 'string' }] });

async function encode(input: InputFile, schema: Schema): Promise<string> {
  const out = join(fx.dir.path, `out-${seq++}`);
  await encodeParquet(fx.session, { source: inputRelation(input, schema), schema, physicalNames: new Map(), outputDir: out, targetFileSizeBytes: 1 << 24, filePrefix: 'c-', input });
  return out;
}

/** Writes `{"a": <first>}` then `{"a": <json>}` and returns the error message, or the values read back as text. */
async function ndjson(type: PrimitiveType, first: string, json: string): Promise<{ error?: string; values?: (string | null)[]; path: string }> {
  const path = join(fx.dir.path, `in-${seq++}.ndjson`);
  writeFileSync(path, `{"a": ${first}}\n{"a": ${json}, "b": "x"}\n`);
  try {
    const out = await encode({ path, format: 'ndjson' }, schemaOf(type));
    const files = readdirSync(out).map((f) => `'${join(out, f)}'`);
    const rows = await fx.session.all(`SELECT CAST(a AS VARCHAR) AS a FROM read_parquet([${files.join(', ')}])`);
    return { values: rows.map((r) => (r.a === null ? null : String(r.a))), path };
  } catch (e) {
    if (!isTwinlakeError(e)) throw e;
    return { error: e.message, path };
  }
}

const refused: [PrimitiveType, string, string, string][] = [
  // type, a canonical first value, the bad JSON value, how the message shows it
  ['long', '1', '2.5', '2.5'],
  ['long', '1', '2.0', '2.0'],
  ['long', '1', '"2.5"', '2.5'],
  ['long', '1', '"0x10"', '0x10'],
  ['long', '1', '"1_000"', '1_000'],
  ['long', '1', '"1e3"', '1e3'],
  ['long', '1', 'true', 'true'],
  ['long', '1', '9223372036854775808', '9223372036854775808'],
  ['long', '1', '-9223372036854775809', '-9223372036854775809'],
  ['int', '1', '2147483648', '2147483648'],
  ['int', '1', '1.5', '1.5'],
  ['double', '1.5', 'true', 'true'],
  ['double', '1.5', '"0x10"', '0x10'],
  ['date', '"2025-01-05"', '"2025-1-5"', '2025-1-5'],
  ['date', '"2025-01-05"', '"infinity"', 'infinity'],
  ['date', '"2025-01-05"', '"epoch"', 'epoch'],
  ['date', '"2025-01-05"', '"2025-01-05 10:00:00"', '2025-01-05 10:00:00'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-01-05T00:00:00.1234567Z"', '2025-01-05T00:00:00.1234567Z'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-1-5T00:00:00Z"', '2025-1-5T00:00:00Z'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"infinity"', 'infinity'],
  // ISO forms with six or three fractional digits skip the strict parse: a value that only looks right is still refused.
  ['timestamptz', '"2025-01-05T00:00:00.000000Z"', '"2025-13-05T00:00:00.000000Z"', '2025-13-05T00:00:00.000000Z'],
  ['timestamptz', '"2025-01-05T00:00:00.000Z"', '"2025-01-05T25:00:00.000Z"', '2025-01-05T25:00:00.000Z'],
  ['timestamptz', '"2025-01-05T00:00:00.000Z"', '"2025-01-05T10:00:00.000ZZ"', '2025-01-05T10:00:00.000ZZ'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-01-05T10:00:00.123456Z"', '2025-01-05T10:00:00.123456Z'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-02-30T10:00:00.123456"', '2025-02-30T10:00:00.123456'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-01-05T10:00:00.1234567"', '2025-01-05T10:00:00.1234567'],
];

const exact: [PrimitiveType, string, string, string][] = [
  // type, a canonical first value, a value in another form that fits, what is stored (as DuckDB prints it)
  ['long', '1', '" 12 "', '12'],
  ['long', '1', '"+5"', '5'],
  ['long', '1', '"007"', '7'],
  ['long', '1', '-0', '0'],
  ['long', '1', '9223372036854775807', '9223372036854775807'],
  ['long', '1', '-9223372036854775808', '-9223372036854775808'],
  ['int', '1', '"  -3"', '-3'],
  ['double', '1.5', '" 1.5 "', '1.5'],
  ['double', '1.5', '"1e3"', '1000.0'],
  ['double', '1.5', '12', '12.0'],
  ['date', '"2025-01-05"', '" 2025-01-06 "', '2025-01-06'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-01-05T10:00:00+02:00"', '2025-01-05 08:00:00+00'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-01-05 10:00:00.5-01:30"', '2025-01-05 11:30:00.5+00'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-01-05"', '2025-01-05 00:00:00+00'],
  ['timestamptz', '"2025-01-05T00:00:00Z"', '"2025-01-05T00:00:00.123456Z"', '2025-01-05 00:00:00.123456+00'],
  ['timestamptz', '"2025-01-05T00:00:00.000000Z"', '"2025-01-05T10:00:00.123Z"', '2025-01-05 10:00:00.123+00'],
  ['timestamptz', '"2025-01-05T00:00:00.000000Z"', '"2025-01-05T24:00:00.000000Z"', '2025-01-06 00:00:00+00'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-01-05T10:00:00.123456"', '2025-01-05 10:00:00.123456'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-01-05T10:00:00.123"', '2025-01-05 10:00:00.123'],
  ['timestamp', '"2025-01-05T00:00:00.000000"', '"2025-01-05 10:00:00"', '2025-01-05 10:00:00'],
];

describe('values not in canonical text take the strict parse', () => {
  it.each(refused)('%s: %s then %s is refused with column, line and value', async (type, first, bad, shown) => {
    const r = await ndjson(type, first, bad);
    expect(r.error).toBe(`input ${r.path}: column "a" at line 2: expected ${type}, found ${JSON.stringify(shown)}`);
  });

  it.each(exact)('%s: %s then %s is read exactly', async (type, first, good, stored) => {
    const r = await ndjson(type, first, good);
    expect(r.error).toBeUndefined();
    expect(r.values?.[1]).toBe(stored);
  });

  it('CSV: quoted cells are values like any other, and a quoted misfit names its line', async () => {
    const schema: Schema = {
      type: 'struct', 'schema-id': 0,
      fields: [
        { id: 1, name: 'a', required: false, type: 'long' },
        { id: 2, name: 'b', required: false, type: 'string' },
        { id: 3, name: 'd', required: false, type: 'date' },
      ],
    };
    const good = join(fx.dir.path, 'quoted.csv');
    writeFileSync(good, 'a,b,d\n"12","x, y",2025-01-05\n" 7 ","say ""hi""","2025-01-06"\n');
    const out = await encode({ path: good, format: 'csv' }, schema);
    const rows = await fx.session.all(`SELECT a, b, CAST(d AS VARCHAR) AS d FROM read_parquet('${join(out, readdirSync(out)[0]!)}') ORDER BY a`);
    expect(rows).toEqual([{ a: 7n, b: 'say "hi"', d: '2025-01-06' }, { a: 12n, b: 'x, y', d: '2025-01-05' }]);
    const bad = join(fx.dir.path, 'quoted-bad.csv');
    writeFileSync(bad, 'a,b,d\n1,"a, b",2025-01-05\n"2.5","c",2025-01-05\n');
    const badDate = join(fx.dir.path, 'quoted-bad-date.csv');
    writeFileSync(badDate, 'a,b,d\n1,"a, b",2025-01-05\n2,"c","2025-1-5"\n');
    for (const [path, message] of [
      [bad, `column "a" at line 3: expected long, found "2.5"`],
      [badDate, `column "d" at line 3: expected date, found "2025-1-5"`],
    ] as const) {
      const e = await encode({ path, format: 'csv' }, schema).then(() => undefined, (x: unknown) => x);
      expect(isTwinlakeError(e) && e.message).toBe(`input ${path}: ${message}`);
    }
  });
});
