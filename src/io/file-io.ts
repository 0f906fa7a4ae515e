import { readFile } from 'node:fs/promises';
import type { ObjectMeta, ObjectStore } from './object-store.ts';

/**
 * URI-level access to storage. Iceberg metadata names files by absolute URI, so the table layer
 * works with URIs and a FileIO maps each one to a store and a key. Tests reading fixtures written
 * on other machines pass a resolver that remaps their locations; the readers stay general.
 */
export type LocationResolver = (uri: string) => { store: ObjectStore; key: string };

export class FileIO {
  constructor(readonly resolve: LocationResolver) {}

  read(uri: string): Promise<Uint8Array> {
    const { store, key } = this.resolve(uri);
    return store.get(key);
  }

  async readText(uri: string): Promise<string> {
    return new TextDecoder().decode(await this.read(uri));
  }

  async exists(uri: string): Promise<boolean> {
    const { store, key } = this.resolve(uri);
    return (await store.head(key)) !== undefined;
  }

  head(uri: string): Promise<{ size: number; modified: number } | undefined> {
    const { store, key } = this.resolve(uri);
    return store.head(key);
  }

  write(uri: string, body: Uint8Array | string): Promise<void> {
    const { store, key } = this.resolve(uri);
    return store.put(key, body);
  }

  /**
   * Stores a finished local file (the engine's output in a staging folder) under `uri`, moving it
   * where the store can; the local file is gone or left for the caller's staging cleanup.
   */
  async putFile(uri: string, localFile: string): Promise<void> {
    const { store, key } = this.resolve(uri);
    if (store.putFile) return store.putFile(key, localFile);
    await store.put(key, new Uint8Array(await readFile(localFile)));
  }

  writeIfAbsent(uri: string, body: Uint8Array | string): Promise<boolean> {
    const { store, key } = this.resolve(uri);
    return store.putIfAbsent(key, body);
  }

  delete(uri: string): Promise<void> {
    const { store, key } = this.resolve(uri);
    return store.delete(key);
  }

  /** Best-effort cleanup after a failed or abandoned write: deletes what it can, never throws. */
  async deleteQuietly(uris: readonly string[]): Promise<void> {
    await Promise.all(uris.map((u) => this.delete(u).catch(() => undefined)));
  }

  /** Objects below a URI prefix, with their full URIs, sorted. */
  async *list(prefixUri: string): AsyncIterable<ObjectMeta & { uri: string }> {
    const { store, key } = this.resolve(prefixUri);
    const base = prefixUri.slice(0, prefixUri.length - key.length);
    for await (const meta of store.list(key)) yield { ...meta, uri: base + meta.path };
  }

  /** The local path of a URI when its store is on local disk (the engine writes there directly). */
  localPath(uri: string): string | undefined {
    const { store, key } = this.resolve(uri);
    return store.localPath?.(key);
  }

  /** A store and key prefix for a location (the Delta log code works on stores). */
  storeAt(uri: string): { store: ObjectStore; key: string } {
    return this.resolve(uri);
  }
}
