import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBSession } from '../../../src/engine/duckdb-session.ts';
import type { IcebergType, StructType } from '../../../src/format/iceberg/types.ts';
import { fromDuckDBType, parseDuckDBType, quoteIdent, sqlLiteral, toDuckDBType } from '../../../src/format/parquet/duckdb-types.ts';

let session: DuckDBSession;
beforeAll(async () => {
  session = await DuckDBSession.open();
});
afterAll(() => session.close());

const struct = (fields: [string, IcebergType][]): StructType => ({
  type: 'struct',
  fields: fields.map(([name, type], i) => ({ id: i + 1, name, required: false, type })),
});

describe('Iceberg → DuckDB types', () => {
  it('maps every type DESIGN.md §3 lists', () => {
    expect(toDuckDBType('timestamptz')).toBe('TIMESTAMPTZ');
    expect(toDuckDBType('decimal(38, 10)')).toBe('DECIMAL(38,10)');
    expect(toDuckDBType({ type: 'list', 'element-id': 1, element: 'string', 'element-required': false })).toBe('VARCHAR[]');
    expect(toDuckDBType({ type: 'map', 'key-id': 1, key: 'string', 'value-id': 2, value: 'long', 'value-required': false })).toBe('MAP(VARCHAR, BIGINT)');
    expect(toDuckDBType(struct([['a "b"', 'int'], ['é', 'boolean']]))).toBe('STRUCT("a ""b""" INTEGER, "é" BOOLEAN)');
    expect(() => toDuckDBType('timestamptz_ns')).toThrow(/no DuckDB type/);
    expect(() => toDuckDBType('decimal(39, 0)')).toThrow(/1 ≤ P ≤ 38/);
  });

  it('DuckDB agrees: a CAST to each type keeps that type', async () => {
    const types: IcebergType[] = [
      'boolean', 'int', 'long', 'float', 'double', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'string', 'uuid', 'binary', 'decimal(18, 3)',
      struct([['a b', 'int'], ['c', { type: 'list', 'element-id': 9, element: 'date', 'element-required': false }]]),
      { type: 'map', 'key-id': 1, key: 'string', 'value-id': 2, value: struct([['x', 'double']]), 'value-required': false },
    ];
    const select = types.map((t, i) => `CAST(NULL AS ${toDuckDBType(t)}) AS ${quoteIdent(`c${i}`)}`).join(', ');
    const described = await session.all(`DESCRIBE SELECT ${select}`);
    described.forEach((row, i) => expect(fromDuckDBType(String(row.column_type)), `column c${i}`).toEqual(stripIds(types[i])));
  });

  it('writes literals DuckDB reads back as the same values', async () => {
    const cases: [IcebergType, unknown, string][] = [
      ['date', -1, '1969-12-31'],
      ['date', -719528, '0001-01-01 (BC)'], ['date', -719529, '0002-12-31 (BC)'],
      ['timestamptz', 1510871468123456n, '2017-11-16 22:31:08.123456+00'],
      ['timestamp', -1n, '1969-12-31 23:59:59.999999'],
      ['decimal(9, 2)', '-1.5', '-1.50'],
      ['string', "it's", "it's"],
      ['binary', Uint8Array.of(0, 255), '\\x00\\xFF'],
      ['double', -0, '-0.0'],
      ['time', 1n, '00:00:00.000001'],
      ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'],
    ];
    for (const [type, value, text] of cases) {
      const [row] = await session.all(`SELECT CAST(${sqlLiteral(type, value as never)} AS VARCHAR) AS v, typeof(${sqlLiteral(type, value as never)}) AS t`);
      expect(row.v, `${String(type)} ${String(value)}`).toBe(text);
      expect(fromDuckDBType(String(row.t))).toBe(type);
    }
  });
});

function stripIds(type: IcebergType): IcebergType {
  if (typeof type === 'string') return type;
  if (type.type === 'struct') return { type: 'struct', fields: type.fields.map((f) => ({ id: 0, name: f.name, required: false, type: stripIds(f.type) })) };
  if (type.type === 'list') return { ...type, 'element-id': 0, element: stripIds(type.element) };
  return { ...type, 'key-id': 0, 'value-id': 0, key: stripIds(type.key), value: stripIds(type.value) };
}

describe('DuckDB → Iceberg types', () => {
  it('parses nested and quoted type strings', () => {
    expect(parseDuckDBType('STRUCT("a "" b" INTEGER, "c,d" VARCHAR[], e MAP(VARCHAR, DOUBLE[3]))[]')).toEqual({
      kind: 'list',
      element: {
        kind: 'struct',
        fields: [
          { name: 'a " b', type: { kind: 'primitive', name: 'INTEGER', params: [] } },
          { name: 'c,d', type: { kind: 'list', element: { kind: 'primitive', name: 'VARCHAR', params: [] } } },
          { name: 'e', type: { kind: 'map', key: { kind: 'primitive', name: 'VARCHAR', params: [] }, value: { kind: 'list', element: { kind: 'primitive', name: 'DOUBLE', params: [] } } } },
        ],
      },
    });
  });

  it('maps the types inference meets', () => {
    expect(fromDuckDBType('BIGINT')).toBe('long');
    expect(fromDuckDBType('SMALLINT')).toBe('int');
    expect(fromDuckDBType('UBIGINT')).toBe('decimal(20, 0)');
    expect(fromDuckDBType('HUGEINT')).toBe('decimal(38, 0)');
    expect(fromDuckDBType('JSON')).toBe('string');
    expect(fromDuckDBType('"NULL"')).toBe('string');
    expect(fromDuckDBType('TIMESTAMP WITH TIME ZONE')).toBe('timestamptz');
    expect(fromDuckDBType('TIMESTAMP')).toBe('timestamp');
    expect(fromDuckDBType('TIMESTAMP', { naiveTimestamp: 'timestamptz' })).toBe('timestamptz');
    expect(fromDuckDBType('DECIMAL(10,2)')).toBe('decimal(10, 2)');
    expect(fromDuckDBType("ENUM('a', 'b')")).toBe('string');
    expect(() => fromDuckDBType('INTERVAL')).toThrow(/INTERVAL has no Iceberg type/);
    expect(fromDuckDBType('INTERVAL', { lenient: true })).toBe('unknown');
    expect(fromDuckDBType('STRUCT(a BIGINT)[]')).toEqual({
      type: 'list', 'element-id': 0, 'element-required': false,
      element: { type: 'struct', fields: [{ id: 0, name: 'a', required: false, type: 'long' }] },
    });
  });
});
