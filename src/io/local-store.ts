import { randomBytes } from 'node:crypto';
import { closeSync, fsync as fsyncCallback, linkSync, openSync, promises as fs, renameSync, statSync, unlinkSync, write as writeCallback, writeSync } from 'node:fs';
import * as nodePath from 'node:path';
import { TwinlakeError, invalidInput, notFound } from '../core/errors.ts';
import { fileUri } from '../core/uri.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';
import { checkKey, checkPrefix, checkRange, compareKeys } from './keys.ts';

/**
 * An ObjectStore over a local directory (DESIGN.md §7). Every write goes to a temporary file in the
 * target's folder first, is fsynced, and only then appears under its name: by `rename` for put
 * (readers see the old or the new object, never half of one) and by `link` for putIfAbsent (the
 * kernel refuses a taken name, so exactly one concurrent writer wins, across processes too).
 *
 * Deleting the last object in a folder leaves the empty folder in place: the engine writes data
 * files straight to `localPath()` after creating their folder, and removing folders could pull one
 * away from under such a writer.
 */
export class LocalStore implements ObjectStore {
  readonly root: string;
  /** link() either creates the name or fails having created nothing. */
  readonly createRetry = 'atomic';
  /** The absolute directory the keys are relative to. */
  readonly rootDir: string;

  constructor(rootDir: string) {
    const abs = nodePath.resolve(rootDir);
    if (abs === nodePath.parse(abs).root) {
      throw invalidInput(`local store: expected a directory below the filesystem root, found ${JSON.stringify(rootDir)}`);
    }
    this.rootDir = abs;
    this.root = fileUri(abs);
  }

  localPath(key: string): string {
    checkKey('local store', key);
    return nodePath.join(this.rootDir, key);
  }

  async get(key: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const file = this.localPath(key);
    if (range) checkRange('local store', range, key);
    try {
      if (!range) {
        const buf = await fs.readFile(file);
        return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
      }
      const handle = await fs.open(file, 'r');
      try {
        const out = new Uint8Array(range.length);
        let filled = 0;
        while (filled < range.length) {
          const { bytesRead } = await handle.read(out, filled, range.length - filled, range.offset + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        return out.subarray(0, filled);
      } finally {
        await handle.close();
      }
    } catch (e) {
      throw fsError(e, 'read', file);
    }
  }

  async head(key: string): Promise<{ size: number; modified: number } | undefined> {
    const file = this.localPath(key);
    try {
      // A stat answers from the kernel's caches in microseconds: asked here, it skips the round
      // trip through the thread pool, which a commit's fsyncs keep busy.
      const st = statSync(file, { throwIfNoEntry: false });
      return st?.isFile() ? { size: st.size, modified: Math.floor(st.mtimeMs) } : undefined;
    } catch (e) {
      if (isCode(e, 'ENOENT', 'ENOTDIR')) return undefined;
      throw fsError(e, 'read', file);
    }
  }

  async put(key: string, body: Uint8Array | string): Promise<void> {
    const file = this.localPath(key);
    const temp = await writeTemp(file, body);
    try {
      renameSync(temp, file);
    } catch (e) {
      removeTemp(temp);
      throw fsError(e, 'write', file);
    }
    await folderSync(nodePath.dirname(file));
  }

  /**
   * Moves a finished local file in: fsynced, then renamed into place when it lies on the same
   * filesystem (no copy of the bytes); otherwise copied to a temporary name next to the target,
   * fsynced and renamed. Either way a reader sees the whole file or none of it.
   */
  async putFile(key: string, localFile: string): Promise<void> {
    const file = this.localPath(key);
    const dir = nodePath.dirname(file);
    try {
      await ensureFolder(dir);
      await fsyncFile(localFile);
      try {
        await fs.rename(localFile, file);
      } catch (e) {
        if (!isCode(e, 'EXDEV')) throw e;
        const temp = tempPath(file);
        try {
          await fs.copyFile(localFile, temp);
          await fsyncFile(temp);
          await fs.rename(temp, file);
        } finally {
          await fs.rm(temp, { force: true });
        }
      }
    } catch (e) {
      throw fsError(e, 'write', file);
    }
    await folderSync(dir);
  }

  async putIfAbsent(key: string, body: Uint8Array | string): Promise<boolean> {
    const file = this.localPath(key);
    const temp = await writeTemp(file, body);
    let created: boolean;
    try {
      linkSync(temp, file);
      created = true;
    } catch (e) {
      if (!isCode(e, 'EEXIST')) throw fsError(e, 'write', file);
      created = false;
    } finally {
      removeTemp(temp);
    }
    if (created) await folderSync(nodePath.dirname(file));
    return created;
  }

  list(prefix: string): AsyncIterable<ObjectMeta> {
    return this.listWhere(prefix, false);
  }

  /** The temporary files of writes that never moved them into place (a killed writer's). */
  listTemporary(prefix: string): AsyncIterable<ObjectMeta> {
    return this.listWhere(prefix, true);
  }

  private async *listWhere(prefix: string, temporary: boolean): AsyncIterable<ObjectMeta> {
    checkPrefix('local store', prefix);
    const slash = prefix.lastIndexOf('/');
    const out: ObjectMeta[] = [];
    await this.walk(slash < 0 ? '' : prefix.slice(0, slash), prefix, temporary, out);
    out.sort((a, b) => compareKeys(a.path, b.path));
    yield* out;
  }

  async delete(key: string): Promise<void> {
    const file = this.localPath(key);
    try {
      await fs.unlink(file);
    } catch (e) {
      // A folder is not an object: deleting its key deletes nothing, like a missing key.
      if (isCode(e, 'ENOENT', 'ENOTDIR', 'EISDIR')) return;
      throw fsError(e, 'delete', file);
    }
  }

  private async walk(dirKey: string, prefix: string, temporary: boolean, out: ObjectMeta[]): Promise<void> {
    const dir = dirKey === '' ? this.rootDir : nodePath.join(this.rootDir, dirKey);
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (e) {
      if (isCode(e, 'ENOENT', 'ENOTDIR')) return;
      throw fsError(e, 'list', dir);
    }
    await Promise.all(
      entries.map(async (entry) => {
        const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`;
        if (entry.isDirectory()) {
          const asDir = key + '/';
          if (asDir.startsWith(prefix) || prefix.startsWith(asDir)) await this.walk(key, prefix, temporary, out);
          return;
        }
        if (!key.startsWith(prefix) || isTempName(entry.name) !== temporary) return;
        try {
          const st = await fs.stat(nodePath.join(dir, entry.name));
          if (st.isFile()) out.push({ path: key, size: st.size, modified: Math.floor(st.mtimeMs) });
        } catch (e) {
          // Deleted while listing, or a dangling link: not an object.
          if (!isCode(e, 'ENOENT', 'ENOTDIR')) throw fsError(e, 'list', nodePath.join(dir, entry.name));
        }
      }),
    );
  }
}

const TEMP_NAME = /^\..*\.[0-9a-f]{16}\.tmp$/;

function isTempName(name: string): boolean {
  return TEMP_NAME.test(name);
}

function tempPath(file: string): string {
  const base = nodePath.basename(file);
  // Keep the temp name within the 255-byte name limit of common filesystems.
  const stem = Buffer.byteLength(base) <= 200 ? base : 'object';
  return nodePath.join(nodePath.dirname(file), `.${stem}.${randomBytes(8).toString('hex')}.tmp`);
}

/**
 * Writes and fsyncs the body under a fresh temporary name next to `file`, creating folders.
 *
 * Only the fsync waits in the thread pool. Creating, writing (a body up to SMALL_WRITE), closing,
 * linking and renaming a file take microseconds in the kernel, and each of them sent through the
 * pool costs two thread hand-offs, which on a busy machine cost far more than the call: a commit
 * makes five such writes, so they are made here, in line. The folder nearly always exists (a
 * table's `metadata/`, `_delta_log/`), so the file is opened first and the folders made only when
 * that finds one missing.
 */
async function writeTemp(file: string, body: Uint8Array | string): Promise<string> {
  const dir = nodePath.dirname(file);
  const temp = tempPath(file);
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  let fd: number | undefined;
  try {
    try {
      fd = openSync(temp, 'wx');
    } catch (e) {
      if (!isCode(e, 'ENOENT')) throw e;
      await ensureFolder(dir);
      fd = openSync(temp, 'wx');
    }
    await writeAll(fd, bytes);
    await fsyncFd(fd);
    const opened = fd;
    fd = undefined;
    closeSync(opened);
    return temp;
  } catch (e) {
    if (fd !== undefined) closeQuietly(fd);
    removeTemp(temp);
    throw fsError(e, 'write', file);
  }
}

/** Bodies up to this size are written in line (see writeTemp); larger ones through the pool. */
const SMALL_WRITE = 256 * 1024;

const writeAsync = (fd: number, bytes: Uint8Array, at: number, n: number) =>
  new Promise<number>((resolve, reject) => writeCallback(fd, bytes, at, n, null, (e, written) => (e ? reject(e) : resolve(written))));
const fsyncFd = (fd: number) => new Promise<void>((resolve, reject) => fsyncCallback(fd, (e) => (e ? reject(e) : resolve())));

async function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length; ) {
    const n = Math.min(bytes.length - at, 1 << 20);
    at += bytes.length <= SMALL_WRITE ? writeSync(fd, bytes, at, n) : await writeAsync(fd, bytes, at, n);
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Closing after a failed write: the write's error is the one to report.
  }
}

/** Creates a folder and its missing parents, durably. */
async function ensureFolder(dir: string): Promise<void> {
  const firstCreated = await fs.mkdir(dir, { recursive: true });
  if (firstCreated !== undefined) await fsyncNewFolders(firstCreated, dir);
}

async function fsyncFile(file: string): Promise<void> {
  const handle = await fs.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A new folder is durable once the folder holding its entry is synced. */
async function fsyncNewFolders(firstCreated: string, dir: string): Promise<void> {
  for (let d = dir; ; d = nodePath.dirname(d)) {
    await fsyncDir(nodePath.dirname(d));
    if (d === firstCreated || d === nodePath.dirname(d)) break;
  }
}

/** Removes a temporary file (in line, see writeTemp); one already gone, or that cannot go, is left. */
function removeTemp(temp: string): void {
  try {
    unlinkSync(temp);
  } catch {
    // A temporary name is never listed as an object; a leftover is orphan cleanup's (listTemporary).
  }
}

/**
 * The fsync that makes a new name in `dir` durable, shared by the writes that ask at once: a
 * commit links or renames its manifest, manifest list and metadata file into one folder together.
 * A caller never joins an fsync already running (it may have begun before the caller's rename or
 * link, and so not cover it); it joins the next one, which starts once the running one ends and
 * covers every name made before it starts.
 */
const folderSyncs = new Map<string, { running: Promise<void>; next?: Promise<void> }>();

function folderSync(dir: string): Promise<void> {
  const state = folderSyncs.get(dir);
  if (!state) {
    const running = fsyncDir(dir).finally(() => settleFolderSync(dir, running));
    folderSyncs.set(dir, { running });
    return running;
  }
  state.next ??= state.running
    .catch(() => undefined)
    .then(() => {
      const running = fsyncDir(dir).finally(() => settleFolderSync(dir, running));
      folderSyncs.set(dir, { running });
      return running;
    });
  return state.next;
}

function settleFolderSync(dir: string, running: Promise<void>): void {
  const state = folderSyncs.get(dir);
  if (state?.running === running && state.next === undefined) folderSyncs.delete(dir);
}

async function fsyncDir(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    await fsyncFd(fd);
  } catch (e) {
    // Some filesystems refuse fsync on folders; the rename or link itself already happened.
    if (!isCode(e, 'EINVAL', 'ENOTSUP', 'EISDIR')) throw fsError(e, 'write', dir);
  } finally {
    if (fd !== undefined) closeQuietly(fd);
  }
}

function isCode(e: unknown, ...codes: string[]): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && codes.includes(code);
}

/** Node fs errors as TwinlakeErrors that name the path and say what is wrong with it. */
function fsError(e: unknown, op: 'read' | 'write' | 'list' | 'delete', file: string): TwinlakeError {
  if (e instanceof TwinlakeError) return e;
  const code = (e as { code?: string } | null)?.code ?? 'unknown error';
  if (op === 'read' && isCode(e, 'ENOENT', 'ENOTDIR', 'EISDIR')) return notFound(`local store: no object at ${file}`, { path: file });
  const writing = op === 'write' || op === 'delete';
  let why: string;
  if (isCode(e, 'EACCES', 'EPERM', 'EROFS')) why = `the path is not ${writing ? 'writable' : 'readable'} (${code})`;
  else if (writing && isCode(e, 'ENOTDIR', 'EEXIST')) why = `a parent of the path is not a directory (${code})`;
  else if (isCode(e, 'ENOSPC', 'EDQUOT')) why = `no space left on the device (${code})`;
  else if (isCode(e, 'EISDIR')) why = `the path is a directory (${code})`;
  else if (isCode(e, 'ENAMETOOLONG')) why = `the path is longer than the file system allows: 255 bytes per name, 4096 bytes in all (${code})`;
  else why = e instanceof Error ? e.message : String(e);
  const permanent = isCode(e, 'EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'EISDIR', 'ENAMETOOLONG');
  return new TwinlakeError('io', `local store: cannot ${op} ${file}: ${why}`, { path: file, code }, { cause: e, retryable: !permanent });
}
