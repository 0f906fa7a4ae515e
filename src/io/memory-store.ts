import { invalidInput, notFound } from '../core/errors.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';

/**
 * An ObjectStore in process memory, for tests and scratch tables. Every method does its check and
 * its write in one synchronous step, so putIfAbsent is atomic without locks.
 */
export class MemoryStore implements ObjectStore {
  readonly root: string;
  private readonly objects = new Map<string, { body: Uint8Array; modified: number }>();

  constructor(name = 'default') {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) {
      throw invalidInput(`memory store: expected a name of letters, digits, '.', '_' or '-', found ${JSON.stringify(name)}`);
    }
    this.root = `memory://${name}`;
  }

  async get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    checkKey(path);
    const entry = this.objects.get(path);
    if (!entry) throw notFound(`memory store: no object at ${JSON.stringify(path)} in ${this.root}`, { path });
    if (!range) return entry.body.slice();
    checkRange(range, path);
    return entry.body.slice(range.offset, range.offset + range.length);
  }

  async head(path: string): Promise<{ size: number; modified: number } | undefined> {
    checkKey(path);
    const entry = this.objects.get(path);
    return entry && { size: entry.body.length, modified: entry.modified };
  }

  async put(path: string, body: Uint8Array | string): Promise<void> {
    checkKey(path);
    this.objects.set(path, { body: toBytes(body), modified: Date.now() });
  }

  async putIfAbsent(path: string, body: Uint8Array | string): Promise<boolean> {
    checkKey(path);
    if (this.objects.has(path)) return false;
    this.objects.set(path, { body: toBytes(body), modified: Date.now() });
    return true;
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    checkPrefix(prefix);
    // Snapshot before yielding: the caller may write or delete while iterating.
    const matches: ObjectMeta[] = [];
    for (const [path, entry] of this.objects) {
      if (path.startsWith(prefix)) matches.push({ path, size: entry.body.length, modified: entry.modified });
    }
    matches.sort((a, b) => compareKeys(a.path, b.path));
    yield* matches;
  }

  async delete(path: string): Promise<void> {
    checkKey(path);
    this.objects.delete(path);
  }
}

/** A copy, so later changes to the caller's buffer do not reach the stored object. */
function toBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body.slice();
}

/**
 * Keys follow the rules every backend enforces, so a key that works in memory also works on disk:
 * `/`-separated, no empty, `.` or `..` segments, no leading `/`, no NUL.
 */
function checkKey(path: string): void {
  if (typeof path !== 'string' || path === '') throw invalidInput(`memory store: expected a non-empty object key, found ${JSON.stringify(path)}`);
  if (path.includes('\0')) throw invalidInput(`memory store: object key ${JSON.stringify(path)} contains a NUL character`);
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw invalidInput(`memory store: expected a relative key without empty, '.' or '..' segments, found ${JSON.stringify(path)}`);
    }
  }
}

function checkPrefix(prefix: string): void {
  if (prefix === '') return;
  const segments = prefix.split('/');
  // A trailing '/' leaves an empty last segment, which is fine for a prefix.
  if (segments.slice(0, -1).some((s) => s === '' || s === '.' || s === '..') || segments.at(-1) === '..' || prefix.includes('\0')) {
    throw invalidInput(`memory store: expected a relative key prefix without empty, '.' or '..' segments, found ${JSON.stringify(prefix)}`);
  }
}

function checkRange(range: { offset: number; length: number }, path: string): void {
  if (!Number.isSafeInteger(range.offset) || !Number.isSafeInteger(range.length) || range.offset < 0 || range.length < 0) {
    throw invalidInput(`memory store: expected a range of non-negative integers for ${JSON.stringify(path)}, found ${JSON.stringify(range)}`);
  }
}

/** Byte order of the UTF-8 forms, the order cloud object stores list in. */
function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
