import { newUuid } from '../../core/ids.ts';
import { TwinlakeError } from '../../core/errors.ts';
import { joinUri } from '../../core/uri.ts';
import type { FileIO } from '../../io/file-io.ts';
import { encodeManifestList, partitionSummaries } from '../../format/iceberg/manifest-list.ts';
import { deleteFileKey, partitionType } from '../../format/iceberg/manifest.ts';
import { partitionIdentity, summarize } from '../../format/iceberg/snapshot-summary.ts';
import { currentSnapshot, isUnpartitioned, specById } from '../../format/iceberg/table-metadata.ts';
import type { DataFile, FieldSummary, ManifestEntry, ManifestFile, Operation, PartitionSpec, Schema, Snapshot, TableMetadata } from '../../format/iceberg/types.ts';
import { avroCodec, encodeManifestFile, forgetAvroFiles, readManifestEntries, readManifestList, syncMarker, writeAvroFile } from './manifest-io.ts';
import { intProp, Props, boolProp } from '../../format/dual/table-properties.ts';
import type { SnapshotChanges } from '../../format/dual/projection.ts';

/**
 * Builds one Iceberg snapshot on top of a base metadata (spec §Snapshots, §Manifests,
 * §Manifest Lists). The manifest of added files does not depend on the parent (its entries inherit
 * snapshot ID and sequence number, spec §Sequence Number Inheritance), so it is written once and
 * reused when a lost compare-and-swap makes us rebuild the snapshot on a newer parent; only the
 * manifest list (and, for overwrites, the manifest of deleted files) is rebuilt.
 */
export interface SnapshotChange {
  operation: Operation;
  added: DataFile[];
  /** Remove every live data file of the parent (overwrite). */
  replaceAll: boolean;
  /**
   * Remove these data files (paths) of the parent: copy-on-write merges and deletes. Every named
   * file must still be live in the parent, or the snapshot is refused as a conflict.
   */
  removeFiles?: ReadonlySet<string>;
  /** Row-level delete files (deletion vectors, position delete files) this change adds. */
  addedDeletes?: DataFile[];
  /** The data files a merge or delete changes, and the deletes it planned them with. */
  rowDeletes?: RowDeletesBasis;
  /**
   * Extra snapshot summary entries: what the change was (`twinlake.operation`: merge, delete,
   * alter) and its parameters, which the Delta version mirroring the snapshot is derived from.
   */
  summary?: Record<string, string>;
}

/**
 * What a merge or delete knew of the deletes of the data files it touches. The delete files it
 * found applying to them are removed in this snapshot (replaced by its own, or moot with the data
 * file). A commit since then that removed a touched data file, or added a delete file that may
 * apply to one, is a conflict: the change was planned on deletes that are no longer the whole
 * story (spec §Scan Planning scope rules; at most one deletion vector per data file, §Deletion
 * Vectors).
 */
export interface RowDeletesBasis {
  /** Touched data file path → the delete files (`deleteFileKey`) that applied to it. */
  replaced: ReadonlyMap<string, readonly string[]>;
  /** The partitions (`partitionIdentity`) of the touched data files. */
  partitions: ReadonlySet<string>;
  /** The table's last sequence number when the change was planned: delete files above it are new. */
  plannedAt: number;
}

/** What depends on the base a snapshot is built on: its schema and summary extras. */
export interface SnapshotBasis {
  schema: Schema;
  /** May still be worked out (a probe of the Delta log) while the manifests are written. */
  summaryExtra: Record<string, string> | Promise<Record<string, string>>;
  /**
   * Hand the snapshot out as soon as its files are encoded and their writes started, not once
   * they are durable: the caller then MUST NOT let a commit naming them become visible before
   * `ProducedSnapshot.durable` resolves (the catalog writes its metadata file meanwhile).
   */
  deferDurable?: boolean;
}

export interface ProducedSnapshot {
  snapshot: Snapshot;
  /** Files this attempt wrote that must be deleted if its commit is not accepted. */
  attemptFiles: string[];
  removed: DataFile[];
  /** Resolves once every Avro file the snapshot names is durable; rejects when a write failed. */
  durable: Promise<void>;
  /**
   * The data files the snapshot added and removed, as its manifests' ADDED and DELETED entries
   * say, for the Delta version that mirrors it; only for a snapshot without delete files (whose
   * Delta twin also needs deletion vector descriptors).
   */
  changes?: SnapshotChanges;
}

const CONFLICT = 'commit-conflict';

export class SnapshotProducer {
  private addedManifest?: WrittenManifest;
  /** Manifests of the added delete files, one per partition spec; written once like the data one. */
  private addedDeleteManifests?: WrittenManifest[];
  /** Every Avro file written, so a failed write can remove them all. */
  readonly written: string[] = [];
  /**
   * Manifests read so far, by path: a manifest never changes once written, and one snapshot (and
   * its rebuilds after a lost compare-and-swap) reads the same ones in several steps.
   */
  private readonly entryCache = new Map<string, Promise<ManifestEntry[]>>();
  /**
   * The writes of the Avro files, started as each is encoded: a manifest's list entry needs only
   * its length, so the manifests and the list are written (and fsynced) at the same time, and the
   * snapshot is handed out only once all of them are durable. A failed write stays here and fails
   * every attempt that would name its file.
   */
  private readonly writes: Promise<void>[] = [];
  /** The same writes by file: a manifest this snapshot wrote is read back only once it is whole. */
  private readonly writing = new Map<string, Promise<void>>();

  constructor(
    private readonly io: FileIO,
    readonly snapshotId: bigint,
    readonly change: SnapshotChange,
  ) {}

  async produce(base: TableMetadata, nowMs: number, basis: SnapshotBasis): Promise<ProducedSnapshot> {
    try {
      return await this.build(base, nowMs, basis);
    } catch (e) {
      // No write may land after the caller removes this attempt's files.
      await Promise.allSettled(this.writes);
      throw e;
    }
  }

  private async build(base: TableMetadata, nowMs: number, basis: SnapshotBasis): Promise<ProducedSnapshot> {
    const parent = currentSnapshot(base);
    const sequenceNumber = base['last-sequence-number'] + 1;
    const spec = specById(base, base['default-spec-id']);
    const metadataDir = joinUri(base.location, 'metadata');
    const attemptFiles: string[] = [];
    const manifests: ManifestFile[] = [];
    const removed: DataFile[] = [];
    const removedDeletes: DataFile[] = [];

    // The manifest of added files depends on nothing the parent holds: its write starts first.
    if (this.change.added.length > 0) {
      const entries: ManifestEntry[] = this.change.added.map((f) => ({ status: 1, 'snapshot-id': this.snapshotId, 'data-file': f }));
      this.addedManifest ??= await this.writeOwn(base, { spec, schema: basis.schema, content: 0, entries }, 'm0');
      manifests.push(listEntry(this.addedManifest, this.snapshotId, sequenceNumber));
    }

    const parentManifests = parent ? await readManifestList(this.io, parent['manifest-list'], parent['snapshot-id']) : [];

    if (this.change.replaceAll) {
      // Every live file of the parent becomes a DELETED entry of this snapshot; its sequence
      // numbers are kept, as the spec requires for deleted entries.
      const deletedEntries: ManifestEntry[] = [];
      const lists = await Promise.all(parentManifests.map((m) => this.entries(base, m)));
      for (const list of lists) {
        for (const e of list) {
          if (e.status === 2) continue;
          deletedEntries.push({ ...e, status: 2, 'snapshot-id': this.snapshotId });
          (e['data-file'].content === 0 ? removed : removedDeletes).push(e['data-file']);
        }
      }
      // A manifest holds one spec and one content type: group the deleted entries accordingly.
      const groups = new Map<string, ManifestEntry[]>();
      for (const e of deletedEntries) {
        const key = `${e['data-file']['spec-id']}/${e['data-file'].content === 0 ? 0 : 1}`;
        groups.set(key, [...(groups.get(key) ?? []), e]);
      }
      for (const [key, group] of groups) {
        const [specId, content] = key.split('/').map(Number) as [number, 0 | 1];
        const written = await this.writeOwn(base, { spec: specById(base, specId), schema: basis.schema, content, entries: group }, 'm1', attemptFiles);
        manifests.push(listEntry(written, this.snapshotId, sequenceNumber));
      }
    } else if (this.change.removeFiles && this.change.removeFiles.size > 0) {
      manifests.push(...(await this.rewriteWithout(base, parentManifests, this.change.removeFiles, removed, attemptFiles, basis.schema)));
    } else {
      manifests.push(...(await this.maybeMerge(base, parentManifests, attemptFiles, basis.schema)));
    }

    if (this.change.rowDeletes && this.change.rowDeletes.replaced.size > 0) {
      await this.checkDataFilesLive(base, manifests);
      const replaced = await this.replaceDeletes(base, manifests, removedDeletes, attemptFiles, basis.schema);
      manifests.length = 0;
      manifests.push(...replaced);
    }
    manifests.unshift(...(await this.addedDeletesManifests(base, sequenceNumber, basis.schema)));

    const rowLineage = base['format-version'] >= 3 ? assignFirstRowIds(manifests, base['next-row-id'] ?? 0) : undefined;
    if (rowLineage) manifests.splice(0, manifests.length, ...rowLineage.manifests);

    const listUri = joinUri(metadataDir, `snap-${this.snapshotId}-${sequenceNumber}-${newUuid()}.avro`);
    const listBytes = encodeManifestList({
      formatVersion: base['format-version'],
      snapshotId: this.snapshotId,
      parentSnapshotId: parent?.['snapshot-id'],
      sequenceNumber,
      ...(rowLineage ? { firstRowId: rowLineage.firstRowId } : {}),
      manifests,
      syncMarker: syncMarker(),
      codec: avroCodec(base),
    });
    this.written.push(listUri);
    attemptFiles.push(listUri);
    this.startWrite(listUri, listBytes);
    const durable = Promise.all(this.writes).then(() => undefined);
    // Awaited by the caller (deferDurable) or here; never unhandled.
    durable.catch(() => undefined);
    if (!basis.deferDurable) await durable;

    const summary = summarize({
      operation: this.change.operation,
      added: [...this.change.added, ...(this.change.addedDeletes ?? [])],
      removed: [...removed, ...removedDeletes],
      previous: parent?.summary,
      extra: { ...(await basis.summaryExtra), ...this.change.summary },
    });
    const snapshot: Snapshot = {
      'snapshot-id': this.snapshotId,
      ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
      'sequence-number': sequenceNumber,
      'timestamp-ms': nowMs,
      'manifest-list': listUri,
      summary,
      'schema-id': basis.schema['schema-id'],
      ...(rowLineage ? { 'first-row-id': rowLineage.firstRowId, 'added-rows': rowLineage.addedRows } : {}),
    };
    const plain = (this.change.addedDeletes?.length ?? 0) === 0 && removedDeletes.length === 0 && this.change.rowDeletes === undefined;
    const changes: SnapshotChanges | undefined = plain ? { added: this.change.added, removed, addedDeletes: [], removedDeletes: [], deleteTargets: [] } : undefined;
    return { snapshot, attemptFiles, removed, durable, ...(changes ? { changes } : {}) };
  }

  /**
   * Keeps the manifest list short with tiered merging: a manifest's tier is how many times its
   * entry count has grown by the fan-out (`commit.manifest.min-count-to-merge`, default 10: tier 0
   * holds fewer than 10 entries, tier 1 fewer than 100, ...). When a tier holds fan-out manifests,
   * they are merged into one of the next tier. A merge reads only manifests of one tier, so neither
   * a commit nor a merge grows with the table's history, and the list stays near fan-out × tiers.
   */
  private async maybeMerge(base: TableMetadata, parentManifests: ManifestFile[], attemptFiles: string[], schema: Schema): Promise<ManifestFile[]> {
    const enabled = boolProp(base.properties, Props.manifestMergeEnabled, true);
    const fanOut = Math.max(2, intProp(base.properties, Props.manifestMinCountToMerge, 10));
    const specId = base['default-spec-id'];
    const entryCount = (m: ManifestFile) => m['added-files-count'] + m['existing-files-count'] + m['deleted-files-count'];
    const tierOf = (m: ManifestFile) => Math.floor(Math.log(Math.max(1, entryCount(m))) / Math.log(fanOut) + 1e-9);
    const tiers = new Map<number, ManifestFile[]>();
    for (const m of parentManifests) {
      if (m.content !== 0 || m['partition-spec-id'] !== specId) continue;
      const t = tierOf(m);
      tiers.set(t, [...(tiers.get(t) ?? []), m]);
    }
    // The manifest of this commit's own files is a tier-0 manifest too.
    const full = [...tiers.keys()].sort((x, y) => x - y).find((t) => (tiers.get(t)!.length + (t === 0 ? 1 : 0)) >= fanOut);
    if (!enabled || full === undefined) return parentManifests;
    const mergeable = tiers.get(full)!;
    if (mergeable.length < 2) return parentManifests;

    const spec = specById(base, specId);
    const entries: ManifestEntry[] = [];
    for (const list of await Promise.all(mergeable.map((m) => this.entries(base, m)))) {
      for (const e of list) {
        if (e.status === 2) continue;
        entries.push({ ...e, status: 0 });
      }
    }
    const written = await this.writeOwn(base, { spec, schema, content: 0, entries }, 'm2', attemptFiles);
    const merged = listEntry(written, this.snapshotId, base['last-sequence-number'] + 1);
    return [merged, ...parentManifests.filter((m) => !mergeable.includes(m))];
  }

  /**
   * The parent's manifests with `paths` marked DELETED (spec §Manifests: deleted entries keep their
   * sequence numbers); manifests holding none of them are reused as they are.
   */
  private async rewriteWithout(
    base: TableMetadata,
    parentManifests: ManifestFile[],
    paths: ReadonlySet<string>,
    removed: DataFile[],
    attemptFiles: string[],
    schema: Schema,
  ): Promise<ManifestFile[]> {
    const out: ManifestFile[] = [];
    const found = new Set<string>();
    const entryLists = await Promise.all(parentManifests.map((m) => (m.content === 0 ? this.entries(base, m) : Promise.resolve([]))));
    for (let i = 0; i < parentManifests.length; i++) {
      const m = parentManifests[i]!;
      const entries = entryLists[i]!;
      if (m.content !== 0 || !entries.some((e) => e.status !== 2 && paths.has(e['data-file']['file-path']))) {
        out.push(m);
        continue;
      }
      const live = entries.filter((e) => e.status !== 2);
      const rewritten = await this.rewriteManifest(base, m, live, (f) => paths.has(f['file-path']), schema, attemptFiles);
      for (const f of rewritten.removed) found.add(f['file-path']);
      removed.push(...rewritten.removed);
      out.push(rewritten.manifest);
    }
    const missing = [...paths].filter((p) => !found.has(p));
    if (missing.length > 0) {
      throw new TwinlakeError('commit-conflict', `iceberg: ${missing.length} file(s) this change removes are no longer in the table (first: ${missing[0]})`, { missing });
    }
    return out;
  }

  /** The manifests of the change's delete files (their sequence number is this snapshot's). */
  private async addedDeletesManifests(base: TableMetadata, sequenceNumber: number, schema: Schema): Promise<ManifestFile[]> {
    const files = this.change.addedDeletes ?? [];
    if (files.length === 0) return [];
    if (!this.addedDeleteManifests) {
      const bySpec = new Map<number, DataFile[]>();
      for (const f of files) bySpec.set(f['spec-id'], [...(bySpec.get(f['spec-id']) ?? []), f]);
      this.addedDeleteManifests = [];
      for (const [specId, group] of bySpec) {
        const entries: ManifestEntry[] = group.map((f) => ({ status: 1, 'snapshot-id': this.snapshotId, 'data-file': f }));
        this.addedDeleteManifests.push(await this.writeOwn(base, { spec: specById(base, specId), schema, content: 1, entries }, 'd0'));
      }
    }
    return this.addedDeleteManifests.map((m) => listEntry(m, this.snapshotId, sequenceNumber));
  }

  /** Every data file whose deletes this change replaces must still be live (a removed one is a conflict). */
  private async checkDataFilesLive(base: TableMetadata, manifests: ManifestFile[]): Promise<void> {
    const wanted = new Set([...this.change.rowDeletes!.replaced.keys()].filter((p) => !this.change.removeFiles?.has(p)));
    if (wanted.size === 0) return;
    const lists = await Promise.all(manifests.filter((m) => m.content === 0).map((m) => this.entries(base, m)));
    for (const entries of lists) for (const e of entries) if (e.status !== 2) wanted.delete(e['data-file']['file-path']);
    if (wanted.size > 0) {
      throw new TwinlakeError(CONFLICT, `iceberg: ${wanted.size} data file(s) this change deletes rows from are no longer in the table (first: ${[...wanted][0]})`);
    }
  }

  /**
   * The delete manifests with the replaced delete files marked DELETED. A replaced one already
   * gone, or a newer delete file that may apply to a touched data file, means a concurrent commit
   * changed that file's deletes: a conflict (see `RowDeletesBasis`).
   */
  private async replaceDeletes(
    base: TableMetadata,
    manifests: ManifestFile[],
    removedDeletes: DataFile[],
    attemptFiles: string[],
    schema: Schema,
  ): Promise<ManifestFile[]> {
    const { replaced, partitions, plannedAt } = this.change.rowDeletes!;
    const toRemove = new Set([...replaced.values()].flat());
    const found = new Set<string>();
    const out: ManifestFile[] = [];
    const lists = await Promise.all(manifests.map((m) => (m.content === 1 ? this.entries(base, m) : Promise.resolve([]))));
    for (let i = 0; i < manifests.length; i++) {
      const m = manifests[i]!;
      const entries = lists[i]!.filter((e) => e.status !== 2);
      for (const e of entries) {
        const f = e['data-file'];
        if (toRemove.has(deleteFileKey(f))) continue;
        const ref = f['referenced-data-file'];
        // A second deletion vector for a touched file is never allowed, however it got there.
        if (ref !== undefined && replaced.has(ref) && f['file-format'].toUpperCase() === 'PUFFIN') {
          throw new TwinlakeError(CONFLICT, `iceberg: ${ref} has a deletion vector this change did not plan with (${f['file-path']})`);
        }
        if ((e['sequence-number'] ?? 0) <= plannedAt) continue;
        // A newer delete file applies to a touched file if it names it, or names no file and
        // shares its partition, or is an equality delete of an unpartitioned spec.
        const applies =
          ref !== undefined
            ? replaced.has(ref)
            : partitions.has(partitionIdentity(f)) || (f.content === 2 && isUnpartitioned(specById(base, f['spec-id'])));
        if (applies) throw new TwinlakeError(CONFLICT, `iceberg: a concurrent commit added deletes (${f['file-path']}) for a file this change touches`);
      }
      if (m.content !== 1 || !entries.some((e) => toRemove.has(deleteFileKey(e['data-file'])))) {
        out.push(m);
        continue;
      }
      const rewritten = await this.rewriteManifest(base, m, entries, (f) => toRemove.has(deleteFileKey(f)), schema, attemptFiles);
      for (const f of rewritten.removed) found.add(deleteFileKey(f));
      removedDeletes.push(...rewritten.removed);
      out.push(rewritten.manifest);
    }
    const missing = [...toRemove].filter((p) => !found.has(p));
    if (missing.length > 0) throw new TwinlakeError(CONFLICT, `iceberg: ${missing.length} delete file(s) this change replaces are no longer in the table (first: ${missing[0]})`);
    return out;
  }

  /**
   * Writes a manifest's live `entries` again: those `remove` picks become DELETED by this snapshot
   * (spec §Manifests: deleted entries keep their sequence numbers), the rest EXISTING.
   */
  private async rewriteManifest(
    base: TableMetadata,
    m: ManifestFile,
    entries: ManifestEntry[],
    remove: (f: DataFile) => boolean,
    schema: Schema,
    attemptFiles: string[],
  ): Promise<{ manifest: ManifestFile; removed: DataFile[] }> {
    const rewritten = entries.map((e): ManifestEntry => (remove(e['data-file']) ? { ...e, status: 2, 'snapshot-id': this.snapshotId } : { ...e, status: 0 }));
    const written = await this.writeOwn(base, { spec: specById(base, m['partition-spec-id']), schema, content: m.content === 0 ? 0 : 1, entries: rewritten }, 'm3', attemptFiles);
    const removed = rewritten.filter((e) => e.status === 2).map((e) => e['data-file']);
    return { manifest: listEntry(written, this.snapshotId, base['last-sequence-number'] + 1), removed };
  }

  /** Writes a manifest of this snapshot; `attemptFiles` when it belongs to this attempt only. */
  private async writeOwn(
    base: TableMetadata,
    m: Omit<WrittenManifest, 'uri' | 'length' | 'partitions'>,
    suffix: string,
    attemptFiles?: string[],
  ): Promise<WrittenManifest> {
    const uri = joinUri(base.location, 'metadata', `${newUuid()}-${suffix}.avro`);
    const bytes = encodeManifestFile(base, m);
    this.written.push(uri);
    attemptFiles?.push(uri);
    this.startWrite(uri, bytes);
    return { ...m, uri, length: bytes.length, partitions: summaries(m.spec, m.schema, m.entries.map((e) => e['data-file'])) };
  }

  private startWrite(uri: string, bytes: Uint8Array): void {
    const write = writeAvroFile(this.io, uri, bytes);
    // Awaited with the manifest list (or settled when the attempt fails); never unhandled.
    write.catch(() => undefined);
    this.writes.push(write);
    this.writing.set(uri, write);
  }

  private entries(base: TableMetadata, m: ManifestFile): Promise<ManifestEntry[]> {
    let pending = this.entryCache.get(m['manifest-path']);
    if (!pending) {
      const written = this.writing.get(m['manifest-path']);
      pending = written ? written.then(() => readManifestEntries(this.io, m, base)) : readManifestEntries(this.io, m, base);
      this.entryCache.set(m['manifest-path'], pending);
      pending.catch(() => this.entryCache.delete(m['manifest-path']));
    }
    return pending;
  }

  /** Once every write started so far has ended: a file removed before its write ends would land again. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.writes);
  }

  /** Removes every file this producer wrote (the write failed or was abandoned). */
  async abandon(): Promise<void> {
    await Promise.allSettled(this.writes);
    forgetAvroFiles(this.io, this.written);
    await this.io.deleteQuietly(this.written);
  }
}

/** A manifest this snapshot wrote, with what its manifest-list entry is made from. */
interface WrittenManifest {
  uri: string;
  length: number;
  spec: PartitionSpec;
  schema: Schema;
  content: 0 | 1;
  entries: ManifestEntry[];
  partitions: FieldSummary[];
}

/**
 * The manifest-list entry of a manifest this snapshot wrote (spec §Manifest Lists): file and row
 * counts by entry status; the minimum data sequence number of its entries (ADDED ones take this
 * snapshot's, by inheritance).
 */
function listEntry(m: WrittenManifest, snapshotId: bigint, sequenceNumber: number): ManifestFile {
  const files = (status: number) => m.entries.filter((e) => e.status === status).map((e) => e['data-file']);
  const [existing, added, deleted] = [files(0), files(1), files(2)];
  const rows = (fs: DataFile[]) => sum(fs.map((f) => f['record-count']));
  return {
    'manifest-path': m.uri,
    'manifest-length': m.length,
    'partition-spec-id': m.spec['spec-id'],
    content: m.content,
    'sequence-number': sequenceNumber,
    'min-sequence-number': minOf(m.entries.map((e) => (e.status === 1 ? sequenceNumber : (e['sequence-number'] ?? sequenceNumber))), sequenceNumber),
    'added-snapshot-id': snapshotId,
    'added-files-count': added.length,
    'existing-files-count': existing.length,
    'deleted-files-count': deleted.length,
    'added-rows-count': rows(added),
    'existing-rows-count': rows(existing),
    'deleted-rows-count': rows(deleted),
    partitions: m.partitions,
  };
}

function sum(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}

/** Manifest-list partition summaries (spec §Manifest Lists) of the files a manifest holds. */
function summaries(spec: PartitionSpec, schema: Schema, files: DataFile[]): FieldSummary[] {
  if (spec.fields.length === 0) return [];
  return partitionSummaries(partitionType(spec, schema), files.map((f) => f.partition));
}

/**
 * spec §First Row ID Assignment (v3): data manifests without a `first_row_id` get one, counting on
 * from the table's `next-row-id` by each one's added and existing rows (the spec's simple, valid
 * upper bound); the snapshot records where it started and how many IDs it reserved.
 */
function assignFirstRowIds(manifests: ManifestFile[], nextRowId: number): { manifests: ManifestFile[]; firstRowId: number; addedRows: number } {
  let next = nextRowId;
  const out = manifests.map((m) => {
    if (m.content !== 0 || m['first-row-id'] !== undefined) return m;
    const assigned = { ...m, 'first-row-id': next };
    next += m['added-rows-count'] + m['existing-rows-count'];
    return assigned;
  });
  return { manifests: out, firstRowId: nextRowId, addedRows: next - nextRowId };
}

function minOf(xs: number[], empty: number): number {
  if (xs.length === 0) return empty;
  let m = xs[0]!;
  for (const x of xs) if (x < m) m = x;
  return m;
}
