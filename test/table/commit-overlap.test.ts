import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { SqliteDriver } from '../../src/catalog/sqlite-driver.ts';
import { fileUri } from '../../src/core/uri.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { currentSchema } from '../../src/format/iceberg/table-metadata.ts';
import { SnapshotProducer } from '../../src/table/commit/snapshot-producer.ts';
import { readManifestEntries, readManifestList } from '../../src/table/commit/manifest-io.ts';
import { sampleMetadata } from '../catalog/catalog-contract.ts';

/**
 * A commit's independent durable writes overlap: the manifest of the added files and the
 * manifest list are written at once, and the SQL catalog's version hint can be awaited by the
 * caller beside its own writes. What is handed out is only ever what is on disk.
 */

/** A local store that records its calls and can hold a put until another one has started. */
class GatedStore extends LocalStore {
  calls: string[] = [];
  holdUntil?: { key: RegExp; started: RegExp };
  private started: string[] = [];
  private waiters: (() => void)[] = [];

  override async get(key: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    this.calls.push(`get ${key}`);
    return super.get(key, range);
  }

  override async put(key: string, body: Uint8Array | string): Promise<void> {
    this.calls.push(`put ${key}`);
    this.started.push(key);
    for (const w of this.waiters.splice(0)) w();
    const hold = this.holdUntil;
    if (hold && hold.key.test(key)) {
      await new Promise<void>((resolve, reject) => {
        const check = () => (this.started.some((k) => hold.started.test(k)) ? resolve() : undefined);
        this.waiters.push(check);
        check();
        setTimeout(() => reject(new Error(`put ${key}: nothing matching ${hold.started} started while it was held`)), 3_000).unref();
      });
    }
    return super.put(key, body);
  }
}

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-commit-overlap-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('a commit overlaps its independent writes', () => {
  it('writes the manifest list while the manifest of the added files is still being written, and hands the snapshot out once both are whole', async () => {
    const store = new GatedStore(dir);
    const io = new FileIO((uri) => ({ store, key: uri.slice(store.root.length + 1) }));
    const base = { ...sampleMetadata(), location: fileUri(path.join(dir, 't')) };
    const added = [{ content: 0 as const, 'file-path': fileUri(path.join(dir, 't/data/a.parquet')), 'file-format': 'PARQUET' as const, partition: {}, 'record-count': 10, 'file-size-in-bytes': 100, 'spec-id': 0 }];
    const producer = new SnapshotProducer(io, 7n, { operation: 'append', added, replaceAll: false });
    // The manifest's put waits for the list's to start: written one after the other, it never would.
    store.holdUntil = { key: /-m0\.avro$/, started: /\/snap-7-/ };
    const { snapshot } = await producer.produce(base, 1_000, { schema: currentSchema(base), summaryExtra: {} });
    const list = await readManifestList(io, snapshot['manifest-list']);
    expect(list).toHaveLength(1);
    expect(list[0]!['manifest-length']).toBe((await fs.stat(new URL(list[0]!['manifest-path']))).size);
    const entries = await readManifestEntries(io, list[0]!, base);
    expect(entries.map((e) => e['data-file']['file-path'])).toEqual([added[0]!['file-path']]);
  });

  it('lets the caller await the version hint after the compare-and-swap, and does not read it back once written', async () => {
    const store = new GatedStore(dir);
    const catalog = new SqlCatalog({ warehouse: { store, rootUri: store.root } });
    try {
      await catalog.createNamespace(['ns']);
      const id = { namespace: ['ns'], name: 't' };
      await catalog.createTable(id, sampleMetadata());
      const hint = path.join(dir, 'ns/t/metadata/version-hint.text');
      // The hint's put is held until the caller's own write starts: a catalog that wrote the hint
      // before returning would wait for a write that only comes after it.
      store.holdUntil = { key: /version-hint\.text$/, started: /caller\.txt$/ };
      store.calls = [];
      const r = await catalog.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { k: 'v' } }] }, { deferFollowUp: true });
      expect(r.status).toBe('committed');
      if (r.status !== 'committed') return;
      expect(r.followUp).toBeInstanceOf(Promise);
      await Promise.all([store.put('ns/t/caller.txt', 'x'), r.followUp]);
      expect(await fs.readFile(hint, 'utf8')).toBe('2');
      expect(store.calls.filter((c) => c.endsWith('version-hint.text'))).toEqual(['get ns/t/metadata/version-hint.text', 'put ns/t/metadata/version-hint.text']);

      // Without the option the hint is written before the commit returns, as before.
      store.holdUntil = undefined;
      const plain = await catalog.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { k: 'w' } }] });
      expect(plain.status === 'committed' && plain.followUp).toBe(undefined);
      expect(await fs.readFile(hint, 'utf8')).toBe('3');
    } finally {
      catalog.close();
    }
  });

  it('reads the version hint while the metadata file is written, so that after the swap only its write is left', async () => {
    const store = new GatedStore(dir);
    const driver = SqliteDriver.open(path.join(dir, 'catalog.db'));
    const swap = driver.swap.bind(driver);
    driver.swap = (sql, params) => {
      store.calls.push('swap');
      return swap(sql, params);
    };
    const catalog = new SqlCatalog({ driver, warehouse: { store, rootUri: store.root } });
    try {
      await catalog.createNamespace(['ns']);
      const id = { namespace: ['ns'], name: 't' };
      await catalog.createTable(id, sampleMetadata());
      for (const [version, value] of [[2, 'v'], [3, 'w']] as const) {
        store.calls = [];
        const r = await catalog.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { k: value } }] });
        expect(r.status).toBe('committed');
        expect(store.calls.filter((c) => c === 'swap' || c.endsWith('version-hint.text'))).toEqual(['get ns/t/metadata/version-hint.text', 'swap', 'put ns/t/metadata/version-hint.text']);
        // Read before the swap, the hint still only moves forward to the version committed.
        expect(await fs.readFile(path.join(dir, 'ns/t/metadata/version-hint.text'), 'utf8')).toBe(String(version));
      }
    } finally {
      await catalog.close();
      await driver.close();
    }
  });
});
