import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { duckdbFixture } from '../duckdb-fixture.ts';
import { isTwinlakeError, type TwinlakeError } from '../../src/core/errors.ts';
import { encodeParquet, type EncodeOptions } from '../../src/engine/encode.ts';
import { inferSchema, inputRelation, type InputFile } from '../../src/engine/infer-schema.ts';
import type { Schema, StructType } from '../../src/format/iceberg/types.ts';

const fx = duckdbFixture();

let seq = 0;
const outDir = () => join(fx.dir.path, `out-${seq++}`);
const file = (name: string, text: string) => {
  const p = join(fx.dir.path, name);
  writeFileSync(p, text);
  return p;
};
const asSchema = (s: StructType): Schema => {
  let id = 0;
  const number = (t: StructType): StructType => ({ type: 'struct', fields: t.fields.map((f) => ({ ...f, id: ++id, type: typeof f.type !== 'string' && f.type.type === 'struct' ? number(f.type) : f.type })) });
  return { ...number(s), 'schema-id': 0 };
};

describe('encodeParquet', () => {
  it('rolls files at the target size, every file with field IDs and exact counts', async () => {
    const schema: Schema = {
      type: 'struct', 'schema-id': 0,
      fields: [
        { id: 1, name: 'n', required: true, type: 'long' },
        { id: 2, name: 'h', required: false, type: 'string' },
        { id: 3, name: 'p', required: false, type: { type: 'struct', fields: [{ id: 4, name: 'q', required: false, type: 'double' }] } },
      ],
    };
    const out = outDir();
    const target = 1_000_000;
    const files = await encodeParquet(fx.session, {
      source: `(SELECT i AS n, md5(i::VARCHAR) AS h, {'q': i / 3} AS p FROM range(200000) t(i))`,
      schema, physicalNames: new Map([[1, 'n'], [3, 'p_phys']]), outputDir: out, targetFileSizeBytes: target, filePrefix: 'part-', rowGroupSize: 10000,
    });
    expect(files.length).toBeGreaterThan(3);
    expect(files.reduce((a, f) => a + f.recordCount, 0)).toBe(200000);
    expect(readdirSync(out).sort()).toEqual(files.map((f) => f.path.slice(out.length + 1)).sort());
    for (const f of files) {
      expect(f.path.startsWith(join(out, 'part-'))).toBe(true);
      expect(f.sizeBytes).toBe(statSync(f.path).size);
      // Rolled at a row-group boundary once the target is reached: at most about one group over.
      expect(f.sizeBytes).toBeLessThan(target * 1.6);
      const buf = readFileSync(f.path);
      const meta = parquetMetadata(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
      expect(meta.schema.filter((e) => e.field_id !== undefined).map((e) => [e.name, e.field_id])).toEqual([['n', 1], ['h', 2], ['p_phys', 3], ['q', 4]]);
      expect(Number(meta.num_rows)).toBe(f.recordCount);
      expect(f.columns.get(1)?.valueCount).toBe(f.recordCount);
    }
    const [sum] = await fx.session.all(`SELECT sum(n)::BIGINT AS s, count(DISTINCT h) AS d, sum(p_phys.q) AS q FROM read_parquet('${out}/*.parquet')`);
    expect(sum.s).toBe(BigInt((200000 * 199999) / 2));
    expect(Number(sum.d)).toBe(200000);
  });

  it('writes nothing for an empty input', async () => {
    const out = outDir();
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'long' }] };
    const files = await encodeParquet(fx.session, { source: '(SELECT 1 AS a WHERE FALSE)', schema, physicalNames: new Map(), outputDir: out, targetFileSizeBytes: 1 << 20, filePrefix: 'e-' });
    expect(files).toEqual([]);
    expect(readdirSync(out)).toEqual([]);
  });
});

describe('bad input is reported by column, line, value and expected type', () => {
  async function encodeFile(input: InputFile, schema?: Schema): Promise<TwinlakeError> {
    const s = schema ?? asSchema(await inferSchema(fx.session, input));
    const out = outDir();
    const options: EncodeOptions = { source: inputRelation(input, s), schema: s, physicalNames: new Map(), outputDir: out, targetFileSizeBytes: 1 << 20, filePrefix: 'bad-', input };
    try {
      await encodeParquet(fx.session, options);
    } catch (e) {
      if (!isTwinlakeError(e)) throw e;
      expect(e.kind).toBe('invalid-input');
      // Nothing is left behind, not even a file written before the failure.
      expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
      return e;
    }
    throw new Error('expected the encode to fail');
  }

  it('NDJSON: a value past DuckDB’s type sample that does not fit', async () => {
    const lines = Array.from({ length: 25000 }, (_, i) => JSON.stringify({ a: i, b: `x${i}` }));
    lines[23999] = JSON.stringify({ a: 2.5, b: 'late' });
    lines.splice(100, 0, '', '   '); // blank lines shift line numbers but not record numbers
    const path = file('late.ndjson', lines.join('\n') + '\n');
    const e = await encodeFile({ path, format: 'ndjson' });
    expect(e.message).toBe(`input ${path}: column "a" at line 24002: expected long, found "2.5"`);
  });

  it('NDJSON: nested values and required columns', async () => {
    const path = file('nested.ndjson', '{"id": 1, "o": {"p": 1}}\n{"id": 2, "o": {"p": "seven"}}\n');
    const nested: Schema = {
      type: 'struct', 'schema-id': 0,
      fields: [{ id: 1, name: 'id', required: false, type: 'long' }, { id: 2, name: 'o', required: false, type: { type: 'struct', fields: [{ id: 3, name: 'p', required: false, type: 'long' }] } }],
    };
    expect((await encodeFile({ path, format: 'ndjson' }, nested)).message).toBe(`input ${path}: column "o.p" at line 2: expected long, found "seven"`);
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }, { id: 2, name: 'v', required: false, type: 'string' }] };
    const missing = file('required.ndjson', '{"id": 1}\n{"v": "no id"}\n');
    expect((await encodeFile({ path: missing, format: 'ndjson' }, schema)).message).toBe(`input ${missing}: column "id" at line 2: expected long, found null (the column is required)`);
  });

  it('NDJSON: a zone on a timestamp without zone, digits a decimal cannot hold', async () => {
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 't', required: false, type: 'timestamp' }, { id: 2, name: 'd', required: false, type: 'decimal(6, 2)' }] };
    const zoned = file('zoned.ndjson', '{"t": "2020-01-01T00:00:00"}\n{"t": "2020-01-01T00:00:00+02:00"}\n');
    expect((await encodeFile({ path: zoned, format: 'ndjson' }, schema)).message).toBe(`input ${zoned}: column "t" at line 2: expected timestamp, found "2020-01-01T00:00:00+02:00"`);
    const digits = file('digits.ndjson', '{"d": 1.25}\n{"d": "1.255"}\n');
    expect((await encodeFile({ path: digits, format: 'ndjson' }, schema)).message).toBe(`input ${digits}: column "d" at line 2: expected decimal(6, 2), found "1.255"`);
  });

  it('NDJSON: malformed JSON names its line', async () => {
    const path = file('malformed.ndjson', '{"a": 1}\n\n{"a": 2\n{"a": 3}\n');
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'long' }] };
    expect((await encodeFile({ path, format: 'ndjson' }, schema)).message).toMatch(new RegExp(`^input ${path}: line 3: malformed JSON`));
  });

  it('CSV: a bad value and a row with the wrong number of columns', async () => {
    const value = file('value.csv', 'a,b\n1,x\n2,y\noops,z\n');
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'long' }, { id: 2, name: 'b', required: false, type: 'string' }] };
    expect((await encodeFile({ path: value, format: 'csv' }, schema)).message).toBe(`input ${value}: column "a" at line 4: expected long, found "oops"`);
    const columns = file('columns.csv', 'a,b\n1,x\n2,y,extra\n3,z\n');
    expect((await encodeFile({ path: columns, format: 'csv' }, schema)).message).toBe(`input ${columns}: line 3: Expected Number of Columns: 2 Found: 3 in "2,y,extra"`);
  });

  it('JSON documents name the record', async () => {
    const path = file('doc.json', JSON.stringify([{ a: 1 }, { a: 2 }, { a: 'three' }]));
    const schema: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'long' }] };
    expect((await encodeFile({ path, format: 'json' }, schema)).message).toBe(`input ${path}: column "a" at record 3: expected long, found "three"`);
  });
});
