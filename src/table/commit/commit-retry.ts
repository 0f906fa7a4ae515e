import { TwinlakeError } from '../../core/errors.ts';
import { intProp, Props } from '../../format/dual/table-properties.ts';

/**
 * How a commit that lost to a concurrent commit is tried again: Iceberg's `commit.retry.*` table
 * properties, read the same way by every commit loop (the Iceberg compare-and-swap, the create-only
 * Delta version of a Delta-only table, and the merge or write that must be prepared again because
 * a concurrent commit changed what it was built on).
 */
export interface CommitRetryPolicy {
  /** `commit.retry.num-retries`: attempts after the first. */
  numRetries: number;
  /** `commit.retry.min-wait-ms`: the shortest wait before a retry. */
  minWaitMs: number;
  /** `commit.retry.max-wait-ms`: the longest wait before a retry. */
  maxWaitMs: number;
  /** `commit.retry.total-timeout-ms`: no retry starts once this long has passed since the first attempt. */
  totalTimeoutMs: number;
}

/**
 * Twinlake's defaults, for properties a table does not set. Iceberg's are 4 retries waiting
 * 100 ms to 60 s, within 30 minutes: sized for a catalog round trip of hundreds of milliseconds
 * and a handful of writers. Here a commit takes tens of milliseconds, and the writers of one
 * table (8 processes appending at once is a tested case) lose most attempts while the others
 * win: with 4 retries some commits fail every run. The defaults therefore allow more retries and
 * shorter waits, so a loser comes back while the table is quiet rather than after seconds of
 * idling; the total timeout still bounds a write that keeps losing.
 */
export const DEFAULT_COMMIT_RETRY: CommitRetryPolicy = {
  numRetries: 100,
  minWaitMs: 10,
  maxWaitMs: 2_000,
  totalTimeoutMs: 30 * 60_000,
};

/** The policy a table's properties (Iceberg's, or a Delta-only table's configuration) ask for. */
export function commitRetryPolicy(properties: Record<string, string>): CommitRetryPolicy {
  const minWaitMs = nonNegative(properties, Props.commitMinWaitMs, DEFAULT_COMMIT_RETRY.minWaitMs);
  return {
    numRetries: nonNegative(properties, Props.commitRetries, DEFAULT_COMMIT_RETRY.numRetries),
    minWaitMs,
    maxWaitMs: Math.max(minWaitMs, nonNegative(properties, Props.commitMaxWaitMs, DEFAULT_COMMIT_RETRY.maxWaitMs)),
    totalTimeoutMs: intProp(properties, Props.commitTotalTimeoutMs, DEFAULT_COMMIT_RETRY.totalTimeoutMs),
  };
}

/** Retries and waits may be 0 (no retry, no wait); only the total timeout must be positive. */
function nonNegative(properties: Record<string, string>, key: string, fallback: number): number {
  return properties[key] === '0' ? 0 : intProp(properties, key, fallback);
}

/**
 * The wait before retry `retry` (1, 2, ...): exponential backoff with jitter. The ceiling doubles
 * with each retry from twice the minimum up to the maximum, and the wait is drawn evenly between
 * the minimum and that ceiling, so writers that lost together do not come back together.
 * `random` is in [0, 1).
 */
export function retryWaitMs(policy: CommitRetryPolicy, retry: number, random: number): number {
  const ceiling = Math.min(policy.maxWaitMs, policy.minWaitMs * 2 ** Math.min(retry, 30));
  return Math.round(policy.minWaitMs + random * Math.max(0, ceiling - policy.minWaitMs));
}

/**
 * The retry budget of one write, shared by every loop it runs: each lost attempt, whichever loop
 * lost it, spends one retry and waits its backoff; a write that runs out fails with
 * `commit-conflict` (nothing of it committed).
 */
export class CommitRetry {
  private retries = 0;
  private readonly startedMs = performance.now();

  constructor(
    private policy: CommitRetryPolicy,
    /** What is committed, for the error: `write sales.orders`. */
    private readonly what: string,
    private readonly random: () => number = Math.random,
  ) {}

  /** The policy of the table once it is known (a table this write creates has no properties before). */
  use(policy: CommitRetryPolicy): void {
    this.policy = policy;
  }

  /** Retries spent so far. */
  get spent(): number {
    return this.retries;
  }

  /**
   * After a lost attempt: waits before the next one, or throws `commit-conflict` when the
   * retries or the total time are spent. `why` says what the last attempt lost to.
   */
  async lost(why: string): Promise<void> {
    const elapsed = performance.now() - this.startedMs;
    if (this.retries >= this.policy.numRetries || elapsed >= this.policy.totalTimeoutMs) {
      const limit =
        this.retries >= this.policy.numRetries
          ? `${this.policy.numRetries} retries (${Props.commitRetries})`
          : `${Math.round(elapsed)} ms (${Props.commitTotalTimeoutMs} ${this.policy.totalTimeoutMs})`;
      throw new TwinlakeError('commit-conflict', `${this.what}: gave up after ${limit} lost to concurrent commits; last: ${why}`, {
        retries: this.retries,
        elapsedMs: Math.round(elapsed),
      });
    }
    this.retries++;
    const wait = Math.min(retryWaitMs(this.policy, this.retries, this.random()), Math.max(0, this.policy.totalTimeoutMs - elapsed));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}
