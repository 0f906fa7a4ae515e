import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isTwinlakeError, TwinlakeError } from '../../core/errors.ts';
import type { FileIO } from '../../io/file-io.ts';

/**
 * What the writes in flight in this process have put on disk and not committed yet, so that an
 * interrupt (Ctrl-C, SIGTERM) can take it back before the process exits: local staging folders
 * (spooled input, files the engine is still encoding) and data files already moved into a table
 * but not yet named by a commit. A commit that has begun is allowed to finish: its files then
 * belong to the table and stay; no commit begins after the interrupt.
 */

const staging = new Set<string>();
const uncommitted = new Map<string, FileIO>();
const commits = new Set<Promise<unknown>>();
const writes = new Set<Promise<unknown>>();
const stoppers = new Set<() => unknown>();
let interrupted = false;

/**
 * A new scratch folder under the engine's temp folder (`--temp-dir`, TWINLAKE_TEMP_DIR): staged
 * Parquet, spooled input and the like go where the user said there is room, and on the
 * filesystem the engine already spills to.
 */
export function stagingFolder(session: { settings: { tempDir: string } }, prefix: string): Promise<string> {
  return mkdtemp(join(session.settings.tempDir, prefix));
}

/** A local folder of this process's scratch files, removed on an interrupt. */
export function trackStaging(dir: string): () => void {
  staging.add(dir);
  return () => void staging.delete(dir);
}

/**
 * Stops work in flight (an engine statement) on an interrupt, rather than letting it run to its
 * end; a promise `stop` returns is awaited before anything is removed (the work may still be
 * writing files).
 */
export function onInterrupt(stop: () => unknown): () => void {
  stoppers.add(stop);
  return () => void stoppers.delete(stop);
}

/**
 * Called before a data file is moved into a table: it is deleted on an interrupt unless a commit
 * names it first. Throws once the process is being interrupted, so nothing new lands in a table.
 */
export function trackUncommitted(io: FileIO, uri: string): void {
  refuseIfInterrupted();
  uncommitted.set(uri, io);
}

/**
 * Writes a data file into a table, tracked from before its first byte (see trackUncommitted). An
 * interrupt waits for writes in flight, so a file that lands after the interrupt began is still
 * deleted rather than left behind.
 */
export async function writeUncommitted(io: FileIO, uri: string, write: () => Promise<unknown>): Promise<void> {
  trackUncommitted(io, uri);
  const running = write();
  writes.add(running);
  try {
    await running;
  } finally {
    writes.delete(running);
  }
}

/** Files that need no cleanup any more: a commit named them, or they are scratch of their own. */
export function forgetUncommitted(uris: readonly string[]): void {
  for (const u of uris) uncommitted.delete(u);
}

/**
 * Deletes files a failed or abandoned write moved into a table (never throws). Only files still
 * tracked: one a commit may have named (its outcome unknown) is no longer tracked and stays.
 */
export async function discardUncommitted(io: FileIO, uris: readonly string[]): Promise<void> {
  const tracked = uris.filter((u) => uncommitted.has(u));
  await io.deleteQuietly(tracked);
  forgetUncommitted(tracked);
}

/**
 * Runs a commit of `files`. An interrupt waits for it to settle. Once `committed` says the
 * commit named them, the files belong to the table and are no longer tracked; otherwise (a lost
 * race the caller retries, a failure) they stay tracked until the caller deletes them. A commit
 * whose outcome is unknown (`commit-state-unknown`: the pointer may have moved) may have made
 * them part of the table, so they are kept: a stray file is harmless, a missing one breaks it.
 */
export async function guardCommit<T>(files: readonly string[], commit: () => Promise<T>, committed: (result: T) => boolean): Promise<T> {
  refuseIfInterrupted();
  const running = commit();
  commits.add(running);
  try {
    const result = await running;
    if (committed(result)) forgetUncommitted(files);
    return result;
  } catch (e) {
    if (isTwinlakeError(e, 'commit-state-unknown')) forgetUncommitted(files);
    throw e;
  } finally {
    commits.delete(running);
  }
}

/**
 * Stops the writes of this process: stops engine statements in flight and waits for them,
 * waits for commits and file writes in flight, then deletes every data file no commit named and
 * every staging folder (`removed` counts both; `left` names folders that could not be removed). The caller exits afterwards; the writes themselves fail if they get that far.
 */
export async function interruptWrites(): Promise<{ removed: number; left: string[] }> {
  interrupted = true;
  // Stopped work has settled (the engine's threads no longer write) before its files are removed.
  await Promise.allSettled([...stoppers].map(async (stop) => stop()));
  await Promise.allSettled([...commits, ...writes]);
  const removed = uncommitted.size + staging.size;
  const byIo = new Map<FileIO, string[]>();
  for (const [uri, io] of uncommitted) byIo.set(io, [...(byIo.get(io) ?? []), uri]);
  uncommitted.clear();
  await Promise.all([...byIo].map(([io, uris]) => io.deleteQuietly(uris)));
  // A folder whose files are still closing can fail once (ENOTEMPTY, EBUSY): try again a few times,
  // then say what is left rather than claim it was removed.
  const left: string[] = [];
  await Promise.all(
    [...staging].map((d) => rm(d, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => void left.push(d))),
  );
  staging.clear();
  return { removed, left };
}

function refuseIfInterrupted(): void {
  if (interrupted) throw new TwinlakeError('io', 'write: interrupted; nothing more is written or committed', {}, { retryable: false });
}
