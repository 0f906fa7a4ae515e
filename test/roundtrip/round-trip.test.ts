import { createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, tempDir } from '../helpers.ts';
import { readWithIcebird } from '../icebird.ts';
import type { IcebergType, StructType } from '../../src/format/iceberg/types.ts';
import { typeToString } from '../../src/format/iceberg/schema.ts';
import { DECLARED_SCHEMA, generateRow, INFERRED_TYPES, ndjsonLine, SECOND_BATCH } from './all-types-data.ts';

/**
 * 100k rows of every supported type written through the CLI in two NDJSON batches, with types
 * inferred (the table is created with only the columns JSON cannot type: int, float, decimal,
 * binary; maps are inferred from objects whose keys vary), the second batch appended without a
 * schema; read back identically through
 * (a) the Iceberg metadata by an independent reader (icebird), and by our own Iceberg reader,
 * (b) the Delta log by our reader, (c) DuckDB `read_parquet` over the data files, with the field
 * IDs confirmed by `parquet_schema`.
 */
const ROWS = 100_000;

type Canonical = Record<string, unknown>;

/** The table's schema as Twinlake assigned its field IDs. */
function tableSchema(): StructType {
  const r = cli(['--warehouse', whOf(), 'describe', 'rt.all_types', '--json']);
  expect(r.code, r.stderr).toBe(0);
  return parseJson(r.stdout).schema;
}

/** Column name → field ID in Parquet schema order (list `element`, map `key`/`value`). */
function parquetFieldIds(struct: StructType): [string, number][] {
  const out: [string, number][] = [];
  const visit = (t: IcebergType) => {
    if (typeof t === 'string') return;
    if (t.type === 'struct') for (const f of t.fields) (out.push([f.name, f.id]), visit(f.type));
    else if (t.type === 'list') (out.push(['element', t['element-id']]), visit(t.element));
    else (out.push(['key', t['key-id']]), visit(t.key), out.push(['value', t['value-id']]), visit(t.value));
  };
  visit(struct);
  return out;
}

let whOf: () => string = () => '';

function canonicalKey(row: Canonical): string {
  return JSON.stringify(row);
}

/** Same rows (sorted canonical keys); a difference shows the first differing row, not 100k. */
function expectSameRows(got: string[], want: string[]): void {
  expect(got.length).toBe(want.length);
  const at = got.findIndex((g, i) => g !== want[i]);
  expect(at < 0 ? undefined : got[at]).toBe(at < 0 ? undefined : want[at]);
}

function microsFromIso(s: string): string {
  const m = /^(.*?)(?:\.(\d{1,9}))?(Z)?$/.exec(s)!;
  const ms = Date.parse(m[1] + 'Z');
  const frac = (m[2] ?? '').padEnd(6, '0').slice(0, 6);
  return String(BigInt(ms) * 1000n + BigInt(frac));
}

/** Our readers' NDJSON output (timestamps as ISO-8601 with microseconds; maps as key/value lists). */
function fromTwinlake(r: Record<string, any>): Canonical {
  return {
    id: String(r.id),
    b: r.b,
    i: r.i,
    l: r.l === null ? null : String(r.l),
    f: r.f,
    d: r.d,
    dec: r.dec,
    dt: r.dt,
    ts: r.ts === null ? null : microsFromIso(r.ts),
    tsn: r.tsn === null ? null : microsFromIso(r.tsn),
    s: r.s,
    bin: r.bin === null ? null : Buffer.from(r.bin, 'base64').toString('hex'),
    st: r.st,
    lst: r.lst === null ? null : r.lst.map((x: unknown) => (x === null ? null : String(x))),
    m: entries(r.m),
    ls: r.ls,
    big: r.big === null ? null : String(r.big),
    attrs: entries(r.attrs),
  };
}

function entries(m: { key: string; value: unknown }[] | null): unknown {
  return m === null ? null : m.map((e) => [e.key, e.value === null ? null : String(e.value)]).sort();
}

describe('round trip of every type through the CLI', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const tableDir = join(wh, 'rt', 'all_types');
  const expected = new Map<string, Canonical>();
  let expectedKeys: string[] = [];
  const writes: string[] = [];
  whOf = () => wh;

  beforeAll(async () => {
    const batches = [join(tmp.path, 'first.ndjson'), join(tmp.path, 'second.ndjson')];
    for (const [b, path] of batches.entries()) {
      const out = createWriteStream(path);
      let buf = '';
      for (let k = b === 0 ? 0 : SECOND_BATCH; k < (b === 0 ? SECOND_BATCH : ROWS); k++) {
        const row = generateRow(k);
        expected.set(String(k), row.canonical);
        buf += ndjsonLine(row);
        if (buf.length > 1 << 20) {
          out.write(buf);
          buf = '';
        }
      }
      out.end(buf);
      await finished(out);
    }
    expectedKeys = [...expected.values()].map(canonicalKey).sort();
    writeFileSync(join(tmp.path, 'schema.json'), JSON.stringify(DECLARED_SCHEMA));
    // icebird reads deflate-compressed Avro wrongly, so this table writes uncompressed manifests.
    const created = cli(['--warehouse', wh, 'create', 'rt.all_types', '--schema', join(tmp.path, 'schema.json'), '--property', 'write.avro.compression-codec=uncompressed']);
    expect(created.code, created.stderr).toBe(0);
    for (const [b, path] of batches.entries()) {
      const r = cli(['--warehouse', wh, 'write', 'rt.all_types', '--input', path]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/rows\s+50000/);
      writes.push(r.stdout);
      if (b === 1) expect(r.stdout).not.toMatch(/columns added|types widened/);
    }
  });
  afterAll(() => tmp.cleanup());

  it('infers every column the table did not declare; the second batch changes no type', () => {
    expect(typeToString(tableSchema())).toBe(INFERRED_TYPES);
    expect(writes[0]).toMatch(/columns added\s+id: long, b: boolean, l: long, d: double, dt: date, ts: timestamptz, tsn: timestamp, s: string, st: struct<a: long, b: string>, lst: list<long>, m: map<string, long>, .*attrs: map<string, string>/);
    expect(writes[0]).not.toMatch(/types widened/);
  });

  it('reads back identically through the Delta log (our reader)', () => {
    const r = cli(['--warehouse', wh, 'read', 'rt.all_types', '--format', 'delta', '--output', 'ndjson']);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trim().split('\n').map((l) => fromTwinlake(parseJson(l)));
    expectSameRows(rows.map(canonicalKey).sort(), expectedKeys);
  });

  it('reads back identically through the Iceberg metadata (our reader)', () => {
    const r = cli(['--warehouse', wh, 'read', 'rt.all_types', '--format', 'iceberg', '--output', 'ndjson']);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trim().split('\n').map((l) => fromTwinlake(parseJson(l)));
    expectSameRows(rows.map(canonicalKey).sort(), expectedKeys);
  });

  it('reads back identically with DuckDB read_parquet over the data files, field IDs on every column', async () => {
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    try {
      const glob = `${tableDir}/data/*.parquet`;
      const schema = (await c.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${glob}') WHERE name <> 'duckdb_schema' AND name <> 'list' AND name <> 'key_value'`)).getRowObjectsJson();
      const files = new Set((await c.runAndReadAll(`SELECT DISTINCT file_name FROM parquet_schema('${glob}')`)).getRowObjectsJson().map((r) => r.file_name));
      expect(files.size).toBeGreaterThan(0);
      const perFile = schema.length / files.size;
      expect(schema.slice(0, perFile).map((r) => [r.name, Number(r.field_id)])).toEqual(parquetFieldIds(tableSchema()));

      const sql = `SELECT id::VARCHAR AS id, b, i, l::VARCHAR AS l, f::DOUBLE AS f, d, dec::VARCHAR AS dec, dt::VARCHAR AS dt,
        epoch_us(ts)::VARCHAR AS ts, epoch_us(tsn)::VARCHAR AS tsn, s, hex(bin) AS bin, st,
        list_transform(lst, x -> x::VARCHAR) AS lst,
        list_transform(map_entries(m), e -> [e.key, e.value::VARCHAR]) AS m, ls, big::VARCHAR AS big,
        list_transform(map_entries(attrs), e -> [e.key, e.value::VARCHAR]) AS attrs
        FROM read_parquet('${glob}')`;
      const rows = (await c.runAndReadAll(sql)).getRowObjectsJson() as Record<string, any>[];
      const canon = rows.map((r) => ({ ...r, bin: r.bin === null ? null : String(r.bin).toLowerCase(), f: r.f === null ? null : Number(r.f), d: r.d === null ? null : Number(r.d), st: r.st === null ? null : { ...r.st, a: r.st.a === null ? null : Number(r.st.a) }, m: r.m === null ? null : [...r.m].sort(), attrs: r.attrs === null ? null : [...r.attrs].sort() }));
      expectSameRows(canon.map(canonicalKey).sort(), expectedKeys);
    } finally {
      c.closeSync();
    }
  });

  it('reads back through icebird, an Iceberg reader that shares no code with ours', async () => {
    {
      const rows = (await readWithIcebird(tableDir)) as Record<string, any>[];
      expect(rows).toHaveLength(ROWS);
      for (const r of rows) {
        const want = expected.get(String(r.id))!;
        expect(want, `row ${r.id}`).toBeDefined();
        // hyparquet (inside icebird) turns timestamps into Date, dates into Date and decimals into
        // numbers: compare those at the precision it returns (milliseconds; numeric value).
        const got = {
          ...want,
          b: r.b ?? null,
          i: r.i ?? null,
          l: r.l === null || r.l === undefined ? null : String(r.l),
          f: r.f ?? null,
          d: r.d ?? null,
          s: r.s ?? null,
          dec: r.dec === null || r.dec === undefined ? null : Number(r.dec).toFixed(2),
          dt: r.dt === null || r.dt === undefined ? null : new Date(r.dt).toISOString().slice(0, 10),
          ts: r.ts === null || r.ts === undefined ? null : String(BigInt(new Date(r.ts).getTime())),
          tsn: r.tsn === null || r.tsn === undefined ? null : String(BigInt(new Date(r.tsn).getTime())),
          // hyparquet decodes un-annotated BYTE_ARRAY as UTF-8 text: compare through the same decoding.
          bin: r.bin === null || r.bin === undefined ? null : Buffer.from(r.bin, 'utf8').toString('hex'),
          lst: r.lst === null || r.lst === undefined ? null : r.lst.map((x: unknown) => (x === null || x === undefined ? null : String(x))),
        };
        // hyparquet divides microseconds by 1000 with truncation toward zero.
        const msOf = (micros: unknown) => (micros === null ? null : String(BigInt(micros as string) / 1000n));
        const asText = (hex: unknown) => (hex === null ? null : Buffer.from(new TextDecoder().decode(Buffer.from(hex as string, 'hex')), 'utf8').toString('hex'));
        expect(got).toEqual({ ...want, ts: msOf(want.ts), tsn: msOf(want.tsn), bin: asText(want.bin) });
      }
    }
  });
});
