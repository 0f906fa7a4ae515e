import { existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lakehouse, type Table } from '../../src/index.ts';
import { buildLastCheckpoint } from '../../src/format/delta/checkpoint.ts';
import { errorOf, tempDir } from '../helpers.ts';

/**
 * Damaged table files and drift between the formats: each case is detected and named by
 * `verify`, noticed by writes or `sync` (a warning naming the file), and repaired from Iceberg, or
 * refused where nothing determines the file.
 */

const tmp = tempDir();
const warnings: string[] = [];
let lake: Lakehouse;

beforeAll(async () => {
  lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: (m) => warnings.push(m) });
});
afterAll(async () => {
  await lake.close();
  tmp.cleanup();
});

const pad = (v: number) => String(v).padStart(20, '0');
const dir = (name: string) => join(tmp.path, ...name.split('.'));
const commitFile = (name: string, v: number) => join(dir(name), '_delta_log', `${pad(v)}.json`);
const checkpointFile = (name: string, v: number) => join(dir(name), '_delta_log', `${pad(v)}.checkpoint.parquet`);
const hintFile = (name: string) => join(dir(name), 'metadata', 'version-hint.text');
const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

/** A table of `writes` appends of two rows each (ids 0..2·writes-1). */
async function table(name: string, writes: number, properties: Record<string, string> = {}): Promise<Table> {
  const t = lake.table(name);
  for (let i = 0; i < writes; i++) await t.append([{ id: 2 * i }, { id: 2 * i + 1 }], i === 0 ? { properties } : {});
  return t;
}

async function expectFormatsAgree(t: Table): Promise<void> {
  const iceberg = ids(await t.read());
  expect(ids(await t.read({ format: 'delta' }))).toEqual(iceberg);
  const v = await t.verify({ allVersions: true });
  expect(v.findings).toEqual([]);
  expect(v.ok).toBe(true);
}

/** The warnings a call gave. */
async function warned(f: () => Promise<unknown>): Promise<string[]> {
  const before = warnings.length;
  await f();
  return warnings.slice(before);
}

describe('verify on healthy tables', () => {
  it('reports no drift for append-only, partitioned, and merge-on-read v2 and v3 tables with deletion vectors', async () => {
    const append = await table('ok.append', 3);
    const partitioned = lake.table('ok.parts');
    await partitioned.append([{ id: 1, region: 'eu' }, { id: 2, region: 'us' }], { partition: 'region' });
    await partitioned.append([{ id: 3, region: 'eu' }, { id: 4, region: 'ap' }]);
    const tables = [append, partitioned];
    for (const version of ['2', '3']) {
      const t = lake.table(`ok.mor${version}`);
      await t.append(Array.from({ length: 20 }, (_, i) => ({ id: i, g: i % 2 })), { partition: 'g', properties: { 'format-version': version, 'write.delete.mode': 'merge-on-read', 'write.merge.mode': 'merge-on-read' } });
      await t.delete('id IN (1, 2, 7)');
      await t.merge([{ id: 4, g: 0 }, { id: 30, g: 0 }], { keys: ['id'] });
      const files = await t.files({ format: 'delta' });
      expect(files.files.some((f) => f.deletes.length > 0)).toBe(true);
      tables.push(t);
    }
    for (const t of tables) {
      const r = await t.verify({ allVersions: true });
      expect(r.findings, t.name).toEqual([]);
      expect(r.ok).toBe(true);
      expect(r.checked.snapshots).toBeGreaterThan(1);
    }
  });
});

describe('a damaged Delta commit', () => {
  it('emptied last commit: a write notices it by name and Delta keeps that version\'s rows (no verify involved)', async () => {
    const t = await table('bad.emptylast', 2);
    writeFileSync(commitFile('bad.emptylast', 2), '');
    const w = await warned(() => t.append([{ id: 4 }]));
    expect(w.join('\n')).toContain(`_delta_log/${pad(2)}.json`);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([0, 1, 2, 3, 4]);
    expect(ids(await t.read({ format: 'delta', version: 2 }))).toEqual([0, 1, 2, 3]);
  });

  it('garbage last commit: sync notices it by name and rewrites it (no verify involved)', async () => {
    const t = await table('bad.garbagelast', 2);
    const text = readFileSync(commitFile('bad.garbagelast', 2), 'utf8');
    writeFileSync(commitFile('bad.garbagelast', 2), '\u0000\u0001garbage');
    const w = await warned(() => t.syncDelta());
    expect(w.join('\n')).toContain(`_delta_log/${pad(2)}.json`);
    expect(readFileSync(commitFile('bad.garbagelast', 2), 'utf8')).toBe(text);
  });

  it('zero bytes: verify names it; the next write warns, rewrites it from its snapshot and keeps its rows', async () => {
    const t = await table('bad.empty', 3);
    writeFileSync(commitFile('bad.empty', 3), '');
    const v = await t.verify();
    expect(v.ok).toBe(false);
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-empty', file: `_delta_log/${pad(3)}.json`, version: 3 }));
    // Reading Delta refuses the empty commit rather than dropping version 3's rows.
    expect((await errorOf(t.read({ format: 'delta' }))).message).toContain(`${pad(3)}.json is empty`);

    const w = await warned(() => t.append([{ id: 6 }]));
    expect(w.join('\n')).toMatch(new RegExp(`${pad(3)}\\.json.*delta-commit-empty.*rewrote`));
    expect(ids(await t.read({ format: 'delta' }))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    await expectFormatsAgree(t);
  });

  it('truncated in the middle of a line: sync warns, names the line and rewrites it', async () => {
    const t = await table('bad.torn', 2);
    const file = commitFile('bad.torn', 2);
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.slice(0, Math.floor(text.indexOf('\n') / 2)));
    const v = await t.verify();
    const f = v.findings.find((x) => x.kind === 'delta-commit-unparsable');
    expect(f).toMatchObject({ file: `_delta_log/${pad(2)}.json`, version: 2 });
    expect(f!.found).toMatch(/line 1/);

    const w = await warned(() => t.syncDelta());
    expect(w.join('\n')).toContain(`${pad(2)}.json`);
    expect(readFileSync(file, 'utf8')).toBe(text); // derived byte for byte
    await expectFormatsAgree(t);
  });

  it('garbage: verify --repair rewrites it and reports what it did', async () => {
    const t = await table('bad.garbage', 2);
    const file = commitFile('bad.garbage', 1);
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, 'PK\u0003\u0004 this is not json\n');
    const r = await t.verify({ repair: true });
    expect(r.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-unparsable', file: `_delta_log/${pad(1)}.json`, repaired: expect.stringMatching(/^rewrote .* from iceberg snapshot \d+$/) }));
    expect(r.remaining).toEqual([]);
    expect(r.ok).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(text);
    await expectFormatsAgree(t);
  });

  it('in a Delta-only table nothing else records it: writes and verify --repair refuse, naming the file', async () => {
    const t = lake.table('bad.deltaonly');
    await t.append([{ id: 1 }], { formats: ['delta'] });
    await t.append([{ id: 2 }]);
    const file = commitFile('bad.deltaonly', 1);
    writeFileSync(file, '{"add": {"path": "x.parq');
    const e = await errorOf(t.append([{ id: 3 }]));
    expect(e.message).toContain(`${pad(1)}.json`);
    const r = await t.verify({ repair: true });
    expect(r.ok).toBe(false);
    expect(r.remaining).toContainEqual(expect.objectContaining({ kind: 'delta-commit-unparsable', file: `_delta_log/${pad(1)}.json` }));
    expect(r.findings.find((f) => f.kind === 'delta-commit-unparsable')!.unrepairable).toMatch(/only the Delta format/);
    expect(readFileSync(file, 'utf8')).toBe('{"add": {"path": "x.parq'); // left as it was
  });
});

describe('a damaged or missing checkpoint', () => {
  const interval = { 'delta.checkpointInterval': '2' };

  it('garbage checkpoint Parquet: verify names it; the next write warns and rewrites it from the log', async () => {
    const t = await table('cp.garbage', 2, interval); // versions 0..2, checkpoint at 2
    const file = checkpointFile('cp.garbage', 2);
    expect(existsSync(file)).toBe(true);
    writeFileSync(file, 'not a parquet file at all');
    const v = await t.verify();
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-checkpoint-unreadable', file: `_delta_log/${pad(2)}.checkpoint.parquet`, version: 2 }));

    const w = await warned(() => t.append([{ id: 4 }]));
    expect(w.join('\n')).toMatch(new RegExp(`${pad(2)}\\.checkpoint\\.parquet.*rewrote`));
    expect(readFileSync(file).subarray(0, 4).toString()).toBe('PAR1');
    await expectFormatsAgree(t);
  });

  it('_last_checkpoint naming a checkpoint that does not exist: verify names it; sync rewrites it', async () => {
    const t = await table('cp.last', 2, interval);
    const last = join(dir('cp.last'), '_delta_log', '_last_checkpoint');
    writeFileSync(last, buildLastCheckpoint({ version: 8, size: 3, sizeInBytes: 100, numOfAddFiles: 2 }));
    const v = await t.verify();
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-last-checkpoint', file: '_delta_log/_last_checkpoint', found: 'version 8, whose checkpoint does not exist' }));
    const w = await warned(() => t.syncDelta());
    expect(w.join('\n')).toContain('_last_checkpoint');
    expect(JSON.parse(readFileSync(last, 'utf8')).version).toBe(2);
    await expectFormatsAgree(t);
  });

  it('the checkpoint due at a version, lost to a crash: verify and sync find it and write it', async () => {
    const t = await table('cp.lost', 2, interval);
    const file = checkpointFile('cp.lost', 2);
    // The writer stopped after commit 2, before its (first) checkpoint and `_last_checkpoint`.
    rmSync(file);
    rmSync(join(dir('cp.lost'), '_delta_log', '_last_checkpoint'));
    const v = await t.verify();
    expect(v.findings).toEqual([expect.objectContaining({ kind: 'delta-checkpoint-missing', file: `_delta_log/${pad(2)}.checkpoint.parquet`, version: 2 })]);
    const w = await warned(() => t.syncDelta());
    expect(w.join('\n')).toContain(`${pad(2)}.checkpoint.parquet`);
    expect(existsSync(file)).toBe(true);
    await expectFormatsAgree(t);
  });

  it('a write writes a lost checkpoint once its commit is older than a writer would take', async () => {
    const t = await table('cp.lostwrite', 3, { 'delta.checkpointInterval': '3' }); // checkpoint at 3
    const file = checkpointFile('cp.lostwrite', 3);
    rmSync(file);
    rmSync(join(dir('cp.lostwrite'), '_delta_log', '_last_checkpoint'));
    // A fresh commit may still have its writer checkpointing it: no warning yet.
    expect(await warned(() => t.append([{ id: 10 }]))).toEqual([]);
    expect(existsSync(file)).toBe(false);
    const old = new Date(Date.now() - 10 * 60_000);
    utimesSync(commitFile('cp.lostwrite', 3), old, old);
    const w = await warned(() => t.append([{ id: 11 }]));
    expect(w.join('\n')).toMatch(new RegExp(`${pad(3)}\\.checkpoint\\.parquet.*delta-checkpoint-missing`));
    expect(existsSync(file)).toBe(true);
    await expectFormatsAgree(t);
  });
});

describe('the version hint', () => {
  it('naming a metadata file that does not exist: verify names it; the next write warns and corrects it', async () => {
    const t = await table('hint.missing', 2);
    const current = readFileSync(hintFile('hint.missing'), 'utf8').trim();
    writeFileSync(hintFile('hint.missing'), '99');
    const v = await t.verify();
    expect(v.findings).toEqual([expect.objectContaining({ kind: 'version-hint-missing-file', file: 'metadata/version-hint.text', found: '99, whose v99.metadata.json does not exist' })]);
    const w = await warned(() => t.append([{ id: 4 }]));
    expect(w.join('\n')).toMatch(/metadata\/version-hint\.text.*version-hint-missing-file/);
    expect(Number(readFileSync(hintFile('hint.missing'), 'utf8'))).toBe(Number(current) + 1); // the write's own commit moved it on
    const byPath = await lake.readPath(dir('hint.missing'));
    expect(ids(byPath)).toEqual([0, 1, 2, 3, 4]);
    await expectFormatsAgree(t);
  });

  it('behind the catalog: verify names it, readers by path see an old state, --repair moves it to the current file', async () => {
    const t = await table('hint.behind', 3);
    const current = readFileSync(hintFile('hint.behind'), 'utf8').trim();
    writeFileSync(hintFile('hint.behind'), '2');
    expect(ids(await lake.readPath(dir('hint.behind')))).not.toEqual([0, 1, 2, 3, 4, 5]);
    const r = await t.verify({ repair: true });
    expect(r.findings).toEqual([expect.objectContaining({ kind: 'version-hint-behind', found: '2', repaired: `wrote ${current} from the catalog's current metadata location` })]);
    expect(r.ok).toBe(true);
    expect(readFileSync(hintFile('hint.behind'), 'utf8')).toBe(current);
    expect(ids(await lake.readPath(dir('hint.behind')))).toEqual([0, 1, 2, 3, 4, 5]);
  });
});

describe('drift between the formats', () => {
  it('a Delta commit removed from the middle of the log', async () => {
    const t = await table('drift.removed', 3);
    const file = commitFile('drift.removed', 2);
    const text = readFileSync(file, 'utf8');
    rmSync(file);
    const v = await t.verify({ allVersions: true });
    expect(v.ok).toBe(false);
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-missing', file: `_delta_log/${pad(2)}.json`, version: 2 }));
    const r = await t.verify({ allVersions: true, repair: true });
    expect(r.ok).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(text);
    await expectFormatsAgree(t);
  });

  it('a Delta commit altered to drop a file: the commit, the file and the row count are reported; --repair restores it', async () => {
    const t = await table('drift.altered', 3);
    const file = commitFile('drift.altered', 2);
    const text = readFileSync(file, 'utf8');
    const dropped = text.split('\n').find((l) => l.startsWith('{"add"'))!;
    const path = JSON.parse(dropped).add.path as string;
    writeFileSync(file, text.replace(dropped + '\n', ''));
    const sizeBefore = statSync(file).size;

    const v = await t.verify();
    expect(v.ok).toBe(false);
    const kinds = v.findings.map((f) => f.kind);
    expect(kinds).toEqual(expect.arrayContaining(['delta-commit-differs', 'file-missing-in-delta', 'row-count']));
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'delta-commit-differs', file: `_delta_log/${pad(2)}.json`, expected: `add ${path}`, found: 'no such action' }));
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'file-missing-in-delta', file: decodeURIComponent(path), version: 3 }));
    expect(v.findings).toContainEqual(expect.objectContaining({ kind: 'row-count', expected: '6 rows (iceberg)', found: '4 (delta)' }));
    expect(statSync(file).size).toBe(sizeBefore); // verify alone changes nothing

    const r = await t.verify({ repair: true });
    expect(r.ok).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(text);
    await expectFormatsAgree(t);
  });

  it('a deletion vector that names other positions than the Iceberg delete', async () => {
    const t = lake.table('drift.dv');
    await t.append(Array.from({ length: 10 }, (_, i) => ({ id: i })), { properties: { 'format-version': '3', 'write.delete.mode': 'merge-on-read' } });
    await t.delete('id = 3');
    // Point the Delta DV at another vector of the same size: the Delta DV file of a second delete.
    const other = lake.table('drift.dv2');
    await other.append(Array.from({ length: 10 }, (_, i) => ({ id: i })), { properties: { 'format-version': '3', 'write.delete.mode': 'merge-on-read' } });
    await other.delete('id = 8');
    const ours = (await t.files({ format: 'delta' })).files[0]!.deletes[0]!;
    const theirs = (await other.files({ format: 'delta' })).files[0]!.deletes[0]!;
    const local = (u: string) => u.replace(/^file:\/\//, '');
    writeFileSync(local(ours.path!), readFileSync(local(theirs.path!)));
    const v = await t.verify();
    expect(v.findings).toEqual([expect.objectContaining({ kind: 'deletes', expected: 'deleted positions 3 (iceberg)', found: '8 (delta)' })]);
  });
});
