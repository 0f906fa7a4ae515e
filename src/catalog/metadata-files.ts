import { isTwinlakeError, TwinlakeError, unsupported } from '../core/errors.ts';
import { relativeTo } from '../core/uri.ts';
import { parseTableMetadata, serializeTableMetadataBytes } from '../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { LocalStore } from '../io/local-store.ts';
import { RetryingStore } from '../io/retrying-store.ts';
import type { ObjectStore } from '../io/object-store.ts';
import { formatTableIdentifier, type TableIdentifier } from './catalog.ts';

interface ParsedFile {
  metadata: TableMetadata;
  size: number;
  modified: number;
}

/** Parsed metadata files of local stores, shared by every catalog (every Lakehouse) of the process. */
const localParsed = new Map<string, ParsedFile>();

/**
 * The metadata files a pointer catalog (SQL, Glue) writes in the warehouse store: create-only
 * `v<N>.metadata.json` files, a `version-hint.text` beside them for path-based readers, and a
 * small cache of parsed files. The catalog's own row or entry is the truth; these are the files it
 * points at. `domain` starts every message ("sql catalog", "glue catalog").
 */
export class MetadataFiles {
  private readonly parsed: Map<string, ParsedFile>;
  /** Files just written whose size and time are still being read for `parsed` (see `write`). */
  private readonly remembering = new Map<string, Promise<void>>();

  constructor(
    private readonly store: ObjectStore,
    private readonly domain: string,
  ) {
    // A local file is the same file for every catalog of the process; another store's URIs may
    // name other files in another instance (two in-memory stores), and a wrapping store may answer
    // otherwise than the disk (one that injects faults), so each of those keeps its own.
    const disk = store instanceof RetryingStore ? store.inner : store;
    this.parsed = disk instanceof LocalStore ? localParsed : new Map();
  }

  keyOf(uri: string): string {
    const key = relativeTo(this.store.root, uri);
    if (key === undefined || key === '') {
      throw unsupported(`${this.domain}: location ${uri} is outside the warehouse store ${this.store.root}`, { uri });
    }
    return key;
  }

  /** `table` set: the file is the table's current metadata, so a missing file is corrupt state. */
  async read(uri: string, table?: TableIdentifier): Promise<TableMetadata> {
    await this.remembering.get(uri);
    const cached = this.parsed.get(uri);
    if (cached) {
      const now = await this.store.head(this.keyOf(uri));
      if (now && now.size === cached.size && now.modified === cached.modified) return cached.metadata;
      this.parsed.delete(uri);
    }
    let bytes: Uint8Array;
    try {
      bytes = await this.store.get(this.keyOf(uri));
    } catch (e) {
      if (table && isTwinlakeError(e, 'not-found')) {
        throw new TwinlakeError('data-invalid', `${this.domain}: table ${formatTableIdentifier(table)} points to metadata file ${uri}, which does not exist`, { uri });
      }
      throw e;
    }
    const metadata = parseTableMetadata(new TextDecoder().decode(bytes), uri);
    // A table's metadata files live in its own metadata folder: one elsewhere is another table's
    // file (copied over this one's, or a row pointing at it), whose snapshots would read as ours.
    if (table && uri.slice(0, uri.lastIndexOf('/')) !== metadataFolder(metadata)) {
      throw new TwinlakeError('data-invalid', `${this.domain}: table ${formatTableIdentifier(table)} points to metadata file ${uri}, expected metadata of a table whose metadata folder holds it, found metadata of the table at ${metadata.location}`, { uri, location: metadata.location });
    }
    return this.remember(uri, metadata);
  }

  /**
   * Writes `v<N>.metadata.json` create-only. A taken name (a crash leftover, a concurrent writer,
   * or files of a dropped table of the same name) moves on to the next number; after a few
   * misses it jumps past the highest version in the folder.
   */
  async write(metadata: TableMetadata, firstVersion: number, opts: { rememberLater?: boolean } = {}): Promise<{ uri: string; version: number; metadata: TableMetadata }> {
    const dir = metadataFolder(metadata);
    const body = serializeTableMetadataBytes(metadata);
    let version = firstVersion;
    for (let attempt = 0; attempt < 8; attempt++) {
      const uri = `${dir}/v${version}.metadata.json`;
      if (await this.store.putIfAbsent(this.keyOf(uri), body)) {
        if (!opts.rememberLater) return { uri, version, metadata: await this.remember(uri, metadata) };
        // A commit's file: its size and time for the cache are read while the commit swaps its
        // pointer; a read of the file waits for them.
        this.rememberSoon(uri, metadata);
        return { uri, version, metadata };
      }
      version = attempt < 2 ? version + 1 : Math.max(version, await this.highestVersion(dir)) + 1;
    }
    throw new TwinlakeError('commit-conflict', `${this.domain}: every metadata file name tried in ${dir} was taken by concurrent writers`, { dir });
  }

  /**
   * `write`, at the same time as the files the metadata names are made durable (CommitOptions
   * `durable`): the metadata file is fsynced beside them instead of after them, and resolves only
   * once both are durable. When `durable` fails the new file is removed and its reason thrown.
   */
  async writeWhenDurable(metadata: TableMetadata, firstVersion: number, durable: Promise<void> | undefined): Promise<{ uri: string; version: number; metadata: TableMetadata }> {
    if (!durable) return this.write(metadata, firstVersion, { rememberLater: true });
    const [written, ready] = await Promise.allSettled([this.write(metadata, firstVersion, { rememberLater: true }), durable]);
    if (ready.status === 'rejected') {
      if (written.status === 'fulfilled') await this.deleteQuietly(written.value.uri);
      throw ready.reason;
    }
    if (written.status === 'rejected') throw written.reason;
    return written.value;
  }

  /**
   * `writeWhenDurable` for a catalog's commit: every candidate name taken by concurrent writers
   * means they committed past this commit's base — a lost race like a lost swap, answered as the
   * conflict value the caller's retry loop retries, not an error that ends the write.
   */
  async writeForCommit(metadata: TableMetadata, firstVersion: number, durable: Promise<void> | undefined): Promise<{ uri: string; version: number; metadata: TableMetadata } | { status: 'conflict'; reason: string }> {
    try {
      return await this.writeWhenDurable(metadata, firstVersion, durable);
    } catch (e) {
      if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', reason: e.message };
      throw e;
    }
  }

  /**
   * Moves `version-hint.text` forward to the version the catalog points at (`pointer()`, read
   * again after writing: a concurrent commit that moved the pointer meanwhile may have had its
   * newer hint overwritten by ours, so it is written again for that one). A failure here does not
   * undo the commit, which already happened: the hint is an optimisation.
   */
  async advanceHint(pointer: () => Promise<string | undefined>, committed?: string, before?: HintBefore): Promise<void> {
    try {
      let at = committed ?? (await pointer());
      for (let attempt = 0; attempt < 3; attempt++) {
        const version = at === undefined ? undefined : ownMetadataVersion(at);
        if (at === undefined || version === undefined) return;
        const key = this.keyOf(hintLocation(at));
        // The hint as read while the metadata file was written, if it is this one: it only moves
        // forward, so an older reading can only make us write where a newer one would not.
        const held = await (attempt === 0 && before?.key === key ? before.held : this.heldHint(key));
        if (held >= version) return;
        await this.store.put(key, String(version));
        const now = await pointer();
        if (now === at) return;
        at = now;
      }
    } catch {
      // See above.
    }
  }

  /**
   * Reads the version hint of the folder `metadata`'s file goes to, for `advanceHint` after the
   * pointer moved: read beside the metadata file's write, it is not one more step after the swap.
   */
  hintBefore(metadata: TableMetadata): HintBefore | undefined {
    try {
      const key = this.keyOf(`${metadataFolder(metadata)}/version-hint.text`);
      return { key, held: this.heldHint(key) };
    } catch {
      // A folder outside the store: the metadata file's own write reports it.
      return undefined;
    }
  }

  private heldHint(key: string): Promise<number> {
    return this.store.get(key).then(
      (b) => Number.parseInt(new TextDecoder().decode(b).trim(), 10),
      () => 0,
    );
  }

  /** A new table's hint wins over one left by a dropped table of the same name. */
  async resetHint(metadataLocation: string, version: number): Promise<void> {
    await this.store.put(this.keyOf(hintLocation(metadataLocation)), String(version)).catch(() => undefined);
  }

  /** A metadata file nothing points at; if deleting fails it is an orphan that cleanup removes later. */
  async deleteQuietly(uri: string): Promise<void> {
    await this.remembering.get(uri);
    this.parsed.delete(uri);
    await this.store.delete(this.keyOf(uri)).catch(() => undefined);
  }

  /** Deletes everything under a dropped table's folder: data, manifests, metadata, and the Delta log beside them. */
  async purge(location: string): Promise<void> {
    this.parsed.clear();
    for await (const object of this.store.list(this.keyOf(location) + '/')) await this.store.delete(object.path);
  }

  /**
   * Metadata files are immutable once written, so a parsed one is reused while the file is the
   * same one (same size and modification time: a name freed by a lost compare-and-swap, or by a
   * dropped table, may be written again with other content): a commit then parses nothing it has
   * already seen or written itself.
   */
  private rememberSoon(uri: string, metadata: TableMetadata): void {
    // Only a cache: a file whose head fails is parsed again when next read.
    const pending: Promise<void> = this.remember(uri, metadata).then(
      () => undefined,
      () => undefined,
    );
    this.remembering.set(uri, pending);
    void pending.then(() => {
      if (this.remembering.get(uri) === pending) this.remembering.delete(uri);
    });
  }

  private async remember(uri: string, metadata: TableMetadata): Promise<TableMetadata> {
    const info = await this.store.head(this.keyOf(uri));
    this.parsed.delete(uri);
    if (!info) return metadata;
    this.parsed.set(uri, { metadata, size: info.size, modified: info.modified });
    while (this.parsed.size > 16) this.parsed.delete(this.parsed.keys().next().value!);
    return metadata;
  }

  private async highestVersion(dir: string): Promise<number> {
    let max = 0;
    for await (const object of this.store.list(this.keyOf(dir) + '/')) {
      if (object.path.endsWith('.metadata.json')) max = Math.max(max, metadataFileVersion(object.path));
    }
    return max;
  }
}

/** The version hint of a metadata folder as read before a commit's swap (`hintBefore`); never rejects. */
export interface HintBefore {
  key: string;
  held: Promise<number>;
}

/**
 * The version number of a metadata file name: `v12.metadata.json` (ours, Hadoop tables) or
 * `00012-<uuid>.metadata.json` (Java and PyIceberg catalogs); 0 for other names.
 */
export function metadataFileVersion(location: string): number {
  const name = location.slice(location.lastIndexOf('/') + 1);
  const m = /^v(\d+)(?:\.gz)?\.metadata\.json$/.exec(name) ?? /^(\d+)-.*\.metadata\.json$/.exec(name);
  return m ? Number(m[1]) : 0;
}

/** The N of our own `v<N>.metadata.json` names, the form path-based readers resolve a hint to. */
function ownMetadataVersion(location: string): number | undefined {
  const m = /\/v(\d+)\.metadata\.json$/.exec(location);
  return m ? Number(m[1]) : undefined;
}

function hintLocation(metadataLocation: string): string {
  return metadataLocation.slice(0, metadataLocation.lastIndexOf('/')) + '/version-hint.text';
}

/** Iceberg's `write.metadata.path` table property moves metadata files out of `<location>/metadata`. */
function metadataFolder(metadata: TableMetadata): string {
  return (metadata.properties?.['write.metadata.path'] ?? `${metadata.location}/metadata`).replace(/\/+$/, '');
}
