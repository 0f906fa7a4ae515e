import { errorMessage, invalidInput } from '../../core/errors.ts';
import type { Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { writeDeltaCheckpointIfDue } from './delta-checkpoint.ts';
import { type CatchUpResult, catchUpDelta } from './delta-projection.ts';
import { checkpointInterval } from '../../format/dual/delta-metadata.ts';
import { deltaVersionOf } from '../../format/dual/summary-keys.ts';
import type { TableContext } from '../table-context.ts';
import { identString } from '../table-context.ts';
import { tableFormats } from '../../format/dual/table-properties.ts';
import { catalogSubject, repairTableFiles } from '../manage/verify.ts';

/** The Delta half of a commit: the missing versions written after Iceberg committed. */

/**
 * Delta after a committed Iceberg snapshot: try, retry once, then warn (never fail the write).
 * Returns the versions this call wrote, or undefined when Delta is left behind.
 */
export async function commitDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<number[] | undefined> {
  return (await catchUpOrWarn(ctx, metadata, warn))?.written;
}

async function catchUpOrWarn(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<CatchUpResult | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      return await catchUpDelta(ctx.io, metadata, { warn });
    } catch (e) {
      if (attempt === 1) {
        warn(`delta: commit for ${identString(ctx.ident)} failed after the iceberg commit (${errorMessage(e)}); the next write will repair it`);
      }
    }
  }
  return undefined;
}

/** A checkpoint when one of the versions just written is due. */
export async function checkpointIfDue(ctx: TableContext, metadata: TableMetadata, versions: number[], warn: (m: string) => void): Promise<void> {
  await writeDeltaCheckpointIfDue(ctx, metadata.location, versions, checkpointInterval(metadata), warn);
}

/**
 * The Delta half of a write after its Iceberg snapshot committed: the version mirroring it (and
 * a checkpoint when due), with timings. Never fails the write (see `commitDelta`).
 */
export async function finishDelta(
  ctx: TableContext,
  metadata: TableMetadata,
  snapshot: Snapshot,
  warn: (m: string) => void,
): Promise<{ deltaVersion?: number; deltaCommitted: boolean; deltaCommitMs: number; checkpointMs: number }> {
  if (!tableFormats(metadata.properties).includes('delta')) return { deltaCommitted: false, deltaCommitMs: 0, checkpointMs: 0 };
  const deltaStart = performance.now();
  const result = await catchUpOrWarn(ctx, metadata, warn);
  const checkpointStart = performance.now();
  if (result) await checkpointIfDue(ctx, metadata, result.written, warn);
  return {
    // The version the log gave the snapshot; its summary's delta-version is what it expected.
    deltaVersion: result?.version ?? deltaVersionOf(snapshot),
    deltaCommitted: result !== undefined,
    deltaCommitMs: checkpointStart - deltaStart,
    checkpointMs: performance.now() - checkpointStart,
  };
}

/**
 * Open-for-write repairs the files a reader relies on (version hint, the Delta commits and
 * checkpoint it replays) and catches Delta up with Iceberg (DESIGN.md §1). Failures only warn.
 */
export async function repairDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<void> {
  const delta = tableFormats(metadata.properties).includes('delta');
  try {
    const { metadataLocation } = await ctx.catalog.loadTable(ctx.ident);
    await repairTableFiles(catalogSubject(ctx, { metadata, metadataLocation }), warn, 'tail');
  } catch (e) {
    warn(`${errorMessage(e)}; the write goes on from the iceberg metadata`);
  }
  if (!delta) return;
  try {
    const { written } = await catchUpDelta(ctx.io, metadata, { warn });
    await checkpointIfDue(ctx, metadata, written, warn);
  } catch (e) {
    warn(`delta: could not catch up ${identString(ctx.ident)} with iceberg (${errorMessage(e)})`);
  }
}

/**
 * Catches the Delta log up with Iceberg without writing data (the maintenance path of
 * DESIGN.md §1): the versions written, and the version that now mirrors the current snapshot.
 * Unlike the write path, a failure here is an error: syncing is what the caller asked for.
 */
export async function syncDelta(ctx: TableContext, metadata: TableMetadata, warn: (m: string) => void): Promise<{ version: number; written: number[] }> {
  if (!tableFormats(metadata.properties).includes('delta')) {
    throw invalidInput(`table ${identString(ctx.ident)} keeps only the Iceberg format; there is no Delta log to sync`);
  }
  // Sync is the explicit repair: every commit and checkpoint is checked, and what cannot be
  // derived from Iceberg stops it.
  const { metadataLocation } = await ctx.catalog.loadTable(ctx.ident);
  await repairTableFiles(catalogSubject(ctx, { metadata, metadataLocation }), warn, 'all');
  const result = await catchUpDelta(ctx.io, metadata, { warn });
  await checkpointIfDue(ctx, metadata, result.written, warn);
  return result;
}
