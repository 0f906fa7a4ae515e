// A long-lived worker of the model-checked workload (test/reliability/model-workload.ts): takes
// operations over IPC and runs them through its own lakehouse, whose every store call and catalog
// statement goes through a crash point, and every store call through a fault injector below the
// retry layer. An operation may ask to die at call k (the crash point's in-process death, after
// which the lakehouse is opened anew as a restarted process would; or a real SIGKILL) or for call
// k to fail once for a passing reason.
import { RetryingStore } from '../../src/io/retrying-store.ts';
import { CrashPoint } from '../crash/crash-point.ts';
import { openLake, type OpenedLake } from '../crash/crash-lake.ts';
import { FlakyStore, TransientFaults, runOp, type Fault, type Op, type Outcome } from '../reliability/model-workload.ts';

const [warehouse, dbPath] = process.argv.slice(2);
const w = { warehouse: warehouse!, dbPath: dbPath! };
const faults = new TransientFaults();
let point = new CrashPoint();
let opened: OpenedLake;

async function open(): Promise<void> {
  point = new CrashPoint();
  opened = await openLake(w, point, { wrapStore: (s) => new RetryingStore(new FlakyStore(s, faults)) });
}

// One operation at a time, in the order sent.
let queue = Promise.resolve();
process.on('message', (m: { id?: number; table?: string; op?: Op; fault?: Fault; close?: boolean }) => {
  queue = queue.then(async () => {
    if (m.close) {
      await opened.close().catch(() => undefined);
      process.exit(0);
    }
    const fault = m.fault;
    const dies = fault && fault.kind !== 'transient' ? fault : undefined;
    point.onCrash = dies?.kind === 'kill' ? () => process.kill(process.pid, 'SIGKILL') : undefined;
    point.arm(dies?.at, dies?.landed ?? false);
    faults.arm(fault?.kind === 'transient' ? fault : undefined);
    let outcome: Outcome;
    try {
      await runOp(opened.lake, m.table!, m.op!);
      // A death the operation outlived (its Delta commit failed, which a write only warns of) is
      // still a death: a dead process returns nothing.
      outcome = { ok: !point.dead, crashed: point.dead };
    } catch (e) {
      const err = e as Error & { kind?: string };
      outcome = { ok: false, crashed: point.dead, error: { kind: err.kind ?? err.name, message: String(err.stack ?? err.message).slice(0, 3000) } };
    }
    outcome.calls = point.disarm().length;
    outcome.faultFired = faults.fired;
    faults.arm(undefined);
    if (point.dead) {
      // The process is dead: what it held goes with it; a restart opens everything anew.
      await opened.close().catch(() => undefined);
      await open();
    }
    process.send!({ id: m.id, outcome });
  });
});

await open();
process.send!({ ready: true });
