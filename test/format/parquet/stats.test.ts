import { readFileSync } from 'node:fs';
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { beforeAll, describe, expect, it } from 'vitest';
import { duckdbFixture } from '../../duckdb-fixture.ts';
import { parseJson } from '../../../src/core/json.ts';
import { encodeParquet } from '../../../src/engine/encode.ts';
import { compareUtf8, fromBinary, toBinary } from '../../../src/format/iceberg/single-value.ts';
import type { IcebergType, Schema } from '../../../src/format/iceberg/types.ts';
import { deltaStats, icebergMetrics, parseColumnPath, parseDuckDBStatValue, type FileStats, type IcebergMetrics } from '../../../src/format/parquet/stats.ts';

const fx = duckdbFixture();

const list = (id: number, element: IcebergType): IcebergType => ({ type: 'list', 'element-id': id, element, 'element-required': false });

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'b', required: false, type: 'boolean' },
    { id: 2, name: 'i', required: false, type: 'int' },
    { id: 3, name: 'l', required: false, type: 'long' },
    { id: 4, name: 'f', required: false, type: 'float' },
    { id: 5, name: 'd', required: false, type: 'double' },
    { id: 6, name: 'dec', required: false, type: 'decimal(38, 4)' },
    { id: 7, name: 'day', required: false, type: 'date' },
    { id: 8, name: 'ts', required: false, type: 'timestamptz' },
    { id: 9, name: 'ntz', required: false, type: 'timestamp' },
    { id: 10, name: 's', required: false, type: 'string' },
    { id: 11, name: 'bin', required: false, type: 'binary' },
    { id: 12, name: 'u', required: false, type: 'uuid' },
    { id: 13, name: 'none', required: false, type: 'string' },
    { id: 14, name: 'st', required: false, type: { type: 'struct', fields: [{ id: 15, name: 'x y', required: false, type: 'long' }, { id: 16, name: 'q"t', required: false, type: 'string' }] } },
    { id: 17, name: 'tags', required: false, type: list(18, 'string') },
    { id: 19, name: 'm', required: false, type: { type: 'map', 'key-id': 20, key: 'string', 'value-id': 21, value: 'double', 'value-required': false } },
    { id: 22, name: 'zero', required: false, type: 'double' },
  ],
};
const physicalNames = new Map<number, string>([[10, 's_phys'], [14, 'st_phys'], [15, 'x_phys']]);
const N = 5000;

// Every type, nulls everywhere, NaN and ±infinity in the floats, long unicode strings whose UTF-16
// order differs from their UTF-8 order, -0.0 and +0.0 in one column, values spread over row groups.
const source = `(SELECT
  CASE WHEN i % 7 = 0 THEN NULL ELSE i % 2 = 0 END AS b,
  CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7919 % 100003 - 50000)::INTEGER END AS i,
  CASE WHEN i = 17 THEN 9007199254740993 WHEN i % 13 = 0 THEN NULL ELSE i * -1000003 END::BIGINT AS l,
  CASE WHEN i % 3 = 0 THEN 'nan'::FLOAT WHEN i % 5 = 0 THEN NULL ELSE (i / 7.0)::FLOAT END AS f,
  CASE WHEN i < 1500 THEN 'nan'::DOUBLE WHEN i = 4000 THEN '-inf'::DOUBLE WHEN i % 17 = 0 THEN NULL ELSE i * 0.1 END::DOUBLE AS d,
  CASE WHEN i % 19 = 0 THEN NULL ELSE (i * 123456789.0123)::DECIMAL(38,4) END AS dec,
  CASE WHEN i % 23 = 0 THEN NULL ELSE DATE '1969-12-25' + i::INTEGER END AS day,
  CASE WHEN i % 29 = 0 THEN NULL ELSE make_timestamp(1577836800000000 + i * 1000001 + 123)::TIMESTAMPTZ END AS ts,
  CASE WHEN i % 31 = 0 THEN NULL ELSE make_timestamp(-1000000 + i * 999) END AS ntz,
  CASE WHEN i % 37 = 0 THEN NULL WHEN i = 5 THEN repeat('𝄞', 20) WHEN i = 6 THEN repeat(chr(65535), 18) ELSE 'row ' || lpad(i::VARCHAR, 5, '0') || ' éèê and some more text' END AS s,
  CASE WHEN i % 41 = 0 THEN NULL ELSE unhex(lpad(printf('%x', i * 13), 6, '0')) || '\\xff\\x00'::BLOB END AS bin,
  CASE WHEN i % 43 = 0 THEN NULL ELSE md5(i::VARCHAR)::UUID END AS u,
  NULL::VARCHAR AS none,
  CASE WHEN i % 47 = 0 THEN NULL ELSE {'x y': i * 3, 'q"t': 'v' || i} END AS st,
  CASE WHEN i % 53 = 0 THEN NULL ELSE ['t' || i, NULL] END AS tags,
  CASE WHEN i % 59 = 0 THEN NULL ELSE MAP {'k' || i: i * 0.5} END AS m,
  CASE WHEN i = 10 THEN 0.0 WHEN i = 4900 THEN -0.0 ELSE NULL END::DOUBLE AS zero
FROM range(${N}) t(i))`;

let stats: FileStats;
let metrics: IcebergMetrics;
let rows: Record<string, unknown>[];

beforeAll(async () => {
  const files = await encodeParquet(fx.session, { source, schema, physicalNames, outputDir: fx.dir.path, targetFileSizeBytes: 1 << 30, filePrefix: 'stats-', rowGroupSize: 1024 });
  expect(files).toHaveLength(1);
  stats = files[0];
  metrics = icebergMetrics(stats, schema);
  const buf = readFileSync(stats.path);
  rows = await parquetReadObjects({ file: buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength), compressors, utf8: false });
});

/** Truth from an independent reader (hyparquet), in Iceberg's order, NaN and nulls excluded. */
function truth(get: (r: Record<string, unknown>) => unknown, cmp: (a: any, b: any) => number) {
  const values = rows.map(get).filter((v) => v !== null && v !== undefined && !(typeof v === 'number' && Number.isNaN(v)));
  const sorted = [...values].sort(cmp);
  return { min: sorted[0], max: sorted[sorted.length - 1], nulls: rows.map(get).filter((v) => v === null || v === undefined).length };
}
const num = (a: number | bigint, b: number | bigint) => (a < b ? -1 : a > b ? 1 : 0);
const bytesCmp = (a: Uint8Array, b: Uint8Array) => Buffer.compare(Buffer.from(a), Buffer.from(b));
const bound = (id: number, type: IcebergType, side: 'lower' | 'upper') => {
  const b = metrics[side === 'lower' ? 'lower-bounds' : 'upper-bounds']!.get(id);
  return b === undefined ? undefined : fromBinary(type, b);
};

describe('Iceberg metrics from a real DuckDB COPY', () => {
  it('counts every column, nested children included', () => {
    expect(stats.recordCount).toBe(N);
    for (const f of schema.fields.filter((f) => typeof f.type === 'string')) {
      expect(metrics['value-counts']!.get(f.id), f.name).toBe(N);
      expect(metrics['null-value-counts']!.get(f.id), f.name).toBe(truth((r) => r[physicalNames.get(f.id) ?? f.name], num).nulls);
      expect(metrics['column-sizes']!.get(f.id), f.name).toBeGreaterThan(0);
    }
    expect(metrics['null-value-counts']!.get(15)).toBe(truth((r) => (r.st_phys as any)?.x_phys, num).nulls);
    // Leaves inside lists and maps count entries, as Iceberg's own writer reports them.
    expect(metrics['value-counts']!.get(18)).toBe(rows.reduce((a, r) => a + ((r.tags as unknown[] | null)?.length || 1), 0));
    expect(metrics['value-counts']!.has(20)).toBe(true);
    expect(metrics['nan-value-counts']).toBeUndefined();
  });

  it('exact bounds for exact types', () => {
    const cases: [number, string, IcebergType][] = [[2, 'i', 'int'], [3, 'l', 'long'], [7, 'day', 'date']];
    for (const [id, name, type] of cases) {
      const t = truth((r) => (r[name] instanceof Date ? Math.round((r[name] as Date).getTime() / 86400000) : r[name]) as number, num);
      expect(bound(id, type, 'lower'), name).toEqual(type === 'long' ? BigInt(t.min as bigint) : t.min);
      expect(bound(id, type, 'upper'), name).toEqual(type === 'long' ? BigInt(t.max as bigint) : t.max);
    }
    expect(bound(1, 'boolean', 'lower')).toBe(false);
    expect(bound(1, 'boolean', 'upper')).toBe(true);
    expect(bound(3, 'long', 'upper')).toBe(9007199254740993n);
    const [ts] = timestampTruth();
    expect(bound(8, 'timestamptz', 'lower')).toBe(ts.min);
    expect(bound(8, 'timestamptz', 'upper')).toBe(ts.max);
    expect(bound(6, 'decimal(38, 4)', 'lower')).toBe('123456789.0123');
    expect(bound(6, 'decimal(38, 4)', 'upper')).toBe((4999n * 1234567890123n).toString().replace(/(\d{4})$/, '.$1'));
    expect(bound(15, 'long', 'upper')).toBe(BigInt(4999 * 3));
  });

  it('float bounds exclude NaN and keep infinities', () => {
    const f = truth((r) => r.f, num);
    expect(bound(4, 'float', 'lower')).toBe(f.min);
    expect(bound(4, 'float', 'upper')).toBe(f.max);
    const d = truth((r) => r.d, num);
    expect(d.min).toBe(-Infinity);
    expect(bound(5, 'double', 'lower')).toBe(-Infinity);
    expect(bound(5, 'double', 'upper')).toBe(d.max);
  });

  it('decimal bounds compare numerically, not as text (9.00 < 10.00)', async () => {
    const decimals: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'decimal(9, 2)' }] };
    const [file] = await encodeParquet(fx.session, {
      source: `(SELECT * FROM (VALUES (9.00::DECIMAL(9, 2)), (10.00::DECIMAL(9, 2)), (9.50::DECIMAL(9, 2))) AS v(a))`,
      schema: decimals, physicalNames: new Map(), outputDir: fx.dir.path, targetFileSizeBytes: 1 << 30, filePrefix: 'decimals-',
    });
    const m = icebergMetrics(file, decimals);
    expect(fromBinary('decimal(9, 2)', m['lower-bounds']!.get(1)!)).toBe('9.00');
    expect(fromBinary('decimal(9, 2)', m['upper-bounds']!.get(1)!)).toBe('10.00');
  });

  it('-0.0 and +0.0 in one column: the bounds straddle both, as Iceberg orders -0.0 first', async () => {
    const zeros: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'a', required: false, type: 'double' }, { id: 2, name: 'b', required: false, type: 'float' }] };
    const [file] = await encodeParquet(fx.session, {
      source: `(SELECT * FROM (VALUES (0.0::DOUBLE, (-0.0)::FLOAT), ((-0.0)::DOUBLE, 0.0::FLOAT), (NULL, NULL)) AS v(a, b))`,
      schema: zeros, physicalNames: new Map(), outputDir: fx.dir.path, targetFileSizeBytes: 1 << 30, filePrefix: 'zeros-',
    });
    const m = icebergMetrics(file, zeros);
    for (const [id, type] of [[1, 'double'], [2, 'float']] as const) {
      expect(Object.is(fromBinary(type, m['lower-bounds']!.get(id)!), -0), `${type} lower`).toBe(true);
      expect(Object.is(fromBinary(type, m['upper-bounds']!.get(id)!), 0), `${type} upper`).toBe(true);
    }
  });

  it('string and binary bounds are truncated to 16 and still bound the data in byte order', () => {
    const s = truth((r) => r.s_phys, compareUtf8);
    const lo = bound(10, 'string', 'lower') as string;
    const hi = bound(10, 'string', 'upper') as string;
    expect(Array.from(lo).length).toBeLessThanOrEqual(16);
    expect(Array.from(hi).length).toBeLessThanOrEqual(16);
    expect(Buffer.compare(Buffer.from(lo), Buffer.from(s.min as string))).toBeLessThanOrEqual(0);
    expect(Buffer.compare(Buffer.from(hi), Buffer.from(s.max as string))).toBeGreaterThanOrEqual(0);
    // The largest value in byte order is the clef string, although JavaScript sorts U+FFFF after it.
    expect(s.max).toBe('𝄞'.repeat(20));
    const b = truth((r) => r.bin, bytesCmp);
    const blo = bound(11, 'binary', 'lower') as Uint8Array;
    const bhi = bound(11, 'binary', 'upper') as Uint8Array;
    expect(bytesCmp(blo, b.min as Uint8Array)).toBeLessThanOrEqual(0);
    expect(bytesCmp(bhi, b.max as Uint8Array)).toBeGreaterThanOrEqual(0);
  });

  it('no bounds where they cannot be trusted or do not apply', () => {
    for (const id of [12, 13, 18, 20, 21]) {
      expect(metrics['lower-bounds']!.has(id), `field ${id}`).toBe(false);
      expect(metrics['upper-bounds']!.has(id), `field ${id}`).toBe(false);
    }
    expect(metrics['null-value-counts']!.get(13)).toBe(N);
  });
});

// Timestamps read back by hyparquet as Date lose microseconds; the truth is computed from the
// generator instead, which is the input and not the code under test.
function timestampTruth() {
  const micros = [...Array(N).keys()].filter((i) => i % 29 !== 0).map((i) => 1577836800000000n + BigInt(i) * 1000001n + 123n);
  return [{ min: micros[0], max: micros[micros.length - 1] }];
}

describe('Delta stats derived from the Iceberg metrics', () => {
  it('nests by physical name, cuts timestamps to milliseconds and keeps the maximum a bound', () => {
    const json = parseJson(deltaStats({ 'record-count': stats.recordCount, ...metrics }, schema, physicalNames));
    expect(json.numRecords).toBe(N);
    const [ts] = timestampTruth();
    const ms = (micros: bigint, up: boolean) => new Date(Number(up ? (micros + 999n) / 1000n : micros / 1000n)).toISOString();
    expect(json.minValues.ts).toBe(ms(ts.min, false));
    expect(json.maxValues.ts).toBe(ms(ts.max, true));
    expect(Date.parse(json.maxValues.ts) * 1000).toBeGreaterThanOrEqual(Number(ts.max));
    expect(json.minValues.ntz).toBe('1969-12-31T23:59:59.000');
    expect(json.minValues.day).toBe('1969-12-26');
    expect(json.minValues.st_phys).toEqual({ x_phys: 3, 'q"t': 'v1' });
    expect(json.nullCount.st_phys).toEqual({ x_phys: metrics['null-value-counts']!.get(15), 'q"t': metrics['null-value-counts']!.get(16) });
    expect(json.minValues.s_phys).toBe(fromBinary('string', metrics['lower-bounds']!.get(10)!));
    expect(json.maxValues.l).toBe(9007199254740993n);
    expect(json.minValues.dec).toBe(123456789.0123);
    expect(json.maxValues.dec).toBeUndefined(); // 17 significant digits: no exact JSON number
    for (const name of ['b', 'bin', 'u', 'tags', 'm', 'none']) {
      expect(json.minValues[name], name).toBeUndefined();
      expect(json.maxValues[name], name).toBeUndefined();
    }
    expect(json.nullCount.none).toBe(N);
    expect(json.nullCount.tags).toBeUndefined();
  });

  it('omits what JSON cannot hold', () => {
    const s: Schema = { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'd', required: false, type: 'double' }, { id: 2, name: 'day', required: false, type: 'date' }] };
    const json = parseJson(deltaStats({
      'record-count': 2,
      'lower-bounds': new Map([[1, toBinary('double', -Infinity)], [2, toBinary('date', -800000)]]),
      'upper-bounds': new Map([[1, toBinary('double', -0)], [2, toBinary('date', 0)]]),
      'null-value-counts': new Map([[1, 0]]),
    }, s, new Map()));
    expect(json).toEqual({ numRecords: 2, minValues: {}, maxValues: { d: 0, day: '1970-01-01' }, nullCount: { d: 0 } });
  });
});

describe('RETURN_STATS text', () => {
  it('splits quoted column paths', () => {
    expect(parseColumnPath('"s"."q""t"."element"')).toEqual(['s', 'q"t', 'element']);
    expect(parseColumnPath('"a.b"')).toEqual(['a.b']);
    expect(() => parseColumnPath('s.x')).toThrow(/expected '"'/);
  });

  it('reads DuckDB’s value forms, and nothing inexact', () => {
    expect(parseDuckDBStatValue('timestamptz', '2020-01-01 05:00:00+05')).toBe(BigInt(Date.UTC(2020, 0, 1)) * 1000n);
    expect(parseDuckDBStatValue('timestamptz', '0044-01-01 (BC) 10:00:00+00')).toBe((BigInt(Date.UTC(-43, 0, 1, 10)) * 1000n));
    expect(parseDuckDBStatValue('timestamp', '2020-01-01 00:00:00.5')).toBe(BigInt(Date.UTC(2020, 0, 1)) * 1000n + 500000n);
    expect(parseDuckDBStatValue('timestamp', 'infinity')).toBeUndefined();
    expect(parseDuckDBStatValue('timestamp', '2020-01-01 00:00:00+00')).toBeUndefined();
    expect(parseDuckDBStatValue('date', '0001-01-01 (BC)')).toBe(-719528);
    expect(parseDuckDBStatValue('double', '-inf')).toBe(-Infinity);
    expect(parseDuckDBStatValue('double', '5e-324')).toBe(5e-324);
    expect(parseDuckDBStatValue('float', '3.4028235e+38')).toBe(Math.fround(3.4028235e38));
    expect(parseDuckDBStatValue('decimal(4, 1)', '0.0')).toBe('0.0');
    expect(parseDuckDBStatValue('decimal(4, 1)', '0.05')).toBeUndefined();
    expect(parseDuckDBStatValue('binary', '00FF')).toEqual(Uint8Array.of(0, 255));
    expect(parseDuckDBStatValue('boolean', '0')).toBe(false);
  });
});
