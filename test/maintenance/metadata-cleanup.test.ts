import { copyFile, readdir, rm, stat, utimes } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Table } from '../../src/index.ts';
import { localPath } from '../../src/core/uri.ts';
import { cleanMetadata } from '../../src/maintenance/metadata-cleanup.ts';
import { reachableFiles } from '../../src/maintenance/reachable.ts';
import { listFiles } from '../helpers.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

const DAY = 24 * 3600 * 1000;
const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

async function age(file: string, ms: number): Promise<void> {
  const t = new Date(Date.now() - ms);
  await utimes(file, t, t);
}

async function tree(dir: string): Promise<string[]> {
  return Promise.all(listFiles(dir).map(async (f) => `${f} ${(await stat(join(dir, f))).mtimeMs}`));
}

async function snapshotsRows(t: Table): Promise<Map<bigint, number[]>> {
  const out = new Map<bigint, number[]>();
  for (const s of (await t.metadata()).snapshots) out.set(s['snapshot-id'], ids(await t.read({ snapshotId: s['snapshot-id'] })));
  return out;
}

const metadataFiles = async (dir: string) => (await readdir(join(dir, 'metadata'))).filter((n) => n.endsWith('.metadata.json')).sort();

describe('metadata cleanup', () => {
  const fx = lakehouseFixture();
  const dirOf = (name: string) => join(fx.warehouse, ...name.split('.'));

  it('removes metadata files past previous-versions-max when delete-after-commit is on, and unused manifests past the window', async () => {
    const t = fx.lake.table('meta.on');
    const props = { 'write.metadata.delete-after-commit.enabled': 'true', 'write.metadata.previous-versions-max': '2' };
    await t.append([{ id: 0 }], { properties: props });
    for (let i = 1; i < 6; i++) await t.append([{ id: i }]);
    const dir = dirOf('meta.on');
    const md = await t.metadata();
    expect(md['metadata-log'].length).toBe(2);
    const kept = [...md['metadata-log'].map((e) => e['metadata-file']), (await reachableFiles(t)).currentMetadata!].map((u) => u.slice(u.lastIndexOf('/') + 1)).sort();
    const before = await metadataFiles(dir);
    expect(before.length).toBeGreaterThan(kept.length);

    // A manifest no snapshot uses, old; and one as young as a commit in flight.
    const manifest = (await readdir(join(dir, 'metadata'))).find((n) => n.endsWith('.avro') && !n.startsWith('snap-'))!;
    const oldOrphan = `${randomUUID()}-m0.avro`;
    const youngOrphan = `${randomUUID()}-m0.avro`;
    await copyFile(join(dir, 'metadata', manifest), join(dir, 'metadata', oldOrphan));
    await copyFile(join(dir, 'metadata', manifest), join(dir, 'metadata', youngOrphan));
    await age(join(dir, 'metadata', oldOrphan), 2 * 3600 * 1000);
    const rows = await snapshotsRows(t);
    const reachable = await reachableFiles(t);

    const snapshotOfTree = await tree(dir);
    const dry = await cleanMetadata(t, { dryRun: true });
    expect(await tree(dir)).toEqual(snapshotOfTree);
    const expected = [...before.filter((n) => !kept.includes(n)).map((n) => `metadata/${n}`), `metadata/${oldOrphan}`].sort();
    expect(dry.files.map((f) => f.path).sort()).toEqual(expected);

    const result = await cleanMetadata(t);
    expect(result.removed.files).toBe(expected.length);
    expect(result.byKind.manifest!.files).toBe(1);
    expect(result.files.at(-1)!.kind).toBe('metadata');
    expect(await metadataFiles(dir)).toEqual(kept);
    expect(existsSync(join(dir, 'metadata', youngOrphan))).toBe(true);
    expect(existsSync(join(dir, 'metadata', oldOrphan))).toBe(false);
    for (const uri of reachable.files) {
      if (!uri.endsWith('.metadata.json')) expect(existsSync(localPath(uri)), uri).toBe(true);
    }
    expect(await snapshotsRows(t)).toEqual(rows);
    // Version 0 creates the table; version 1 mirrors the first append.
    expect(ids(await t.read({ format: 'delta', version: 1 }))).toEqual([0]);
    expect((await t.verify({ allVersions: true })).remaining).toEqual([]);
  });

  it('keeps every metadata file when delete-after-commit is off (the default)', async () => {
    const t = fx.lake.table('meta.off');
    await t.append([{ id: 0 }], { properties: { 'write.metadata.previous-versions-max': '1' } });
    for (let i = 1; i < 4; i++) await t.append([{ id: i }]);
    const dir = dirOf('meta.off');
    const before = await metadataFiles(dir);
    const result = await cleanMetadata(t, { now: Date.now() + 365 * DAY });
    expect(result.files.filter((f) => f.kind === 'metadata')).toEqual([]);
    expect(await metadataFiles(dir)).toEqual(before);
  });

  it('removes a superseded Delta checkpoint outside retention only when no retained version is read from it', async () => {
    const t = fx.lake.table('meta.ckpt');
    for (let i = 0; i < 22; i++) await t.append([{ id: i }]);
    const dir = dirOf('meta.ckpt');
    const log = join(dir, '_delta_log');
    const ckpt = (v: number) => `${String(v).padStart(20, '0')}.checkpoint.parquet`;
    const commit = (v: number) => join(log, `${String(v).padStart(20, '0')}.json`);
    expect(existsSync(join(log, ckpt(10))) && existsSync(join(log, ckpt(20)))).toBe(true);
    const later = Date.now() + 31 * DAY;
    const checkpointsOf = async (r: ReturnType<typeof cleanMetadata>) => (await r).files.filter((f) => f.kind === 'delta-checkpoint').map((f) => f.path);

    // Within the 30-day log retention: kept.
    expect(await checkpointsOf(cleanMetadata(t, { dryRun: true }))).toEqual([]);
    // Past it, with the whole log there: every version replays from version 0 without it.
    expect(await checkpointsOf(cleanMetadata(t, { dryRun: true, now: later }))).toEqual([`_delta_log/${ckpt(10)}`]);

    // The log before version 10 gone (log retention): versions 10–19 are read from checkpoint 10.
    for (let v = 0; v < 10; v++) await rm(commit(v));
    expect(await checkpointsOf(cleanMetadata(t, { now: later }))).toEqual([]);
    expect(existsSync(join(log, ckpt(10)))).toBe(true);
    expect(ids(await t.read({ format: 'delta', version: 15 }))).toEqual(Array.from({ length: 15 }, (_, i) => i));

    // Once versions 10–19 are gone too, checkpoint 20 serves what is left; the one _last_checkpoint names stays.
    for (let v = 10; v < 20; v++) await rm(commit(v));
    expect(await checkpointsOf(cleanMetadata(t, { now: later }))).toEqual([`_delta_log/${ckpt(10)}`]);
    expect(existsSync(join(log, ckpt(10)))).toBe(false);
    expect(existsSync(join(log, ckpt(20)))).toBe(true);
    expect(ids(await t.read({ format: 'delta', version: 20 }))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(ids(await t.read({ format: 'delta' }))).toEqual(Array.from({ length: 22 }, (_, i) => i));
    expect(ids(await t.read())).toEqual(Array.from({ length: 22 }, (_, i) => i));
  });
});
