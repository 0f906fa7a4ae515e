import { createHash, randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mapLimit } from '../../core/concurrency.ts';
import { dataInvalid, errorMessage, notFound, TwinlakeError } from '../../core/errors.ts';
import type { FileIO } from '../../io/file-io.ts';
import type { ScanDeletes, ScanTask } from '../../format/scan-task.ts';
import { engineLocalPath } from './iceberg-scan.ts';

/**
 * Local copies of remote objects for the engine, which opens only local files (DuckDB's httpfs
 * extension cannot be assumed). A file on local disk is handed over where it is, never copied.
 *
 * - Keyed by location, size and modification time as the store reports them now: a changed
 *   object is fetched again, never served stale (table data files never change, but a size that
 *   differs from the copy's is always caught).
 * - Bounded in bytes: copies no running operation uses are evicted, oldest use first, once the
 *   cache holds more than `maxBytes`. Copies in use are never evicted, so one operation that
 *   needs more than the bound at once still runs (streaming exports go in bounded groups of files).
 * - Objects are fetched in ranged pieces, a few at a time, so memory stays bounded whatever their size.
 */
export const DEFAULT_READ_CACHE_BYTES = 1024 * 1024 * 1024;
const PIECE_BYTES = 8 * 1024 * 1024;
const FETCHES_IN_FLIGHT = 4;

interface Entry {
  file: string;
  size: number;
  pins: number;
  lastUse: number;
  ready: Promise<void>;
  failed?: boolean;
}

/** Files an operation uses: local paths for the engine, kept until `release`. */
export interface CacheLease {
  /** The local path the engine opens for a location the lease holds. */
  path(uri: string): string;
  /** The task with every file it names (data, delete files, deletion vectors) as a local path. */
  task(task: ScanTask): ScanTask;
  release(): void;
}

export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  private dir: Promise<string> | undefined;
  private uses = 0;

  /** `folder`: where the copies go, created on first use (removed by `close`). */
  constructor(private readonly folder: () => string, readonly maxBytes: number = DEFAULT_READ_CACHE_BYTES) {}

  /** Bytes held by copies (in use or not). */
  get bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.size;
    return n;
  }

  /**
   * Makes every location in `uris` available as a local file and keeps it so until the lease is
   * released. Remote ones are checked against the store (head) and fetched when not cached; local
   * ones must exist. `sizes`: what the table metadata says some of them hold (see ScanTask.fileSizes).
   */
  async acquire(io: FileIO, uris: Iterable<string>, sizes?: Map<string, number>): Promise<CacheLease> {
    const paths = new Map<string, string>();
    const inPlace = new Set<string>();
    const held: Entry[] = [];
    const remote: string[] = [];
    for (const uri of new Set(uris)) {
      const local = io.localPath(uri);
      if (local !== undefined) {
        paths.set(uri, local);
        inPlace.add(uri);
      } else remote.push(uri);
    }
    const lease: CacheLease = {
      path: (uri) => {
        const p = paths.get(uri);
        if (p === undefined) throw new TwinlakeError('internal', `read cache: ${uri} was not fetched for this operation`);
        return p;
      },
      // Local files keep the names the plan gave them; the engine opens them where they are.
      task: (task) => localTask(task, (uri) => (inPlace.has(uri) ? uri : lease.path(uri))),
      release: () => {
        for (const e of held.splice(0)) {
          e.pins--;
          e.lastUse = ++this.uses;
        }
        void this.evict();
      },
    };
    try {
      // A missing or resized local file is said as such, naming it, before the engine opens it.
      // The engine cannot tell: a valid Parquet file of another size put in its place reads
      // without error, and it reports no file's size. The stats run on this thread, a batch
      // at a time: one through the thread pool costs about five times as much, and a batch
      // bounds how long other work waits.
      const local = [...inPlace];
      for (let i = 0; i < local.length; i += LOCAL_CHECK_BATCH) {
        if (i > 0) await new Promise((resolve) => setImmediate(resolve));
        for (const uri of local.slice(i, i + LOCAL_CHECK_BATCH)) checkSize(uri, localSize(uri, paths.get(uri)!), sizes?.get(uri));
      }
      await mapLimit(remote, FETCHES_IN_FLIGHT, async (uri) => {
        const entry = await this.entryFor(io, uri, sizes?.get(uri));
        held.push(entry);
        paths.set(uri, entry.file);
      });
    } catch (e) {
      lease.release();
      throw e;
    }
    await this.evict();
    return lease;
  }

  private async entryFor(io: FileIO, uri: string, expectedSize?: number): Promise<Entry> {
    const head = await io.head(uri);
    if (!head) throw notFound(`read: ${uri} does not exist`, { uri });
    checkSize(uri, head.size, expectedSize);
    const key = `${uri}\u0000${head.size}\u0000${head.modified}`;
    // No await between the lookup and the insert: two operations asking for one object at once
    // share one entry (and one download).
    const dir = await this.folderReady();
    const entry = this.entries.get(key);
    if (entry && !entry.failed) {
      entry.pins++;
      entry.lastUse = ++this.uses;
      try {
        await entry.ready;
      } catch (e) {
        entry.pins--;
        throw e;
      }
      return entry;
    }
    // A name of its own per entry: deleting an evicted copy can never remove a newer one.
    const name = `${createHash('sha256').update(key).digest('hex').slice(0, 32)}-${randomUUID().slice(0, 8)}.parquet`;
    const created: Entry = { file: join(dir, name), size: head.size, pins: 1, lastUse: ++this.uses, ready: Promise.resolve() };
    created.ready = this.fetch(io, uri, head.size, created.file).catch((e) => {
      created.failed = true;
      this.entries.delete(key);
      throw e;
    });
    this.entries.set(key, created);
    try {
      await created.ready;
    } catch (e) {
      created.pins--;
      throw e;
    }
    return created;
  }

  /** Fetches an object in ranged pieces into a temporary file, then renames it into place. */
  private async fetch(io: FileIO, uri: string, size: number, file: string): Promise<void> {
    const partial = `${file}.${randomUUID()}.part`;
    const handle = await open(partial, 'w');
    try {
      const { store, key } = io.storeAt(uri);
      for (let offset = 0; offset < size; offset += PIECE_BYTES) {
        const length = Math.min(PIECE_BYTES, size - offset);
        const bytes = await store.get(key, { offset, length });
        if (bytes.length !== length) throw dataInvalid(`read: ${uri} changed while it was read: expected ${length} bytes at offset ${offset}, found ${bytes.length}`, { uri });
        await handle.write(bytes, 0, bytes.length, offset);
      }
      await handle.close();
      await rename(partial, file);
    } catch (e) {
      await handle.close().catch(() => undefined);
      await rm(partial, { force: true });
      if (e instanceof TwinlakeError) throw e;
      throw new TwinlakeError('io', `read: cannot copy ${uri} to the read cache at ${file} (${errorMessage(e)})`, { uri }, { cause: e });
    }
  }

  private folderReady(): Promise<string> {
    this.dir ??= (async () => {
      const dir = this.folder();
      await mkdir(dir, { recursive: true });
      return dir;
    })();
    return this.dir;
  }

  /**
   * Removes copies no operation uses, oldest use first, until the cache is within its bound. The
   * entries go at once (a later lookup fetches again); their files are deleted after.
   */
  private async evict(): Promise<void> {
    let total = this.bytes;
    if (total <= this.maxBytes) return;
    const idle = [...this.entries].filter(([, e]) => e.pins === 0).sort((a, b) => a[1].lastUse - b[1].lastUse);
    const gone: string[] = [];
    for (const [key, e] of idle) {
      if (total <= this.maxBytes) break;
      this.entries.delete(key);
      total -= e.size;
      gone.push(e.file);
    }
    await Promise.all(gone.map((f) => rm(f, { force: true })));
  }

  /** Removes every copy and the folder. */
  async close(): Promise<void> {
    this.entries.clear();
    const dir = this.dir;
    this.dir = undefined;
    if (dir) await rm(await dir.catch(() => ''), { recursive: true, force: true }).catch(() => undefined);
  }
}

const LOCAL_CHECK_BATCH = 512;

function localSize(uri: string, path: string): number {
  let found;
  try {
    found = statSync(path, { throwIfNoEntry: false });
  } catch (e) {
    throw new TwinlakeError('io', `read: cannot read ${uri} (${errorMessage(e)})`, { uri }, { cause: e });
  }
  if (!found) throw notFound(`read: ${uri} does not exist`, { uri });
  return found.size;
}

function checkSize(uri: string, found: number, expected: number | undefined): void {
  if (expected === undefined || found === expected) return;
  throw dataInvalid(`read: ${uri}: expected ${expected} bytes as the table metadata records (file_size_in_bytes), found ${found}: the file is truncated or another file in its place`, { uri, expected, found });
}

/** Every location a scan task makes the engine open: data files, delete files, deletion vector files. */
export function taskFiles(task: ScanTask): string[] {
  const out = new Set<string>();
  for (const f of task.files) {
    out.add(f.path);
    for (const p of f.deletes?.positions ?? []) if (p.kind !== 'bitmap') out.add(p.path);
    for (const e of f.deletes?.equality ?? []) out.add(e.path);
  }
  return [...out];
}

function localTask(task: ScanTask, path: (uri: string) => string): ScanTask {
  const deletes = (d: ScanDeletes): ScanDeletes => ({
    ...(d.positions ? { positions: d.positions.map((p) => (p.kind === 'bitmap' ? p : { ...p, path: path(p.path) })) } : {}),
    ...(d.equality ? { equality: d.equality.map((e) => ({ ...e, path: path(e.path) })) } : {}),
  });
  return { ...task, files: task.files.map((f) => ({ ...f, path: path(f.path), ...(f.deletes ? { deletes: deletes(f.deletes) } : {}) })) };
}

/** Runs `fn` on the task with its files local, holding them for the call. */
export async function withLocalTask<T>(cache: ReadCache, io: FileIO, task: ScanTask, fn: (local: ScanTask) => Promise<T>): Promise<T> {
  const lease = await cache.acquire(io, taskFiles(task), task.fileSizes);
  try {
    return await fn(lease.task(task));
  } finally {
    lease.release();
  }
}

let fallback: ReadCache | undefined;

/**
 * The cache an operation fetches remote files into: its lakehouse's, or for a table context made
 * without one, one cache for the process in the system temp folder.
 */
export function readCacheOf(ctx: { readCache?: ReadCache }): ReadCache {
  if (ctx.readCache) return ctx.readCache;
  fallback ??= new ReadCache(() => join(tmpdir(), `twinlake-cache-${process.pid}-${randomUUID()}`));
  return fallback;
}

/**
 * The local path the engine opens for a table file in an operation: from the operation's lease
 * when it holds one (remote files fetched for it), else the file where the store keeps it.
 */
export function engineFile(ctx: { io: FileIO; engineFiles?: CacheLease }, uri: string): string {
  return ctx.engineFiles ? ctx.engineFiles.path(uri) : engineLocalPath(ctx.io, uri);
}

/**
 * Runs `fn` with a context whose `engineFiles` hold the given table files locally (fetched
 * through the read cache when remote), released when it ends.
 */
export async function withEngineFiles<C extends { io: FileIO; readCache?: ReadCache; engineFiles?: CacheLease }, T>(ctx: C, uris: Iterable<string>, fn: (ctx: C) => Promise<T>): Promise<T> {
  const lease = await readCacheOf(ctx).acquire(ctx.io, uris);
  try {
    return await fn({ ...ctx, engineFiles: lease });
  } finally {
    lease.release();
  }
}
