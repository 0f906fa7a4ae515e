import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { DuckDBSession, quoteIdent, quoteString } from '../../src/engine/duckdb-session.ts';

let session: DuckDBSession;
beforeAll(async () => {
  session = await DuckDBSession.open({ threads: 2, memoryLimit: '256MB' });
});
afterAll(() => session.close());

describe('DuckDBSession', () => {
  it('applies its settings and runs in UTC', async () => {
    const rows = await session.all(`SELECT current_setting('threads') AS t, current_setting('memory_limit') AS m, current_setting('TimeZone') AS z`);
    expect(Number(rows[0].t)).toBe(2);
    expect(String(rows[0].m)).toMatch(/^2\d\d\.\d MiB$/);
    expect(rows[0].z).toBe('UTC');
    const [ts] = await session.all(`SELECT CAST(TIMESTAMPTZ '2020-01-01 10:00:00+02' AS VARCHAR) AS v`);
    expect(ts.v).toBe('2020-01-01 08:00:00+00');
  });

  it('quotes identifiers and strings so any text round-trips', async () => {
    const name = `we"ird 'name' 𝄞`;
    const rows = await session.all(`SELECT ${quoteString(name)} AS ${quoteIdent(name)}`);
    expect(rows).toEqual([{ [name]: name }]);
  });

  it('returns raw values for callers that convert themselves', async () => {
    const { columns, rows } = await session.values(`SELECT 1::BIGINT AS a, DATE '2020-01-02' AS d`);
    expect(columns).toEqual(['a', 'd']);
    expect(rows[0][0]).toBe(1n);
    expect(String(rows[0][1])).toBe('2020-01-02');
  });

  it('reports failures as TwinlakeErrors of a fitting kind and keeps working', async () => {
    const kinds = await Promise.all([
      session.run(`SELECT CAST('x' AS INTEGER)`).catch((e) => (isTwinlakeError(e) ? e.kind : 'other')),
      session.run(`SELECT * FROM read_parquet('/nonexistent/file.parquet')`).catch((e) => (isTwinlakeError(e) ? e.kind : 'other')),
      session.run(`SELEC 1`).catch((e) => (isTwinlakeError(e) ? e.kind : 'other')),
    ]);
    expect(kinds).toEqual(['invalid-input', 'not-found', 'internal']);
    expect(await session.all('SELECT 42 AS x')).toEqual([{ x: 42 }]);
  });

  it('runs statements one at a time in call order', async () => {
    await session.run('CREATE TABLE seq (i INTEGER)');
    await Promise.all(Array.from({ length: 20 }, (_, i) => session.run(`INSERT INTO seq VALUES (${i})`)));
    const rows = await session.all('SELECT list(i) AS l FROM seq');
    expect(rows[0].l).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('refuses work once closed', async () => {
    const s = await DuckDBSession.open();
    s.close();
    await expect(s.all('SELECT 1')).rejects.toThrow(/closed/);
  });
});
