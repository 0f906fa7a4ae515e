import type { LoadTableResult } from '../../catalog/catalog.ts';
import type { TableMetadata } from '../../format/iceberg/types.ts';
import { CommitRetry, commitRetryPolicy } from './commit-retry.ts';
import { finishDelta, repairDelta } from '../delta/delta-sync.ts';
import { discardUncommitted, guardCommit } from '../write/interrupt.ts';
import type { TableContext } from '../table-context.ts';
import { Transaction, type CheckedTxn, type IcebergCommitted, type TableAction, type TransactionOutcome } from './transaction.ts';
import { latestIcebergTxn, txnOutcome, type TxnResult } from '../../format/dual/write-txn.ts';
import { isTwinlakeError } from '../../core/errors.ts';

/**
 * Every write — append, overwrite, merge, delete, a Delta-only table's write — is "prepare files,
 * then commit" (DESIGN.md §1): the table is loaded and its files repaired, a batch the table
 * already holds stops here, then `prepare` writes the files and names the transaction's actions,
 * the transaction commits them, and Delta follows. A transaction whose inputs no longer fit the
 * table (`rerun`) is prepared again on the base it returns, from the same retry budget.
 */
export interface PreparedWrite<A, R> {
  /** The files this attempt wrote: removed unless the commit names them. */
  files: readonly string[];
  actions: A[];
  /** Set when the write creates an Iceberg table: its metadata before the actions. */
  create?: TableMetadata;
  /** The write's result once committed and Delta followed. */
  done(committed: CommittedWrite): R;
}

/** A committed write, whichever table it went to. */
export interface CommittedWrite {
  created: boolean;
  txn?: TxnResult;
  /** The Iceberg snapshot committed; undefined for a Delta-only table. */
  snapshotId?: bigint;
  deltaVersion?: number;
  deltaCommitted: boolean;
  timings: { icebergCommitMs: number; deltaCommitMs: number; checkpointMs: number };
}

/**
 * Where a write commits: a table in the catalog, Delta following each snapshot (`catalogTable`),
 * or a Delta-only table's log (delta-writer.ts). `B` is what a transaction builds on, `A` its
 * actions, `C` what its commit returns.
 */
export interface WriteTarget<B, A, C> {
  load(): Promise<B | undefined>;
  /** Open-for-write repair; also run when a concurrent writer committed the batch and may have stopped early. */
  repair(base: B): Promise<void>;
  latestTxn(base: B, appId: string): bigint | undefined;
  /** The properties holding the `commit.retry.*` policy (undefined: no table yet). */
  properties(base: B | undefined): Record<string, string> | undefined;
  commit(actions: A[], base: B | undefined, opts: { what: string; txn?: CheckedTxn; retry: CommitRetry; create?: TableMetadata }): Promise<TransactionOutcome<B, C>>;
  /** After the commit: Delta's part, and the result's shared fields. */
  follow(committed: C & { txn?: TxnResult }, commitMs: number): Promise<CommittedWrite>;
}

export interface WriteJob<B, A, R> {
  /** What is written, for errors: `write sales.orders`. */
  what: string;
  txn?: CheckedTxn;
  /** The properties of a table the write creates (for its `commit.retry.*` policy). */
  properties?: Record<string, string>;
  /** Writes the files on `base` (undefined: no table yet), or says the write is done without a commit. */
  prepare(base: B | undefined): Promise<PreparedWrite<A, R> | { result: R }>;
  /** With `txn`: the result when the table already holds the batch. */
  alreadyCommitted?(base: B, txn: TxnResult): R;
}

export async function commitWrite<B, A, C, R>(ctx: TableContext, target: WriteTarget<B, A, C>, job: WriteJob<B, A, R>): Promise<R> {
  let base: B | undefined = await target.load();
  if (base) await target.repair(base);
  // A batch the table already holds is not even prepared; every attempt checks again (a racing writer).
  const done = job.txn && base ? txnOutcome(job.txn, target.latestTxn(base, job.txn.appId)) : undefined;
  if (done?.status === 'already-committed') return job.alreadyCommitted!(base!, done);
  const retry = new CommitRetry(commitRetryPolicy(target.properties(base) ?? job.properties ?? {}), job.what);
  for (;;) {
    const prepared = await job.prepare(base);
    if (!('actions' in prepared)) return prepared.result;
    const commitStart = performance.now();
    const opts = { what: job.what, retry, ...(job.txn ? { txn: job.txn } : {}), ...(prepared.create ? { create: prepared.create } : {}) };
    const outcome = await guardCommit(prepared.files, () => target.commit(prepared.actions, base, opts), (o) => o.status === 'committed').catch(async (e: unknown) => {
      await discardUncommitted(ctx.io, prepared.files);
      throw e;
    });
    const commitMs = performance.now() - commitStart;
    if (outcome.status !== 'committed') await discardUncommitted(ctx.io, prepared.files);
    if (outcome.status === 'conflict') throw outcome.error;
    if (outcome.status === 'already-committed') {
      await target.repair(outcome.base);
      return job.alreadyCommitted!(outcome.base, outcome.txn);
    }
    if (outcome.status === 'rerun') {
      base = outcome.base;
      continue;
    }
    return prepared.done(await target.follow(outcome, commitMs));
  }
}

/** A table in the catalog: Iceberg commits through the Transaction, then Delta follows (finishDelta). */
export function catalogTable(ctx: TableContext, warn: (m: string) => void, opts: { mustExist?: boolean } = {}): WriteTarget<LoadTableResult, TableAction, IcebergCommitted> {
  return {
    load: () => (opts.mustExist ? ctx.catalog.loadTable(ctx.ident) : tryLoad(ctx)),
    repair: (base) => repairDelta(ctx, base.metadata, warn),
    latestTxn: (base, appId) => latestIcebergTxn(base.metadata, appId),
    properties: (base) => base?.metadata.properties,
    // The version hint the catalog writes after its pointer moved and the Delta version are
    // independent files: both are written (and fsynced) at once.
    commit: (actions, base, o) => new Transaction(ctx, actions, { ...o, deferFollowUp: true }).commit(base),
    async follow(c, icebergCommitMs) {
      const start = performance.now();
      const [delta] = await Promise.all([finishDelta(ctx, c.metadata, c.snapshot!, warn), c.followUp]);
      // A hint slower than Delta counts with the Delta version it was written beside.
      const deltaCommitMs = performance.now() - start - delta.checkpointMs;
      return {
        created: c.created,
        ...(c.txn ? { txn: c.txn } : {}),
        snapshotId: c.snapshot!['snapshot-id'],
        deltaVersion: delta.deltaVersion,
        deltaCommitted: delta.deltaCommitted,
        timings: { icebergCommitMs, deltaCommitMs, checkpointMs: delta.checkpointMs },
      };
    },
  };
}

export async function tryLoad(ctx: TableContext): Promise<LoadTableResult | undefined> {
  try {
    return await ctx.catalog.loadTable(ctx.ident);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
}

