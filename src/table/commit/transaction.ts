import { isTwinlakeError, TwinlakeError } from '../../core/errors.ts';
import { ensureNamespace, type LoadTableResult } from '../../catalog/catalog.ts';
import type { Action } from '../../format/delta/actions.ts';
import type { DeltaSnapshot } from '../../format/delta/replay.ts';
import type { Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { applyUpdates, checkRequirements, type TableRequirement, type TableUpdate } from '../../format/iceberg/updates.ts';
import { CommitRetry, commitRetryPolicy } from './commit-retry.ts';
import { readDeltaSnapshot, writeDeltaCommit } from '../delta/delta-log.ts';
import type { TableContext } from '../table-context.ts';
import { identString } from '../table-context.ts';
import { latestDeltaTxn, latestIcebergTxn, txnOutcome, txnSummary, type TxnResult } from '../../format/dual/write-txn.ts';

/**
 * One commit path (DESIGN.md §1). A transaction is a list of actions; every attempt loads the
 * table fresh and applies each action to it — to the loaded metadata as the actions before it
 * left it — and each yields requirements and updates (REST spec names), or says its inputs no
 * longer fit (`rerun`: a file it rewrites is gone, the schema it encoded against changed), or
 * that the change cannot be made (`conflict`). A lost compare-and-swap spends one retry of the
 * table's `commit.retry.*` policy and applies the actions again on the winner's metadata.
 * Outcomes are values: `committed`, `conflict` (retries spent, or an action refused the base),
 * `rerun` (the caller prepares its files again on the base returned, the retry already spent),
 * and, for a write that carries a batch identity, `already-committed`.
 *
 * The same shape commits a Delta-only table: actions yield Delta actions for version N+1,
 * written create-only (a taken version is a lost attempt). Both are a `CommitTarget`.
 */

/** What an Iceberg action sees on one attempt. */
export interface ActionBase {
  ctx: TableContext;
  /** The table as loaded for this attempt; undefined when the transaction creates it. */
  loaded: TableMetadata | undefined;
  /** The metadata as the actions before this one left it (the loaded or the new table's). */
  metadata: TableMetadata;
  /** The attempt's commit time: after the base's last update. */
  nowMs: number;
  /** Summary entries every snapshot of the transaction carries (an idempotent write's batch). */
  summary: Readonly<Record<string, string>>;
}

/**
 * What an action yields on one attempt. `durable`: the files its updates name are still being
 * made durable; the commit's pointer moves only once it resolves (CommitOptions.durable).
 */
export type ActionResult<T = { requirements: TableRequirement[]; updates: TableUpdate[]; durable?: Promise<void> }> =
  | ({ status: 'apply' } & T)
  /** Prepared on a base that no longer holds: the caller prepares its files again. */
  | { status: 'rerun'; why: string }
  /** The change cannot be made on this base (a REST commit's requirement failed). */
  | { status: 'conflict'; why: string };

/** One change of an Iceberg transaction, re-applied on every attempt's base. */
export interface TableAction {
  apply(base: ActionBase): Promise<ActionResult>;
  /** The attempt was not accepted: remove what only that attempt wrote. */
  lost?(): Promise<void>;
  /** The transaction ends without committing: remove everything the action wrote. */
  abandon?(): Promise<void>;
}

/** One change of a Delta-only transaction: actions of version `version`. */
export interface DeltaTableAction {
  apply(base: { snapshot: DeltaSnapshot | undefined; version: number; nowMs: number }): Promise<ActionResult<{ actions: Action[] }>>;
}

/** What a batch identity (WriteTxn) is, once checked. */
export type CheckedTxn = { appId: string; version: bigint };

export type TransactionOutcome<B, C> =
  | ({ status: 'committed'; txn?: TxnResult } & C)
  | { status: 'already-committed'; base: B; txn: TxnResult }
  | { status: 'rerun'; base: B; why: string }
  /** `error` is the `commit-conflict` to throw (its text names the limit spent, or what failed). */
  | { status: 'conflict'; base: B | undefined; error: TwinlakeError };

/**
 * The committed outcome of a transaction that cannot rerun or find its batch committed (no
 * action reruns, no `txn`); a conflict is thrown as the `commit-conflict` it carries.
 */
export function committedOrThrow<B, C>(outcome: TransactionOutcome<B, C>): Extract<TransactionOutcome<B, C>, { status: 'committed' }> {
  if (outcome.status === 'conflict') throw outcome.error;
  if (outcome.status !== 'committed') throw new Error(`transaction: a ${outcome.status} outcome where none can happen`);
  return outcome;
}

type Attempt<C> = { status: 'committed'; value: C } | { status: 'lost' | 'rerun' | 'conflict'; why: string };

/**
 * Where a transaction commits. MUST: `attempt` makes the change visible atomically or not at all;
 * a lost race is `lost`, never an exception.
 */
interface CommitTarget<B, C> {
  /** The table as it is now; undefined when it does not exist. */
  load(): Promise<B | undefined>;
  /** Whether an attempt on no base creates the table (else the table is loaded first). */
  creates: boolean;
  /** The properties that hold the `commit.retry.*` policy. */
  properties(base: B | undefined): Record<string, string>;
  latestTxn(base: B, appId: string): bigint | undefined;
  attempt(base: B | undefined): Promise<Attempt<C>>;
  /** After a lost attempt, and when the transaction ends uncommitted (`all`). */
  discard(all: boolean): Promise<void>;
}

export interface TransactionOptions {
  /** What is committed, for errors: `write sales.orders`. */
  what?: string;
  /** An idempotent write's batch: checked on every attempt's base. */
  txn?: CheckedTxn;
  /** The retry budget, when the caller shares it with its own rerun loop. */
  retry?: CommitRetry;
  /** The caller awaits the catalog's writes after the pointer moved (`IcebergCommitted.followUp`). */
  deferFollowUp?: boolean;
}

/** The one retry loop: every attempt on a fresh base, each loss spending a retry. */
async function runTransaction<B, C>(target: CommitTarget<B, C>, first: B | undefined, retry: CommitRetry, txn: CheckedTxn | undefined): Promise<TransactionOutcome<B, C>> {
  let base = first;
  let kept = false;
  try {
    for (;;) {
      if (base === undefined && !target.creates) base = await target.load();
      retry.use(commitRetryPolicy(target.properties(base)));
      let txnResult: TxnResult | undefined;
      if (txn) {
        txnResult = txnOutcome(txn, base === undefined ? undefined : target.latestTxn(base, txn.appId));
        if (txnResult.status === 'already-committed') return { status: 'already-committed', base: base!, txn: txnResult };
      }
      const attempt = await target.attempt(base);
      if (attempt.status === 'committed') {
        kept = true;
        return { status: 'committed', ...attempt.value, ...(txnResult ? { txn: txnResult } : {}) };
      }
      if (attempt.status === 'conflict') return { status: 'conflict', base, error: new TwinlakeError('commit-conflict', attempt.why) };
      await target.discard(false);
      try {
        await retry.lost(attempt.why);
      } catch (e) {
        if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', base, error: e };
        throw e;
      }
      if (attempt.status === 'rerun') return { status: 'rerun', base: base!, why: attempt.why };
      base = await target.load();
    }
  } catch (e) {
    // The pointer may have moved to metadata naming what the actions wrote: keep it (a stray
    // file is harmless; a missing one breaks the table).
    if (isTwinlakeError(e, 'commit-state-unknown')) kept = true;
    throw e;
  } finally {
    if (!kept) await target.discard(true);
  }
}

export interface IcebergCommitted {
  metadata: TableMetadata;
  metadataLocation: string;
  /** The snapshot the transaction added last, if any. */
  snapshot?: Snapshot;
  /** The transaction created the table. */
  created: boolean;
  /** With `deferFollowUp`: what the catalog still writes (see CommitResult); never rejects. */
  followUp?: Promise<void>;
}

export type IcebergOutcome = TransactionOutcome<LoadTableResult, IcebergCommitted>;

/**
 * An Iceberg transaction through the catalog. With `create`, an attempt on no table creates it
 * with that metadata and the actions' updates (a table another writer created first is a lost
 * attempt, then updated like any other, unless `exclusive`).
 */
export class Transaction {
  constructor(
    private readonly ctx: TableContext,
    readonly actions: readonly TableAction[],
    private readonly opts: TransactionOptions & { create?: TableMetadata; exclusive?: boolean } = {},
  ) {}

  /** Commits on `loaded` first (loaded from the catalog when not given and not creating). */
  async commit(loaded?: LoadTableResult): Promise<IcebergOutcome> {
    const { ctx, actions, opts } = this;
    const what = opts.what ?? `commit ${identString(ctx.ident)}`;
    const retry = opts.retry ?? new CommitRetry(commitRetryPolicy(loaded?.metadata.properties ?? opts.create?.properties ?? {}), what);
    const summary = opts.txn ? txnSummary(opts.txn) : {};
    const eachAction = async (f: (a: TableAction) => Promise<void> | undefined) => {
      for (const a of actions) await f(a);
    };
    const target: CommitTarget<LoadTableResult, IcebergCommitted> = {
      creates: opts.create !== undefined,
      load: () => ctx.catalog.loadTable(ctx.ident),
      properties: (base) => base?.metadata.properties ?? opts.create?.properties ?? {},
      latestTxn: (base, appId) => latestIcebergTxn(base.metadata, appId),
      discard: (all) => eachAction((a) => (all ? a.abandon?.() : a.lost?.())),
      attempt: async (base) => {
        const start = base?.metadata ?? opts.create!;
        const nowMs = Math.max(ctx.clock.nowMs(), start['last-updated-ms'] + 1);
        let metadata = start;
        let snapshot: Snapshot | undefined;
        const requirements: TableRequirement[] = [];
        const updates: TableUpdate[] = [];
        const pending: Promise<void>[] = [];
        for (const action of actions) {
          const r = await action.apply({ ctx, loaded: base?.metadata, metadata, nowMs, summary });
          if (r.status !== 'apply') {
            // The attempt ends here: its files' writes end before the caller removes them.
            await Promise.allSettled(pending);
            return r;
          }
          if (r.durable) pending.push(r.durable);
          // An action states what it relies on in the metadata it was given; what holds there but
          // not on the base was made true by an action before it, whose own requirements guard it.
          if (base) for (const q of r.requirements) if (holds(base.metadata, q) && !requirements.some((x) => sameJson(x, q))) requirements.push(q);
          if (r.updates.length === 0) continue;
          updates.push(...r.updates);
          metadata = applyUpdates(metadata, r.updates, { nowMs });
          for (const u of r.updates) if (u.action === 'add-snapshot') snapshot = u.snapshot;
        }
        const durable = pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
        durable?.catch(() => undefined);
        if (!base) {
          // Creating the table makes it visible at once: its files are durable first.
          await durable;
          try {
            await ensureNamespace(ctx.catalog, ctx.ident.namespace);
            const created = await ctx.catalog.createTable(ctx.ident, metadata);
            return { status: 'committed', value: { metadata: created.metadata, metadataLocation: created.metadataLocation, snapshot, created: true } };
          } catch (e) {
            if (isTwinlakeError(e, 'already-exists') && !opts.exclusive) return { status: 'lost', why: 'another writer created the table first' };
            throw e;
          }
        }
        const result = await ctx.catalog.commitTable(ctx.ident, { requirements, updates }, { ...(opts.deferFollowUp ? { deferFollowUp: true } : {}), ...(durable ? { durable } : {}) });
        if (result.status === 'conflict') return { status: 'lost', why: result.reason };
        const followUp = result.followUp ? { followUp: result.followUp } : {};
        return { status: 'committed', value: { metadata: result.metadata, metadataLocation: result.metadataLocation, snapshot, created: false, ...followUp } };
      },
    };
    return runTransaction(target, loaded, retry, opts.txn);
  }
}

function holds(metadata: TableMetadata, requirement: TableRequirement): boolean {
  try {
    checkRequirements(metadata, [requirement]);
    return true;
  } catch (e) {
    if (isTwinlakeError(e, 'commit-conflict')) return false;
    throw e;
  }
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)) === JSON.stringify(b, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

export interface DeltaCommitted {
  /** The Delta version written. */
  version: number;
  /** The table's state the version was written on (undefined: the version created the table). */
  base: DeltaSnapshot | undefined;
  created: boolean;
}

export type DeltaOutcome = TransactionOutcome<DeltaSnapshot, DeltaCommitted>;

/**
 * A Delta-only table's transaction: the actions' Delta actions as version N+1, written
 * create-only (PROTOCOL.md §Delta Log Entries); a version another writer took is a lost attempt.
 * The retry policy is the table's configuration's `commit.retry.*` (`properties` until the table
 * exists). With `create`, an attempt on no table writes version 0.
 */
export class DeltaTransaction {
  constructor(
    private readonly ctx: TableContext,
    private readonly location: string,
    readonly actions: readonly DeltaTableAction[],
    private readonly opts: TransactionOptions & { create?: boolean; properties?: Record<string, string> } = {},
  ) {}

  /** Commits on `first` (loaded when not given; with `create`, no base creates the table as version 0). */
  async commit(first?: DeltaSnapshot): Promise<DeltaOutcome> {
    const { ctx, actions, opts } = this;
    const { store, key } = ctx.io.storeAt(this.location);
    const what = opts.what ?? `delta: commit to ${identString(ctx.ident)}`;
    const retry = opts.retry ?? new CommitRetry(commitRetryPolicy(first?.metadata.configuration ?? opts.properties ?? {}), what);
    const target: CommitTarget<DeltaSnapshot, DeltaCommitted> = {
      creates: opts.create === true,
      load: () => loadDeltaSnapshot(ctx, this.location),
      properties: (base) => base?.metadata.configuration ?? opts.properties ?? {},
      latestTxn: (base, appId) => latestDeltaTxn(base.txns, appId),
      discard: async () => undefined,
      attempt: async (base) => {
        const version = base ? base.version + 1 : 0;
        const nowMs = Math.max(ctx.clock.nowMs(), (base?.timestampMs ?? 0) + 1);
        const all: Action[] = [];
        for (const action of actions) {
          const r = await action.apply({ snapshot: base, version, nowMs });
          if (r.status !== 'apply') return r;
          all.push(...r.actions);
        }
        if (await writeDeltaCommit(store, key, version, all)) return { status: 'committed', value: { version, base, created: base === undefined } };
        return { status: 'lost', why: `version ${version} was taken by a concurrent writer` };
      },
    };
    return runTransaction(target, first, retry, opts.txn);
  }
}

/** A Delta table's newest state; undefined when it has no log yet. */
export async function loadDeltaSnapshot(ctx: TableContext, location: string): Promise<DeltaSnapshot | undefined> {
  const { store, key } = ctx.io.storeAt(location);
  try {
    return await readDeltaSnapshot(store, key, {});
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) return undefined;
    throw e;
  }
}
