import type { LoadTableResult } from '../catalog/catalog.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { CommitRetry, commitRetryPolicy } from './commit-retry.ts';
import { finishDelta, repairDelta } from './delta-sync.ts';
import { discardUncommitted, guardCommit } from './interrupt.ts';
import type { TableContext } from './table-context.ts';
import { Transaction, type CheckedTxn, type IcebergCommitted, type TableAction } from './transaction.ts';
import { latestIcebergTxn, txnOutcome, type TxnResult } from './write-txn.ts';
import { isTwinlakeError } from '../core/errors.ts';

/**
 * Every write of a table that keeps Iceberg — append, overwrite, merge, delete — is "prepare
 * files, then commit" (DESIGN.md §1): the table is loaded and its files repaired, a batch the
 * table already holds stops here, then `prepare` writes the files and names the Transaction's
 * actions, the transaction commits them, and Delta follows. A transaction whose inputs no longer
 * fit the table (`rerun`) is prepared again on the base it returns, from the same retry budget.
 */
export interface PreparedWrite<R> {
  /** The files this attempt wrote: removed unless the commit names them. */
  files: readonly string[];
  actions: TableAction[];
  /** Set when the write creates the table: its metadata before the actions. */
  create?: TableMetadata;
  /** The write's result once Iceberg committed and Delta followed. */
  done(committed: CommittedWrite): R;
}

export interface CommittedWrite extends IcebergCommitted {
  txn?: TxnResult;
  deltaVersion?: number;
  deltaCommitted: boolean;
  timings: { icebergCommitMs: number; deltaCommitMs: number; checkpointMs: number };
}

export interface WriteJob<R> {
  /** What is written, for errors: `write sales.orders`. */
  what: string;
  /** A table that does not exist is an error (not-found) rather than created. */
  mustExist?: boolean;
  txn?: CheckedTxn;
  /** The properties of a table the write creates (for its `commit.retry.*` policy). */
  properties?: Record<string, string>;
  warn: (m: string) => void;
  /** Writes the files on `loaded` (undefined: no table yet), or says the write is done without a commit. */
  prepare(loaded: LoadTableResult | undefined): Promise<PreparedWrite<R> | { result: R }>;
  /** With `txn`: the result when the table already holds the batch. */
  alreadyCommitted?(loaded: LoadTableResult, txn: TxnResult): R;
}

export async function commitWrite<R>(ctx: TableContext, job: WriteJob<R>): Promise<R> {
  let loaded = job.mustExist ? await ctx.catalog.loadTable(ctx.ident) : await tryLoad(ctx);
  if (loaded) await repairDelta(ctx, loaded.metadata, job.warn);
  // A batch the table already holds is not even prepared; every attempt checks again (a racing writer).
  const done = job.txn && loaded && txnOutcome(job.txn, latestIcebergTxn(loaded.metadata, job.txn.appId));
  if (done?.status === 'already-committed') return job.alreadyCommitted!(loaded!, done);
  const retry = new CommitRetry(commitRetryPolicy(loaded?.metadata.properties ?? job.properties ?? {}), job.what);
  for (;;) {
    const prepared = await job.prepare(loaded);
    if (!('actions' in prepared)) return prepared.result;
    const commitStart = performance.now();
    const transaction = new Transaction(ctx, prepared.actions, { what: job.what, txn: job.txn, retry, ...(prepared.create ? { create: prepared.create } : {}) });
    const outcome = await guardCommit(prepared.files, () => transaction.commit(loaded), (o) => o.status === 'committed').catch(async (e: unknown) => {
      await discardUncommitted(ctx.io, prepared.files);
      throw e;
    });
    const icebergCommitMs = performance.now() - commitStart;
    if (outcome.status !== 'committed') await discardUncommitted(ctx.io, prepared.files);
    if (outcome.status === 'conflict') throw outcome.error;
    if (outcome.status === 'already-committed') {
      await repairDelta(ctx, outcome.base.metadata, job.warn); // the winner may have stopped before its Delta commit
      return job.alreadyCommitted!(outcome.base, outcome.txn);
    }
    if (outcome.status === 'rerun') {
      loaded = outcome.base;
      continue;
    }
    const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot!, job.warn);
    return prepared.done({
      ...outcome,
      deltaVersion: delta.deltaVersion,
      deltaCommitted: delta.deltaCommitted,
      timings: { icebergCommitMs, deltaCommitMs: delta.deltaCommitMs, checkpointMs: delta.checkpointMs },
    });
  }
}

export async function tryLoad(ctx: TableContext): Promise<LoadTableResult | undefined> {
  try {
    return await ctx.catalog.loadTable(ctx.ident);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
}

