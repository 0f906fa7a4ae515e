import { invalidInput, notFound } from '../core/errors.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';
import { checkKey, checkPrefix, checkRange, compareKeys } from './keys.ts';

/**
 * An ObjectStore in process memory, for tests and scratch tables. Every method does its check and
 * its write in one synchronous step, so putIfAbsent is atomic without locks.
 */
export class MemoryStore implements ObjectStore {
  readonly root: string;
  readonly createRetry = 'atomic';
  private readonly objects = new Map<string, { body: Uint8Array; modified: number }>();

  constructor(name = 'default') {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) {
      throw invalidInput(`memory store: expected a name of letters, digits, '.', '_' or '-', found ${JSON.stringify(name)}`);
    }
    this.root = `memory://${name}`;
  }

  async get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    checkKey('memory store', path);
    const entry = this.objects.get(path);
    if (!entry) throw notFound(`memory store: no object at ${JSON.stringify(path)} in ${this.root}`, { path });
    if (!range) return entry.body.slice();
    checkRange('memory store', range, path);
    return entry.body.slice(range.offset, range.offset + range.length);
  }

  async head(path: string): Promise<{ size: number; modified: number } | undefined> {
    checkKey('memory store', path);
    const entry = this.objects.get(path);
    return entry && { size: entry.body.length, modified: entry.modified };
  }

  async put(path: string, body: Uint8Array | string): Promise<void> {
    checkKey('memory store', path);
    this.objects.set(path, { body: toBytes(body), modified: Date.now() });
  }

  async putIfAbsent(path: string, body: Uint8Array | string): Promise<boolean> {
    checkKey('memory store', path);
    if (this.objects.has(path)) return false;
    this.objects.set(path, { body: toBytes(body), modified: Date.now() });
    return true;
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    checkPrefix('memory store', prefix);
    // Snapshot before yielding: the caller may write or delete while iterating.
    const matches: ObjectMeta[] = [];
    for (const [path, entry] of this.objects) {
      if (path.startsWith(prefix)) matches.push({ path, size: entry.body.length, modified: entry.modified });
    }
    matches.sort((a, b) => compareKeys(a.path, b.path));
    yield* matches;
  }

  async delete(path: string): Promise<void> {
    checkKey('memory store', path);
    this.objects.delete(path);
  }
}

/** A copy, so later changes to the caller's buffer do not reach the stored object. */
function toBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body.slice();
}
