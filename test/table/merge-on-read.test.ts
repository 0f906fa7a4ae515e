import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TwinlakeError, type Table } from '../../src/index.ts';
import { decodeManifestList } from '../../src/format/iceberg/manifest-list.ts';
import { decodeManifest } from '../../src/format/iceberg/manifest.ts';
import { newTableMetadata, parseTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../../src/format/iceberg/types.ts';
import { rowChangeStrategy } from '../../src/format/dual/table-properties.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { DuckDBInstance } from '@duckdb/node-api';
import { lakehouseFixture } from '../lakehouse-fixture.ts';
import { fileUri } from '../../src/core/uri.ts';

/** The newest metadata file of a table, read from disk. */
async function metadataOf(dir: string): Promise<TableMetadata> {
  const names = (await readdir(join(dir, 'metadata'))).filter((n) => /^v\d+\.metadata\.json$/.test(n));
  const newest = names.sort((a, b) => Number(a.slice(1).split('.')[0]) - Number(b.slice(1).split('.')[0])).at(-1)!;
  return parseTableMetadata(await readFile(join(dir, 'metadata', newest), 'utf8'));
}

/** Every protocol action of a Delta log, oldest first. */
async function deltaProtocols(dir: string): Promise<{ readerFeatures?: string[]; writerFeatures?: string[] }[]> {
  const log = join(dir, '_delta_log');
  const out = [];
  for (const name of (await readdir(log)).filter((n) => /^\d{20}\.json$/.test(n)).sort()) {
    for (const line of (await readFile(join(log, name), 'utf8')).split('\n').filter(Boolean)) {
      const action = JSON.parse(line);
      if (action.protocol) out.push(action.protocol);
    }
  }
  return out;
}

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

async function bothFormats(t: Table): Promise<number[]> {
  const viaIceberg = ids(await t.read());
  const viaDelta = ids(await t.read({ format: 'delta' }));
  expect(viaDelta).toEqual(viaIceberg);
  return viaIceberg;
}

describe('merge-on-read deletes', () => {
  const fx = lakehouseFixture();
  const dirOf = (name: string) => join(fx.warehouse, ...name.split('.'));

  for (const version of ['2', '3'] as const) {
    it(`delete by predicate writes deletes instead of rewriting files, and a second delete merges into the first (v${version})`, async () => {
      const name = `mor.del_v${version}`;
      const t = fx.lake.table(name);
      await t.append(
        Array.from({ length: 90 }, (_, i) => ({ id: i, grp: ['a', 'b', 'c'][i % 3] })),
        { partition: 'grp', properties: { 'format-version': version, 'write.delete.mode': 'merge-on-read' } },
      );
      const before = await t.describe();
      const first = await t.delete("grp = 'b' AND id < 40");
      expect(first.strategy).toBe('merge-on-read');
      expect(first.deleted).toBe(13);
      expect(first.rewrittenFiles).toBe(0);
      expect(first.files).toBe(0);
      expect(first.deleteFiles).toBe(1);
      expect(await bothFormats(t)).toEqual(Array.from({ length: 90 }, (_, i) => i).filter((i) => !(i % 3 === 1 && i < 40)));

      const second = await t.delete('id >= 80');
      expect(second.deleted).toBe(10);
      // Three files hold ids >= 80; the one with a delete file already gets a merged one.
      expect(second.deleteFiles).toBe(3);
      const expected = Array.from({ length: 90 }, (_, i) => i).filter((i) => !(i % 3 === 1 && i < 40) && i < 80);
      expect(await bothFormats(t)).toEqual(expected);

      // Data files are untouched; every data file has one delete file, holding all its deleted rows.
      const after = await t.describe();
      expect(after.files).toBe(before.files);
      const metadata = await metadataOf(dirOf(name));
      const snapshot = metadata.snapshots.at(-1)!;
      expect(snapshot.summary.operation).toBe('delete');
      expect(snapshot.summary['total-delete-files']).toBe('3');
      expect(snapshot.summary['total-position-deletes']).toBe(String(13 + 10));
      expect(snapshot.summary['removed-delete-files']).toBe('1');
      const plan = await t.plan();
      const cardinality = plan.task.files.map((f) => (f.deletes?.positions ?? []).length);
      expect(cardinality.every((n) => n <= 1)).toBe(true);
      // Delta: the same files, each with its DV's cardinality.
      const delta = await t.plan({ format: 'delta' });
      expect(delta.task.files.length).toBe(plan.task.files.length);
    });
  }

  it('a copy-on-write merge into a file with deletes keeps them deleted and drops its deletion vector', async () => {
    const name = 'mor.mixed';
    const t = fx.lake.table(name);
    await t.append(Array.from({ length: 20 }, (_, i) => ({ id: i, v: 0 })), { properties: { 'format-version': '3', 'write.delete.mode': 'merge-on-read' } });
    await t.delete('id < 5');
    const r = await t.merge([{ id: 10, v: 1 }, { id: 3, v: 1 }], { keys: ['id'] });
    expect(r.strategy).toBe('copy-on-write');
    // Key 3 was deleted already: it is a new row, not an update.
    expect(r.updated).toBe(1);
    expect(r.inserted).toBe(1);
    expect(await bothFormats(t)).toEqual([3, ...Array.from({ length: 15 }, (_, i) => i + 5)]);
    const snapshot = (await metadataOf(dirOf(name))).snapshots.at(-1)!;
    expect(snapshot.summary['total-delete-files']).toBe('0');
    expect(snapshot.summary['removed-delete-files']).toBe('1');
    const log = join(dirOf(name), '_delta_log');
    const last = (await readdir(log)).filter((n) => n.endsWith('.json') && !n.startsWith('_')).sort().at(-1)!;
    const actions = (await readFile(join(log, last), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    // Delta removes the logical file it knew: the data file with its deletion vector.
    expect(actions.find((a) => a.remove)?.remove.deletionVector?.storageType).toBe('u');
  });

  it('v3: each Delta deletion vector holds the bytes of its Puffin blob, in a file Delta readers accept', async () => {
    const name = 'mor.bytes';
    const t = fx.lake.table(name);
    await t.append(Array.from({ length: 300 }, (_, i) => ({ id: i, g: i % 3 })), { partition: 'g', properties: { 'format-version': '3', 'write.delete.mode': 'merge-on-read' } });
    await t.delete('id IN (0, 7, 14, 21, 28, 35, 100, 151, 299)');
    const iceberg = await t.plan();
    const delta = await t.plan({ format: 'delta' });
    const vectors = (task: typeof iceberg.task) =>
      new Map(task.files.map((f) => [f.path, f.deletes?.positions?.[0]] as const).filter((e): e is [string, { kind: 'vector'; path: string; offset: number; length: number }] => e[1]?.kind === 'vector'));
    const fromIceberg = vectors(iceberg.task);
    const fromDelta = vectors(delta.task);
    expect(fromIceberg.size).toBe(3);
    // The re-added files' stats still cover their deleted rows: Delta is told they are wide.
    const log = join(dirOf(name), '_delta_log');
    const last = (await readdir(log)).filter((n) => /^\d{20}\.json$/.test(n)).sort().at(-1)!;
    const adds = (await readFile(join(log, last), 'utf8')).trim().split('\n').map((l) => JSON.parse(l)).filter((a) => a.add).map((a) => a.add);
    expect(adds).toHaveLength(3);
    for (const add of adds) expect(JSON.parse(add.stats).tightBounds, add.path).toBe(false);
    expect([...fromDelta.keys()].sort()).toEqual([...fromIceberg.keys()].sort());
    for (const [file, v] of fromIceberg) {
      const d = fromDelta.get(file)!;
      expect(v.path).toMatch(/-deletes\.puffin$/);
      expect(d.path).toMatch(/\/deletion_vector_[0-9a-f-]{36}\.bin$/);
      const puffin = await readFile(new URL(v.path));
      const dvFile = await readFile(new URL(d.path));
      expect(new TextDecoder().decode(puffin.subarray(0, 4))).toBe('PFA1');
      expect(dvFile[0]).toBe(1); // the Delta DV file format version
      expect(d.length).toBe(v.length);
      expect(Buffer.from(dvFile.subarray(d.offset, d.offset + d.length)).equals(Buffer.from(puffin.subarray(v.offset, v.offset + v.length)))).toBe(true);
    }
  });

  for (const version of ['2', '3'] as const) {
    it(`the Delta log is a projection of Iceberg: a lost merge-on-read version is written again, byte for byte (v${version})`, async () => {
      const name = `mor.sync_v${version}`;
      const t = fx.lake.table(name);
      await t.append(Array.from({ length: 30 }, (_, i) => ({ id: i, v: 0 })), { properties: { 'format-version': version, 'write.merge.mode': 'merge-on-read' } });
      const r = await t.merge([{ id: 4, v: 1 }, { id: 7, v: 1 }, { id: 100, v: 1 }], { keys: ['id'] });
      const file = join(dirOf(name), '_delta_log', `${String(r.deltaVersion).padStart(20, '0')}.json`);
      const written = await readFile(file, 'utf8');
      expect(written).toContain('"deletionVector"');
      await rm(file);
      const synced = await t.syncDelta();
      expect(synced.written).toEqual([r.deltaVersion]);
      expect(await readFile(file, 'utf8')).toBe(written);
      expect(await bothFormats(t)).toEqual([...Array.from({ length: 30 }, (_, i) => i), 100]);
    });
  }

  for (const version of ['2', '3'] as const) {
    it(`after merge-on-read deletes, schema evolution keeps the DV feature and an overwrite drops every DV (v${version})`, async () => {
      const name = `mor.later_v${version}`;
      const t = fx.lake.table(name);
      await t.append(Array.from({ length: 20 }, (_, i) => ({ id: i })), { properties: { 'format-version': version, 'write.delete.mode': 'merge-on-read' } });
      await t.delete('id < 3');
      // A new column (and a naive timestamp, which needs Delta's timestampNtz feature too).
      await t.append([{ id: 100, note: 'x', at: '2026-01-01T00:00:00' }]);
      expect(await bothFormats(t)).toEqual([...Array.from({ length: 17 }, (_, i) => i + 3), 100]);
      const protocol = (await deltaProtocols(dirOf(name))).at(-1)!;
      expect(protocol.readerFeatures).toEqual(expect.arrayContaining(['columnMapping', 'deletionVectors', 'timestampNtz']));
      await t.delete('id = 5');
      await t.overwrite([{ id: 7, note: 'only', at: '2026-01-02T00:00:00' }]);
      expect(await bothFormats(t)).toEqual([7]);
      const snapshot = (await metadataOf(dirOf(name))).snapshots.at(-1)!;
      expect(snapshot.summary['total-delete-files']).toBe('0');
      const delta = await t.plan({ format: 'delta' });
      expect(delta.task.files.map((f) => f.deletes)).toEqual([undefined]);
    });
  }

  it('v3 tables keep row lineage: every snapshot starts at next-row-id and reserves its rows', async () => {
    const name = 'mor.lineage';
    const t = fx.lake.table(name);
    await t.append(Array.from({ length: 10 }, (_, i) => ({ id: i })), { properties: { 'format-version': '3', 'write.merge.mode': 'merge-on-read' } });
    await t.append(Array.from({ length: 5 }, (_, i) => ({ id: 10 + i })));
    await t.merge([{ id: 2 }, { id: 50 }], { keys: ['id'] });
    await t.merge([{ id: 3 }], { keys: ['id'], strategy: 'copy-on-write' });
    const metadata = await metadataOf(dirOf(name));
    expect(metadata['format-version']).toBe(3);
    let next = 0;
    for (const s of metadata.snapshots) {
      expect(s['first-row-id']).toBe(next);
      next += s['added-rows']!;
      // Every data manifest of the snapshot has a first_row_id; no two ranges overlap.
      const list = decodeManifestList(await readFile(new URL(s['manifest-list'])));
      const ranges = list
        .filter((m) => m.content === 0)
        .map((m) => [m['first-row-id']!, m['first-row-id']! + m['added-rows-count'] + m['existing-rows-count']] as const)
        .sort((a, b) => a[0] - b[0]);
      for (const [lo] of ranges) expect(lo).toBeTypeOf('number');
      for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBeGreaterThanOrEqual(ranges[i - 1]![1]);
      for (const m of list.filter((x) => x.content === 1)) expect(m['first-row-id']).toBeUndefined();
    }
    expect(metadata['next-row-id']).toBe(next);
    // Rewritten manifests carry the row IDs their files inherited.
    const current = metadata.snapshots.at(-1)!;
    for (const m of decodeManifestList(await readFile(new URL(current['manifest-list'])))) {
      if (m.content !== 0) continue;
      const { entries } = decodeManifest(await readFile(new URL(m['manifest-path'])));
      for (const e of entries) if (e.status !== 1) expect(e['data-file']['first-row-id']).toBeTypeOf('number');
    }
  });
});

describe('v3 row lineage through copy-on-write rewrites', () => {
  const fx = lakehouseFixture();

  /** Every live row's id with its effective `_row_id` and `_last_updated_sequence_number` (spec §Row Lineage). */
  async function lineage(name: string): Promise<Map<number, { rowId: number; updated: number }>> {
    const [ns, table] = name.split('.') as [string, string];
    const { metadata } = await fx.lake.catalog.loadTable({ namespace: [ns], name: table });
    const snapshot = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id'])!;
    const { data, sequenceNumbers } = await liveFiles(fx.lake.io, metadata, snapshot);
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    const out = new Map<number, { rowId: number; updated: number }>();
    for (const f of data) {
      const path = new URL(f['file-path']).pathname;
      const columns = (await c.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${path}')`)).getRowObjectsJS();
      const has = (id: number, name: string) => columns.some((r) => r.name === name && Number(r.field_id) === id);
      const rowId = has(2147483540, '_row_id') ? '_row_id' : 'NULL';
      const updated = has(2147483539, '_last_updated_sequence_number') ? '_last_updated_sequence_number' : 'NULL';
      const rows = (await c.runAndReadAll(`SELECT id, ${rowId} AS r, ${updated} AS u, file_row_number AS pos FROM read_parquet('${path}', file_row_number = true)`)).getRowObjectsJS();
      for (const r of rows) {
        out.set(Number(r.id), {
          rowId: r.r === null ? f['first-row-id']! + Number(r.pos) : Number(r.r),
          updated: r.u === null ? sequenceNumbers.get(f)! : Number(r.u),
        });
      }
    }
    c.closeSync();
    return out;
  }

  it('rows moved by a rewrite keep their row IDs and last-updated sequence numbers; changed rows get new ones', async () => {
    const name = 'lin.t';
    const t = fx.lake.table(name);
    await t.append(Array.from({ length: 10 }, (_, i) => ({ id: i, v: 0 })), { properties: { 'format-version': '3' } });
    const before = await lineage(name);
    expect([...before.values()].map((x) => x.rowId).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i));
    await t.merge([{ id: 3, v: 1 }, { id: 20, v: 1 }], { keys: ['id'] });
    await t.delete('id = 5');
    const after = await lineage(name);
    expect([...after.keys()].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9, 20]);
    for (const id of [0, 1, 2, 4, 6, 7, 8, 9]) expect(after.get(id), `row ${id}`).toEqual(before.get(id));
    // The changed row and the new one: fresh IDs above all assigned before, updated by the merge.
    for (const id of [3, 20]) {
      expect(after.get(id)!.rowId).toBeGreaterThanOrEqual(10);
      expect(after.get(id)!.updated).toBe(2);
    }
    expect(new Set([...after.values()].map((x) => x.rowId)).size).toBe(after.size);
    expect(await bothFormats(t)).toEqual([0, 1, 2, 3, 4, 6, 7, 8, 9, 20]);
  });
});

describe('merges and deletes on several tables of one lakehouse at once', () => {
  const fx = lakehouseFixture();

  it('each keeps to its own table (they share one DuckDB session)', async () => {
    const names = ['multi.a', 'multi.b', 'multi.c', 'multi.d'];
    const strategies = ['copy-on-write', 'merge-on-read', 'copy-on-write', 'merge-on-read'] as const;
    for (const [i, name] of names.entries()) {
      await fx.lake.table(name).append(Array.from({ length: 1000 }, (_, k) => ({ id: k, v: 0 })), { properties: { 'format-version': i < 2 ? '3' : '2' } });
    }
    const results = await Promise.all(
      names.flatMap((name, i) => [
        fx.lake.table(name).delete(`id < ${10 + i}`, { strategy: strategies[i] }),
        fx.lake.table(name).merge(Array.from({ length: 20 }, (_, k) => ({ id: 500 + k + i, v: i + 1 })), { keys: ['id'], strategy: strategies[i] }),
      ]),
    );
    for (const [i, name] of names.entries()) {
      const [deleted, merged] = [results[2 * i]!, results[2 * i + 1]!];
      expect(deleted.deleted, name).toBe(10 + i);
      expect(merged.updated, name).toBe(20);
      const t = fx.lake.table(name);
      const rows = await t.read();
      expect(ids(rows), name).toEqual(Array.from({ length: 1000 - 10 - i }, (_, k) => k + 10 + i));
      expect(rows.filter((r) => Number(r.v) === i + 1).map((r) => Number(r.id)).sort((a, b) => a - b), name).toEqual(Array.from({ length: 20 }, (_, k) => 500 + k + i));
      expect(ids(await t.read({ format: 'delta' })), name).toEqual(ids(rows));
    }
  });
});

describe('merge-on-read: bad input commits nothing', () => {
  const fx = lakehouseFixture();

  it('refuses unknown strategies and format versions, at creation and per call', async () => {
    const t = fx.lake.table('bad.t');
    const bad: Record<string, string>[] = [{ 'write.merge.mode': 'sometimes' }, { 'write.delete.mode': 'later' }, { 'format-version': '1' }, { 'format-version': '4' }];
    for (const properties of bad) {
      const err = await t.append([{ id: 1 }], { properties }).catch((e) => e);
      expect(err).toBeInstanceOf(TwinlakeError);
      expect(err.message).toMatch(/write\.merge\.mode|write\.delete\.mode|format-version/);
    }
    expect(await fx.lake.table('bad.t').exists()).toBe(false);
    const first = await t.append([{ id: 1 }, { id: 2 }]);
    const err = await t.merge([{ id: 1 }], { keys: ['id'], strategy: 'eventually' as never }).catch((e) => e);
    expect(err.message).toMatch(/merge strategy: expected copy-on-write or merge-on-read, found "eventually"/);
    const d = await t.describe();
    expect(d.currentSnapshotId).toBe(first.snapshotId);
  });

  it('a table created for merge-on-read is v3 unless it asks for v2; otherwise v2', async () => {
    const cases: [Record<string, string>, number][] = [
      [{ 'write.delete.mode': 'merge-on-read' }, 3],
      [{ 'write.merge.mode': 'merge-on-read', 'format-version': '2' }, 2],
      [{}, 2],
    ];
    for (const [i, [properties, version]] of cases.entries()) {
      const t = fx.lake.table(`fv.t${i}`);
      await t.append([{ id: 1 }], { properties });
      expect((await t.describe()).formatVersion, JSON.stringify(properties)).toBe(version);
      // format-version is a creation choice, not a stored property (spec: reserved table properties).
      expect((await t.describe()).properties['format-version']).toBeUndefined();
    }
  });

  it('a v3 table keeps the row lineage column names for itself', async () => {
    const err = await fx.lake.table('bad.lineage').append([{ id: 1, _row_id: 5 }], { properties: { 'format-version': '3' } }).catch((e) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect(err.message).toMatch(/column _row_id is reserved for row lineage in Iceberg v3 tables/);
    expect(await fx.lake.table('bad.lineage').exists()).toBe(false);
    const t = fx.lake.table('bad.lineage3');
    const first = await t.append([{ id: 1 }], { properties: { 'format-version': '3' } });
    const evolve = await t.append([{ id: 2, _last_updated_sequence_number: 1 }]).catch((e) => e);
    expect(evolve.message).toMatch(/column _last_updated_sequence_number is reserved/);
    expect((await t.describe()).currentSnapshotId).toBe(first.snapshotId);
    // A v2 table may use the names.
    await fx.lake.table('bad.lineage2').append([{ id: 1, _row_id: 5 }]);
  });

  it('refuses merge-on-read on an Iceberg v1 table (made by another engine) and commits nothing', async () => {
    // Iceberg-only, as other engines create it: Twinlake itself creates v2 or v3 tables.
    const ident = { namespace: ['bad'], name: 'v1' };
    await fx.lake.catalog.createNamespace(['bad']).catch(() => undefined);
    const schema = { type: 'struct' as const, 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'long' }] };
    await fx.lake.catalog.createTable(
      ident,
      newTableMetadata({ location: fileUri(join(fx.warehouse, 'bad', 'v1')), schema, properties: { 'twinlake.formats': 'iceberg' }, formatVersion: 1, tableUuid: '00000000-0000-4000-8000-000000000001', nowMs: Date.now(), lastColumnId: 1 }),
    );
    const t = fx.lake.table('bad.v1');
    const before = await fx.lake.catalog.loadTable(ident);
    for (const attempt of [
      () => t.merge([{ id: 1 }], { keys: ['id'], strategy: 'merge-on-read' }),
      () => t.delete('id = 1', { strategy: 'merge-on-read' }),
    ]) {
      const err = await attempt().catch((e) => e);
      expect(err).toBeInstanceOf(TwinlakeError);
      expect(err.message).toMatch(/merge-on-read writes row-level deletes, which an Iceberg v1 table cannot hold/);
    }
    expect((await fx.lake.catalog.loadTable(ident)).metadataLocation).toBe(before.metadataLocation);
  });

  it('refuses merge-on-read on an Iceberg v1 table, which cannot hold row-level deletes', () => {
    const v1 = { 'format-version': 1, properties: {} } as unknown as TableMetadata;
    expect(() => rowChangeStrategy(v1, 'merge', 'merge-on-read')).toThrow(/Iceberg v1 table cannot hold/);
    expect(() => rowChangeStrategy({ ...v1, properties: { 'write.delete.mode': 'merge-on-read' } }, 'delete')).toThrow(/table property write\.delete\.mode/);
    expect(rowChangeStrategy(v1, 'merge')).toBe('copy-on-write');
  });
});
