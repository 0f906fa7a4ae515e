import { copyFile, mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Table } from '../../src/index.ts';
import { deletionVectorLocation } from '../../src/format/delta/deletion-vector.ts';
import { fileUri, localPath } from '../../src/core/uri.ts';
import { reachableFiles } from '../../src/maintenance/reachable.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { errorOf, listFiles, runWorker } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const DAY = 24 * 3600 * 1000;

/** Every file below a folder, relative, with its size and modification time. */
async function tree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const f of listFiles(dir)) {
    const s = await stat(join(dir, f));
    out.set(f, `${s.size}@${s.mtimeMs}`);
  }
  return out;
}

async function age(file: string, ms: number): Promise<void> {
  const t = new Date(Date.now() - ms);
  await utimes(file, t, t);
}

async function ageAll(dir: string, ms: number): Promise<void> {
  for (const f of listFiles(dir)) await age(join(dir, f), ms);
}

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

/**
 * What Delta's VACUUM would delete (PROTOCOL.md, delta-utility-vacuum.mdx): every file below the
 * table that no add or remove of the log (nor a deletion vector they name) references, skipping
 * only paths with a segment starting with `_` or `.`. Read from the log's files directly.
 */
async function vacuumWouldDelete(dir: string): Promise<string[]> {
  const referenced = new Set<string>();
  const root = fileUri(dir);
  for (const name of (await readdir(join(dir, '_delta_log'))).filter((n) => /^\d{20}\.json$/.test(n))) {
    for (const line of (await readFile(join(dir, '_delta_log', name), 'utf8')).split('\n').filter(Boolean)) {
      const a = JSON.parse(line);
      const file = a.add ?? a.remove;
      if (!file) continue;
      referenced.add(decodeURIComponent(file.path));
      const dv = file.deletionVector ? deletionVectorLocation(file.deletionVector, root) : undefined;
      if (dv) referenced.add(relative(dir, localPath(dv)));
    }
  }
  return listFiles(dir).filter((f) => !f.split('/').some((seg) => seg.startsWith('_') || seg.startsWith('.')) && !referenced.has(f));
}

/** Rows of every retained snapshot and Delta version, by our readers. */
async function everyVersion(t: Table): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  const md = await t.metadata();
  for (const s of md.snapshots) out.set(`snapshot ${s['snapshot-id']}`, ids(await t.read({ snapshotId: s['snapshot-id'] })));
  for (const h of await t.history()) {
    const v = h.deltaVersion;
    if (v !== undefined) out.set(`version ${v}`, ids(await t.read({ format: 'delta', version: v })));
  }
  return out;
}

/** Rows of every retained snapshot and version counted by DuckDB over the live files, minus their deletes. */
async function duckdbCounts(t: Table): Promise<Map<string, number>> {
  const db = await (await DuckDBInstance.create(':memory:')).connect();
  const out = new Map<string, number>();
  const count = async (files: Awaited<ReturnType<Table['files']>>) => {
    if (files.files.length === 0) return 0;
    const list = files.files.map((f) => `'${localPath(f.path).replaceAll("'", "''")}'`).join(', ');
    const rows = Number((await (await db.runAndReadAll(`SELECT count(*) AS n FROM read_parquet([${list}])`)).getRowObjects())[0]!.n);
    return rows - files.files.reduce((n, f) => n + f.deletes.reduce((m, d) => m + d.records, 0), 0);
  };
  for (const s of (await t.metadata()).snapshots) out.set(`snapshot ${s['snapshot-id']}`, await count(await t.files({ snapshotId: s['snapshot-id'] })));
  for (const h of await t.history()) {
    const v = h.deltaVersion;
    if (v !== undefined) out.set(`version ${v}`, await count(await t.files({ format: 'delta', version: v })));
  }
  db.closeSync();
  return out;
}

describe('orphan cleanup', () => {
  const fx = lakehouseFixture();
  const dirOf = (name: string) => join(fx.warehouse, ...name.split('.'));

  /** A dual table with replaced files, merge-on-read deletes (v3: Puffin DVs and Delta DV files; v2: position delete files). */
  async function build(name: string, version: '2' | '3'): Promise<Table> {
    const t = fx.lake.table(name);
    await t.append(Array.from({ length: 40 }, (_, i) => ({ id: i, grp: ['a', 'b'][i % 2] })), { partition: 'grp', properties: { 'format-version': version, 'write.delete.mode': 'merge-on-read', 'write.merge.mode': 'merge-on-read' } });
    await t.append(Array.from({ length: 20 }, (_, i) => ({ id: 100 + i, grp: 'a' })));
    await t.delete('id < 5');
    await t.merge(Array.from({ length: 6 }, (_, i) => ({ id: 100 + i * 2, grp: 'a' })), { keys: ['id'] });
    await t.overwrite(Array.from({ length: 10 }, (_, i) => ({ id: 500 + i, grp: 'b' })));
    await t.append(Array.from({ length: 5 }, (_, i) => ({ id: 600 + i, grp: 'a' })));
    await t.delete('id = 601');
    return t;
  }

  /**
   * Orphans as a stray copy, a killed write (the files a write stages in the table before its
   * commit: a data file, its manifest and list, the metadata file it never swapped in) and old
   * metadata leave them.
   */
  async function plant(dir: string): Promise<string[]> {
    const dataFiles = listFiles(join(dir, 'data')).filter((f) => f.endsWith('.parquet') && !f.endsWith('-deletes.parquet'));
    const avro = (await readdir(join(dir, 'metadata'))).filter((n) => n.endsWith('.avro'));
    const manifest = avro.find((n) => !n.startsWith('snap-'))!;
    const list = avro.find((n) => n.startsWith('snap-'))!;
    const planted = [
      'data/stray.parquet',
      `data/grp=a/${randomUUID()}.parquet`,
      `metadata/${randomUUID()}-m0.avro`,
      `metadata/snap-123-9-${randomUUID()}.avro`,
      `metadata/00000-${randomUUID()}.metadata.json`,
      // The metadata file of a commit whose pointer swap never happened.
      `metadata/00099-${randomUUID()}.metadata.json`,
    ];
    await copyFile(join(dir, 'data', dataFiles[0]!), join(dir, planted[0]!));
    await mkdir(join(dir, 'data', 'grp=a'), { recursive: true });
    await copyFile(join(dir, 'data', dataFiles[1]!), join(dir, planted[1]!));
    await copyFile(join(dir, 'metadata', manifest), join(dir, planted[2]!));
    await copyFile(join(dir, 'metadata', list), join(dir, planted[3]!));
    await copyFile(join(dir, 'metadata', 'v1.metadata.json'), join(dir, planted[4]!));
    await copyFile(join(dir, 'metadata', 'v1.metadata.json'), join(dir, planted[5]!));
    const dv = listFiles(dir).find((f) => /deletion_vector_.*\.bin$/.test(f));
    if (dv) {
      const orphanDv = join(relative(dir, join(dir, dv, '..')), `deletion_vector_${randomUUID()}.bin`);
      await copyFile(join(dir, dv), join(dir, orphanDv));
      planted.push(orphanDv);
    }
    for (const p of planted) await age(join(dir, p), 10 * DAY);
    return planted.sort();
  }

  for (const version of ['2', '3'] as const) {
    it(`removes planted orphans and nothing any retained snapshot or version needs (v${version})`, async () => {
      const name = `orph.events_v${version}`;
      const t = await build(name, version);
      const dir = dirOf(name);
      const kinds = listFiles(dir);
      if (version === '3') {
        expect(kinds.some((f) => f.endsWith('.puffin'))).toBe(true);
        expect(kinds.some((f) => /deletion_vector_.*\.bin$/.test(f))).toBe(true);
      } else expect(kinds.some((f) => f.endsWith('-deletes.parquet'))).toBe(true);
      await ageAll(dir, 10 * DAY);
      const planted = await plant(dir);
      // A file of a write in flight: unreferenced, but inside the window.
      const recent = `data/${randomUUID()}.parquet`;
      await copyFile(join(dir, planted[0]!.startsWith('data/') ? 'data/stray.parquet' : planted[0]!), join(dir, recent));

      const rowsBefore = await everyVersion(t);
      const countsBefore = await duckdbCounts(t);
      const snapshots = (await t.metadata()).snapshots.length;
      expect(snapshots).toBeGreaterThanOrEqual(7);
      expect([...rowsBefore.keys()].filter((k) => k.startsWith('version ')).length).toBe(snapshots);
      const reachableBefore = await reachableFiles(t);
      const vacuum = await vacuumWouldDelete(dir);

      const before = await tree(dir);
      const dry = await removeOrphans(t, { dryRun: true });
      expect(await tree(dir)).toEqual(before);
      expect(dry.files.map((f) => f.path).sort()).toEqual(planted);
      for (const f of dry.files) expect(f.reason).toMatch(/\w/);
      expect(dry.files.find((f) => f.path.startsWith('metadata/00099-'))!.kind).toBe('staging');
      expect(dry.files.find((f) => f.path === 'data/stray.parquet')!.reason).toMatch(/data file/);
      expect(dry.keptRecent).toBe(1);

      // Delta's rule would delete Iceberg's metadata and (merge-on-read) its delete files; ours keeps every one.
      const icebergOnly = vacuum.filter((f) => !planted.includes(f) && f !== recent);
      expect(icebergOnly.some((f) => f.startsWith('metadata/') && f.endsWith('.metadata.json'))).toBe(true);
      expect(icebergOnly.some((f) => f.endsWith('.avro'))).toBe(true);
      expect(icebergOnly.some((f) => (version === '3' ? f.endsWith('.puffin') : f.endsWith('-deletes.parquet')))).toBe(true);
      const doomed = new Set(dry.files.map((f) => f.path));
      for (const f of icebergOnly) expect(doomed.has(f), f).toBe(false);

      // Iceberg's rule (delete what no snapshot's metadata reaches) would delete the Delta log and Delta's deletion vector files.
      const icebergRefs = new Set<string>();
      for (const s of (await t.metadata()).snapshots) {
        for (const f of (await t.files({ snapshotId: s['snapshot-id'] })).files) for (const p of [f.path, ...f.deletes.map((d) => d.path!)]) icebergRefs.add(relative(dir, localPath(p)));
      }
      const icebergRule = listFiles(dir).filter((f) => !f.startsWith('metadata/') && !icebergRefs.has(f) && !planted.includes(f) && f !== recent);
      expect(icebergRule.some((f) => f.startsWith('_delta_log/'))).toBe(true);
      if (version === '3') expect(icebergRule.some((f) => /deletion_vector_.*\.bin$/.test(f))).toBe(true);
      for (const f of icebergRule) expect(doomed.has(f), f).toBe(false);

      const result = await removeOrphans(t);
      expect(result.removed.files).toBe(planted.length);
      expect(result.removed.bytes).toBe(dry.removed.bytes);
      expect(result.byKind.data!.files).toBe(2);
      expect(result.byKind.manifest!.files).toBe(1);
      expect(result.byKind['manifest-list']!.files).toBe(1);
      expect(result.byKind.metadata!.files).toBe(1);
      expect(result.byKind.staging!.files).toBe(1);
      // Data files go before the metadata that could name them.
      const order = result.files.map((f) => f.kind);
      expect(order.indexOf('data')).toBeLessThan(order.indexOf('manifest'));
      expect(order.lastIndexOf('manifest')).toBeLessThan(order.indexOf('manifest-list'));
      expect(order.lastIndexOf('manifest-list')).toBeLessThan(order.indexOf('metadata'));

      for (const p of planted) expect(existsSync(join(dir, p)), p).toBe(false);
      expect(existsSync(join(dir, recent))).toBe(true);
      const after = await tree(dir);
      expect([...before.keys()].filter((f) => !after.has(f)).sort()).toEqual(planted);
      for (const uri of reachableBefore.files) expect(existsSync(localPath(uri)), uri).toBe(true);
      expect([...(await reachableFiles(t)).files].sort()).toEqual([...reachableBefore.files].sort());
      expect(await everyVersion(t)).toEqual(rowsBefore);
      expect(await duckdbCounts(t)).toEqual(countsBefore);
      for (const [k, rows] of rowsBefore) expect(countsBefore.get(k), k).toBe(rows.length);
      const verified = await t.verify({ allVersions: true });
      expect(verified.remaining).toEqual([]);
      // Nothing left to do.
      expect((await removeOrphans(t, { dryRun: true })).files).toEqual([]);
    });
  }

  it('leaves a sibling whose name starts with the table name, and a table nested below it, alone', async () => {
    const t = fx.lake.table('orph.sib');
    await t.append([{ id: 1 }, { id: 2 }]);
    const sibling = fx.lake.table('orph.sib2');
    await sibling.append([{ id: 3 }]);
    const dir = dirOf('orph.sib');
    const sibDir = dirOf('orph.sib2');
    await writeFile(join(sibDir, 'data', 'stray.parquet'), 'x');
    // Another table's folder inside this one: its own log and metadata, and a file neither names.
    const nested = join(dir, 'nested');
    await mkdir(join(nested, '_delta_log'), { recursive: true });
    await mkdir(join(nested, 'metadata'), { recursive: true });
    await mkdir(join(nested, 'data'), { recursive: true });
    await copyFile(join(dir, '_delta_log', '00000000000000000000.json'), join(nested, '_delta_log', '00000000000000000000.json'));
    await copyFile(join(dir, 'metadata', 'v1.metadata.json'), join(nested, 'metadata', 'v1.metadata.json'));
    await writeFile(join(nested, 'data', 'theirs.parquet'), 'y');
    await writeFile(join(dir, 'data', 'stray.parquet'), 'z');
    await ageAll(dir, 10 * DAY);
    await ageAll(sibDir, 10 * DAY);
    const sibBefore = await tree(sibDir);
    const nestedBefore = await tree(nested);

    const result = await removeOrphans(t);
    expect(result.files.map((f) => f.path)).toEqual(['data/stray.parquet']);
    expect(result.nestedTables).toEqual(['nested/']);
    expect(await tree(sibDir)).toEqual(sibBefore);
    expect(await tree(nested)).toEqual(nestedBefore);
    expect(ids(await t.read())).toEqual([1, 2]);
    expect(ids(await sibling.read({ format: 'delta' }))).toEqual([3]);
  });

  it('refuses a window below one hour and keeps files inside the window it is given', async () => {
    const t = fx.lake.table('orph.window');
    await t.append([{ id: 1 }]);
    const dir = dirOf('orph.window');
    expect((await errorOf(removeOrphans(t, { olderThan: 59 * 60 * 1000 }))).message).toMatch(/^orphan cleanup: expected olderThan of at least 1 hour/);
    await writeFile(join(dir, 'data', 'two-days.parquet'), 'a');
    await age(join(dir, 'data', 'two-days.parquet'), 2 * DAY);
    await writeFile(join(dir, 'data', 'four-days.parquet'), 'b');
    await age(join(dir, 'data', 'four-days.parquet'), 4 * DAY);
    // The default window is 3 days.
    expect((await removeOrphans(t, { dryRun: true })).files.map((f) => f.path)).toEqual(['data/four-days.parquet']);
    expect((await removeOrphans(t, { dryRun: true, olderThan: DAY })).files.map((f) => f.path)).toEqual(['data/four-days.parquet', 'data/two-days.parquet']);
    // `now` moves the window: a day later the two-day file is still young for a 3-day window.
    expect((await removeOrphans(t, { dryRun: true, now: Date.now() + 2 * DAY })).files.map((f) => f.path)).toEqual(['data/four-days.parquet', 'data/two-days.parquet']);
    expect((await removeOrphans(t, { dryRun: true, now: Date.now() + 0.5 * DAY })).files.map((f) => f.path)).toEqual(['data/four-days.parquet']);
  });

  it('cleans a Delta-only table from its log alone', async () => {
    const t = fx.lake.table('orph.delta_only');
    await t.append([{ id: 1 }, { id: 2 }], { formats: ['delta'] });
    await t.overwrite([{ id: 3 }]);
    const dir = dirOf('orph.delta_only');
    const data = listFiles(dir).filter((f) => f.endsWith('.parquet') && !f.startsWith('_delta_log/'));
    expect(data.length).toBe(2);
    await writeFile(join(dir, 'stray.parquet'), 'x');
    await ageAll(dir, 10 * DAY);
    const result = await removeOrphans(t);
    expect(result.files.map((f) => f.path)).toEqual(['stray.parquet']);
    for (const f of data) expect(existsSync(join(dir, f)), f).toBe(true);
    expect(ids(await t.read({ format: 'delta', version: 0 }))).toEqual([1, 2]);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([3]);
  });

  it("removes what a writer killed mid-write left in the table, once it is past the window", async () => {
    const name = 'orph.killed';
    const t = fx.lake.table(name);
    await t.append([{ id: 1, grp: 'a' }, { id: 2, grp: 'b' }], { partition: 'grp' });
    const dir = dirOf(name);
    const before = new Set(listFiles(dir));
    const killed = await runWorker('killed-write-worker.ts', [fx.warehouse, name]);
    expect(killed.stderr).not.toMatch(/not killed/);
    expect(killed.code).not.toBe(0);
    const left = listFiles(dir).filter((f) => !before.has(f)).sort();
    // Its data file and its manifest and list: nothing committed them.
    expect(left.some((f) => f.startsWith('data/') && f.endsWith('.parquet'))).toBe(true);
    expect(left.some((f) => f.startsWith('metadata/') && f.endsWith('.avro'))).toBe(true);
    expect(ids(await t.read())).toEqual([1, 2]);

    // Young, it may still be a write in flight: kept.
    expect((await removeOrphans(t, { dryRun: true })).files).toEqual([]);
    for (const f of left) await age(join(dir, f), 4 * DAY);
    const result = await removeOrphans(t);
    expect(result.files.map((f) => f.path).sort()).toEqual(left);
    expect(listFiles(dir).sort()).toEqual([...before].sort());
    expect(ids(await t.read())).toEqual([1, 2]);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
    expect((await t.verify({ allVersions: true })).remaining).toEqual([]);
  });
});
