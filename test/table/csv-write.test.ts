import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, errorOf } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

/**
 * A CSV file is read as its header says, every row of it, through both formats: the encoding
 * reads the file with the columns inference found in its header (no second detection of its
 * layout), and nothing in the data is taken for a comment.
 */
describe('CSV writes', () => {
  const fx = lakehouseFixture();
  const byId = (rows: Record<string, unknown>[]) => rows.map((r) => ({ ...r, id: Number(r.id) })).sort((a, b) => a.id - b.id);

  it('keeps rows whose first cell starts with #: they are data, not comments', async () => {
    // A few cells starting with # among numbers: DuckDB's sniffer took # for a comment marker
    // here, dropped those rows and typed the column as a number.
    const f = join(fx.warehouse, 'hash.csv');
    writeFileSync(f, 'ref,note\n1,x\n#2,y\n3,z\n#4,w\n5,v\n');
    const t = fx.lake.table('csv.hash');
    const r = await t.append({ path: f });
    expect(r.rows).toBe(5);
    for (const format of ['iceberg', 'delta'] as const) {
      const rows = (await t.read({ format })).sort((a, b) => String(a.note).localeCompare(String(b.note)));
      expect(rows).toEqual([
        { ref: '5', note: 'v' },
        { ref: '#4', note: 'w' },
        { ref: '1', note: 'x' },
        { ref: '#2', note: 'y' },
        { ref: '3', note: 'z' },
      ]);
    }
    const cliWarehouse = join(fx.warehouse, 'cli-hash');
    expect(cli(['--warehouse', cliWarehouse, 'write', 'csv.hash', '--input', f]).code).toBe(0);
    expect(JSON.parse(cli(['--warehouse', cliWarehouse, 'describe', 'csv.hash', '--json']).stdout)).toMatchObject({ records: 5 });
  });

  it('reads a header with repeated and empty names, quoted line breaks and CRLF endings as before', async () => {
    const f = join(fx.warehouse, 'shapes.csv');
    writeFileSync(f, 'id,a,a,\r\n1,x,"y\r\nz",\r\n2,,"say ""hi""",q\r\n');
    const t = fx.lake.table('csv.shapes');
    await t.append({ path: f });
    expect(byId(await t.read({ format: 'delta' }))).toEqual([
      { id: 1, a: 'x', a_1: 'y\r\nz', column3: null },
      { id: 2, a: null, a_1: 'say "hi"', column3: 'q' },
    ]);
  });

  it('a later file with its columns in another order is matched by name', async () => {
    const t = fx.lake.table('csv.order');
    const first = join(fx.warehouse, 'order-1.csv');
    writeFileSync(first, 'id,name,amount\n1,a,1.5\n');
    await t.append({ path: first });
    const second = join(fx.warehouse, 'order-2.csv');
    writeFileSync(second, 'amount,id,name\n2.5,2,b\n');
    await t.append({ path: second });
    expect(byId(await t.read())).toEqual([
      { id: 1, name: 'a', amount: 1.5 },
      { id: 2, name: 'b', amount: 2.5 },
    ]);
  });

  it('a value past the sample that does not fit names column, line and value, in the library and the CLI', async () => {
    const rows = Array.from({ length: 30_000 }, (_, i) => `${i},2025-01-05T10:00:00.${String(i % 1e6).padStart(6, '0')}Z,2025-01-05`);
    const cases: [string, string, string][] = [
      // cell replaced on line 25,002 (row 25,000: past DuckDB's 20,480-row sample), column, value shown
      ['2.5,2025-01-05T10:00:00.000000Z,2025-01-05', 'id', '2.5'],
      ['1e3,2025-01-05T10:00:00.000000Z,2025-01-05', 'id', '1e3'],
      ['7,2025-01-05T10:00:00.1234567Z,2025-01-05', 'ts', '2025-01-05T10:00:00.1234567Z'],
      ['7,infinity,2025-01-05', 'ts', 'infinity'],
      ['7,2025-01-05T10:00:00.000000Z,2025-1-5', 'day', '2025-1-5'],
      ['7,2025-01-05T10:00:00.000000Z,infinity', 'day', 'infinity'],
    ];
    for (const [i, [line, column, value]] of cases.entries()) {
      const f = join(fx.warehouse, `late-${i}.csv`);
      const body = [...rows];
      body[25_000] = line;
      writeFileSync(f, `id,ts,day\n${body.join('\n')}\n`);
      const expected = `input ${f}: column "${column}" at line 25002: expected ${column === 'id' ? 'long' : column === 'ts' ? 'timestamptz' : 'date'}, found ${JSON.stringify(value)}`;
      const e = await errorOf(fx.lake.table(`csv.late${i}`).append({ path: f }));
      expect(e.message).toBe(expected);
      // The CLI prints the library's message: two processes show it, not one per case.
      if (i % 3 !== 0) continue;
      const r = cli(['--warehouse', join(fx.warehouse, 'cli'), 'write', `csv.late${i}`, '--input', f]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(expected);
    }
  });
});
