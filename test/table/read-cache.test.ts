import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import { MemoryStore } from '../../src/io/memory-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { ReadCache } from '../../src/table/read/read-cache.ts';
import { fileUri } from '../../src/core/uri.ts';
import { errorOf, tempDir } from '../helpers.ts';

/** Locations `mem://b/...` on one in-memory store (no local path: read through the cache); others on local disk. */
function ioWith(store: MemoryStore): FileIO {
  return new FileIO((uri) => (uri.startsWith('mem://b/') ? { store, key: uri.slice('mem://b/'.length) } : storeForLocation(uri)));
}

describe('ReadCache', () => {
  const dirs: { cleanup(): void }[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => d.cleanup()));
  const cacheIn = (maxBytes: number) => {
    const tmp = tempDir('twinlake-cache-test-');
    dirs.push(tmp);
    return { cache: new ReadCache(() => join(tmp.path, 'cache'), maxBytes), dir: join(tmp.path, 'cache'), tmp: tmp.path };
  };

  it('hands local files over where they are and copies remote ones', async () => {
    const store = new MemoryStore();
    const io = ioWith(store);
    const { cache, tmp } = cacheIn(1000);
    const local = join(tmp, 'x.parquet');
    writeFileSync(local, 'local bytes');
    await store.put('t/data/a.parquet', 'remote bytes');
    const lease = await cache.acquire(io, [fileUri(local), 'mem://b/t/data/a.parquet']);
    expect(lease.path(fileUri(local))).toBe(local);
    const copy = lease.path('mem://b/t/data/a.parquet');
    expect(copy).not.toBe('mem://b/t/data/a.parquet');
    expect(readFileSync(copy, 'utf8')).toBe('remote bytes');
    expect(cache.bytes).toBe('remote bytes'.length);
    // A task keeps local names as planned and names remote files by their copies.
    const task = lease.task({ schema: { type: 'struct', 'schema-id': 0, fields: [] }, resolution: 'field-id', physicalNames: new Map(), files: [{ path: fileUri(local) }, { path: 'mem://b/t/data/a.parquet', deletes: { equality: [{ path: 'mem://b/t/data/a.parquet', equalityIds: [1] }] } }] });
    expect(task.files.map((f) => f.path)).toEqual([fileUri(local), copy]);
    expect(task.files[1]!.deletes!.equality![0]!.path).toBe(copy);
    lease.release();
    expect(() => lease.path('mem://b/t/data/other.parquet')).toThrow(/was not fetched/);
  });

  it('never serves a changed object from a stale copy', async () => {
    const store = new MemoryStore();
    const io = ioWith(store);
    const { cache } = cacheIn(1000);
    await store.put('k.parquet', 'first');
    const a = await cache.acquire(io, ['mem://b/k.parquet']);
    expect(readFileSync(a.path('mem://b/k.parquet'), 'utf8')).toBe('first');
    a.release();
    await store.put('k.parquet', 'second, longer');
    const b = await cache.acquire(io, ['mem://b/k.parquet']);
    expect(readFileSync(b.path('mem://b/k.parquet'), 'utf8')).toBe('second, longer');
    b.release();
    // The same size, written later: fetched again too.
    await new Promise((r) => setTimeout(r, 5));
    expect('third, longer!'.length).toBe('second, longer'.length);
    await store.put('k.parquet', 'third, longer!');
    const c = await cache.acquire(io, ['mem://b/k.parquet']);
    expect(readFileSync(c.path('mem://b/k.parquet'), 'utf8')).toBe('third, longer!');
    c.release();
  });

  it('stays within its bound once files are released, and never evicts a file in use', async () => {
    const store = new MemoryStore();
    const io = ioWith(store);
    const { cache } = cacheIn(25);
    for (const n of [1, 2, 3, 4]) await store.put(`f${n}.parquet`, 'x'.repeat(10));
    const u = (n: number) => `mem://b/f${n}.parquet`;
    const first = await cache.acquire(io, [u(1)]);
    const f1 = first.path(u(1));
    first.release();
    // Over the bound: the copy no one uses goes.
    const second = await cache.acquire(io, [u(2), u(3)]);
    expect(existsSync(f1)).toBe(false);
    expect(cache.bytes).toBe(20);
    // In use, all stay although they exceed the bound.
    const third = await cache.acquire(io, [u(4)]);
    expect(cache.bytes).toBe(30);
    expect([second.path(u(2)), second.path(u(3)), third.path(u(4))].every((p) => existsSync(p))).toBe(true);
    second.release();
    third.release();
    await new Promise((r) => setTimeout(r, 20));
    expect(cache.bytes).toBeLessThanOrEqual(25);
    await cache.close();
    expect(cache.bytes).toBe(0);
  });

  it('shares one download between operations asking for one object at once', async () => {
    let gets = 0;
    const store = new (class extends MemoryStore {
      override async get(path: string, range?: { offset: number; length: number }) {
        gets++;
        return super.get(path, range);
      }
    })();
    const io = ioWith(store);
    const { cache } = cacheIn(1000);
    await store.put('s.parquet', 'shared');
    const [a, b] = await Promise.all([cache.acquire(io, ['mem://b/s.parquet']), cache.acquire(io, ['mem://b/s.parquet'])]);
    expect(gets).toBe(1);
    expect(a.path('mem://b/s.parquet')).toBe(b.path('mem://b/s.parquet'));
    expect(cache.bytes).toBe(6);
    a.release();
    b.release();
  });

  it('fetches a large object in pieces, byte for byte, and says which object is missing', async () => {
    const store = new MemoryStore();
    const io = ioWith(store);
    const { cache } = cacheIn(64 * 1024 * 1024);
    const big = new Uint8Array(20 * 1024 * 1024 + 123);
    for (let i = 0; i < big.length; i += 4096) big[i] = (i / 4096) % 251;
    await store.put('big.parquet', big);
    const lease = await cache.acquire(io, ['mem://b/big.parquet']);
    expect(Buffer.compare(readFileSync(lease.path('mem://b/big.parquet')), Buffer.from(big))).toBe(0);
    lease.release();
    const e = await errorOf(cache.acquire(io, ['mem://b/missing.parquet']));
    expect(e.kind).toBe('not-found');
    expect(e.message).toBe('read: mem://b/missing.parquet does not exist');
  });
});
