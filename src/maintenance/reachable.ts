import { relativeTo } from '../core/uri.ts';
import type { Action } from '../format/delta/actions.ts';
import { parseLogFileName } from '../format/delta/actions.ts';
import { checkpointSidecars } from '../format/delta/checkpoint.ts';
import { deletionVectorLocation } from '../format/delta/deletion-vector.ts';
import { tableFormats } from '../format/dual/table-properties.ts';
import { EntryStatus, type TableMetadata } from '../format/iceberg/types.ts';
import type { FileIO } from '../io/file-io.ts';
import { readManifestEntries, readManifestList } from '../table/commit/manifest-io.ts';
import { dataFileUri, decodeCheckpoint, deltaLogFiles, readCommit } from '../table/delta/delta-log.ts';
import { versionHintUri } from '../table/read/metadata-locator.ts';
import type { Table } from '../table/table.ts';

/**
 * The files a table still needs: everything any retained Iceberg snapshot (every snapshot in the
 * current metadata, so every ref's too) or any retained Delta version (every version whose commit
 * or checkpoint is still in `_delta_log`) names, and the metadata that names them. This is the one
 * place both formats' references are gathered: orphan cleanup deletes only what is not in it, and
 * metadata cleanup only metadata that is not in it.
 *
 * Manifests are read one at a time and only locations are kept, so a table with millions of files
 * costs a set of strings, not its parsed manifests.
 */
export interface ReachableFiles {
  /** The table's location (no trailing slash). */
  location: string;
  /** Absolute URIs of every referenced file. */
  files: Set<string>;
  /** What each referenced file is, by URI (for reporting). */
  kinds: Map<string, ReachableKind>;
  /** The catalog's current metadata file (absent for a Delta-only table). */
  currentMetadata?: string;
  metadata?: TableMetadata;
  /** Whether the table keeps a Delta log. */
  delta: boolean;
}

export type ReachableKind =
  | 'data'
  | 'delete'
  | 'puffin'
  | 'deletion-vector'
  | 'manifest'
  | 'manifest-list'
  | 'metadata'
  | 'statistics'
  | 'version-hint'
  | 'delta-log';

/** The table's location, metadata and whether it keeps Delta, wherever it is registered. */
export async function tableSubject(table: Table): Promise<{ io: FileIO; location: string; metadata?: TableMetadata; metadataLocation?: string; delta: boolean }> {
  const ctx = table.context;
  const deltaLocation = await ctx.deltaRegistry?.location(ctx.ident);
  if (deltaLocation) return { io: ctx.io, location: trim(deltaLocation), delta: true };
  const loaded = await ctx.catalog.loadTable(ctx.ident);
  return {
    io: ctx.io,
    location: trim(loaded.metadata.location),
    metadata: loaded.metadata,
    metadataLocation: loaded.metadataLocation,
    delta: tableFormats(loaded.metadata.properties).includes('delta'),
  };
}

export async function reachableFiles(table: Table): Promise<ReachableFiles> {
  const s = await tableSubject(table);
  const out: ReachableFiles = { location: s.location, files: new Set(), kinds: new Map(), delta: s.delta };
  if (s.metadata) {
    out.metadata = s.metadata;
    out.currentMetadata = s.metadataLocation;
  }
  const add = (uri: string, kind: ReachableKind) => {
    if (!out.files.has(uri)) {
      out.files.add(uri);
      out.kinds.set(uri, kind);
    }
  };
  if (s.metadata && s.metadataLocation) await icebergReachable(s.io, s.metadata, s.metadataLocation, add);
  if (s.delta) await deltaReachable(s.io, s.location, add);
  return out;
}

async function icebergReachable(io: FileIO, metadata: TableMetadata, metadataLocation: string, add: (uri: string, kind: ReachableKind) => void): Promise<void> {
  add(metadataLocation, 'metadata');
  for (const entry of metadata['metadata-log'] ?? []) add(entry['metadata-file'], 'metadata');
  add(versionHintUri(metadataLocation), 'version-hint');
  for (const s of [...(metadata.statistics ?? []), ...(metadata['partition-statistics'] ?? [])] as { 'statistics-path'?: string }[]) {
    if (s['statistics-path']) add(s['statistics-path'], 'statistics');
  }
  // Snapshots share most manifests: each is read once.
  const seen = new Set<string>();
  for (const snapshot of metadata.snapshots) {
    add(snapshot['manifest-list'], 'manifest-list');
    for (const manifest of await readManifestList(io, snapshot['manifest-list'], snapshot['snapshot-id'])) {
      const path = manifest['manifest-path'];
      add(path, 'manifest');
      if (seen.has(path)) continue;
      seen.add(path);
      // An entry marked deleted is no file of its snapshot (iceberg-spec.md §Manifests, the entry
      // status): a retained snapshot that still reads the file lists it as added or existing in a
      // manifest of its own, so only live entries are references. (Counting deleted entries kept a
      // compacted-away file for as long as any later snapshot carried the manifest that deleted it.)
      for (const e of await readManifestEntries(io, manifest, metadata)) {
        if (e.status === EntryStatus.Deleted) continue;
        const f = e['data-file'];
        const kind: ReachableKind = f.content === 0 ? 'data' : f['file-format'] === 'PUFFIN' ? 'puffin' : 'delete';
        add(f['file-path'], kind);
      }
    }
  }
}

async function deltaReachable(io: FileIO, location: string, add: (uri: string, kind: ReachableKind) => void): Promise<void> {
  const { store, key } = io.storeAt(location);
  const logUri = `${location}/_delta_log/`;
  const names = await deltaLogFiles(store, key);
  // A file a retained version reads is an `add` of a commit or checkpoint in the log (a version is
  // only readable from a checkpoint or commits the log still holds, and those name its files). A
  // `remove` is no reference: it marks the version after which the file is gone. Readers of older
  // versions are protected as Iceberg's are, by snapshot retention and the cleanup's safety window
  // (checkpoints keep no tombstones either: format/delta/checkpoint.ts, DESIGN.md §1).
  const onActions = (actions: Action[]) => {
    for (const a of actions) {
      if ('add' in a) {
        add(dataFileUri(location, a.add.path), 'data');
        const dv = a.add.deletionVector ? deletionVectorLocation(a.add.deletionVector, location) : undefined;
        if (dv) add(dv, 'deletion-vector');
      } else if ('cdc' in a) {
        add(dataFileUri(location, (a as { cdc: { path: string } }).cdc.path), 'data');
      }
    }
  };
  for (const name of [...names.keys()].sort()) {
    add(logUri + name, 'delta-log');
    const f = parseLogFileName(name);
    if (f?.kind === 'commit') onActions(await readCommit(store, key, f.version));
    else if (f?.kind === 'checkpoint') {
      const actions = await decodeCheckpoint(name, await io.read(logUri + name));
      onActions(actions);
      for (const sidecar of checkpointSidecars(actions)) {
        const uri = `${logUri}_sidecars/${sidecar.path}`;
        add(uri, 'delta-log');
        onActions(await decodeCheckpoint(sidecar.path, await io.read(uri)));
      }
    }
  }
}

/** The path of `uri` below `location`, or undefined when it is not below it. */
export function below(location: string, uri: string): string | undefined {
  const rel = relativeTo(location, uri);
  return rel === undefined || rel === '' || rel.startsWith('..') || rel.startsWith('/') ? undefined : rel;
}

function trim(location: string): string {
  return location.replace(/\/+$/, '');
}
