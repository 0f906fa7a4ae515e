import { invalidInput } from '../core/errors.ts';
import { versionOf } from '../table/read/metadata-locator.ts';
import type { Table } from '../table/table.ts';
import { below, reachableFiles, type ReachableFiles } from './reachable.ts';

/**
 * orphan_cleanup: deletes the files below a table's location that no retained Iceberg snapshot
 * and no retained Delta version references (reachable.ts), once they are older than a safety
 * window, so a write in flight (its data files land before its commit names them) is never
 * robbed. Safe on a dual table by construction, where each format's own cleanup is not: Delta's
 * VACUUM treats everything its log does not name as garbage except `_`/`.` paths (so Iceberg's
 * `metadata/` and its delete files), Iceberg's orphan removal everything its metadata does not
 * name (so `_delta_log/` and Delta's deletion vectors).
 */

export type OrphanKind = 'data' | 'delete' | 'puffin' | 'deletion-vector' | 'manifest' | 'manifest-list' | 'metadata' | 'staging' | 'other';

export interface OrphanFile {
  /** Relative to the table location. */
  path: string;
  kind: OrphanKind;
  bytes: number;
  modified: number;
  reason: string;
}

export interface RemoveOrphansOptions {
  /** Only files last modified more than this long ago (ms; default 3 days, at least 1 hour). */
  olderThan?: number;
  /** List what would go and why; delete nothing. */
  dryRun?: boolean;
  /** The time the window is measured from (default: the table's clock). */
  now?: number;
}

export interface RemoveOrphansResult {
  table: string;
  dryRun: boolean;
  olderThan: number;
  /** The files removed (or, with dryRun, that would be), in the order they were deleted. */
  files: OrphanFile[];
  removed: { files: number; bytes: number };
  byKind: Partial<Record<OrphanKind, { files: number; bytes: number }>>;
  /** Unreferenced files kept because they are younger than the window. */
  keptRecent: number;
  /** Folders below the table that hold another table, left alone. */
  nestedTables: string[];
}

/** The table's own folder for what Twinlake keeps beside the formats (the maintenance run log): never an orphan. */
export const TWINLAKE_FOLDER = '_twinlake/';

export const DEFAULT_ORPHAN_WINDOW_MS = 3 * 24 * 3600 * 1000;
export const MIN_ORPHAN_WINDOW_MS = 3600 * 1000;

/** A cleanup's safety window, refused below an hour: younger unreferenced files may be a write's in flight. */
export function safetyWindow(olderThan: number, what: string, atRisk: string): number {
  if (!Number.isFinite(olderThan) || olderThan < MIN_ORPHAN_WINDOW_MS) {
    throw invalidInput(`${what}: expected olderThan of at least 1 hour (${MIN_ORPHAN_WINDOW_MS} ms), found ${olderThan} ms; a shorter window could delete ${atRisk}`);
  }
  return olderThan;
}

/** Deletion order: files that hold rows first, then what names them, the metadata file last. */
const ORDER: OrphanKind[] = ['staging', 'other', 'data', 'delete', 'puffin', 'deletion-vector', 'manifest', 'manifest-list', 'metadata'];

export async function removeOrphans(table: Table, opts: RemoveOrphansOptions = {}): Promise<RemoveOrphansResult> {
  const olderThan = safetyWindow(opts.olderThan ?? DEFAULT_ORPHAN_WINDOW_MS, 'orphan cleanup', 'the files of a write in flight');
  // File ages come from the store's modification times, which are wall-clock times.
  const now = opts.now ?? Date.now();
  const reachable = await reachableFiles(table);
  const candidates = await unreferencedFiles(table, reachable);
  const cutoff = now - olderThan;
  const doomed = candidates.files.filter((f) => f.modified < cutoff);
  doomed.sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind) || a.path.localeCompare(b.path));
  const result: RemoveOrphansResult = {
    table: table.name,
    dryRun: opts.dryRun === true,
    olderThan,
    files: doomed,
    ...(await deleteListed(table, reachable.location, doomed, opts.dryRun === true)),
    keptRecent: candidates.files.length - doomed.length,
    nestedTables: candidates.nestedTables,
  };
  return result;
}

/**
 * Deletes files listed below a table's location, in the order given (with `dryRun`, none), and
 * counts them in all and per kind.
 */
export async function deleteListed<K extends string>(
  table: Table,
  location: string,
  files: readonly { path: string; kind: K; bytes: number }[],
  dryRun: boolean,
): Promise<{ removed: { files: number; bytes: number }; byKind: Partial<Record<K, { files: number; bytes: number }>> }> {
  const { io } = table.context;
  const removed = { files: 0, bytes: 0 };
  const byKind: Partial<Record<K, { files: number; bytes: number }>> = {};
  for (const f of files) {
    if (!dryRun) await io.delete(`${location}/${f.path}`);
    removed.files++;
    removed.bytes += f.bytes;
    const k = (byKind[f.kind] ??= { files: 0, bytes: 0 });
    k.files++;
    k.bytes += f.bytes;
  }
  return { removed, byKind };
}

/**
 * Every file below the table's location that nothing retained references, whatever its age, with
 * its kind and why it may go. Never a `_delta_log/` file but a stale `.tmp` (the log's retention is snapshot
 * expiry's and metadata cleanup's), never the current metadata file or the version hint, never a
 * file of a table nested below this one.
 */
export async function unreferencedFiles(table: Table, reachable: ReachableFiles): Promise<{ files: OrphanFile[]; nestedTables: string[] }> {
  const { store, key } = table.context.io.storeAt(reachable.location);
  const prefix = key === '' ? '' : `${key.replace(/\/+$/, '')}/`;
  const keep = new Set<string>();
  for (const uri of reachable.files) {
    const rel = below(reachable.location, uri);
    if (rel !== undefined) keep.add(rel);
  }
  const listed: { path: string; size: number; modified: number }[] = [];
  const nested = new Set<string>();
  // The trailing slash keeps a sibling whose name starts with this one's (`events` and `events_v2`) out.
  const temporary = store.listTemporary?.(prefix) ?? [];
  for await (const o of concatAsync(store.list(prefix), temporary)) {
    const path = o.path.slice(prefix.length);
    if (path === '' || !o.path.startsWith(prefix)) continue;
    const root = nestedTableRoot(path);
    if (root !== undefined) nested.add(root);
    listed.push({ path, size: o.size, modified: o.modified });
  }
  const nestedTables = [...nested].sort();
  const current = reachable.currentMetadata;
  const currentVersion = current === undefined ? undefined : versionOf(current.slice(current.lastIndexOf('/') + 1));
  const files: OrphanFile[] = [];
  for (const o of listed) {
    if (keep.has(o.path)) continue;
    // A write that never moved into place is no log or Twinlake file, wherever it lies.
    if ((o.path.startsWith('_delta_log/') || o.path.startsWith(TWINLAKE_FOLDER)) && !o.path.endsWith('.tmp')) continue;
    if (nestedTables.some((n) => o.path.startsWith(n))) continue;
    if (o.path === 'metadata/version-hint.text') continue;
    const { kind, reason } = classify(o.path, currentVersion);
    files.push({ path: o.path, kind, bytes: o.size, modified: o.modified, reason });
  }
  return { files, nestedTables };
}

/**
 * The folder (relative, with a trailing slash) of a table that holds `path` as its own log or
 * metadata, when that folder lies below the table being cleaned: `sub/_delta_log/…` or
 * `sub/metadata/….metadata.json` mark `sub/` as another table's.
 */
function nestedTableRoot(path: string): string | undefined {
  const parts = path.split('/');
  for (let i = 1; i < parts.length - 1; i++) {
    if (parts[i] === '_delta_log' || (parts[i] === 'metadata' && parts.at(-1)!.endsWith('.metadata.json') && i === parts.length - 2)) {
      return `${parts.slice(0, i).join('/')}/`;
    }
  }
  return undefined;
}

/**
 * What an unreferenced file is, by its name and folder. A `.tmp` is a write that never moved into
 * place: another writer's, or the store's own (listTemporary), a killed writer's.
 */
function classify(path: string, currentVersion: number | undefined): { kind: OrphanKind; reason: string } {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name.endsWith('.tmp')) return { kind: 'staging', reason: 'stale staging file (a write that did not finish moving it into place)' };
  if (path.startsWith('metadata/')) {
    const version = name.endsWith('.metadata.json') ? versionOf(name) : undefined;
    if (version !== undefined && currentVersion !== undefined && version > currentVersion) {
      return { kind: 'staging', reason: 'metadata file of a commit that never became current (a write killed or beaten before its swap)' };
    }
    if (name.endsWith('.metadata.json')) return { kind: 'metadata', reason: 'metadata file neither current nor in the metadata log' };
    if (name.startsWith('snap-') && name.endsWith('.avro')) return { kind: 'manifest-list', reason: 'manifest list no retained snapshot uses' };
    if (name.endsWith('.avro')) return { kind: 'manifest', reason: 'manifest no retained snapshot lists' };
    if (name.endsWith('.puffin')) return { kind: 'puffin', reason: 'statistics file the metadata does not name' };
  }
  if (/^deletion_vector_.*\.bin$/.test(name)) return { kind: 'deletion-vector', reason: 'deletion vector file no retained delta version names' };
  if (name.endsWith('-deletes.parquet')) return { kind: 'delete', reason: 'position delete file no retained snapshot or version references' };
  if (name.endsWith('.puffin')) return { kind: 'puffin', reason: 'puffin deletion vectors no retained snapshot references' };
  if (name.endsWith('.parquet')) return { kind: 'data', reason: 'data file no retained snapshot or version references (a stray file or a write that never committed)' };
  return { kind: 'other', reason: 'file no retained snapshot or version references' };
}

async function* concatAsync<T>(...sources: (AsyncIterable<T> | Iterable<T>)[]): AsyncIterable<T> {
  for (const s of sources) yield* s;
}
