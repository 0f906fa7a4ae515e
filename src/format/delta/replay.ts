import { relativeTo } from '../../core/uri.ts';
import { dataInvalid, internal, notFound, unsupported } from '../../core/errors.ts';
import {
  type Action,
  type AddFile,
  type CommitInfo,
  type DomainMetadata,
  type Metadata,
  type Protocol,
  type RemoveFile,
  type Txn,
  dvUniqueId,
  multipartCheckpointPath,
  parseLogFileName,
} from './actions.ts';

/** The state of a table at one version (PROTOCOL.md §Action Reconciliation). */
export interface DeltaSnapshot {
  version: number;
  protocol: Protocol;
  metadata: Metadata;
  /** Live logical files, one per (path, deletion vector) key, in the order they became live. */
  files: AddFile[];
  /** Removes still in the replayed log whose logical file is not live (for VACUUM and checkpoints). */
  tombstones: RemoveFile[];
  /** Latest transaction identifier per application. */
  txns: Map<string, Txn>;
  /** Live metadata domains (tombstoned domains are dropped). */
  domainMetadata: Map<string, DomainMetadata>;
  /** Provenance of the commit at `version`, when its JSON file was part of the replay. */
  commitInfo?: CommitInfo;
  /**
   * When `version` was committed: the in-commit timestamp, else `commitInfo.timestamp` (what
   * Twinlake writes for both formats, DESIGN.md §1), else the commit file's modification time.
   */
  timestampMs?: number;
}

export interface ReplayCommit {
  version: number;
  actions: Action[];
  /** The commit file's modification time, epoch ms, when known. */
  modifiedMs?: number;
}

export interface ReplayInput {
  /**
   * The checkpoint's actions with sidecars already resolved: a V2 checkpoint's `sidecar` actions
   * must be replaced by the actions of the sidecar files they name.
   */
  checkpoint?: { version: number; actions: Action[] };
  /**
   * Ascending, contiguous commits after the checkpoint (or from version 0). A commit at the
   * checkpoint's own version is allowed first and only contributes its `commitInfo`.
   */
  commits: ReplayCommit[];
}

/**
 * Folds a checkpoint and the commits after it into a snapshot. Within a commit actions apply in
 * file order; the protocol makes a valid commit order-independent.
 */
export function replay(input: ReplayInput): DeltaSnapshot {
  const state = new ReplayState();
  const cp = input.checkpoint;
  let version = -1;
  if (cp) {
    for (const a of cp.actions) {
      if ('sidecar' in a) {
        throw internal(`delta replay: checkpoint ${cp.version} still references sidecar ${a.sidecar.path}; resolve sidecars before replay`);
      }
      if ('commitInfo' in a || 'cdc' in a || 'checkpointMetadata' in a) continue;
      state.apply(a);
    }
    version = cp.version;
  }
  let commitInfo: CommitInfo | undefined;
  let modifiedMs: number | undefined;
  for (const c of input.commits) {
    if (cp && c.version === cp.version && version === cp.version && commitInfo === undefined) {
      // Provenance only: the checkpoint already holds this version's state.
      commitInfo = findCommitInfo(c.actions);
      modifiedMs = c.modifiedMs;
      continue;
    }
    const expected = version + 1;
    if (c.version !== expected) {
      throw dataInvalid(`delta replay: expected commit ${expected} next, found ${c.version}`);
    }
    commitInfo = undefined;
    for (const a of c.actions) {
      if ('commitInfo' in a) commitInfo ??= a.commitInfo;
      else if ('sidecar' in a || 'checkpointMetadata' in a) continue; // not allowed in commits; ignored by replay
      else state.apply(a);
    }
    modifiedMs = c.modifiedMs;
    version = c.version;
  }
  if (version < 0) throw dataInvalid('delta replay: expected a checkpoint or at least one commit, found neither');
  if (!state.protocol) throw dataInvalid(`delta replay: no protocol action at or before version ${version}`);
  if (!state.metadata) throw dataInvalid(`delta replay: no metaData action at or before version ${version}`);
  const snapshot: DeltaSnapshot = {
    version,
    protocol: state.protocol,
    metadata: state.metadata,
    files: [...state.live.values()],
    tombstones: [...state.tombstones.values()],
    txns: state.txns,
    domainMetadata: new Map([...state.domains].filter(([, d]) => !d.removed)),
  };
  if (commitInfo) snapshot.commitInfo = commitInfo;
  const ts = commitInfo?.inCommitTimestamp ?? commitInfo?.timestamp ?? modifiedMs;
  if (ts !== undefined) snapshot.timestampMs = ts;
  return snapshot;
}

/** The commit's `commitInfo` action, if it has one. */
export function findCommitInfo(actions: Action[]): CommitInfo | undefined {
  for (const a of actions) if ('commitInfo' in a) return a.commitInfo;
  return undefined;
}

class ReplayState {
  protocol?: Protocol;
  metadata?: Metadata;
  readonly live = new Map<string, AddFile>();
  readonly tombstones = new Map<string, RemoveFile>();
  readonly txns = new Map<string, Txn>();
  readonly domains = new Map<string, DomainMetadata>();

  apply(a: Action): void {
    if ('add' in a) {
      const key = fileKey(a.add.path, dvUniqueId(a.add.deletionVector));
      this.tombstones.delete(key);
      // A re-add replaces stats and tags but keeps the file's place in the listing.
      this.live.set(key, a.add);
    } else if ('remove' in a) {
      const key = fileKey(a.remove.path, dvUniqueId(a.remove.deletionVector));
      this.live.delete(key);
      this.tombstones.set(key, a.remove);
    } else if ('protocol' in a) {
      this.protocol = a.protocol;
    } else if ('metaData' in a) {
      this.metadata = a.metaData;
    } else if ('txn' in a) {
      this.txns.set(a.txn.appId, a.txn);
    } else if ('domainMetadata' in a) {
      this.domains.set(a.domainMetadata.domain, a.domainMetadata);
    }
  }
}

/**
 * The key of a logical file. Paths are URIs (PROTOCOL.md §Add File and Remove File), so two
 * spellings of one file (`a%20b`, `a b`) must compare equal: keys use the decoded path.
 */
export function fileKey(path: string, dvId: string | undefined): string {
  return `${decodePath(path)}\u0000${dvId ?? ''}`;
}

/** A data file's path as Delta wants it: relative to the table root, URI-encoded. */
export function deltaPath(location: string, fileUri: string): string {
  const rel = relativeTo(location, fileUri);
  if (rel === undefined) return fileUri; // outside the table root: an absolute URI
  // Most paths need no escape at all (one test instead of a pass per segment).
  if (PLAIN_PATH.test(rel)) return rel;
  return rel.split('/').map(encodePathSegment).join('/');
}

/** Paths that `encodePathSegment` leaves as they are, segment by segment. */
const PLAIN_PATH = /^[A-Za-z0-9\-._~=@+,/]*$/;

function encodePathSegment(s: string): string {
  // By code point (`u`): a character outside the BMP is one UTF-8 sequence, not two halves.
  return s.replace(/[^A-Za-z0-9\-._~=@+,]/gu, (c) =>
    Array.from(new TextEncoder().encode(c), (b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join(''),
  );
}

/** Percent-decoding of a log path; malformed escapes are kept as written. */
export function decodePath(path: string): string {
  if (!path.includes('%')) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path.replace(/(%[0-9a-fA-F]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

// --- log segment -------------------------------------------------------------------------------

export interface LogSegment {
  /** The newest complete checkpoint at or before the version; file names inside `_delta_log/`. */
  checkpoint?: { version: number; files: string[] };
  /** The commits after the checkpoint (or from 0), ascending and contiguous, up to the version. */
  commits: { version: number; name: string }[];
  /** The version the segment reconstructs. */
  version: number;
}

export interface LastCheckpointHint {
  version: number;
  parts?: number;
}

/**
 * Chooses the files that reconstruct a version from a listing of `_delta_log/` (base names).
 * `version` defaults to the newest commit. Multi-part checkpoints with missing parts are ignored
 * (PROTOCOL.md §Checkpoints). `lastCheckpoint` (from `_last_checkpoint`) adds its checkpoint when
 * the listing does not show it yet.
 */
export function listLogSegment(fileNames: string[], opts: { version?: number; lastCheckpoint?: LastCheckpointHint } = {}): LogSegment {
  const commits = new Map<number, string>();
  const checkpoints = new Map<number, Map<string, string[]>>(); // version → variant → files
  const addCheckpoint = (version: number, variant: string, name: string) => {
    let byVariant = checkpoints.get(version);
    if (!byVariant) checkpoints.set(version, (byVariant = new Map()));
    const files = byVariant.get(variant) ?? [];
    if (!files.includes(name)) files.push(name);
    byVariant.set(variant, files);
  };
  const multipart = new Map<string, number>(); // variant → parts expected
  for (const name of fileNames) {
    const f = parseLogFileName(name);
    if (!f) continue;
    if (f.kind === 'commit') commits.set(f.version, name);
    else if (f.kind === 'checkpoint') {
      const variant = f.parts !== undefined ? `multi:${f.parts}` : f.uuid !== undefined ? `uuid:${f.uuid}` : 'classic';
      if (f.parts !== undefined) multipart.set(variant, f.parts);
      addCheckpoint(f.version, variant, name);
    }
  }
  const hint = opts.lastCheckpoint;
  if (hint && !checkpoints.has(hint.version)) {
    if (hint.parts !== undefined && hint.parts > 1) {
      const variant = `multi:${hint.parts}`;
      multipart.set(variant, hint.parts);
      for (let p = 1; p <= hint.parts; p++) addCheckpoint(hint.version, variant, baseName(multipartCheckpointPath(hint.version, p, hint.parts)));
    } else {
      addCheckpoint(hint.version, 'classic', `${String(hint.version).padStart(20, '0')}.checkpoint.parquet`);
    }
  }

  const newestCommit = commits.size > 0 ? Math.max(...commits.keys()) : undefined;
  const newestCheckpoint = checkpoints.size > 0 ? Math.max(...checkpoints.keys()) : undefined;
  const newest = Math.max(newestCommit ?? -1, newestCheckpoint ?? -1);
  if (newest < 0) throw notFound('delta log: expected commit files in _delta_log/, found none');
  const version = opts.version ?? newest;
  if (!Number.isSafeInteger(version) || version < 0) throw notFound(`delta log: version ${version} does not exist`);
  if (version > newest) throw notFound(`delta log: version ${version} does not exist, the newest is ${newest}`);

  let checkpoint: LogSegment['checkpoint'];
  const candidates = [...checkpoints.keys()].filter((v) => v <= version).sort((a, b) => b - a);
  for (const v of candidates) {
    const files = completeCheckpoint(checkpoints.get(v)!, multipart);
    if (files) {
      checkpoint = { version: v, files };
      break;
    }
  }

  const first = checkpoint ? checkpoint.version + 1 : 0;
  const segment: LogSegment['commits'] = [];
  for (let v = first; v <= version; v++) {
    const name = commits.get(v);
    if (name === undefined) {
      if (!checkpoint && v === 0) {
        throw notFound(`delta log: version ${version} cannot be reconstructed: no checkpoint at or before it and commit 0 is missing`);
      }
      throw dataInvalid(`delta log: expected commit ${v} between ${checkpoint ? `checkpoint ${checkpoint.version}` : 'version 0'} and version ${version}, found a gap`);
    }
    segment.push({ version: v, name });
  }
  const out: LogSegment = { commits: segment, version };
  if (checkpoint) out.checkpoint = checkpoint;
  return out;
}

/** A single-file checkpoint wins over a multi-part one; a classic name over a UUID name. */
function completeCheckpoint(variants: Map<string, string[]>, multipart: Map<string, number>): string[] | undefined {
  const order = (v: string) => (v === 'classic' ? 0 : v.startsWith('uuid:') ? 1 : 2);
  for (const variant of [...variants.keys()].sort((a, b) => order(a) - order(b) || a.localeCompare(b))) {
    const files = [...variants.get(variant)!].sort();
    const parts = multipart.get(variant);
    if (parts === undefined || files.length === parts) return files;
  }
  return undefined;
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

// --- reader support ----------------------------------------------------------------------------

/** Reader features whose rules Twinlake's readers follow. */
const SUPPORTED_READER_FEATURES = new Set(['columnMapping', 'timestampNtz', 'v2Checkpoint', 'deletionVectors', 'vacuumProtocolCheck']);

/**
 * Refuses tables whose protocol asks readers for something Twinlake does not do. Deletion vectors
 * pass here; files that carry one are refused when a scan is planned.
 */
export function checkReadSupported(protocol: Protocol): void {
  if (protocol.minReaderVersion > 3) {
    throw unsupported(`delta protocol: expected reader version <= 3, found ${protocol.minReaderVersion}`);
  }
  if (protocol.minReaderVersion === 3) {
    const missing = (protocol.readerFeatures ?? []).filter((f) => !SUPPORTED_READER_FEATURES.has(f));
    if (missing.length > 0) {
      throw unsupported(`delta protocol: reader features [${missing.join(', ')}] are not supported (supported: ${[...SUPPORTED_READER_FEATURES].join(', ')})`);
    }
  }
}
