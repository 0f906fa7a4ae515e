import { invalidInput } from '../../core/errors.ts';
import type { Txn } from '../delta/actions.ts';
import { ancestors, currentSnapshot } from '../iceberg/table-metadata.ts';
import type { Snapshot, TableMetadata } from '../iceberg/types.ts';

/**
 * Idempotent writes: a write may name its application and the batch's version (Delta's
 * transaction identifiers, PROTOCOL.md §Transaction Identifiers). A batch whose version is not
 * above the latest one the table holds for that application was committed before, and writing
 * it again commits nothing, so a pipeline that retries a batch after a failure gets it once.
 *
 * Iceberg has no such action; the snapshot summary names the application and the version, and
 * the latest version of an application is that of the newest snapshot in the current lineage
 * naming it (as Flink's `flink.job-id` / `flink.max-committed-checkpoint-id` and Spark's
 * streaming `queryId` / `epochId` are found). The Delta version mirroring the snapshot carries
 * the `txn` action derived from those two entries and the snapshot's timestamp, so a lost Delta
 * commit is derived again byte for byte. A snapshot expired or rolled back out of the lineage no
 * longer counts: its rows are not in the table either.
 */
export interface WriteTxn {
  /** Identifies the writing application (a pipeline, a stream); any non-empty string. */
  appId: string;
  /** The batch's version within the application: a whole number, 0 to 2^63 - 1. */
  version: number | bigint;
}

/** What a write that carried a `txn` did with it. */
export interface TxnResult {
  appId: string;
  version: bigint;
  /**
   * `committed`: this write committed the batch. `already-committed`: the table held the batch
   * (its version is not above `latestVersion`), so nothing was written.
   */
  status: 'committed' | 'already-committed';
  /** The application's latest version the table held before this write, if any. */
  latestVersion?: bigint;
}

export const TXN_APP_ID_KEY = 'twinlake.txn.app-id';
export const TXN_VERSION_KEY = 'twinlake.txn.version';

const MAX_LONG = (1n << 63n) - 1n;

/** The txn of a write, checked: `where` names the option (`--txn`, `txn`). */
export function checkTxn(txn: WriteTxn, where: string): { appId: string; version: bigint } {
  if (typeof txn.appId !== 'string' || txn.appId.trim() === '') throw invalidInput(`${where}: expected a non-empty application id, found ${JSON.stringify(txn.appId ?? null)}`);
  const raw = txn.version;
  const ok = (typeof raw === 'number' && Number.isSafeInteger(raw)) || typeof raw === 'bigint';
  const version = ok ? BigInt(raw) : -1n;
  if (!ok || version < 0n || version > MAX_LONG) {
    throw invalidInput(`${where}: expected the batch version to be a whole number from 0 to ${MAX_LONG}, found ${typeof raw === 'bigint' ? raw : JSON.stringify(raw ?? null)}`);
  }
  return { appId: txn.appId, version };
}

/**
 * Parses the command-line form `app=ingest-7,version=42`: both keys, each once, nothing else.
 */
export function parseTxnOption(text: string): WriteTxn {
  const where = `--txn ${JSON.stringify(text)}`;
  const found: Record<string, string> = {};
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    if (eq <= 0 || (key !== 'app' && key !== 'version')) {
      throw invalidInput(`write: ${where}: expected app=ID,version=N, found ${JSON.stringify(part)}`);
    }
    if (key in found) throw invalidInput(`write: ${where}: ${key} is given twice`);
    found[key] = part.slice(eq + 1);
  }
  for (const key of ['app', 'version']) if (found[key] === undefined) throw invalidInput(`write: ${where}: expected app=ID,version=N, ${key} is missing`);
  if (!/^\d+$/.test(found.version!)) throw invalidInput(`write: ${where}: version expects a whole number, found ${JSON.stringify(found.version)}`);
  const txn = { appId: found.app!, version: BigInt(found.version!) };
  checkTxn(txn, `write: ${where}`);
  return txn;
}

/** The snapshot summary entries that record a batch. */
export function txnSummary(txn: { appId: string; version: bigint }): Record<string, string> {
  return { [TXN_APP_ID_KEY]: txn.appId, [TXN_VERSION_KEY]: String(txn.version) };
}

/** The Delta `txn` action recording a batch (the version a number unless it exceeds 2^53). */
export function deltaTxn(txn: { appId: string; version: bigint }, lastUpdated: number): Txn {
  const version = txn.version <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(txn.version) : txn.version;
  return { appId: txn.appId, version, lastUpdated };
}

/** The batch a snapshot recorded, as the Delta `txn` action of the version mirroring it. */
export function snapshotTxn(snapshot: Snapshot): Txn | undefined {
  const appId = snapshot.summary[TXN_APP_ID_KEY];
  const raw = snapshot.summary[TXN_VERSION_KEY];
  if (appId === undefined || raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return deltaTxn({ appId, version: BigInt(raw) }, snapshot['timestamp-ms']);
}

/** The application's latest version in the current lineage of an Iceberg table. */
export function latestIcebergTxn(metadata: TableMetadata | undefined, appId: string): bigint | undefined {
  const head = metadata && currentSnapshot(metadata);
  if (!head) return undefined;
  for (const s of ancestors(metadata!, head['snapshot-id'])) {
    const txn = snapshotTxn(s);
    if (txn?.appId === appId) return BigInt(txn.version);
  }
  return undefined;
}

/** The application's latest version in a Delta table (its `txn` actions, replayed). */
export function latestDeltaTxn(txns: ReadonlyMap<string, Txn> | undefined, appId: string): bigint | undefined {
  const txn = txns?.get(appId);
  return txn === undefined ? undefined : BigInt(txn.version);
}

/** The outcome for a write of `txn` on a table whose latest version of the application is `latest`. */
export function txnOutcome(txn: { appId: string; version: bigint }, latest: bigint | undefined): TxnResult {
  const committed = latest !== undefined && txn.version <= latest;
  return { appId: txn.appId, version: txn.version, status: committed ? 'already-committed' : 'committed', ...(latest !== undefined ? { latestVersion: latest } : {}) };
}
