import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bind } from '../../../src/format/expressions/bind.ts';
import { evaluateRow, toDuckDBSql } from '../../../src/format/expressions/evaluate.ts';
import { parseFilter } from '../../../src/format/expressions/parser.ts';
import { quoteIdent, quoteString, sqlLiteral, toDuckDBType } from '../../../src/format/parquet/duckdb-types.ts';
import { columns, randomFilter, randomRow, rng, schema } from './random-filters.ts';

const ROWS = Array.from({ length: 400 }, (_, k) => randomRow(rng(5000 + k), k));
const columnSql = (id: number) => (id === 14 ? `${quoteIdent('st')}.${quoteIdent('x')}` : quoteIdent(schema.fields.find((f) => f.id === id)!.name));

describe('toDuckDBSql', () => {
  let db: DuckDBInstance;
  let conn: DuckDBConnection;

  beforeAll(async () => {
    db = await DuckDBInstance.create(':memory:');
    conn = await db.connect();
    await conn.run("SET TimeZone = 'UTC'");
    const defs = schema.fields.map((f) => `${quoteIdent(f.name)} ${toDuckDBType(f.type)}`);
    await conn.run(`CREATE TABLE t (${defs.join(', ')})`);
    const values = ROWS.map((row) => {
      const cells = schema.fields.map((f) => {
        if (f.id === 13) return row.get(13) === null ? 'NULL' : `struct_pack(x := ${sqlLiteral('int', row.get(14) ?? null)})`;
        return sqlLiteral(f.type, row.get(f.id) ?? null);
      });
      return `(${cells.join(', ')})`;
    });
    await conn.run(`INSERT INTO t VALUES ${values.join(', ')}`);
    // A zone far from UTC for the queries: the filter's literals must not depend on it.
    await conn.run("SET TimeZone = 'Pacific/Kiritimati'");
  });

  afterAll(() => {
    conn?.closeSync();
    db?.closeSync();
  });

  async function selectedIds(where: string): Promise<string[]> {
    const reader = await conn.runAndReadAll(`SELECT id FROM t WHERE ${where} ORDER BY id`);
    return reader.getRowObjectsJS().map((r) => String(r.id));
  }

  const jsIds = (text: string) =>
    ROWS.filter((row) => evaluateRow(bind(parseFilter(text), schema), (id) => row.get(id)) === true).map((row) => String(row.get(1)));

  it('stores the rows as generated', async () => {
    const reader = await conn.runAndReadAll('SELECT count(*) AS n, count(DISTINCT s) AS s, count(*) FILTER (WHERE isnan(dbl)) AS nan FROM t');
    const [r] = reader.getRowObjectsJS();
    expect(Number(r.n)).toBe(ROWS.length);
    expect(Number(r.nan)).toBe(ROWS.filter((row) => Number.isNaN(row.get(4))).length);
  });

  it('selects exactly the rows the filter semantics select, for random filters', async () => {
    const r = rng(77);
    let nonTrivial = 0;
    for (let n = 0; n < 400; n++) {
      const text = randomFilter(r, ROWS);
      const sql = toDuckDBSql(bind(parseFilter(text), schema), columnSql);
      const want = jsIds(text);
      if (want.length > 0 && want.length < ROWS.length) nonTrivial++;
      expect(await selectedIds(sql), `${text}\n${sql}`).toEqual(want);
    }
    expect(nonTrivial).toBeGreaterThan(200);
  });

  it('agrees on NaN, signed zero, infinities, pre-1970 and unicode edges', async () => {
    const texts = [
      'dbl > 1', 'dbl >= 1', 'NOT dbl > 1', 'dbl <> 2.5', 'dbl NOT IN (0, 3)', 'dbl IS NAN', 'NOT dbl IS NAN', "dbl >= 'Infinity'", "dbl > '-Infinity'",
      'dbl = 0', 'dbl = -0', 'f = 0.1', 'f <= 0.1', 'f > 3',
      "ts < '1970-01-01'", "ts >= '1969-12-31T23:59:59.999999Z'", "ts = '0001-01-01T00:00:00Z'", "ts > '0000-12-31T23:59:59.999999Z'", "ts >= '0000-12-31T10:00:00Z'", "lts >= '0000-12-31T10:00:00'", "d > '0000-12-31'", "lts < '1969-01-01T00:00:00'",
      "d = '2024-02-29'", "d < '0001-01-02'", "d >= '9999-12-31'",
      "s > 'z'", "s >= '\uffff'", "s < '😀'", "s = 'aaaaaaaaaaaaaaaaaaaa1'", "s = 'it''s'", "s IN ('', 'é')",
      "bin < X'80'", "bin >= X'ff'", "bin = X''",
      'dec > 0', "dec BETWEEN -1.5 AND '2.25'", 'l = -9223372036854775808', 'l > 9223372036854775806', 'i = -2147483648',
      'st IS NULL', 'st.x IS NULL', 'st.x > 0', 'NOT st.x > 0', 'flag', 'NOT flag', 'flag IS NULL',
    ];
    for (const text of texts) {
      const sql = toDuckDBSql(bind(parseFilter(text), schema), columnSql);
      expect(await selectedIds(sql), `${text}\n${sql}`).toEqual(jsIds(text));
    }
  });

  it('writes typed literals that DuckDB compares without casting the column', () => {
    const sql = (text: string) => toDuckDBSql(bind(parseFilter(text), schema), columnSql);
    expect(sql("ts >= '2024-01-01'")).toBe(`("ts" >= TIMESTAMPTZ '2024-01-01 00:00:00.000000+00')`);
    expect(sql("lts < '2024-01-01T10:00:00'")).toBe(`("lts" < TIMESTAMP '2024-01-01 10:00:00.000000')`);
    expect(sql("d = '1969-12-31'")).toBe(`("d" = DATE '1969-12-31')`);
    expect(sql("s = 'it''s'")).toBe(`("s" = 'it''s')`);
    expect(sql('dec IN (1, 2.5)')).toBe(`("dec" IN (CAST('1.00' AS DECIMAL(9,2)), CAST('2.50' AS DECIMAL(9,2))))`);
    expect(sql('dbl > 1')).toBe(`("dbl" > CAST('1' AS DOUBLE) AND NOT isnan("dbl"))`);
    expect(sql("NOT (i < 3 OR s IS NULL)")).toBe(`(NOT (("i" < CAST(3 AS INTEGER)) OR ("s" IS NULL)))`);
  });

  it('lets DuckDB push the filter down to a Parquet scan', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'twinlake-filter-'));
    try {
      const file = join(dir, 't.parquet');
      await conn.run(`COPY t TO ${quoteString(file)} (FORMAT parquet)`);
      const sql = toDuckDBSql(bind(parseFilter("ts >= '2024-01-01' AND s = 'a\u0000b' AND dec < 3"), schema), columnSql);
      const plan = (await conn.runAndReadAll(`EXPLAIN SELECT id FROM read_parquet(${quoteString(file)}) WHERE ${sql}`)).getRows().flat().join('\n');
      const flat = plan.replace(/[\s│]+/g, '');
      expect(flat).toContain('READ_PARQUET');
      expect(flat).toMatch(/Filters:.*ts>='2024-01-0100:00:00\+00'::TIMESTAMPWITHTIMEZONE/);
      expect(flat).toContain("s='a\u0000b'");
      expect(flat).toMatch(/dec<3\.00/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('covers every column of the random schema', () => {
    expect(columns.map((c) => c.type).sort()).toEqual(['binary', 'boolean', 'date', 'decimal(9, 2)', 'double', 'float', 'int', 'int', 'long', 'string', 'timestamp', 'timestamptz']);
  });
});
