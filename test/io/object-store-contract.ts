import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FileIO } from '../../src/io/file-io.ts';
import type { ObjectMeta, ObjectStore } from '../../src/io/object-store.ts';
import { errorOf } from '../helpers.ts';

export interface StoreUnderTest {
  store: ObjectStore;
  cleanup(): Promise<void>;
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function collect(it: AsyncIterable<ObjectMeta>): Promise<ObjectMeta[]> {
  const out: ObjectMeta[] = [];
  for await (const m of it) out.push(m);
  return out;
}

export interface ContractOptions {
  /**
   * false for a server that cannot list a key holding a Unicode noncharacter (U+FFFF): Azurite
   * answers List Blobs with HTTP 500 once a container holds one, as XML 1.0 cannot carry it
   * (Azure itself sends such names percent-encoded, marked Encoded="true").
   */
  noncharacterKeys?: boolean;
}

/** Every MUST of the ObjectStore interface (src/io/object-store.ts), for one backend. */
export function objectStoreContract(name: string, make: () => Promise<StoreUnderTest>, options: ContractOptions = {}): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let subject: StoreUnderTest;
    let store: ObjectStore;

    beforeEach(async () => {
      subject = await make();
      store = subject.store;
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    it('names its root as a URI without a trailing slash', () => {
      expect(store.root).toMatch(/^[a-z][a-z0-9+.-]*:\/\//);
      expect(store.root.endsWith('/')).toBe(false);
    });

    it('round-trips string bodies as UTF-8', async () => {
      const body = 'héllo wörld — 日本語 🙂\n';
      await store.put('a/b.txt', body);
      const got = await store.get('a/b.txt');
      expect(got).toBeInstanceOf(Uint8Array);
      expect(Array.from(got)).toEqual(Array.from(Buffer.from(body, 'utf8')));
      expect(text(got)).toBe(body);
    });

    it('round-trips every byte value in binary bodies', async () => {
      const body = new Uint8Array(1024);
      for (let i = 0; i < body.length; i++) body[i] = (i * 7 + 3) % 256;
      await store.put('bin/all-bytes', body);
      expect(Array.from(await store.get('bin/all-bytes'))).toEqual(Array.from(body));
      await store.put('bin/empty', new Uint8Array(0));
      expect((await store.get('bin/empty')).length).toBe(0);
      expect((await store.head('bin/empty'))?.size).toBe(0);
    });

    it('keeps what was written when the caller changes its buffer afterwards', async () => {
      const body = new Uint8Array([1, 2, 3]);
      await store.put('x', body);
      expect(await store.putIfAbsent('y', body)).toBe(true);
      body[0] = 99;
      expect(Array.from(await store.get('x'))).toEqual([1, 2, 3]);
      expect(Array.from(await store.get('y'))).toEqual([1, 2, 3]);
    });

    it('reads byte ranges, truncated at the end of the object', async () => {
      const body = new Uint8Array(100).map((_, i) => i);
      await store.put('r', body);
      expect(Array.from(await store.get('r', { offset: 10, length: 5 }))).toEqual([10, 11, 12, 13, 14]);
      expect(Array.from(await store.get('r', { offset: 0, length: 1 }))).toEqual([0]);
      expect(Array.from(await store.get('r', { offset: 95, length: 50 }))).toEqual([95, 96, 97, 98, 99]);
      expect((await store.get('r', { offset: 40, length: 0 })).length).toBe(0);
      // A range starting at or past the end is empty, not an error (S3 and Azure answer 416).
      expect((await store.get('r', { offset: 100, length: 5 })).length).toBe(0);
      expect((await store.get('r', { offset: 500, length: 5 })).length).toBe(0);
      expect((await errorOf(store.get('r', { offset: -1, length: 2 }))).kind).toBe('invalid-input');
    });

    it('heads objects with size and modification time, and missing ones as undefined', async () => {
      const before = Date.now();
      await store.put('dir/h.bin', new Uint8Array(42));
      const after = Date.now();
      const h = await store.head('dir/h.bin');
      expect(h?.size).toBe(42);
      // Filesystem clocks may round to whole seconds.
      expect(h!.modified).toBeGreaterThanOrEqual(before - 2000);
      expect(h!.modified).toBeLessThanOrEqual(after + 2000);
      expect(await store.head('dir/missing')).toBeUndefined();
      expect(await store.head('dir')).toBeUndefined();
      expect(await store.head('nothing/here/at/all')).toBeUndefined();
    });

    it('put overwrites an existing object', async () => {
      await store.put('o', 'first version, longer');
      await store.put('o', 'second');
      expect(text(await store.get('o'))).toBe('second');
      expect((await store.head('o'))?.size).toBe(6);
    });

    it('putFile, where a store has it, stores a local file whole under a new or taken key', async () => {
      if (!store.putFile) return;
      const dir = await mkdtemp(join(tmpdir(), 'twinlake-contract-'));
      try {
        const local = join(dir, 'f.bin');
        const body = new Uint8Array(300_000).map((_, i) => i % 251);
        await writeFile(local, body);
        await store.putFile('a/b/f.parquet', local);
        expect(await store.get('a/b/f.parquet')).toEqual(body);
        await writeFile(local, 'replaced');
        await store.putFile('a/b/f.parquet', local);
        expect(text(await store.get('a/b/f.parquet'))).toBe('replaced');
        expect((await collect(store.list('a/'))).map((m) => m.path)).toEqual(['a/b/f.parquet']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('putIfAbsent creates once and never overwrites', async () => {
      expect(await store.putIfAbsent('p/1.json', 'one')).toBe(true);
      expect(await store.putIfAbsent('p/1.json', 'two')).toBe(false);
      expect(text(await store.get('p/1.json'))).toBe('one');
      await store.put('p/2.json', 'put');
      expect(await store.putIfAbsent('p/2.json', 'other')).toBe(false);
      expect(text(await store.get('p/2.json'))).toBe('put');
      // The losers leave nothing behind.
      expect((await collect(store.list('p/'))).map((m) => m.path)).toEqual(['p/1.json', 'p/2.json']);
    });

    it('gives exactly one of many concurrent putIfAbsent callers true, and keeps its body', async () => {
      const n = 24;
      const results = await Promise.all(Array.from({ length: n }, (_, i) => store.putIfAbsent('race/00001.json', `writer ${i}`)));
      const winners = results.flatMap((ok, i) => (ok ? [i] : []));
      expect(winners).toHaveLength(1);
      expect(text(await store.get('race/00001.json'))).toBe(`writer ${winners[0]}`);
      expect((await collect(store.list('race/'))).map((m) => m.path)).toEqual(['race/00001.json']);
    });

    it('lists recursively, sorted by path, filtered by prefix', async () => {
      const keys = ['t/metadata/v10.metadata.json', 't/metadata/v2.metadata.json', 't/data/b/2.parquet', 't/data/a/1.parquet', 't/data/a.parquet', 'tx/other', 'u'];
      for (const k of keys) await store.put(k, k);
      const all = await collect(store.list(''));
      expect(all.map((m) => m.path)).toEqual([...keys].sort());
      for (const m of all) expect(m.size).toBe(Buffer.byteLength(m.path));

      expect((await collect(store.list('t/'))).map((m) => m.path)).toEqual([
        't/data/a.parquet',
        't/data/a/1.parquet',
        't/data/b/2.parquet',
        't/metadata/v10.metadata.json',
        't/metadata/v2.metadata.json',
      ]);
      // A prefix need not end at a folder boundary.
      expect((await collect(store.list('t'))).map((m) => m.path)).toContain('tx/other');
      expect((await collect(store.list('t/data/a'))).map((m) => m.path)).toEqual(['t/data/a.parquet', 't/data/a/1.parquet']);
      expect((await collect(store.list('t/metadata/v1'))).map((m) => m.path)).toEqual(['t/metadata/v10.metadata.json']);
      expect(await collect(store.list('nope/'))).toEqual([]);
      expect(await collect(store.list('t/metadata/v10.metadata.json/'))).toEqual([]);
    });

    it('sorts listings by the UTF-8 byte order of keys', async () => {
      // U+FF5E and U+FFFF sort after 😀 in UTF-16 code units but before it in UTF-8 bytes.
      const keys = ['s/Z', 's/a', 's/é', 's/\uff5e', ...(options.noncharacterKeys === false ? [] : ['s/\uffff']), 's/😀', 's/A B'];
      for (const k of keys) await store.put(k, 'x');
      const listed = (await collect(store.list('s/'))).map((m) => m.path);
      expect(listed).toEqual([...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    });

    it('deletes idempotently and only the named object', async () => {
      await store.put('d/1', 'one');
      await store.put('d/2', 'two');
      await store.delete('d/1');
      await store.delete('d/1');
      await store.delete('never/existed');
      expect(await store.head('d/1')).toBeUndefined();
      expect(text(await store.get('d/2'))).toBe('two');
      expect((await collect(store.list('d/'))).map((m) => m.path)).toEqual(['d/2']);
      await store.delete('d/2');
      expect(await collect(store.list('d/'))).toEqual([]);
      // The same folder takes new objects after it was emptied.
      expect(await store.putIfAbsent('d/1', 'again')).toBe(true);
      expect(text(await store.get('d/1'))).toBe('again');
    });

    it('fails a get of a missing object with a not-found error naming the path', async () => {
      const e = await errorOf(store.get('missing/file.json'));
      expect(e.kind).toBe('not-found');
      expect(e.message).toContain('missing/file.json');
      await store.put('present/file', 'x');
      expect((await errorOf(store.get('present'))).kind).toBe('not-found');
      expect((await errorOf(store.get('present/file/below'))).kind).toBe('not-found');
      expect((await errorOf(store.get('missing/file.json', { offset: 0, length: 1 }))).kind).toBe('not-found');
    });

    it('accepts keys with spaces, unicode and = characters', async () => {
      const key = 'data/date=2024-01-01/city=São Paulo/part 0 – 日本 (1).parquet';
      await store.put(key, 'v1');
      expect(text(await store.get(key))).toBe('v1');
      expect(await store.putIfAbsent(key, 'v2')).toBe(false);
      expect((await store.head(key))?.size).toBe(2);
      expect((await collect(store.list('data/date=2024-01-01/'))).map((m) => m.path)).toEqual([key]);
      await store.delete(key);
      expect(await store.head(key)).toBeUndefined();
    });

    it('rejects keys that are empty, absolute or step outside the root', async () => {
      for (const bad of ['', '/abs/file', '../outside', 'a/../../b', 'a/./b', 'a//b', 'a/..']) {
        expect((await errorOf(store.put(bad, 'x'))).kind, bad).toBe('invalid-input');
        expect((await errorOf(store.get(bad))).kind, bad).toBe('invalid-input');
        expect((await errorOf(store.putIfAbsent(bad, 'x'))).kind, bad).toBe('invalid-input');
        expect((await errorOf(store.delete(bad))).kind, bad).toBe('invalid-input');
      }
      expect((await errorOf(collect(store.list('../')))).kind).toBe('invalid-input');
    });
  });
}

/** FileIO over a table location `table` of a store: writes, create-only writes, listing by URI, reads. */
export async function expectFileIoAt(io: FileIO, table: string): Promise<void> {
    await io.write(`${table}/metadata/v1.metadata.json`, '{"v":1}');
    expect(await io.writeIfAbsent(`${table}/_delta_log/00000000000000000000.json`, 'c0')).toBe(true);
    expect(await io.writeIfAbsent(`${table}/_delta_log/00000000000000000000.json`, 'c0 again')).toBe(false);
    const uris: string[] = [];
    for await (const m of io.list(`${table}/`)) uris.push(m.uri);
    expect(uris).toEqual([`${table}/_delta_log/00000000000000000000.json`, `${table}/metadata/v1.metadata.json`]);
    expect(await io.readText(`${table}/metadata/v1.metadata.json`)).toBe('{"v":1}');
}
