import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { fileUri } from '../../src/core/uri.ts';
import { copyScanTo, streamScan } from '../../src/engine/read-scan.ts';
import type { Schema } from '../../src/format/iceberg/types.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';

const fx = duckdbFixture();

const struct = (...fields: [number, string, Schema['fields'][number]['type']][]) => ({ type: 'struct' as const, fields: fields.map(([id, name, type]) => ({ id, name, required: false, type })) });

// Every type a read returns, with names a CSV header must quote.
const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'i', required: false, type: 'int' },
    { id: 3, name: 'f', required: false, type: 'float' },
    { id: 4, name: 'd', required: false, type: 'double' },
    { id: 5, name: 'dec', required: false, type: 'decimal(12, 2)' },
    { id: 6, name: 'big', required: false, type: 'decimal(38, 0)' },
    { id: 7, name: 'b', required: false, type: 'boolean' },
    { id: 8, name: 'dt', required: false, type: 'date' },
    { id: 9, name: 't', required: false, type: 'time' },
    { id: 10, name: 'tz', required: false, type: 'timestamptz' },
    { id: 11, name: 'ntz', required: false, type: 'timestamp' },
    { id: 12, name: 's, "quoted" #1', required: false, type: 'string' },
    { id: 13, name: 'bin', required: false, type: 'binary' },
    { id: 14, name: 'u', required: false, type: 'uuid' },
    { id: 15, name: 'st', required: false, type: struct([16, 'a', 'long'], [17, 'when', 'timestamptz'], [18, 'inner', struct([19, 'x', 'double'])]) },
    { id: 20, name: 'l', required: false, type: { type: 'list', 'element-id': 21, element: 'date', 'element-required': false } },
    { id: 22, name: 'm', required: false, type: { type: 'map', 'key-id': 23, key: 'string', 'value-id': 24, value: 'decimal(12, 2)', 'value-required': false } },
    { id: 25, name: 'ls', required: false, type: { type: 'list', 'element-id': 26, element: struct([27, 'y', 'string'], [28, 'z', 'binary']), 'element-required': false } },
  ],
};

// Strings that CSV quoting and JSON escaping treat differently, short (inline in the engine's
// string type) and long; five thousand rows span several engine chunks.
const STRINGS = ['', 'plain', 'a,b', 'say "hi"', 'line\nbreak', 'cr\rhere', 'tab\there', ' lead', 'trail ', 'ünïcödé 日本語 🙂', 'x'.repeat(200), 'NULL', '\u0001\u2028\u007f', 'back\\slash', '/', 'hash#tag', '#', 'semi;colon'];
const ROWS = 5000;

describe('streamScan', () => {
  let task: ScanTask;
  beforeAll(async () => {
    const path = join(fx.dir.path, 'all.parquet');
    const strings = `[${STRINGS.map((s) => `'${s.replaceAll("'", "''")}'`).join(', ')}]`;
    const pick = (n: number) => `${strings}[1 + (i % ${STRINGS.length + n}) % ${STRINGS.length}]`;
    const orNull = (k: number, v: string) => `CASE WHEN i % ${k} = 0 THEN NULL ELSE ${v} END`;
    await fx.session.run(`COPY (SELECT
        i::BIGINT * 1000003 - 9007199254740000 AS id,
        ${orNull(7, `(i - 2500)::INTEGER`)} AS i,
        ${orNull(5, `[1.5::FLOAT, 'nan'::FLOAT, 'inf'::FLOAT, 3.4e38::FLOAT, 1e-45::FLOAT][1 + i % 5]`)} AS f,
        ${orNull(6, `[0.1, 'nan'::DOUBLE, '-inf'::DOUBLE, 1e300, 5e-324, -0.0, 100.0][1 + i % 7]`)} AS d,
        ${orNull(4, `(i * 37 - 99999)::DECIMAL(12, 2) / 100`)} AS dec,
        ${orNull(9, `(i::HUGEINT * 123456789012345678901234567 - 5)::DECIMAL(38, 0)`)} AS big,
        ${orNull(3, `i % 2 = 0`)} AS b,
        ${orNull(8, `DATE '1960-02-29' + (i * 17)::INTEGER`)} AS dt,
        ${orNull(10, `TIME '00:00:00' + to_microseconds(i::BIGINT * 17000001)`)} AS t,
        ${orNull(11, `make_timestamptz(i::BIGINT * 1000000007 - 2000000000000000)`)} AS tz,
        ${orNull(12, `make_timestamp(i::BIGINT * 999999937 - 1000000000000)`)} AS ntz,
        ${orNull(13, pick(0))} AS "s, ""quoted"" #1",
        ${orNull(14, `encode(${pick(1)})`)} AS bin,
        ${orNull(15, `'0189b5b2-6f0c-7a4e-8a1b-3c2d4e5f6a7b'::UUID`)} AS u,
        ${orNull(16, `{'a': i, 'when': make_timestamptz(i::BIGINT * 1000003), 'inner': ${orNull(5, `{'x': i / 3}`)}}`)} AS st,
        ${orNull(17, `[DATE '2024-02-29' + i::INTEGER, NULL]`)} AS l,
        ${orNull(18, `MAP {${pick(2)}: (i / 7)::DECIMAL(12, 2), 'k': NULL}`)} AS m,
        ${orNull(19, `[{'y': ${pick(3)}, 'z': encode('\\x00'::VARCHAR || ${pick(4)})}, NULL]`)} AS ls
      FROM range(${ROWS}) AS r(i)) TO '${path}' (FORMAT parquet, FIELD_IDS {
        id: 1, i: 2, f: 3, d: 4, dec: 5, big: 6, b: 7, dt: 8, t: 9, tz: 10, ntz: 11, "s, ""quoted"" #1": 12, bin: 13, u: 14,
        st: {__duckdb_field_id: 15, a: 16, "when": 17, "inner": {__duckdb_field_id: 18, x: 19}},
        l: {__duckdb_field_id: 20, element: 21}, m: {__duckdb_field_id: 22, key: 23, value: 24},
        ls: {__duckdb_field_id: 25, element: {__duckdb_field_id: 26, y: 27, z: 28}}})`);
    const physicalNames = new Map<number, string>();
    const visit = (fields: Schema['fields']) => {
      for (const f of fields) {
        physicalNames.set(f.id, f.name);
        if (typeof f.type !== 'string' && f.type.type === 'struct') visit(f.type.fields);
        if (typeof f.type !== 'string' && f.type.type === 'list' && typeof f.type.element !== 'string' && f.type.element.type === 'struct') visit(f.type.element.fields);
      }
    };
    visit(schema.fields);
    task = { schema, resolution: 'field-id', fieldIdsKnown: true, physicalNames, files: [{ path: fileUri(path) }] };
  });

  async function streamed(format: 'json' | 'csv', limit?: number): Promise<{ text: string; pieces: number }> {
    const pieces: Buffer[] = [];
    await streamScan(fx.session, task, { format, limit }, (bytes) => void pieces.push(Buffer.from(bytes)));
    return { text: Buffer.concat(pieces).toString('utf8'), pieces: pieces.length };
  }

  function copied(format: 'json' | 'csv', limit?: number): Promise<string> {
    const path = join(fx.dir.path, `copy-${format}-${limit ?? 'all'}`);
    return copyScanTo(fx.session, task, { format, path, limit }).then(() => readFileSync(path, 'utf8'));
  }

  for (const format of ['json', 'csv'] as const) {
    it(`streams ${format} byte for byte as the engine's own ${format} writer prints it, in pieces`, async () => {
      const expected = await copied(format);
      const { text, pieces } = await streamed(format);
      expect(text.split('\n').length).toBe(expected.split('\n').length);
      expect(text).toBe(expected);
      // One piece per engine chunk (and the CSV header): the rows never sit in one buffer.
      expect(pieces).toBeGreaterThan(1);
    });

    it(`honours a limit in ${format}, and an empty read still has its ${format === 'csv' ? 'header' : 'nothing'}`, async () => {
      expect((await streamed(format, 3)).text).toBe(await copied(format, 3));
      expect((await streamed(format, 0)).text).toBe(await copied(format, 0));
    });
  }
});
