import { checkpointPath, parseLogFileName } from '../format/delta/actions.ts';
import { parseLastCheckpoint } from '../format/delta/checkpoint.ts';
import { deltaIntervalMs, Props } from '../format/dual/table-properties.ts';
import { deltaLogFiles } from '../table/delta/delta-log.ts';
import { versionOf } from '../table/read/metadata-locator.ts';
import type { Table } from '../table/table.ts';
import { deleteListed, MIN_ORPHAN_WINDOW_MS, safetyWindow, unreferencedFiles } from './orphans.ts';
import { reachableFiles } from './reachable.ts';

/**
 * metadata_cleanup: the metadata a table has moved past. Old `metadata.json` files beyond
 * `write.metadata.previous-versions-max` when `write.metadata.delete-after-commit.enabled` is
 * true (Iceberg's defaults: 100, false), manifests and manifest lists no retained snapshot uses,
 * and Delta checkpoints superseded by a newer one and older than the log retention — never the
 * one `_last_checkpoint` names, nor one a retained version is read from.
 */

export type MetadataKind = 'metadata' | 'manifest' | 'manifest-list' | 'delta-checkpoint';

export interface MetadataFile {
  /** Relative to the table location. */
  path: string;
  kind: MetadataKind;
  bytes: number;
  reason: string;
}

export interface CleanMetadataOptions {
  dryRun?: boolean;
  now?: number;
  /** Manifests and lists younger than this stay: a commit in flight has written them (ms; default and minimum 1 hour). */
  olderThan?: number;
}

export interface CleanMetadataResult {
  table: string;
  dryRun: boolean;
  files: MetadataFile[];
  removed: { files: number; bytes: number };
  byKind: Partial<Record<MetadataKind, { files: number; bytes: number }>>;
}

export const METADATA_DELETE_AFTER_COMMIT = 'write.metadata.delete-after-commit.enabled';
export const METADATA_PREVIOUS_VERSIONS_MAX = 'write.metadata.previous-versions-max';
const DEFAULT_PREVIOUS_VERSIONS_MAX = 100;
/** Delta's default `delta.logRetentionDuration`. */
const DEFAULT_LOG_RETENTION_MS = 30 * 24 * 3600 * 1000;

const ORDER: MetadataKind[] = ['manifest', 'manifest-list', 'metadata', 'delta-checkpoint'];

export async function cleanMetadata(table: Table, opts: CleanMetadataOptions = {}): Promise<CleanMetadataResult> {
  const olderThan = safetyWindow(opts.olderThan ?? MIN_ORPHAN_WINDOW_MS, 'metadata cleanup', 'the manifests of a commit in flight');
  const now = opts.now ?? Date.now();
  const reachable = await reachableFiles(table);
  const { io } = table.context;
  const { store, key } = io.storeAt(reachable.location);
  const files: MetadataFile[] = [];

  // Manifests and lists: the unreferenced ones past the window.
  const unreferenced = await unreferencedFiles(table, reachable);
  for (const f of unreferenced.files) {
    if ((f.kind === 'manifest' || f.kind === 'manifest-list') && f.modified < now - olderThan) files.push({ path: f.path, kind: f.kind, bytes: f.bytes, reason: f.reason });
  }

  // Metadata files: the metadata log already holds at most previous-versions-max entries
  // (applyUpdates trims it); what is older than its oldest entry has been dropped from it.
  const metadata = reachable.metadata;
  if (metadata && reachable.currentMetadata && metadata.properties[METADATA_DELETE_AFTER_COMMIT] === 'true') {
    const max = Number(metadata.properties[METADATA_PREVIOUS_VERSIONS_MAX] ?? DEFAULT_PREVIOUS_VERSIONS_MAX);
    const current = reachable.currentMetadata;
    const currentVersion = versionOf(current.slice(current.lastIndexOf('/') + 1));
    const kept = new Set([current, ...(metadata['metadata-log'] ?? []).slice(-Math.max(0, max)).map((e) => e['metadata-file'])].map((u) => u.slice(u.lastIndexOf('/') + 1)));
    const dir = `${prefixOf(key)}metadata/`;
    for await (const o of store.list(dir)) {
      const name = o.path.slice(dir.length);
      if (name.includes('/') || !name.endsWith('.metadata.json') || kept.has(name)) continue;
      const version = versionOf(name);
      // A newer file is a commit in flight (or one that lost its race): orphan cleanup's, by age.
      if (version === undefined || currentVersion === undefined || version >= currentVersion) continue;
      files.push({ path: `metadata/${name}`, kind: 'metadata', bytes: o.size, reason: `metadata file older than the ${max} previous versions kept (${METADATA_PREVIOUS_VERSIONS_MAX})` });
    }
  }

  if (reachable.delta) files.push(...(await supersededCheckpoints(table, reachable.location, now, metadata?.properties[Props.deltaLogRetention])));

  files.sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind) || a.path.localeCompare(b.path));
  return { table: table.name, dryRun: opts.dryRun === true, files, ...(await deleteListed(table, reachable.location, files, opts.dryRun === true)) };
}

/**
 * Checkpoints a newer checkpoint supersedes, older than the log retention, that no reader needs:
 * not the one `_last_checkpoint` names, and none a retained version is read from — a version
 * whose commit is still in the log, at or after the checkpoint and before the next one, is read
 * from it unless the commits from version 0 up to it are all there.
 */
async function supersededCheckpoints(table: Table, location: string, now: number, retention: string | undefined): Promise<MetadataFile[]> {
  const { io } = table.context;
  const { store, key } = io.storeAt(location);
  const names = await deltaLogFiles(store, key);
  const commits = new Set<number>();
  const checkpoints = new Map<number, string[]>();
  for (const name of names.keys()) {
    const f = parseLogFileName(name);
    if (f?.kind === 'commit') commits.add(f.version);
    else if (f?.kind === 'checkpoint') checkpoints.set(f.version, [...(checkpoints.get(f.version) ?? []), name]);
  }
  let named: number | undefined;
  if (names.has('_last_checkpoint')) {
    try {
      named = parseLastCheckpoint(new TextDecoder().decode(await store.get(`${prefixOf(key)}_delta_log/_last_checkpoint`))).version;
    } catch {
      // An unreadable hint names nothing; the newest checkpoint is kept regardless.
    }
  }
  const retentionMs = retention === undefined ? DEFAULT_LOG_RETENTION_MS : deltaIntervalMs(retention, Props.deltaLogRetention);
  const versions = [...checkpoints.keys()].sort((a, b) => a - b);
  let fromZero = -1; // commits 0..fromZero are all in the log
  while (commits.has(fromZero + 1)) fromZero++;
  const out: MetadataFile[] = [];
  for (const [i, v] of versions.entries()) {
    const next = versions[i + 1];
    if (next === undefined || v === named) continue;
    const needed = [...commits].some((c) => c >= v && c < next && c > fromZero);
    if (needed) continue;
    // The parts of a multi-part checkpoint go together or not at all.
    const parts = checkpoints.get(v)!;
    if (parts.some((name) => (names.get(name) ?? now) >= now - retentionMs)) continue;
    for (const name of parts) {
      const size = (await store.head(`${prefixOf(key)}_delta_log/${name}`))?.size ?? 0;
      out.push({ path: `_delta_log/${name}`, kind: 'delta-checkpoint', bytes: size, reason: `checkpoint superseded by ${checkpointPath(next)}, older than the log retention` });
    }
  }
  return out;
}

function prefixOf(key: string): string {
  return key === '' ? '' : `${key.replace(/\/+$/, '')}/`;
}
