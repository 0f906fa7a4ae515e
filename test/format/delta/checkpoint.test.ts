import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { testdata } from '../../helpers.ts';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringifyJson } from '../../../src/core/json.ts';
import type { Action } from '../../../src/format/delta/actions.ts';
import {
  CHECKPOINT_COLUMNS,
  buildLastCheckpoint,
  checkpointActions,
  checkpointSidecars,
  lastCheckpointChecksum,
  parseLastCheckpoint,
  resolveSidecars,
} from '../../../src/format/delta/checkpoint.ts';
import { replay } from '../../../src/format/delta/replay.ts';
import { decodeCheckpoint, decodeCheckpointParquet } from '../../../src/table/delta/delta-log.ts';


describe('_last_checkpoint', () => {
  it('computes the checksum of the protocol example (PROTOCOL.md §JSON checksum)', () => {
    const json = { k0: "'v 0'", checksum: 'adsaskfljadfkjadfkj', k1: { k2: 2, k3: ['v3', [1, 2], { k4: 'v4', k5: ['v5', 'v6', 'v7'] }] } };
    expect(lastCheckpointChecksum(json)).toBe('6a92d155a59bf2eecbd4b4ec7fd1f875');
  });

  it('writes a checksum its parser accepts, and notices tampering', () => {
    const text = buildLastCheckpoint({ version: 20, size: 13, sizeInBytes: 4096, numOfAddFiles: 6 });
    const parsed = parseLastCheckpoint(text);
    expect(parsed).toMatchObject({ version: 20, size: 13, numOfAddFiles: 6, checksumValid: true });
    expect(parsed.checksum).toMatch(/^[0-9a-f]{32}$/);
    expect(parseLastCheckpoint(text.replace('"version":20', '"version":21')).checksumValid).toBe(false);
    expect(parseLastCheckpoint('{"version":3,"size":4}').checksumValid).toBe(true);
    expect(() => parseLastCheckpoint('{"size":4}')).toThrow(/version/);
  });

  const lastCheckpoints = [path.join(testdata, 'delta-golden'), path.join(testdata, 'dat')].flatMap((root) =>
    existsSync(root)
      ? readdirSync(root).flatMap((t) => [path.join(root, t, '_delta_log/_last_checkpoint'), path.join(root, t, 'delta/_delta_log/_last_checkpoint')])
      : [],
  ).filter((f) => existsSync(f));

  it.skipIf(lastCheckpoints.length === 0)('validates the checksums Spark wrote in the fixtures', () => {
    let withChecksum = 0;
    for (const f of lastCheckpoints) {
      const parsed = parseLastCheckpoint(readFileSync(f, 'utf8'));
      expect(parsed.checksumValid, f).toBe(true);
      if (parsed.checksum) withChecksum++;
    }
    expect(withChecksum).toBeGreaterThan(3);
  });
});

describe('reading checkpoints written by Spark', () => {
  const golden = path.join(testdata, 'delta-golden');
  const tables = ['checkpoint', 'basic-with-inserts-deletes-checkpoint', 'dv-partitioned-with-checkpoint', 'dv-with-columnmapping'];

  it.skipIf(!existsSync(golden))('finds as many actions and adds as _last_checkpoint says', async () => {
    for (const t of tables) {
      const log = path.join(golden, t, '_delta_log');
      const last = parseLastCheckpoint(readFileSync(path.join(log, '_last_checkpoint'), 'utf8'));
      const name = `${String(last.version).padStart(20, '0')}.checkpoint.parquet`;
      const actions = await decodeCheckpointParquet(new Uint8Array(readFileSync(path.join(log, name))), name);
      expect(actions.length, t).toBe(last.size);
      expect(actions.filter((a) => 'add' in a).length, t).toBe(last.numOfAddFiles);
      expect(actions.filter((a) => 'protocol' in a).length).toBe(1);
      // Null struct columns must not turn into empty deletion vectors.
      if (!t.startsWith('dv-')) expect(actions.some((a) => 'add' in a && a.add.deletionVector !== undefined)).toBe(false);
    }
  });

  it.skipIf(!existsSync(golden))('reads a V2 JSON checkpoint and resolves its sidecars', async () => {
    const log = path.join(golden, 'v2-checkpoint-json', '_delta_log');
    const name = readdirSync(log).find((n) => /\.checkpoint\.[0-9a-f-]{36}\.json$/.test(n))!;
    const top = await decodeCheckpoint(name, new Uint8Array(readFileSync(path.join(log, name))));
    const sidecars = checkpointSidecars(top);
    expect(sidecars).toHaveLength(2);
    const parts = await Promise.all(sidecars.map(async (s) => decodeCheckpointParquet(new Uint8Array(readFileSync(path.join(log, '_sidecars', s.path))))));
    const resolved = resolveSidecars(top, parts);
    expect(resolved.some((a) => 'sidecar' in a)).toBe(false);
    const s = replay({ checkpoint: { version: 2, actions: resolved }, commits: [] });
    expect(s.files).toHaveLength(4);
  });

  it('names what it cannot read', async () => {
    await expect(decodeCheckpointParquet(new TextEncoder().encode('not parquet'), 'x.parquet')).rejects.toThrow(/^delta checkpoint x\.parquet: expected a Parquet file/);
  });
});

describe('checkpoint round trip through DuckDB', () => {
  let dir: string;
  let db: DuckDBInstance;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'twinlake-checkpoint-'));
    db = await DuckDBInstance.create(':memory:');
  });
  afterAll(() => {
    db?.closeSync();
    rmSync(dir, { recursive: true, force: true });
  });

  /** What an engine does with the rows: JSON lines read with the declared types, copied to Parquet. */
  async function writeParquet(name: string, rows: unknown[], columns: readonly { name: string; type: string }[]): Promise<Uint8Array> {
    const input = path.join(dir, `${name}.json`);
    const output = path.join(dir, `${name}.parquet`);
    writeFileSync(input, rows.map((r) => stringifyJson(r)).join('\n') + '\n');
    const cols = columns.map((c) => `'${c.name}': '${c.type.replace(/'/g, "''")}'`).join(', ');
    const con = await db.connect();
    await con.run(`COPY (SELECT * FROM read_json('${input}', format = 'newline_delimited', columns = {${cols}})) TO '${output}' (FORMAT parquet)`);
    con.closeSync();
    return new Uint8Array(readFileSync(output));
  }

  const commits: { version: number; actions: Action[] }[] = [
    {
      version: 0,
      actions: [
        { commitInfo: { timestamp: 1000, operation: 'CREATE TABLE' } },
        { protocol: { minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['columnMapping', 'deletionVectors'], writerFeatures: ['columnMapping', 'deletionVectors', 'domainMetadata'] } },
        {
          metaData: {
            id: 'tbl',
            name: 'events',
            format: { provider: 'parquet', options: {} },
            schemaString: '{"type":"struct","fields":[]}',
            partitionColumns: ['p'],
            configuration: { 'delta.columnMapping.mode': 'name' },
            createdTime: 1000,
          },
        },
        { add: { path: 'p=1/a.parquet', partitionValues: { 'col-p': '1' }, size: 10, modificationTime: 1000, dataChange: true, stats: '{"numRecords":3}' } },
        { add: { path: 'p=__HIVE_DEFAULT_PARTITION__/b%20c.parquet', partitionValues: { 'col-p': null }, size: 11, modificationTime: 1000, dataChange: true, tags: { k: 'v' } } },
        { add: { path: 'gone.parquet', partitionValues: { 'col-p': '2' }, size: 12, modificationTime: 1000, dataChange: true } },
      ],
    },
    {
      version: 1,
      actions: [
        { remove: { path: 'gone.parquet', deletionTimestamp: 2000, dataChange: true, extendedFileMetadata: true, partitionValues: { 'col-p': '2' }, size: 12 } },
        {
          add: {
            path: 'p=1/a.parquet',
            partitionValues: { 'col-p': '1' },
            size: 10,
            modificationTime: 1000,
            dataChange: true,
            stats: '{"numRecords":3}',
            deletionVector: { storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 4, sizeInBytes: 40, cardinality: 1 },
          },
        },
        { remove: { path: 'p=1/a.parquet', deletionTimestamp: 2000, dataChange: true } },
        { txn: { appId: 'iceberg:tbl', version: 9007199254740993n, lastUpdated: 2000 } },
        { domainMetadata: { domain: 'delta.x', configuration: '{"a":1}', removed: false } },
      ],
    },
  ];

  it('reads back the snapshot it wrote', async () => {
    const snapshot = replay({ commits });
    const rows = checkpointActions(snapshot, { tombstoneCutoffMs: 0 });
    expect(rows.every((r) => Object.values(r).filter((v) => v !== null).length === 1)).toBe(true);
    const bytes = await writeParquet('v1', rows, CHECKPOINT_COLUMNS);
    const actions = await decodeCheckpointParquet(bytes, 'v1.parquet');
    const back = replay({ checkpoint: { version: 1, actions }, commits: [] });
    expect(back.protocol).toEqual(snapshot.protocol);
    expect(back.metadata).toEqual(snapshot.metadata);
    expect(back.files).toEqual(snapshot.files.map((f) => ({ ...f, dataChange: false })));
    expect(back.txns).toEqual(snapshot.txns);
    expect(back.domainMetadata).toEqual(snapshot.domainMetadata);
    expect(back.tombstones.map((r) => r.path).sort()).toEqual(['gone.parquet', 'p=1/a.parquet']);
  });

  it('keeps tombstones only from the cutoff on, and none without one', () => {
    const snapshot = replay({ commits });
    expect(checkpointActions(snapshot).filter((r) => r.remove !== null)).toHaveLength(0);
    expect(checkpointActions(snapshot, { tombstoneCutoffMs: 2001 }).filter((r) => r.remove !== null)).toHaveLength(0);
    expect(checkpointActions(snapshot, { tombstoneCutoffMs: 2000 }).filter((r) => r.remove !== null)).toHaveLength(2);
  });

  it('writes null feature lists below reader 3 / writer 7, as the checkpoint schema requires', () => {
    const legacy = replay({ commits: [{ version: 0, actions: [{ protocol: { minReaderVersion: 1, minWriterVersion: 2 } }, commits[0]!.actions[2]!] }] });
    expect(checkpointActions(legacy)[0]!.protocol).toEqual({ minReaderVersion: 1, minWriterVersion: 2, readerFeatures: null, writerFeatures: null });
  });

  it('turns stats_parsed back into JSON stats when a writer kept only the struct', async () => {
    const columns = [
      {
        name: 'add',
        type:
          'STRUCT("path" VARCHAR, "partitionValues" MAP(VARCHAR, VARCHAR), "size" BIGINT, "modificationTime" BIGINT, "dataChange" BOOLEAN, ' +
          '"stats_parsed" STRUCT("numRecords" BIGINT, "minValues" STRUCT("d" DATE, "ts" TIMESTAMPTZ, "n" BIGINT), "nullCount" STRUCT("d" BIGINT)))',
      },
    ];
    const row = {
      add: {
        path: 'f.parquet',
        partitionValues: {},
        size: 1,
        modificationTime: 1,
        dataChange: false,
        stats_parsed: { numRecords: 7, minValues: { d: '1969-12-31', ts: '1970-01-01 00:00:00.123456+00', n: 9007199254740993n }, nullCount: { d: 2 } },
      },
    };
    const actions = await decodeCheckpointParquet(await writeParquet('parsed', [row], columns));
    const add = (actions[0] as { add: { stats?: string } }).add;
    expect(add.stats).toBe('{"numRecords":7,"minValues":{"d":"1969-12-31","ts":"1970-01-01T00:00:00.123Z","n":9007199254740993},"nullCount":{"d":2}}');
    expect(add).not.toHaveProperty('stats_parsed');
  });
});
