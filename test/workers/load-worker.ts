// A separate process of the mixed load (bench/load.ts): `ops` seeded appends, merges and deletes
// on one table, each on keys this process owns, or (role `maintain`) compaction, expiry and
// full_maintenance in turn until the stop file appears. Prints one JSON line per operation: its
// kind, time, and either what it changed or the error it failed with.
import { existsSync } from 'node:fs';
import { Lakehouse, TwinlakeError } from '../../src/index.ts';
import { runMaintenance, type MaintenanceResult } from '../../src/maintenance/maintain.ts';
import { CommitRetry } from '../../src/table/commit/commit-retry.ts';

// Each lost race an operation retried, and the last reason: where a slow operation's time went.
let retries = 0;
let lastLost: string | undefined;
const lost = CommitRetry.prototype.lost;
CommitRetry.prototype.lost = function (this: CommitRetry, why: string) {
  retries++;
  lastLost = why;
  return lost.call(this, why);
};

const [warehouse, table, role, arg, seedArg] = process.argv.slice(2);
const lake = await Lakehouse.open({ warehouse: warehouse!, onWarning: (m) => process.stderr.write(`warning: ${m}\n`) });
const t = lake.table(table!);

const emit = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const failure = (e: unknown) =>
  e instanceof TwinlakeError ? { kind: e.kind, message: e.message, clean: true } : { kind: 'unexpected', message: String((e as Error)?.stack ?? e), clean: false };

async function timed(kind: string, effect: Record<string, unknown>, run: () => Promise<unknown>, did?: (r: never) => number): Promise<boolean> {
  const t0 = performance.now();
  retries = 0;
  lastLost = undefined;
  const spent = () => ({ retries, ...(lastLost ? { lastLost: lastLost.slice(0, 300) } : {}) });
  try {
    const result = await run();
    emit({ kind, ok: true, ms: performance.now() - t0, ...spent(), ...effect, ...(did ? { did: did(result as never) } : {}) });
    return true;
  } catch (e) {
    emit({ kind, ok: false, ms: performance.now() - t0, ...spent(), error: failure(e), ...effect });
    return false;
  }
}

if (role === 'maintain') {
  // Expiry keeps only the newest snapshot: the most the writers' bases can lose under them.
  const ops = [
    ['compaction', {}],
    ['snapshot_expiry', { retention: 0, minSnapshotsToKeep: 1 }],
    ['full_maintenance', { retention: 0, minSnapshotsToKeep: 1 }],
  ] as const;
  // What an operation did, to show the maintenance was real work: files compaction rewrote,
  // snapshots expiry removed (both, for full_maintenance).
  const work = (r: MaintenanceResult): number => {
    if (r.operation === 'compaction') return r.filesRewritten;
    if (r.operation === 'snapshot_expiry') return r.expiredSnapshots.length;
    if (r.operation === 'full_maintenance') return r.steps.reduce((n, s) => n + (s.status === 'completed' ? work(s.result) : 0), 0);
    return 0;
  };
  const stopFile = arg!;
  for (let i = 0; ; i++) {
    // At least one round of each, then on until the writers are done.
    if (i >= ops.length && existsSync(stopFile)) break;
    const [op, opts] = ops[i % ops.length]!;
    await timed(op, {}, () => runMaintenance(t, op, opts), work);
    // A pause, as a schedule would leave: the writers get the machine between rounds.
    await new Promise((r) => setTimeout(r, 100));
  }
} else {
  // Writer w owns ids w*1e6 .. w*1e6+999999; an id is never used twice, even by a failed write,
  // so a row of a failed operation can be told from every other.
  const w = Number(role);
  const ops = Number(arg);
  let seed = Number(seedArg ?? 1) * 7919 + w * 104729 + 1;
  const random = () => {
    // mulberry32: a few seeded bits, the same sequence on every run of the same seed.
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  let next = w * 1_000_000;
  const live = new Set<number>();
  const pick = (n: number) => {
    const all = [...live];
    const out: number[] = [];
    while (out.length < n && all.length > 0) out.push(all.splice(Math.floor(random() * all.length), 1)[0]!);
    return out;
  };
  const row = (id: number, v: number) => ({ id, writer: w, v });
  for (let op = 0; op < ops; op++) {
    const r = random();
    if (r < 0.5 || live.size < 3) {
      const ids = Array.from({ length: 5 }, () => next++);
      if (await timed('append', { ids, v: op }, () => t.append(ids.map((id) => row(id, op))))) ids.forEach((id) => live.add(id));
    } else if (r < 0.8) {
      const updated = pick(3);
      const inserted = [next++, next++];
      const ok = await timed('merge', { updated, inserted, v: op }, () => t.merge([...updated, ...inserted].map((id) => row(id, op)), { keys: ['id'] }));
      if (ok) inserted.forEach((id) => live.add(id));
    } else {
      const ids = pick(2);
      if (await timed('delete', { ids }, () => t.delete(`id IN (${ids.join(', ')})`))) ids.forEach((id) => live.delete(id));
    }
  }
}
await lake.close();
