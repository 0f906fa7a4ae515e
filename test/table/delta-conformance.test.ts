import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { testdata } from '../helpers.ts';
import * as path from 'node:path';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { DuckDBSession } from '../../src/engine/duckdb-session.ts';
import { readScan } from '../../src/engine/read-scan.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import type { IcebergType, StructType } from '../../src/format/iceberg/types.ts';
import { parseStats, statsValueAt } from '../../src/format/delta/stats.ts';
import type { DeletionVectorDescriptor } from '../../src/format/delta/actions.ts';
import { deletionVectorLocation, inlineDeletionVector, readDeletionVectorFile } from '../../src/format/delta/deletion-vector.ts';
import { listLogSegment } from '../../src/format/delta/replay.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';
import { deltaScanTask, readDeltaSnapshot } from '../../src/table/delta/delta-log.ts';
import { canonRow, parquetRowCount, readParquetRows, readTaskRows } from './delta-read-rows.ts';

/**
 * Reads every Delta table other engines wrote (../shared/testdata): the DAT reader cases against
 * their expected rows, and Delta's golden tables against what their logs and stats say.
 */

const DAT = path.join(testdata, 'dat');
const GOLDEN = path.join(testdata, 'delta-golden');

// --- an independent log reader: plain JSON.parse over every commit, keyed by raw path ----------

interface NaiveState {
  protocol: any;
  metaData: any;
  files: Map<string, Record<string, string | null>>;
}

/** Replays commits 0..version with no checkpoint; undefined when a commit is missing. */
function naiveReplay(logDir: string, version: number): NaiveState | undefined {
  const state: NaiveState = { protocol: undefined, metaData: undefined, files: new Map() };
  for (let v = 0; v <= version; v++) {
    const file = path.join(logDir, `${String(v).padStart(20, '0')}.json`);
    if (!existsSync(file)) return undefined;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const a = JSON.parse(line);
      if (a.protocol) state.protocol = a.protocol;
      if (a.metaData) state.metaData = a.metaData;
      if (a.add) state.files.set(a.add.path, a.add.partitionValues);
      if (a.remove) state.files.delete(a.remove.path);
    }
  }
  return state;
}

function fileKey(uri: string, root: string): string {
  return path.relative(root, localPath(uri));
}

function expectedFileKey(addPath: string): string {
  return decodeURIComponent(addPath);
}

// --- stats cross-check: the rows read must agree with the writer's per-file stats -----------

interface Leaf {
  logical: string[];
  physical: string[];
  type: string;
}

function leaves(struct: StructType, names: Map<number, string>, logical: string[] = [], physical: string[] = []): Leaf[] {
  const out: Leaf[] = [];
  for (const f of struct.fields) {
    const l = [...logical, f.name];
    const p = [...physical, names.get(f.id)!];
    if (typeof f.type === 'string') out.push({ logical: l, physical: p, type: f.type });
    else if (f.type.type === 'struct') out.push(...leaves(f.type, names, l, p));
  }
  return out;
}

function valueAt(row: Record<string, unknown>, p: string[]): unknown {
  let cur: unknown = row;
  for (const k of p) {
    if (cur === null || cur === undefined) return null;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur ?? null;
}

function statNumber(type: string, v: unknown): number {
  if (type === 'date') return Date.parse(`${v}T00:00:00Z`) / 86_400_000;
  if (type === 'timestamp' || type === 'timestamptz') return Date.parse(type === 'timestamp' ? `${v}Z` : String(v));
  return Number(v);
}

function valueNumber(type: string, v: unknown): number {
  if (type === 'timestamp' || type === 'timestamptz') return Number((v as bigint) / 1000n); // stats hold milliseconds
  if (type === 'float') return Math.fround(Number(v));
  return Number(v);
}

/** Returns how many column checks ran, so a test can insist the check did something. */
function checkStats(task: ScanTask, fileRows: { path: string; rows: Record<string, unknown>[] }[], stats: Map<string, string | undefined>): number {
  let checks = 0;
  const cols = leaves(task.schema, task.physicalNames);
  for (const { path: p, rows } of fileRows) {
    const json = stats.get(p);
    if (json === undefined) continue;
    const s = parseStats(json);
    if (s.numRecords !== undefined) expect(rows.length, `${p} numRecords`).toBe(s.numRecords);
    if (s.tightBounds === false) continue;
    for (const c of cols) {
      const values = rows.map((r) => valueAt(r, c.logical));
      const nonNull = values.filter((v) => v !== null);
      const nulls = statsValueAt(s.nullCount, c.physical);
      if (typeof nulls === 'number') {
        expect(values.length - nonNull.length, `${p} ${c.logical.join('.')} nullCount`).toBe(nulls);
        checks++;
      }
      const min = statsValueAt(s.minValues, c.physical);
      const max = statsValueAt(s.maxValues, c.physical);
      if (nonNull.length === 0 || min === undefined || max === undefined || min === null) continue;
      if (c.type === 'string') {
        const sorted = (nonNull as string[]).slice().sort();
        expect(sorted[0]!.startsWith(String(min)), `${p} ${c.logical.join('.')} min`).toBe(true);
        if (sorted.at(-1)!.length <= 32) expect(sorted.at(-1), `${p} ${c.logical.join('.')} max`).toBe(max);
        checks++;
      } else if (!['boolean', 'binary'].includes(c.type)) {
        const nums = nonNull.map((v) => valueNumber(c.type, v));
        expect(Math.min(...nums), `${p} ${c.logical.join('.')} min`).toBe(statNumber(c.type, min));
        expect(Math.max(...nums), `${p} ${c.logical.join('.')} max`).toBe(statNumber(c.type, max));
        checks++;
      }
    }
  }
  return checks;
}

/** The stats of each scan file, by its URI (the task lists files in snapshot order). */
function statsByUri(task: ScanTask, snapshotFiles: { path: string; stats?: string }[]): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  snapshotFiles.forEach((f, i) => out.set(task.files[i]!.path, f.stats));
  return out;
}

// --- DAT -----------------------------------------------------------------------------------------

const datCases = existsSync(DAT) ? readdirSync(DAT).filter((d) => existsSync(path.join(DAT, d, 'delta'))).sort() : [];

describe.skipIf(!existsSync(DAT))('DAT reader cases (../shared/testdata/dat)', () => {
  it('finds the 11 cases', () => {
    expect(datCases.length).toBe(11);
  });

  for (const name of datCases) {
    const caseDir = path.join(DAT, name);
    const tableDir = path.join(caseDir, 'delta');
    for (const expectedDir of readdirSync(path.join(caseDir, 'expected')).sort()) {
      it(`${name} ${expectedDir}`, async () => {
        const dir = path.join(caseDir, 'expected', expectedDir);
        const meta = JSON.parse(readFileSync(path.join(dir, 'table_version_metadata.json'), 'utf8'));
        const version = expectedDir === 'latest' ? undefined : Number(expectedDir.slice(1));
        if (version !== undefined) expect(meta.version).toBe(version);

        const store = new LocalStore(tableDir);
        const snapshot = await readDeltaSnapshot(store, '', version === undefined ? {} : { version });
        expect(snapshot.version).toBe(meta.version);
        expect(snapshot.protocol.minReaderVersion).toBe(meta.min_reader_version);
        expect(snapshot.protocol.minWriterVersion).toBe(meta.min_writer_version);
        expect(snapshot.metadata.configuration).toEqual(meta.properties);
        expect(typeof snapshot.timestampMs).toBe('number');

        const naive = naiveReplay(path.join(tableDir, '_delta_log'), meta.version);
        if (naive) {
          expect(new Set(snapshot.files.map((f) => f.path))).toEqual(new Set(naive.files.keys()));
          for (const f of snapshot.files) expect(f.partitionValues).toEqual(naive.files.get(f.path));
          expect(snapshot.metadata.schemaString).toBe(naive.metaData.schemaString);
        } else {
          expect(name).toBe('no_replay'); // its early commits were cleaned up; the checkpoint is the only source
        }

        const task = deltaScanTask(snapshot, store.root);
        expect(task.resolution).toBe('name');
        for (const f of snapshot.files) {
          expect(task.files.map((t) => fileKey(t.path, tableDir))).toContain(expectedFileKey(f.path));
        }
        const expectedFiles = readdirSync(path.join(dir, 'table_content.parquet')).filter((f) => f.endsWith('.parquet'));
        const expected: Record<string, unknown>[] = [];
        for (const f of expectedFiles) expected.push(...(await readParquetRows(path.join(dir, 'table_content.parquet', f))).rows);

        // Row count first from the log (stats), else from the files' footers.
        const counted = task.files.reduce((n, f) => n + (f.recordCount ?? parquetRowCount(localPath(f.path))), 0);
        expect(counted).toBe(expected.length);

        const fileRows = await readTaskRows(task);
        const actual = fileRows.flatMap((f) => f.rows).map((r) => canonRow(task.schema, r)).sort();
        const want = expected.map((r) => canonRow(task.schema, r)).sort();
        expect(actual).toEqual(want);
        checkStats(task, fileRows, statsByUri(task, snapshot.files));
      });
    }
  }
});

// --- golden tables -------------------------------------------------------------------------------

/** Tables with deletion vectors: Spark's DELETEs, one key value per commit. */
const DELETION_VECTOR_TABLES = new Set(['dv-partitioned-with-checkpoint', 'dv-with-columnmapping', 'log-replay-dv-key-cases']);
/** Tables whose `add` paths name no real files: log replay only. */
const LOG_ONLY_TABLES = new Set(['checkpoint']);

const goldenTables = existsSync(GOLDEN) ? readdirSync(GOLDEN).filter((d) => existsSync(path.join(GOLDEN, d, '_delta_log'))).sort() : [];

async function readGolden(name: string, version?: number) {
  const dir = path.join(GOLDEN, name);
  const store = new LocalStore(dir);
  const snapshot = await readDeltaSnapshot(store, '', version === undefined ? {} : { version });
  return { dir, store, snapshot };
}

async function readGoldenRows(name: string) {
  const { dir, store, snapshot } = await readGolden(name);
  const task = deltaScanTask(snapshot, store.root);
  const fileRows = await readTaskRows(task);
  const checks = checkStats(task, fileRows, statsByUri(task, snapshot.files));
  return { dir, snapshot, task, fileRows, rows: fileRows.flatMap((f) => f.rows), checks };
}

async function dvPositions(tableRoot: string, dv: DeletionVectorDescriptor): Promise<Iterable<bigint>> {
  if (dv.storageType === 'i') return inlineDeletionVector(dv).values();
  const bytes = new Uint8Array(await readFile(localPath(deletionVectorLocation(dv, tableRoot)!)));
  return readDeletionVectorFile(bytes, dv).values();
}

describe.skipIf(!existsSync(GOLDEN))('Delta golden tables (../shared/testdata/delta-golden)', () => {
  let session: DuckDBSession;
  beforeAll(async () => {
    session = await DuckDBSession.open({});
  });
  afterAll(() => session?.close());

  it('finds the 14 tables', () => {
    expect(goldenTables.length).toBe(14);
  });

  for (const name of goldenTables) {
    it(`${name}: every version replays like a plain JSON replay of the log`, async () => {
      const logDir = path.join(GOLDEN, name, '_delta_log');
      const names = readdirSync(logDir);
      const latest = listLogSegment(names).version;
      let compared = 0;
      for (let v = 0; v <= latest; v++) {
        const { snapshot } = await readGolden(name, v);
        expect(snapshot.version).toBe(v);
        const naive = naiveReplay(logDir, v);
        if (!naive) continue;
        expect(snapshot.protocol).toEqual(naive.protocol);
        expect(snapshot.metadata.id).toBe(naive.metaData.id);
        expect(snapshot.metadata.schemaString).toBe(naive.metaData.schemaString);
        if (!DELETION_VECTOR_TABLES.has(name)) {
          // Keyed by path only, which is right exactly when no file carries a deletion vector.
          expect(new Set(snapshot.files.map((f) => f.path))).toEqual(new Set(naive.files.keys()));
        }
        compared++;
      }
      expect(compared).toBeGreaterThan(0);
    });

    if (DELETION_VECTOR_TABLES.has(name)) {
      it(`${name}: each deletion vector removes exactly its cardinality of rows, the ones at its positions`, async () => {
        const { store, snapshot } = await readGolden(name);
        const task = deltaScanTask(snapshot, store.root);
        const key = task.schema.fields.find((f) => f.name === 'col1' || f.name === 'id')!.name;
        let withDv = 0;
        for (const [i, add] of snapshot.files.entries()) {
          const file = task.files[i]!;
          const all = (await readTaskRows({ ...task, files: [file] }))[0]!.rows.map((r) => Number(r[key]));
          const kept = (await readScan(session, { ...task, files: [file] })).map((r) => Number(r[key]));
          const dv = add.deletionVector;
          if (!dv) {
            expect(kept).toEqual(all);
            continue;
          }
          withDv++;
          expect(all.length - kept.length, add.path).toBe(dv.cardinality);
          // The positions, decoded on their own, name exactly the rows the scan left out.
          const positions = [...(await dvPositions(store.root, dv))].map(Number);
          expect(positions).toHaveLength(dv.cardinality);
          expect(kept).toEqual(all.filter((_, pos) => !positions.includes(pos)));
        }
        expect(withDv).toBeGreaterThan(0);
      });

      it(`${name}: every version reads the rows its DELETE commits leave`, async () => {
        const logDir = path.join(GOLDEN, name, '_delta_log');
        const latest = listLogSegment(readdirSync(logDir)).version;
        const first = await readGolden(name, 0);
        const task0 = deltaScanTask(first.snapshot, first.store.root);
        const key = task0.schema.fields.find((f) => f.name === 'col1' || f.name === 'id')!.name;
        const original = (await readTaskRows(task0)).flatMap((f) => f.rows).map((r) => Number(r[key]));
        const deleted = new Set<number>();
        let previous = original.length;
        for (let v = 1; v <= latest; v++) {
          const info = JSON.parse(readFileSync(path.join(logDir, `${String(v).padStart(20, '0')}.json`), 'utf8').split('\n')[0]!).commitInfo;
          expect(info.operation).toBe('DELETE');
          // e.g. ["(col1#463 = 0)"] or ["(id#443L = 0)"]: the rows whose key equals the literal.
          const m = /\((\w+)#\d+L? = (\d+)\)/.exec(info.operationParameters.predicate);
          expect(m?.[1]).toBe(key);
          deleted.add(Number(m![2]));
          const { store, snapshot } = await readGolden(name, v);
          const rows = (await readScan(session, deltaScanTask(snapshot, store.root))).map((r) => Number(r[key]));
          expect(rows.sort((a, b) => a - b), `version ${v}`).toEqual(original.filter((x) => !deleted.has(x)).sort((a, b) => a - b));
          expect(previous - rows.length, `version ${v} numDeletedRows`).toBe(Number(info.operationMetrics.numDeletedRows));
          previous = rows.length;
        }
        expect(deleted.size).toBe(latest);
      });
    } else if (LOG_ONLY_TABLES.has(name)) {
      it.skip(`${name}: no rows to read (its add paths "1".."15" name no files; the log is the test)`);
    } else {
      it(`${name}: rows read agree with the log's record counts and per-file stats`, async () => {
        const { task, rows, checks } = await readGoldenRows(name);
        const footerRows = task.files.reduce((n, f) => n + parquetRowCount(localPath(f.path)), 0);
        expect(rows.length).toBe(footerRows);
        for (const f of task.files) if (f.recordCount !== undefined) expect(f.recordCount).toBe(parquetRowCount(localPath(f.path)));
        const noStats = ['data-reader-partition-values'];
        if (!noStats.includes(name)) expect(checks).toBeGreaterThan(0);
      });
    }
  }

  it('checkpoint: replays through the checkpoint at 10 to the one live file', async () => {
    for (const [version, live] of [
      [5, '6'],
      [10, '11'],
      [14, '15'],
    ] as const) {
      const { snapshot } = await readGolden('checkpoint', version);
      expect(snapshot.files.map((f) => f.path)).toEqual([live]);
      expect(snapshot.tombstones.map((r) => r.path)).toContain(String(Number(live) - 1));
    }
  });

  it('log-replay-dv-key-cases: a file re-added with a new DV in the same commit that removes the old one stays live', async () => {
    const { snapshot } = await readGolden('log-replay-dv-key-cases');
    expect(snapshot.files).toHaveLength(1);
    expect(snapshot.files[0]!.deletionVector).toMatchObject({ pathOrInlineDv: '^jP?.<zvDfIGb{C.FPij', cardinality: 3 });
    for (const v of [1, 2]) expect((await readGolden('log-replay-dv-key-cases', v)).snapshot.files).toHaveLength(1);
  });

  it('basic-with-inserts-deletes-checkpoint: the rows left after the DELETEs the commits describe', async () => {
    const { rows } = await readGoldenRows('basic-with-inserts-deletes-checkpoint');
    const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
    const want: number[] = [];
    for (let i = 0; i < 80; i++) {
      const deleted = (i >= 5 && i <= 9) || (i >= 15 && i <= 19) || (i >= 25 && i <= 29) || (i >= 35 && i <= 39) || (i >= 45 && i <= 49) || i >= 66;
      if (!deleted) want.push(i);
    }
    expect(ids).toEqual(want);
  });

  it('data-reader-partition-values: every partition type parses to the typed value', async () => {
    const { rows } = await readGoldenRows('data-reader-partition-values');
    const byValue = new Map(rows.map((r) => [r.value, r]));
    expect(byValue.get('0')).toMatchObject({
      as_int: 0,
      as_long: 0n,
      as_byte: 0,
      as_short: 0,
      as_boolean: true,
      as_float: 0,
      as_double: 0,
      as_string: '0',
      as_string_lit_null: 'null',
      as_date: 18878, // 2021-09-08
      as_timestamp: 1631099471000000n, // 2021-09-08T11:11:11Z
      as_big_decimal: '0',
    });
    expect(byValue.get('1')).toMatchObject({ as_int: 1, as_long: 1n, as_boolean: false, as_float: 1, as_double: 1, as_string: '1', as_big_decimal: '1' });
    const nulls = byValue.get('2')!;
    for (const k of ['as_int', 'as_long', 'as_byte', 'as_short', 'as_boolean', 'as_float', 'as_double', 'as_string', 'as_string_lit_null', 'as_date', 'as_timestamp', 'as_big_decimal']) {
      expect(nulls[k], k).toBeNull();
    }
    expect(nulls.as_nested_struct).toEqual({ aa: '2', ab: '2', ac: { aca: 2, acb: 2n } });
    expect(nulls.as_list_of_records).toEqual([{ val: 2 }, { val: 2 }, { val: 2 }]);
  });

  it('data-reader-timestamp_ntz: timestamp_ntz columns and partition values', async () => {
    const { rows, task } = await readGoldenRows('data-reader-timestamp_ntz');
    expect(task.schema.fields.map((f) => f.type)).toEqual(['int', 'timestamp', 'timestamp']);
    const a = 1637202600123456n; // 2021-11-18 02:30:00.123456
    const b = 1373043660123456n; // 2013-07-05 17:01:00.123456
    const got = rows.map((r) => `${r.id}|${r.tsNtz}|${r.tsNtzPartition}`).sort();
    const want = [
      [0, a, a], [1, b, a], [2, null, a],
      [3, a, b], [4, b, b], [5, null, b],
      [6, a, null], [7, b, null], [8, null, null],
    ].map(([id, t, p]) => `${id}|${t}|${p}`).sort();
    expect(got).toEqual(want);
  });

  it('kernel-timestamp-partition-col-ISO8601: ISO-8601 partition values are UTC instants', async () => {
    const { rows } = await readGoldenRows('kernel-timestamp-partition-col-ISO8601');
    expect(rows).toHaveLength(2);
    for (const r of rows) {
      expect(typeof r.ts).toBe('bigint');
      expect(Number((r.ts as bigint) / 1000n)).toBe(Date.parse(`${(r.str as string).replace(' ', 'T')}Z`));
    }
  });

  for (const [name, mode, resolution] of [
    ['table-with-columnmapping-mode-name', 'name', 'name'],
    ['table-with-columnmapping-mode-id', 'id', 'field-id'],
    ['table-with-icebegCompatV2Enabled', 'id', 'field-id'],
    ['data-skipping-basic-stats-all-types-columnmapping-name', 'name', 'name'],
  ] as const) {
    it(`${name}: column mapping mode ${mode} resolves columns by ${resolution}`, async () => {
      const { task, rows, snapshot } = await readGoldenRows(name);
      expect(snapshot.metadata.configuration['delta.columnMapping.mode']).toBe(mode);
      expect(task.resolution).toBe(resolution);
      // Physical names are the col-<uuid> names, not the logical ones.
      for (const f of task.schema.fields) expect(task.physicalNames.get(f.id)).toMatch(/^col-/);
      // A resolution miss would read nulls everywhere; every table has non-null values in column 1.
      const first = task.schema.fields[0]!.name;
      expect(rows.some((r) => r[first] !== null)).toBe(true);
    });
  }

  it('table-with-icebegCompatV2Enabled: nested list/map IDs come from delta.columnMapping.nested.ids', async () => {
    const { snapshot, store } = await readGolden('table-with-icebegCompatV2Enabled');
    const task = deltaScanTask(snapshot, store.root);
    const field = (n: string) => task.schema.fields.find((f) => f.name === n)!;
    expect((field('array_of_prims').type as { 'element-id': number })['element-id']).toBe(31);
    const aoa = field('array_of_arrays').type as { 'element-id': number; element: IcebergType };
    expect(aoa['element-id']).toBe(32);
    expect((aoa.element as { 'element-id': number })['element-id']).toBe(33);
  });

  for (const name of ['v2-checkpoint-json', 'v2-checkpoint-parquet']) {
    it(`${name}: the UUID-named checkpoint and its sidecars give the state`, async () => {
      const names = readdirSync(path.join(GOLDEN, name, '_delta_log'));
      const segment = listLogSegment(names);
      expect(segment.checkpoint?.files[0]).toMatch(/^00000000000000000002\.checkpoint\.[0-9a-f-]{36}\.(json|parquet)$/);
      expect(segment.commits).toEqual([]);
      const { snapshot, rows } = await readGoldenRows(name);
      expect(snapshot.protocol.readerFeatures).toEqual(['v2Checkpoint']);
      expect(snapshot.files).toHaveLength(4);
      expect(rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      // commitInfo of version 2 comes from its JSON commit, which the checkpoint does not keep.
      expect(snapshot.commitInfo?.operation).toBe('WRITE');
    });
  }
});
