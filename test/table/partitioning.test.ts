import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lakehouse, TwinlakeError } from '../../src/index.ts';
import { localPath } from '../../src/core/uri.ts';
import { applyTransform, partitionPathSegment } from '../../src/format/iceberg/transforms.ts';
import { indexById } from '../../src/format/iceberg/schema.ts';
import { specById } from '../../src/format/iceberg/table-metadata.ts';
import { parseTimestamp } from '../../src/format/iceberg/single-value.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { tempDir } from '../helpers.ts';

/** Rows with the edge values partitioning must get right. */
function rows(batch: number, n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const zones = ['us', 'eu', 'ap', 'ünï', '日本', 'x'.repeat(200)];
  for (let i = 0; i < n; i++) {
    const k = batch * 100_000 + i;
    // Instants from 1965 to 2030, including leap days and the epoch.
    const ms = Date.UTC(1965, 0, 1) + ((k * 7_919_311_003) % (65 * 365 * 86_400_000));
    const special = ['1970-01-01T00:00:00.000000Z', '1969-12-31T23:59:59.999999Z', '2024-02-29T12:00:00.000001Z', '2023-12-31T23:59:59.999999Z'];
    out.push({
      id: k,
      ts: k % 17 === 0 ? null : k % 11 === 0 ? special[k % special.length] : new Date(ms).toISOString().replace('Z', '123Z'),
      user_id: k % 13 === 0 ? null : (k % 1000) - 500,
      region: k % 19 === 0 ? null : zones[k % zones.length],
      amount: k % 23 === 0 ? null : ((k % 2000) - 1000) / 4,
    });
  }
  return out;
}

const byId = (r: Record<string, unknown>[]) => r.map((x) => JSON.stringify(x)).sort();

describe('partitioned tables', () => {
  const tmp = tempDir();
  let lake: Lakehouse;
  const written: Record<string, unknown>[] = [];
  beforeAll(async () => {
    lake = await Lakehouse.open({ warehouse: tmp.path });
    const t = lake.table('part.events');
    for (let b = 0; b < 3; b++) {
      const batch = rows(b, 700);
      written.push(...batch);
      await t.append(batch, { partition: 'day(ts), bucket(16, user_id), truncate(2, region), region' });
    }
  });
  afterAll(async () => {
    await lake.close();
    tmp.cleanup();
  });

  it('names fields as Iceberg does and makes identity columns the Delta partition columns', async () => {
    const m = await lake.table('part.events').metadata();
    const spec = specById(m, m['default-spec-id']);
    expect(spec.fields.map((f) => [f.name, f.transform, f['field-id']])).toEqual([
      ['ts_day', 'day', 1000],
      ['user_id_bucket', 'bucket[16]', 1001],
      ['region_trunc', 'truncate[2]', 1002],
      ['region', 'identity', 1003],
    ]);
    const log = readFileSync(join(tmp.path, 'part', 'events', '_delta_log', '00000000000000000000.json'), 'utf8');
    const meta = log.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((a) => a.metaData).metaData;
    expect(meta.partitionColumns).toEqual(['region']);
  });

  it('returns the same rows through both formats and through DuckDB over the files', async () => {
    const t = lake.table('part.events');
    const viaIceberg = await t.read();
    const viaDelta = await t.read({ format: 'delta' });
    expect(viaIceberg).toHaveLength(written.length);
    expect(byId(viaDelta)).toEqual(byId(viaIceberg));
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    const n = (await c.runAndReadAll(`SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS d FROM read_parquet('${tmp.path}/part/events/data/**/*.parquet', hive_partitioning = false)`)).getRowObjects()[0]!;
    expect(n).toEqual({ n: written.length, d: written.length });
    c.closeSync();
  });

  it('puts every row of a file in the partition its path and manifest tuple name', async () => {
    const t = lake.table('part.events');
    const m = await t.metadata();
    const snapshot = m.snapshots.find((s) => s['snapshot-id'] === m['current-snapshot-id'])!;
    const { data } = await liveFiles(lake.io, m, snapshot);
    const schema = m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])!;
    const index = indexById(schema);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    await c.run("SET TimeZone = 'UTC'");
    let checked = 0;
    for (const file of data.slice(0, 120)) {
      const spec = specById(m, file['spec-id']);
      const dir = relative(join(tmp.path, 'part', 'events', 'data'), localPath(file['file-path'])).split('/').slice(0, -1);
      expect(dir).toEqual(spec.fields.map((f) => partitionPathSegment(f.name, f.transform, index.get(f['source-id'])!.field.type, file.partition[f.name] as never)));
      const fileRows = (await c.runAndReadAll(`SELECT strftime(ts, '%Y-%m-%dT%H:%M:%S.%fZ') AS ts, user_id, region FROM read_parquet('${localPath(file['file-path'])}')`)).getRowObjectsJS();
      for (const r of fileRows) {
        const value = (name: string) => {
          const v = r[name];
          if (v === null) return null;
          if (name === 'ts') return parseTimestamp(v as string, 'micros').value;
          return v as never;
        };
        for (const f of spec.fields) {
          const source = index.get(f['source-id'])!;
          const expected = applyTransform(f.transform, source.field.type, value(source.field.name) as never);
          expect(file.partition[f.name]).toEqual(expected);
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
    c.closeSync();
  });

  it('prunes files and returns exactly what a full scan filtered afterwards returns, in both formats', async () => {
    const t = lake.table('part.events');
    const filters: [string, (r: Record<string, unknown>) => boolean][] = [
      ["region = 'eu'", (r) => r.region === 'eu'],
      ['user_id = 7', (r) => r.user_id === 7],
      ["ts >= '2024-02-29' AND ts < '2024-03-01'", (r) => typeof r.ts === 'string' && r.ts >= '2024-02-29' && r.ts < '2024-03-01'],
      ["ts < '1970-01-01'", (r) => typeof r.ts === 'string' && r.ts < '1970-01-01'],
      ['region IS NULL', (r) => r.region === null],
      ["region IN ('日本', 'ünï') AND user_id < 0", (r) => (r.region === '日本' || r.region === 'ünï') && typeof r.user_id === 'number' && r.user_id < 0],
      ['NOT (amount > 0) OR ts IS NULL', (r) => (typeof r.amount === 'number' && !(r.amount > 0)) || r.ts === null],
    ];
    for (const [where, predicate] of filters) {
      const expectedIds = written.filter(predicate).map((r) => r.id).sort((a, b) => Number(a) - Number(b));
      for (const format of ['iceberg', 'delta'] as const) {
        const plan = await t.plan({ format, where });
        const got = (await t.read({ format, where })).map((r) => r.id).sort((a, b) => Number(a) - Number(b));
        expect(got, `${format}: ${where}`).toEqual(expectedIds);
        if (where !== 'NOT (amount > 0) OR ts IS NULL') expect(plan.task.explain!.filesSkipped, `${format}: ${where}`).toBeGreaterThan(0);
      }
    }
  });

  it('evolves the partition spec: old files keep spec 0, new files use spec 1, all read in both formats', async () => {
    const t = lake.table('part.evolving');
    await t.append(rows(7, 300), { partition: 'region' });
    const r1 = await t.append(rows(8, 300), { partition: 'region, month(ts)' });
    const m = await t.metadata();
    expect(m['partition-specs'].map((s) => s.fields.map((f) => f.name))).toEqual([['region'], ['region', 'ts_month']]);
    expect(m['default-spec-id']).toBe(1);
    const snap = m.snapshots.find((s) => s['snapshot-id'] === r1.snapshotId)!;
    const { data } = await liveFiles(lake.io, m, snap);
    expect(new Set(data.map((f) => f['spec-id']))).toEqual(new Set([0, 1]));
    const all = [...rows(7, 300), ...rows(8, 300)];
    expect(byId(await t.read())).toEqual(byId(await t.read({ format: 'delta' })));
    expect((await t.read()).length).toBe(all.length);
    // Delta's partition columns cannot change: a different identity set is refused.
    const err = await t.append(rows(9, 10), { partition: 'month(ts)' }).catch((e) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect(err.message).toMatch(/Delta partition columns cannot change/);
    expect((await t.read()).length).toBe(all.length);
  });

  it('a selective filter on a 1,000-file table reads only the matching files', async () => {
    const t = lake.table('part.thousand');
    const data = Array.from({ length: 3000 }, (_, i) => ({ k: i % 1000, v: i, label: `r${i}` }));
    const r = await t.append(data, { partition: 'k' });
    expect(r.files).toBe(1000);
    for (const [where, predicate, matchingFiles] of [
      ['k = 123', (x: { k: number }) => x.k === 123, 1],
      ['k >= 990', (x: { k: number }) => x.k >= 990, 10],
      ['k IN (1, 500, 999) AND v > 1000', (x: { k: number; v: number }) => [1, 500, 999].includes(x.k) && x.v > 1000, 3],
    ] as const) {
      for (const format of ['iceberg', 'delta'] as const) {
        const plan = await t.plan({ format, where });
        expect(plan.task.files.length, `${format}: ${where}`).toBe(matchingFiles);
        expect(plan.task.explain!.filesSkipped).toBe(1000 - matchingFiles);
        const got = (await t.read({ format, where })).map((x) => Number(x.v)).sort((a, b) => a - b);
        expect(got).toEqual(data.filter(predicate as (x: unknown) => boolean).map((x) => x.v));
      }
    }
  });

  it('refuses bad partition specs before anything is written', async () => {
    const cases: [string, RegExp][] = [
      ['nope', /nope/],
      ['day(amount)', /day/],
      ['bucket(0, user_id)', /bucket/],
      ['truncate(-1, region)', /truncate|width/],
      ['region, region', /duplicate|twice|already|repeats/i],
      ['day(ts', /expected/],
    ];
    for (const [spec, message] of cases) {
      const t = lake.table(`part.bad_${Math.abs(hash(spec))}`);
      const err = await t.append(rows(1, 5), { partition: spec }).catch((e) => e);
      expect(err, spec).toBeInstanceOf(TwinlakeError);
      expect(err.kind, spec).toBe('invalid-input');
      expect(err.message, spec).toMatch(message);
      expect(await t.exists(), spec).toBe(false);
    }
  });
});

function hash(s: string): number {
  let h = 0;
  for (const c of s) h = (Math.imul(h, 31) + c.charCodeAt(0)) | 0;
  return h;
}
