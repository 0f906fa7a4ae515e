import { expect } from 'vitest';
import { stringifyJson } from '../../src/core/json.ts';
import { isTwinlakeError } from '../../src/core/errors.ts';
import type { Lakehouse, Table } from '../../src/index.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { leftovers } from '../reliability/table-checks.ts';
import { latestDeltaVersion } from '../../src/table/delta/delta-log.ts';
import type { LiveFiles } from '../../src/table/read/live-files.ts';
import { CrashPoint, isEffectful, type CrashCall } from './crash-point.ts';
import { openLake, restoreImage, saveImage, type CrashWarehouse } from './crash-lake.ts';

/**
 * One operation of the crash matrix: `setup` builds the table it starts from (through a plain
 * lakehouse), `run` is the operation that dies at each of its storage calls.
 */
export interface CrashCase {
  name: string;
  /** The table the operation changes. */
  table: string;
  /** Keeps only the Delta format: Delta is the truth and there is no Iceberg view. */
  deltaOnly?: boolean;
  /** The operation keeps the rows (maintenance, sync): before and after read the same. */
  sameRows?: boolean;
  /**
   * Leaves data files that no retained version reads but its current snapshot's manifests still
   * name as deleted entries (a compaction whose older snapshots expiry removed): cleanup keeps
   * them until that snapshot expires too, so only the cleaner's own notion of referenced applies.
   */
  tombstones?: boolean;
  setup(lake: Lakehouse): Promise<void>;
  run(lake: Lakehouse): Promise<unknown>;
}

/** A table's state as a reader sees it: its rows in a canonical order, or absent. */
type View = string;
const ABSENT = '<no table>';

const canonical = (rows: Record<string, unknown>[]): View =>
  stringifyJson(rows.map((r) => stringifyJson(Object.fromEntries(Object.entries(r).sort(([a], [b]) => a.localeCompare(b))))).sort());

async function viewOf(read: () => Promise<Record<string, unknown>[]>): Promise<View> {
  try {
    return canonical(await read());
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return ABSENT;
    throw e;
  }
}

/** The Iceberg (or, for a Delta-only table, Delta) rows by name; absent when the catalog has no such table. */
async function truthView(lake: Lakehouse, c: CrashCase): Promise<View> {
  const t = lake.table(c.table);
  if (!(await t.exists())) return ABSENT;
  return viewOf(() => t.read(c.deltaOnly ? { format: 'delta' } : {}));
}

/** Where the table's files are, whichever way it is registered (or where a create puts them). */
async function locationOf(lake: Lakehouse, c: CrashCase): Promise<string> {
  const t = lake.table(c.table);
  if (await t.exists()) return (await t.describe()).location;
  return t.context.location;
}

const views = async (lake: Lakehouse, c: CrashCase, location: string) => ({
  icebergByPath: c.deltaOnly ? ABSENT : await viewOf(() => lake.readPath(location)),
  deltaByPath: await viewOf(() => lake.readPath(location, { format: 'delta' })),
});

export interface CrashRun {
  name: string;
  /** Storage calls of one clean run. */
  calls: { call: CrashCall; what: string }[];
  /** The calls that change storage (each run dying before and after its effect). */
  effectful: number;
  /** Crash points run. */
  points: number;
}

/**
 * What is stored after a death at call k is what calls 1..k-1 did (and call k, landed): a death
 * at a call that only reads leaves what a death at the write before it, landed, leaves. So the
 * distinct outcomes are the deaths at each call that changes storage, before and after its
 * effect, and those are what CI runs. `TWINLAKE_CRASH_EVERY_CALL=1` runs every call as well.
 */
const EVERY_CALL = process.env.TWINLAKE_CRASH_EVERY_CALL === '1';

export interface MatrixOptions {
  /** Which points to run (default every one). */
  only?: (k: number, call: CrashCall, landed: boolean) => boolean;
  /** Dies at call k some other way than in this process (a child process killed at that call). */
  die?: (k: number, landed: boolean) => Promise<void>;
}

/**
 * Runs `c` clean once to count its storage calls N, then dies at call k (each k whose call
 * changes storage, before and after its effect; with TWINLAKE_CRASH_EVERY_CALL every k in 1..N),
 * restarts over the raw store and catalog, and checks what a restart finds (checkAfterCrash).
 */
export async function crashMatrix(w: CrashWarehouse, c: CrashCase, opts: MatrixOptions = {}): Promise<CrashRun> {
  {
    const setup = await openLake(w);
    try {
      await c.setup(setup.lake);
    } finally {
      await setup.close();
    }
  }
  const image = await saveImage(w);

  const before = await withLake(w, async (lake) => ({ truth: await truthView(lake, c), ...(await views(lake, c, await locationOf(lake, c))) }));
  const point = new CrashPoint();
  const clean = await openLake(w, point);
  let calls: CrashRun['calls'];
  try {
    point.arm();
    await c.run(clean.lake);
    calls = point.disarm();
  } finally {
    await clean.close();
  }
  const after = await withLake(w, (lake) => truthView(lake, c));
  if (c.sameRows) expect(after, `${c.name}: the clean run keeps the rows`).toBe(before.truth);
  else expect(after, `${c.name}: the clean run changes the table`).not.toBe(before.truth);
  const states = { before, after };
  await withLake(w, (lake) => checkAfterCrash(lake, c, states, `${c.name} clean`));

  let points = 0;
  for (let k = 1; k <= calls.length; k++) {
    const call = calls[k - 1]!.call;
    for (const landed of isEffectful(call) ? [false, true] : [false]) {
      if (opts.only ? !opts.only(k, call, landed) : !(EVERY_CALL || isEffectful(call))) continue;
      const where = `${c.name}: crash at call ${k}/${calls.length} (${call} ${calls[k - 1]!.what.slice(0, 120)}${landed ? ', landed' : ''})`;
      await restoreImage(w, image);
      if (opts.die) {
        await opts.die(k, landed);
        await withLake(w, (lake) => checkAfterCrash(lake, c, states, where));
        points++;
        continue;
      }
      const p = new CrashPoint();
      const dying = await openLake(w, p);
      try {
        p.arm(k, landed);
        await c.run(dying.lake).catch(() => undefined);
        expect(p.dead, `${where}: the run reached its crash point`).toBe(true);
      } finally {
        await dying.close();
      }
      await withLake(w, (lake) => checkAfterCrash(lake, c, states, where));
      points++;
    }
  }
  return { name: c.name, calls, effectful: calls.filter((x) => isEffectful(x.call)).length, points };
}

async function withLake<T>(w: CrashWarehouse, fn: (lake: Lakehouse) => Promise<T>): Promise<T> {
  const opened = await openLake(w);
  try {
    return await fn(opened.lake);
  } finally {
    await opened.close();
  }
}

/** The table before the operation (by name, and as readers by path found it) and after a clean run. */
interface States {
  before: { truth: View; icebergByPath: View; deltaByPath: View };
  after: View;
}

/**
 * What a restart after a crash must find: the truth (Iceberg by name; Delta for a Delta-only
 * table) exactly as before or after the operation; by path, nothing ahead of it (a reader by path
 * may lag until the next write brings the version hint and the Delta log up to date, but never
 * sees a row the catalog did not commit); after a sync both formats equal, `verify` clean; and
 * orphan cleanup past its safety window leaves only files something retained references.
 */
async function checkAfterCrash(lake: Lakehouse, c: CrashCase, states: States, where: string): Promise<void> {
  const { before, after } = states;
  const location = await locationOf(lake, c);
  const byPath = await views(lake, c, location);
  const byName = await truthView(lake, c);
  // A Delta-only table's truth is its log; its name is bound once the log holds version 0, so a
  // death between the two leaves the name unbound until the next write by name binds it.
  const truth = c.deltaOnly ? byPath.deltaByPath : byName;
  expect([before.truth, after], `${where}: the table is exactly as before or after`).toContain(truth);
  if (c.deltaOnly) expect([truth, ABSENT], `${where}: the name shows the Delta log, or is not bound yet`).toContain(byName);
  // A reader by path may lag (as it found the table before), never run ahead of the catalog.
  // A first write commits the empty new table before its rows, so a lagging reader may see it empty.
  const allowed = (lagging: View) => [...new Set([lagging, before.truth, ...(truth === after ? [after] : []), ...(before.truth === ABSENT && truth !== ABSENT ? [canonical([])] : [])])];
  if (!c.deltaOnly) {
    expect(allowed(before.icebergByPath), `${where}: Iceberg by path shows no uncommitted row`).toContain(byPath.icebergByPath);
    expect(allowed(before.deltaByPath), `${where}: Delta by path shows no uncommitted row`).toContain(byPath.deltaByPath);
  }

  const t = lake.table(c.table);
  let expected = truth;
  if (truth === ABSENT || (c.deltaOnly && byName === ABSENT)) {
    // Nothing committed (or a Delta-only name not bound yet): the next write by name starts (or
    // binds) the table, and must find nothing of the dead process's but committed rows.
    const next = { id: 999_999 };
    await t.append([next], c.deltaOnly ? { formats: ['delta'] } : {});
    const rows = truth === ABSENT ? [] : (JSON.parse(truth) as string[]).map((r) => JSON.parse(r) as Record<string, unknown>);
    expected = await viewOf(async () => [...rows, ...(await t.read({ where: 'id = 999999', ...(c.deltaOnly ? { format: 'delta' } : {}) }))]);
    expect(await truthView(lake, c), `${where}: the next write adds its row to the committed ones`).toBe(expected);
  }

  if (!c.deltaOnly) await t.syncDelta();
  const synced = await views(lake, c, location);
  expect(await viewOf(() => t.read({ format: 'delta' })), `${where}: Delta by name equals Iceberg after a sync`).toBe(expected);
  expect(synced.deltaByPath, `${where}: Delta by path equals Iceberg after a sync`).toBe(expected);
  if (!c.deltaOnly) expect(synced.icebergByPath, `${where}: Iceberg by path equals Iceberg by name after a sync`).toBe(expected);
  const verified = await t.verify();
  expect(verified.findings, `${where}: verify is clean`).toEqual([]);
  expect(verified.ok, `${where}: verify is clean`).toBe(true);

  await removeOrphans(t, { olderThan: 3600_000, now: Date.now() + 2 * 86400_000 });
  expect(await leftovers(t, location), `${where}: orphan cleanup leaves only referenced files and logs`).toEqual([]);
  if (!c.tombstones) expect(await unnamedDataFiles(t, location, c.deltaOnly === true), `${where}: every file left in data/ is one a retained version reads`).toEqual([]);
  expect(await truthView(lake, c), `${where}: cleanup keeps every committed row`).toBe(expected);
  if (!c.deltaOnly) expect(await viewOf(() => t.read({ format: 'delta' })), `${where}: cleanup keeps every committed row in Delta`).toBe(expected);
}
/**
 * Files in `data/` that no retained Iceberg snapshot and no Delta version in the log reads, as
 * the formats' own readers list them (independently of the cleaner's notion of reachable).
 */
async function unnamedDataFiles(t: Table, location: string, deltaOnly: boolean): Promise<string[]> {
  const named = new Set<string>();
  const add = (live: LiveFiles) => {
    for (const f of live.files) {
      named.add(f.path);
      for (const d of f.deletes) if (d.path !== undefined) named.add(d.path);
    }
  };
  if (!deltaOnly) for (const s of (await t.metadata()).snapshots ?? []) add(await t.files({ snapshotId: s['snapshot-id'] }));
  const { store, key } = t.context.io.storeAt(location);
  const latest = (await latestDeltaVersion(store, key)) ?? -1;
  // A version whose commit file a checkpoint let go cannot be read, by anyone.
  for (let v = 0; v <= latest; v++) add(await t.files({ format: 'delta', version: v }).catch(() => ({ format: 'delta' as const, files: [] })));
  const out: string[] = [];
  const prefix = `${location.replace(/\/+$/, '')}/data/`;
  for await (const o of t.context.io.list(prefix)) if (!named.has(o.uri)) out.push(o.uri.slice(prefix.length));
  return out;
}

/** `| operation | N |` lines for the README, from a matrix's runs. */
export function callTable(runs: CrashRun[]): string {
  return runs.map((r) => `| ${r.name} | ${r.calls.length} | ${r.effectful} | ${r.points} |`).join('\n');
}
