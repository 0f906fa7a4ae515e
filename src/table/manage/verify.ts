import { mapLimit } from '../../core/concurrency.ts';
import { dataInvalid, errorMessage, isTwinlakeError } from '../../core/errors.ts';
import { joinUri, relativeTo } from '../../core/uri.ts';
import { type Action, type AddFile, checkpointPath, commitPath, parseCommit, parseLogFileName, serializeCommit } from '../../format/delta/actions.ts';
import { parseLastCheckpoint } from '../../format/delta/checkpoint.ts';
import { deletionVectorLocation, inlineDeletionVector, readDeletionVectorFile } from '../../format/delta/deletion-vector.ts';
import { findCommitInfo, replay } from '../../format/delta/replay.ts';
import { parseStats } from '../../format/delta/stats.ts';
import type { RoaringBitmap64 } from '../../format/roaring.ts';
import { applicableDeletes } from '../../format/iceberg/scan.ts';
import { currentSnapshot } from '../../format/iceberg/table-metadata.ts';
import type { Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { writeDeltaCheckpoint } from '../delta/delta-checkpoint.ts';
import { dataFileUri, decodeCheckpoint, deltaLogFiles, deltaLogTail, readDeltaSnapshot } from '../delta/delta-log.ts';
import { catchUpDelta, snapshotVersion } from '../delta/delta-projection.ts';
import { checkpointInterval } from '../../format/dual/delta-metadata.ts';
import { creationActions } from '../../format/dual/projection.ts';
import { DELTA_START_KEY, deltaVersionOf } from '../../format/dual/summary-keys.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { expectedVersionHint, versionHintUri } from '../read/metadata-locator.ts';
import { existingDeletes } from '../merge/row-deletes.ts';
import { withEngineFiles } from '../read/read-cache.ts';
import type { TableContext } from '../table-context.ts';
import { tableFormats } from '../../format/dual/table-properties.ts';

/**
 * Checks that a table's files are whole and that its two formats agree (DESIGN.md §1: the Delta
 * log is a projection of the Iceberg lineage), and repairs what Iceberg determines: a Delta commit
 * from the snapshot it mirrors, a checkpoint from the log, the version hint from the catalog.
 * Writes and `sync` run the structural part; `verify` runs everything.
 */

export type FindingKind =
  // structure: files that do not parse or are missing
  | 'delta-commit-empty'
  | 'delta-commit-unparsable'
  | 'delta-commit-missing'
  | 'delta-checkpoint-unreadable'
  | 'delta-checkpoint-differs'
  | 'delta-checkpoint-missing'
  | 'delta-last-checkpoint'
  | 'version-hint-missing'
  | 'version-hint-missing-file'
  | 'version-hint-behind'
  | 'version-hint-ahead'
  | 'table-file-damaged'
  // drift: the formats disagree
  | 'delta-commit-differs'
  | 'delta-behind'
  | 'snapshot-not-mirrored'
  | 'file-missing-in-delta'
  | 'file-missing-in-iceberg'
  | 'record-count'
  | 'deletes'
  | 'row-count'
  | 'delta-unreadable';

export interface Finding {
  kind: FindingKind;
  /** The file at fault, relative to the table location. */
  file?: string;
  version?: number;
  snapshotId?: bigint;
  expected: string;
  found: string;
  /** What the repair did about it. */
  repaired?: string;
  /** Why it cannot be repaired (nothing to derive it from). */
  unrepairable?: string;
}

export interface VerifyOptions {
  /** Also compare every retained snapshot with the Delta version mirroring it. */
  allVersions?: boolean;
  /** Repair what is derivable and report what was done. */
  repair?: boolean;
}

export interface VerifyResult {
  table: string;
  /** True when nothing is left wrong (after the repairs, with `repair`). */
  ok: boolean;
  /** Everything found, each with what the repair did. */
  findings: Finding[];
  /** What is still wrong after the repairs (the findings themselves without `repair`). */
  remaining: Finding[];
  checked: { snapshots: number; deltaVersions: number };
}

/** The table a check looks at: Iceberg metadata when the table keeps it, and its formats. */
export interface VerifySubject {
  ctx: Pick<TableContext, 'io' | 'session' | 'catalog' | 'ident'>;
  location: string;
  metadata?: TableMetadata;
  metadataLocation?: string;
  delta: boolean;
}

/** One line per finding, naming the file: `delta log: _delta_log/…3.json: expected …, found …`. */
export function describeFinding(f: Finding): string {
  const where = f.file ?? (f.version !== undefined ? `delta version ${f.version}` : f.snapshotId !== undefined ? `snapshot ${f.snapshotId}` : 'table');
  const domain = f.kind.startsWith('version-hint') ? 'iceberg metadata' : f.kind.startsWith('delta-') ? 'delta log' : 'verify';
  const at = f.snapshotId !== undefined && f.file !== undefined ? ` (snapshot ${f.snapshotId})` : '';
  return `${domain}: ${where}${at}: ${f.kind}: expected ${f.expected}, found ${f.found}`;
}

export async function verifyTable(subject: VerifySubject, opts: VerifyOptions = {}): Promise<VerifyResult> {
  const first = await inspect(subject, opts);
  let remaining = first.findings;
  if (opts.repair && first.findings.length > 0) {
    await repair(subject, first.findings, first.log, { throwUnrepairable: false });
    const metadata = subject.metadata ? (await subject.ctx.catalog.loadTable(subject.ctx.ident)) : undefined;
    const again = await inspect({ ...subject, ...(metadata ? { metadata: metadata.metadata, metadataLocation: metadata.metadataLocation } : {}) }, opts);
    remaining = again.findings;
  }
  return {
    table: [...subject.ctx.ident.namespace, subject.ctx.ident.name].join('.'),
    ok: remaining.length === 0,
    findings: first.findings,
    remaining,
    checked: first.checked,
  };
}

/**
 * The structural checks of writes and `sync`: the version hint, and the Delta commits and
 * checkpoints a reader replays (`tail`, the bounded part a write reads) or all of them. Each
 * finding is warned with its file and repaired from Iceberg; one that cannot be derived throws.
 */
export async function repairTableFiles(subject: VerifySubject, warn: (m: string) => void, scope: 'tail' | 'all'): Promise<Finding[]> {
  const findings: Finding[] = [];
  if (subject.metadataLocation) {
    const hint = await checkVersionHint(subject);
    if (hint && (scope === 'all' || (await settledHint(subject)))) findings.push(hint);
  }
  let log: LogState | undefined;
  if (subject.delta) log = await inspectDeltaLog(subject, scope, findings);
  if (findings.length === 0) return findings;
  await repair(subject, findings, log, { throwUnrepairable: true });
  for (const f of findings) warn(`${describeFinding(f)}; ${f.repaired ?? 'not repaired'}`);
  return findings;
}

// --- inspection --------------------------------------------------------------------------------

interface LogState {
  files: Map<string, number>;
  /** Commits that parsed, by version. */
  commits: Map<number, Action[]>;
  commitVersions: number[];
  /** Versions with a readable classic (single-file Parquet) checkpoint. */
  checkpoints: number[];
  interval: number;
}

async function inspect(subject: VerifySubject, opts: VerifyOptions): Promise<{ findings: Finding[]; log?: LogState; checked: VerifyResult['checked'] }> {
  const findings: Finding[] = [];
  if (subject.metadataLocation) {
    const hint = await checkVersionHint(subject);
    if (hint) findings.push(hint);
  }
  const current = subject.metadata && currentSnapshot(subject.metadata);
  if (current) await checkTableFiles(subject, current, findings);
  if (!subject.delta) return { findings, checked: { snapshots: subject.metadata?.snapshots.length ?? 0, deltaVersions: 0 } };
  const log = await inspectDeltaLog(subject, 'all', findings);
  let snapshots = 0;
  if (subject.metadata) snapshots = await checkDrift(subject, log, findings, opts);
  return { findings, log, checked: { snapshots, deltaVersions: log.commitVersions.length } };
}

/** What a Parquet and a Puffin file start and end with. */
const FILE_MAGIC: Record<string, string> = { parquet: 'PAR1', puffin: 'PFA1' };

/**
 * The data and delete files of the current snapshot against what the manifests record: the size
 * (a truncated file, or another file in its place) and the format's magic at both ends (a zeroed
 * or overwritten file). Nothing derives a data file's bytes, so these are reported, never repaired.
 */
async function checkTableFiles(subject: VerifySubject, snapshot: Snapshot, findings: Finding[]): Promise<void> {
  const { io } = subject.ctx;
  const live = await liveFiles(io, subject.metadata!, snapshot);
  const seen = new Set<string>();
  const files = [...live.data, ...live.deletes].filter((f) => !seen.has(f['file-path']) && seen.add(f['file-path']));
  await mapLimit(files, 16, async (f) => {
    const path = f['file-path'];
    const file = rel(subject.location, path);
    const at = { file, snapshotId: snapshot['snapshot-id'] };
    const head = await io.head(path);
    if (!head) return void findings.push({ kind: 'table-file-damaged', ...at, expected: `a file of ${f['file-size-in-bytes']} bytes`, found: 'no file' });
    if (head.size !== f['file-size-in-bytes']) {
      return void findings.push({ kind: 'table-file-damaged', ...at, expected: `${f['file-size-in-bytes']} bytes (file_size_in_bytes)`, found: `${head.size} bytes` });
    }
    const magic = FILE_MAGIC[f['file-format'].toLowerCase()];
    if (magic === undefined || head.size < 8) return;
    const { store, key } = io.storeAt(path);
    const [start, end] = await Promise.all([store.get(key, { offset: 0, length: 4 }), store.get(key, { offset: head.size - 4, length: 4 })]);
    const text = (b: Uint8Array) => Buffer.from(b).toString('latin1');
    if (text(start) !== magic || text(end) !== magic) {
      findings.push({ kind: 'table-file-damaged', ...at, expected: `a ${f['file-format']} file (${magic} at its start and end)`, found: `${JSON.stringify(text(start))} … ${JSON.stringify(text(end))}` });
    }
  });
}

async function checkVersionHint(subject: VerifySubject): Promise<Finding | undefined> {
  const { io } = subject.ctx;
  const expected = expectedVersionHint(subject.metadataLocation!);
  if (expected === undefined) return undefined;
  const uri = versionHintUri(subject.metadataLocation!);
  const file = rel(subject.location, uri);
  let text: string;
  try {
    text = (await io.readText(uri)).trim();
  } catch (e) {
    if (!isTwinlakeError(e, 'not-found')) throw e;
    return { kind: 'version-hint-missing', file, expected: String(expected), found: 'no file' };
  }
  const held = /^\d+$/.test(text) ? Number(text) : undefined;
  if (held === expected) return undefined;
  const base = { file, expected: `${expected} (the catalog's current metadata file, v${expected}.metadata.json)` };
  if (held === undefined) return { kind: 'version-hint-missing-file', ...base, found: text === '' ? 'an empty file' : JSON.stringify(text) };
  if (!(await io.exists(joinUri(uri.slice(0, uri.lastIndexOf('/')), `v${held}.metadata.json`)))) {
    return { kind: 'version-hint-missing-file', ...base, found: `${held}, whose v${held}.metadata.json does not exist` };
  }
  return { kind: held < expected ? 'version-hint-behind' : 'version-hint-ahead', ...base, found: String(held) };
}

/**
 * Whether a wrong hint is wrong for good. A committer moves the hint right after its pointer
 * swap, so a writer may see the pointer ahead of the hint (or, loaded earlier, behind it) for a
 * moment: the hint is checked again against a fresh pointer, and one just behind a metadata file
 * younger than the grace period is the committer's to move.
 */
async function settledHint(subject: VerifySubject): Promise<boolean> {
  const { metadataLocation } = await subject.ctx.catalog.loadTable(subject.ctx.ident);
  const again = await checkVersionHint({ ...subject, metadataLocation });
  if (!again) return false;
  if (again.kind !== 'version-hint-behind' && again.kind !== 'version-hint-missing') return true;
  const written = (await subject.ctx.io.head(metadataLocation))?.modified ?? 0;
  return Date.now() - written > HINT_GRACE_MS;
}

const HINT_GRACE_MS = 60_000;

const LOG_DIR = '_delta_log/';
const PARQUET_MAGIC = 'PAR1';

async function inspectDeltaLog(subject: VerifySubject, scope: 'tail' | 'all', findings: Finding[]): Promise<LogState> {
  const { store, key } = subject.ctx.io.storeAt(subject.location);
  const files = scope === 'tail' ? await deltaLogTail(store, key) : await deltaLogFiles(store, key);
  const commitVersions: number[] = [];
  const checkpointFiles = new Map<number, string[]>();
  for (const name of files.keys()) {
    const f = parseLogFileName(name);
    if (f?.kind === 'commit') commitVersions.push(f.version);
    else if (f?.kind === 'checkpoint') checkpointFiles.set(f.version, [...(checkpointFiles.get(f.version) ?? []), name]);
  }
  commitVersions.sort((a, b) => a - b);
  const latest = commitVersions.at(-1);
  const newestCheckpoint = Math.max(-1, ...checkpointFiles.keys());
  let interval = subject.metadata ? checkpointInterval(subject.metadata) : 10;
  // A write replays from the newest checkpoint; the commits before it are not its concern, and it
  // reads at most an interval's worth of them.
  const from = scope === 'all' ? -1 : Math.max(newestCheckpoint, (latest ?? 0) - interval);
  const log: LogState = { files, commits: new Map(), commitVersions, checkpoints: [], interval };

  const read = async (name: string) => store.get(`${prefixOf(key)}${name}`);
  await Promise.all(
    commitVersions
      .filter((v) => v >= from)
      .map(async (version) => {
        const file = commitPath(version);
        const bytes = await read(file.slice(LOG_DIR.length));
        const text = new TextDecoder().decode(bytes);
        if (text.trim() === '') {
          findings.push({ kind: 'delta-commit-empty', file, version, expected: 'the actions of the version', found: `${bytes.length === 0 ? 'an empty file' : `${bytes.length} bytes of whitespace`}` });
          return;
        }
        try {
          log.commits.set(version, parseCommit(text, file));
        } catch (e) {
          findings.push({ kind: 'delta-commit-unparsable', file, version, expected: 'one JSON action per line', found: errorMessage(e).replace(/^delta log: /, '') });
        }
      }),
  );
  if (latest !== undefined) {
    const first = scope === 'all' ? commitVersions[0]! : Math.max(commitVersions[0]!, from);
    const listed = new Set(commitVersions);
    for (let v = first; v < latest; v++) {
      if (!listed.has(v)) findings.push({ kind: 'delta-commit-missing', file: commitPath(v), version: v, expected: `commit ${v} between ${commitVersions[0]} and ${latest}`, found: 'no file' });
    }
  }
  // The newest metaData decides the interval of a Delta-only table.
  if (!subject.metadata) {
    const newest = [...log.commits.entries()].sort((a, b) => b[0] - a[0]).flatMap(([, actions]) => actions).find((a) => 'metaData' in a);
    if (newest && 'metaData' in newest) interval = log.interval = Number(newest.metaData.configuration['delta.checkpointInterval'] ?? 10) || 10;
  }

  for (const [version, names] of [...checkpointFiles.entries()].sort((a, b) => a[0] - b[0])) {
    if (scope === 'tail' && version !== newestCheckpoint) continue;
    const classic = names.length === 1 && names[0] === checkpointPath(version).slice(LOG_DIR.length);
    let actions: Action[] | undefined;
    let bad = false;
    for (const name of names) {
      const file = LOG_DIR + name;
      try {
        if (scope === 'tail' && name.endsWith('.parquet')) {
          // A write only needs to know the file is whole: a Parquet file starts and ends with PAR1,
          // which two small reads tell without fetching the checkpoint.
          const size = (await store.head(`${prefixOf(key)}${name}`))?.size ?? 0;
          const ends = size < 12 ? '' : (await Promise.all([store.get(`${prefixOf(key)}${name}`, { offset: 0, length: 4 }), store.get(`${prefixOf(key)}${name}`, { offset: size - 4, length: 4 })])).map((b) => new TextDecoder().decode(b)).join('');
          if (ends !== PARQUET_MAGIC + PARQUET_MAGIC) throw dataInvalid(`expected a Parquet file (PAR1 … PAR1), found ${size} bytes that are not`);
        } else {
          const decoded = await decodeCheckpoint(name, await read(name));
          if (classic) actions = decoded;
        }
      } catch (e) {
        bad = true;
        findings.push({ kind: 'delta-checkpoint-unreadable', file, version, expected: 'a checkpoint of the log', found: errorMessage(e).replace(/^delta checkpoint [^:]*: /, '') });
      }
    }
    if (bad) continue;
    if (classic) log.checkpoints.push(version);
    // A checkpoint must hold the state the log gives at its version.
    if (actions && commitVersions[0] === 0 && Array.from({ length: version + 1 }, (_, v) => log.commits.has(v)).every(Boolean)) {
      const fromLog = replay({ commits: Array.from({ length: version + 1 }, (_, v) => ({ version: v, actions: log.commits.get(v)! })) });
      const fromCheckpoint = replay({ checkpoint: { version, actions }, commits: [] });
      const a = stateKey(fromLog.files, fromLog.metadata.id, fromLog.protocol);
      const b = stateKey(fromCheckpoint.files, fromCheckpoint.metadata.id, fromCheckpoint.protocol);
      if (a.join('\n') !== b.join('\n')) {
        const missing = a.find((x) => !b.includes(x));
        const extra = b.find((x) => !a.includes(x));
        findings.push({
          kind: 'delta-checkpoint-differs',
          file: checkpointPath(version),
          version,
          expected: `the log's state at version ${version} (${fromLog.files.length} files)`,
          found: `${fromCheckpoint.files.length} files${missing ? `, without ${missing}` : ''}${extra ? `, with ${extra}` : ''}`,
        });
      }
    }
  }

  const lastFile = `${LOG_DIR}_last_checkpoint`;
  if (files.has('_last_checkpoint')) {
    const newest = log.checkpoints.at(-1);
    const want = newest === undefined ? 'no file (there is no checkpoint)' : `version ${newest}`;
    try {
      const parsed = parseLastCheckpoint(new TextDecoder().decode(await read('_last_checkpoint')), lastFile);
      if (!parsed.checksumValid) findings.push({ kind: 'delta-last-checkpoint', file: lastFile, expected: want, found: 'a checksum that does not match' });
      // Listed before `_last_checkpoint` was read: a checkpoint written in between is there.
      else if (!checkpointFiles.has(parsed.version) && !(await store.head(`${prefixOf(key)}${checkpointPath(parsed.version).slice(LOG_DIR.length)}`))) {
        findings.push({ kind: 'delta-last-checkpoint', file: lastFile, version: parsed.version, expected: want, found: `version ${parsed.version}, whose checkpoint does not exist` });
      }
    } catch (e) {
      findings.push({ kind: 'delta-last-checkpoint', file: lastFile, expected: want, found: errorMessage(e) });
    }
  }

  // The checkpoint due at the newest multiple of the interval, lost when a writer stopped between
  // the commit and its checkpoint. A write tolerates a fresh gap: the writer may be at it now.
  if (latest !== undefined) {
    const due = Math.floor(latest / interval) * interval;
    const dueFile = commitPath(due).slice(LOG_DIR.length);
    const age = Date.now() - (files.get(dueFile) ?? Date.now());
    if (due > 0 && !checkpointFiles.has(due) && files.has(dueFile) && (scope === 'all' || age > CHECKPOINT_GRACE_MS)) {
      findings.push({ kind: 'delta-checkpoint-missing', file: checkpointPath(due), version: due, expected: `a checkpoint at version ${due} (every ${interval} versions)`, found: 'no file' });
    }
  }
  return log;
}

/** How long after its commit a due checkpoint may still be on its way. */
const CHECKPOINT_GRACE_MS = 60_000;

function stateKey(files: AddFile[], id: string, protocol: unknown): string[] {
  return [`table ${id} ${JSON.stringify(protocol)}`, ...files.map((f) => `${f.path}${f.deletionVector ? ` dv ${f.deletionVector.pathOrInlineDv}@${f.deletionVector.offset ?? ''}` : ''}`).sort()];
}

/** Which Iceberg snapshot each parsed Delta version mirrors. */
function mirrors(log: LogState): Map<number, bigint> {
  const out = new Map<number, bigint>();
  for (const [v, actions] of log.commits) {
    const id = findCommitInfo(actions)?.icebergSnapshotId;
    if (id !== undefined && id !== null) out.set(v, BigInt(id as bigint));
  }
  return out;
}

async function checkDrift(subject: VerifySubject, log: LogState, findings: Finding[], opts: VerifyOptions): Promise<number> {
  const metadata = subject.metadata!;
  const versionOf = mirrors(log);
  const bySnapshot = new Map<bigint, number>();
  for (const [v, id] of versionOf) if (!bySnapshot.has(id) || bySnapshot.get(id)! < v) bySnapshot.set(id, v);

  // Each commit holds what its snapshot changed.
  for (const [version, id] of versionOf) {
    const snapshot = metadata.snapshots.find((s) => s['snapshot-id'] === id);
    if (!snapshot || deltaVersionOf(snapshot) !== version) continue;
    const derived = await snapshotVersion(subject.ctx.io, metadata, snapshot, version);
    const want = actionKeys(derived);
    const have = actionKeys(log.commits.get(version)!);
    // Sets: a commit of a large add-files holds 100,000 adds.
    const [wanted, had] = [new Set(want), new Set(have)];
    for (const k of want) if (!had.has(k)) findings.push({ kind: 'delta-commit-differs', file: commitPath(version), version, snapshotId: id, expected: k, found: 'no such action' });
    for (const k of have) if (!wanted.has(k)) findings.push({ kind: 'delta-commit-differs', file: commitPath(version), version, snapshotId: id, expected: 'no such action', found: k });
  }

  const latest = log.commitVersions.at(-1);
  const head = currentSnapshot(metadata);
  if (latest !== undefined && log.commits.has(latest)) {
    const mirrored = versionOf.get(latest);
    if (head && mirrored !== head['snapshot-id']) {
      findings.push({ kind: 'delta-behind', file: commitPath(latest), version: latest, snapshotId: head['snapshot-id'], expected: `the newest version to mirror the current snapshot ${head['snapshot-id']}`, found: mirrored === undefined ? 'a version that mirrors no snapshot' : `snapshot ${mirrored}` });
    }
    await compareState(subject, head, latest, findings);
  }
  let compared = 1;
  if (opts.allVersions) {
    for (const s of metadata.snapshots) {
      if (s === head) continue;
      const v = bySnapshot.get(s['snapshot-id']);
      if (v === undefined) {
        if (deltaVersionOf(s) !== undefined) findings.push({ kind: 'snapshot-not-mirrored', snapshotId: s['snapshot-id'], version: deltaVersionOf(s), expected: `a delta version mirroring snapshot ${s['snapshot-id']}`, found: 'none' });
        continue;
      }
      await compareState(subject, s, v, findings);
      compared++;
    }
  }
  return compared;
}

/** The adds (path and deletion vector) and removes of a commit, for comparing two commits. */
function actionKeys(actions: Action[]): string[] {
  const out: string[] = [];
  for (const a of actions) {
    if ('add' in a) out.push(`add ${a.add.path}${a.add.deletionVector ? ` with deletion vector ${a.add.deletionVector.pathOrInlineDv} (${a.add.deletionVector.cardinality} rows)` : ''}`);
    else if ('remove' in a) out.push(`remove ${a.remove.path}${a.remove.deletionVector ? ` with deletion vector ${a.remove.deletionVector.pathOrInlineDv}` : ''}`);
  }
  return out.sort();
}

/** The live files, deletes and rows of a snapshot against those of the Delta version mirroring it. */
async function compareState(subject: VerifySubject, snapshot: Snapshot | undefined, version: number, findings: Finding[]): Promise<void> {
  const { io } = subject.ctx;
  const metadata = subject.metadata!;
  const at = { version, ...(snapshot ? { snapshotId: snapshot['snapshot-id'] } : {}) };
  const { store, key } = io.storeAt(subject.location);
  let delta;
  try {
    delta = await readDeltaSnapshot(store, key, { version });
  } catch (e) {
    findings.push({ kind: 'delta-unreadable', ...at, expected: `delta version ${version} readable`, found: errorMessage(e) });
    return;
  }
  const live = snapshot ? await liveFiles(io, metadata, snapshot) : { data: [], deletes: [], sequenceNumbers: new Map() };
  const applicable = applicableDeletes(metadata, live.data, live.deletes, live.sequenceNumbers);
  const deltaFiles = new Map(delta.files.map((f) => [dataFileUri(subject.location, f.path), f]));
  let icebergRows = 0;
  let deltaRows = 0;
  const both: { file: (typeof live.data)[number]; add: AddFile }[] = [];
  for (const f of live.data) {
    const d = applicable(f);
    const deleted = (d?.dv?.['record-count'] ?? 0) + (d?.positionFiles ?? []).reduce((n, p) => n + p['record-count'], 0);
    icebergRows += f['record-count'] - deleted;
    const path = f['file-path'];
    const add = deltaFiles.get(path);
    const file = rel(subject.location, path);
    if (!add) {
      findings.push({ kind: 'file-missing-in-delta', file, ...at, expected: `live in delta version ${version}`, found: 'not live' });
      continue;
    }
    const records = add.stats ? parseStats(add.stats).numRecords : undefined;
    if (records !== undefined && records !== f['record-count']) findings.push({ kind: 'record-count', file, ...at, expected: `${f['record-count']} records (iceberg)`, found: `${records} (delta)` });
    if (d?.equality.length) continue; // Delta has no equality deletes; such tables are not projected.
    const cardinality = add.deletionVector?.cardinality ?? 0;
    if (cardinality !== deleted) findings.push({ kind: 'deletes', file, ...at, expected: `${deleted} deleted rows (iceberg)`, found: `${cardinality} (delta deletion vector)` });
    else if (deleted > 0) both.push({ file: f, add });
  }
  const livePaths = new Set(live.data.map((f) => f['file-path']));
  for (const [path, add] of deltaFiles) {
    deltaRows += (add.stats ? (parseStats(add.stats).numRecords ?? 0) : 0) - (add.deletionVector?.cardinality ?? 0);
    if (!livePaths.has(path)) {
      findings.push({ kind: 'file-missing-in-iceberg', file: rel(subject.location, path), ...at, expected: `live in iceberg snapshot ${snapshot?.['snapshot-id'] ?? '(none)'}`, found: 'not live' });
    }
  }
  if (icebergRows !== deltaRows) findings.push({ kind: 'row-count', ...at, expected: `${icebergRows} rows (iceberg)`, found: `${deltaRows} (delta)` });

  // Same number of deleted rows: the same positions too.
  if (both.length > 0) {
    // Position delete files are read by the engine: fetched first when the table is remote.
    const positionFiles = live.deletes.filter((d) => d.content === 1 && d['file-format'] === 'PARQUET').map((d) => d['file-path']);
    const positions = await withEngineFiles(subject.ctx as TableContext, positionFiles, (ctx) => existingDeletes(ctx, metadata, live, both.map((b) => b.file)));
    for (const { file, add } of both) {
      const dv = add.deletionVector!;
      const where = deletionVectorLocation(dv, subject.location);
      const fromDelta = where === undefined ? inlineDeletionVector(dv) : readDeletionVectorFile(await io.read(where), dv, where);
      const a = rangesOf(positions.get(file['file-path'])!.positions);
      const b = rangesOf(fromDelta);
      if (a !== b) findings.push({ kind: 'deletes', file: rel(subject.location, file['file-path']), ...at, expected: `deleted positions ${clip(a)} (iceberg)`, found: `${clip(b)} (delta)` });
    }
  }
}

function rangesOf(b: RoaringBitmap64): string {
  return [...b.ranges()].map(([lo, hi]) => (hi - lo === 1n ? String(lo) : `${lo}-${hi - 1n}`)).join(',');
}

function clip(s: string): string {
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

// --- repair ------------------------------------------------------------------------------------

/** The commit of `version` derived from Iceberg, or why there is none. */
async function derivedCommit(subject: VerifySubject, version: number): Promise<{ actions: Action[]; from: string } | { refused: string }> {
  const metadata = subject.metadata;
  if (!metadata) return { refused: 'the table keeps only the Delta format, so nothing else records this version' };
  const snapshot = metadata.snapshots.find((s) => deltaVersionOf(s) === version);
  if (snapshot) return { actions: await snapshotVersion(subject.ctx.io, metadata, snapshot, version), from: `iceberg snapshot ${snapshot['snapshot-id']}` };
  if (version === 0 && !metadata.snapshots.some((s) => s.summary[DELTA_START_KEY] === 'true')) {
    const created = metadata['metadata-log']?.[0]?.['timestamp-ms'] ?? Math.min(metadata['last-updated-ms'], ...metadata.snapshots.map((s) => s['timestamp-ms']));
    return { actions: creationActions(metadata, created), from: 'the iceberg table metadata' };
  }
  return { refused: `no retained iceberg snapshot mirrors delta version ${version}` };
}

async function repair(subject: VerifySubject, findings: Finding[], log: LogState | undefined, opts: { throwUnrepairable: boolean }): Promise<void> {
  const { io } = subject.ctx;
  const uri = (file: string) => joinUri(subject.location, file);
  const refuse = (f: Finding, why: string) => {
    f.unrepairable = why;
    if (opts.throwUnrepairable) throw dataInvalid(`${describeFinding(f)}; cannot repair it: ${why}`, { file: f.file });
  };

  for (const f of findings) {
    if (f.kind === 'table-file-damaged') refuse(f, 'nothing else holds its bytes: restore the file from a copy');
  }
  for (const f of findings) {
    if (!f.kind.startsWith('version-hint')) continue;
    // The catalog's pointer is the truth; read it again so a concurrent commit is not undone.
    const loaded = await subject.ctx.catalog.loadTable(subject.ctx.ident);
    const want = expectedVersionHint(loaded.metadataLocation);
    if (want === undefined) continue;
    await io.write(versionHintUri(loaded.metadataLocation), String(want));
    f.repaired = `wrote ${want} from the catalog's current metadata location`;
  }

  // Commits first: checkpoints are built from them.
  const rewritten = new Set<number>();
  for (const f of findings) {
    const commitKind = f.kind === 'delta-commit-empty' || f.kind === 'delta-commit-unparsable' || f.kind === 'delta-commit-missing' || f.kind === 'delta-commit-differs';
    if (!commitKind || f.version === undefined) continue;
    if (rewritten.has(f.version)) {
      f.repaired = `${commitPath(f.version)} rewritten`;
      continue;
    }
    const derived = await derivedCommit(subject, f.version);
    if ('refused' in derived) {
      refuse(f, derived.refused);
      continue;
    }
    // The file is garbage or says something its snapshot does not: the derived commit replaces it.
    await io.write(uri(commitPath(f.version)), serializeCommit(derived.actions));
    rewritten.add(f.version);
    f.repaired = `rewrote ${commitPath(f.version)} from ${derived.from}`;
  }

  if (subject.metadata && findings.some((f) => f.kind === 'delta-behind' || f.kind === 'snapshot-not-mirrored')) {
    const { written } = await catchUpDelta(io, subject.metadata);
    for (const f of findings) if (f.kind === 'delta-behind' || f.kind === 'snapshot-not-mirrored') f.repaired = written.length ? `wrote delta version(s) ${written.join(', ')}` : 'nothing to write';
  }

  // A rewritten commit invalidates the checkpoints after it.
  const stale = log ? log.checkpoints.filter((v) => [...rewritten].some((r) => r <= v)) : [];
  const checkpoints = new Map<number, Finding | undefined>(stale.map((v) => [v, undefined]));
  for (const f of findings) {
    if ((f.kind === 'delta-checkpoint-unreadable' || f.kind === 'delta-checkpoint-differs' || f.kind === 'delta-checkpoint-missing') && f.version !== undefined) checkpoints.set(f.version, f);
  }
  for (const [version, f] of checkpoints) {
    const file = checkpointPath(version);
    try {
      if (f?.kind !== 'delta-checkpoint-missing') await io.delete(uri(file));
      await writeDeltaCheckpoint(subject.ctx, subject.location, version);
      if (f) f.repaired = `rewrote ${file} from the log`;
    } catch (e) {
      if (f) refuse(f, `the log does not give version ${version} (${errorMessage(e)})`);
      else throw e;
    }
  }

  for (const f of findings) {
    if (f.kind !== 'delta-last-checkpoint') continue;
    await io.delete(uri(`${LOG_DIR}_last_checkpoint`));
    const newest = Math.max(-1, ...(log?.checkpoints ?? []), ...checkpoints.keys());
    if (newest >= 0) {
      await writeDeltaCheckpoint(subject.ctx, subject.location, newest);
      f.repaired = `rewrote it to name checkpoint ${newest}`;
    } else f.repaired = 'removed it (there is no checkpoint to name)';
  }
}

function prefixOf(key: string): string {
  return key === '' ? LOG_DIR : `${key.replace(/\/+$/, '')}/${LOG_DIR}`;
}

function rel(location: string, uri: string): string {
  return relativeTo(location, uri) ?? uri;
}

/** The subject of a table known to the catalog. */
export function catalogSubject(ctx: VerifySubject['ctx'], loaded: { metadata: TableMetadata; metadataLocation: string }): VerifySubject {
  return { ctx, location: loaded.metadata.location, metadata: loaded.metadata, metadataLocation: loaded.metadataLocation, delta: tableFormats(loaded.metadata.properties).includes('delta') };
}
