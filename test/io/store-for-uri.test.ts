import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../src/core/errors.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';

function kindOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return isTwinlakeError(e) ? e.kind : 'not a TwinlakeError';
  }
  return undefined;
}

describe('storeForLocation', () => {
  it('maps file:// URIs to a local store on the parent folder and the last segment as key', () => {
    const { store, key } = storeForLocation('file:///data/wh/ns/t/metadata/v1.metadata.json');
    expect(store).toBeInstanceOf(LocalStore);
    expect(store.root).toBe('file:///data/wh/ns/t/metadata');
    expect(key).toBe('v1.metadata.json');
    expect(store.localPath?.(key)).toBe('/data/wh/ns/t/metadata/v1.metadata.json');
  });

  it('accepts the file:/abs form other engines write, and plain absolute paths', () => {
    expect(storeForLocation('file:/data/t/x.json').store.localPath?.('x.json')).toBe('/data/t/x.json');
    const plain = storeForLocation('/data/t/x.json');
    expect(plain.key).toBe('x.json');
    expect(plain.store.localPath?.(plain.key)).toBe('/data/t/x.json');
  });

  it('resolves relative paths against the working directory', () => {
    const { store, key } = storeForLocation('some/dir/file.txt');
    expect(store.localPath?.(key)).toBe(path.resolve('some/dir/file.txt'));
  });

  it('keeps a trailing slash in the key so listings of a folder work', () => {
    const { store, key } = storeForLocation('file:///data/t/metadata/');
    expect(key).toBe('metadata/');
    expect(store.root).toBe('file:///data/t');
  });

  it('returns a key that is a suffix of the location, so FileIO lists real URIs', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-store-for-uri-'));
    try {
      const io = new FileIO(storeForLocation);
      const table = `file://${dir}/t`;
      await io.write(`${table}/metadata/v1.metadata.json`, '{}');
      await io.write(`${table}/data/a b.parquet`, 'x');
      const uris: string[] = [];
      for await (const m of io.list(`${table}/`)) uris.push(m.uri);
      expect(uris).toEqual([`${table}/data/a b.parquet`, `${table}/metadata/v1.metadata.json`]);
      expect(await io.readText(`${table}/metadata/v1.metadata.json`)).toBe('{}');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses cloud schemes for now, naming the scheme', () => {
    for (const uri of ['s3://bucket/key', 'gs://b/k', 'abfss://c@a.dfs.core.windows.net/k']) {
      expect(kindOf(() => storeForLocation(uri))).toBe('unsupported');
    }
    expect(() => storeForLocation('s3a://bucket/key')).toThrow(/s3a:\/\//);
  });

  it('refuses locations with no folder to root a store at', () => {
    for (const uri of ['', '/', 'file:///', 'file:///x', '/x']) expect(kindOf(() => storeForLocation(uri)), uri).toBe('invalid-input');
  });
});
