import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileIO } from '../../src/io/file-io.ts';
import type { ObjectMeta, ObjectStore } from '../../src/io/object-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { expectBothEqual, identOf } from '../both-formats.ts';
import { FaultyStore } from '../faults.ts';
import { tempDir } from '../helpers.ts';

/**
 * The durable writes of an Iceberg commit overlap: the catalog writes its metadata file while
 * the snapshot's manifests and manifest list are still being fsynced, and moves its pointer only
 * once every one of them is durable. A failed manifest write commits nothing and leaves no
 * metadata file behind.
 */

/** A store whose puts of the keys `hold` picks wait until the test lets them go. */
class HoldingStore implements ObjectStore {
  hold: (key: string) => boolean = () => false;
  private gate?: { opened: Promise<void>; open: () => void };
  private heldStarted?: () => void;
  held = new Promise<void>((resolve) => (this.heldStarted = resolve));

  constructor(private readonly inner: ObjectStore) {}

  get root() {
    return this.inner.root;
  }
  close(): void {
    this.gate ??= { opened: Promise.resolve(), open: () => undefined };
    this.gate.open();
  }
  arm(hold: (key: string) => boolean): void {
    let open!: () => void;
    this.gate = { opened: new Promise<void>((r) => (open = r)), open };
    this.hold = hold;
  }
  get(path: string, range?: { offset: number; length: number }) {
    return this.inner.get(path, range);
  }
  head(path: string) {
    return this.inner.head(path);
  }
  async put(path: string, body: Uint8Array | string) {
    if (this.gate && this.hold(path)) {
      this.heldStarted?.();
      await this.gate.opened;
    }
    return this.inner.put(path, body);
  }
  putIfAbsent(path: string, body: Uint8Array | string) {
    return this.inner.putIfAbsent(path, body);
  }
  list(prefix: string): AsyncIterable<ObjectMeta> {
    return this.inner.list(prefix);
  }
  delete(path: string) {
    return this.inner.delete(path);
  }
  localPath(path: string) {
    return this.inner.localPath?.(path);
  }
}

async function until(what: string, ok: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`gave up waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const metadataFiles = (dir: string) => readdirSync(join(dir, 'metadata')).filter((f) => f.endsWith('.metadata.json')).sort();

describe('an iceberg commit makes its files durable at once', () => {
  it('writes the metadata file while the manifest list is still being written, and moves the pointer only after', async () => {
    const tmp = tempDir();
    const stores = new Map<string, HoldingStore>();
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      let s = stores.get(store.root);
      if (!s) stores.set(store.root, (s = new HoldingStore(store)));
      return { store: s, key };
    });
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: () => undefined });
    try {
      const t = lake.table('dur.t');
      await t.append([{ id: 1 }]);
      const dir = join(tmp.path, 'dur', 't');
      const before = (await lake.catalog.loadTable(identOf('dur.t'))).metadataLocation;
      const version = Number(/v(\d+)\.metadata\.json$/.exec(before)![1]);
      const next = `v${version + 1}.metadata.json`;
      const held = [...stores.values()];
      for (const s of held) s.arm((key) => /(^|\/)snap-[^/]+\.avro$/.test(key));
      const pending = t.append([{ id: 2 }]);
      await Promise.race(held.map((s) => s.held));
      // The list is held: its commit's metadata file is written meanwhile, the pointer stays.
      await until(`${next} written while the manifest list is held`, () => metadataFiles(dir).includes(next));
      expect((await lake.catalog.loadTable(identOf('dur.t'))).metadataLocation).toBe(before);
      expect(existsSync(join(dir, '_delta_log', `${String(2).padStart(20, '0')}.json`))).toBe(false);
      for (const s of held) s.close();
      const r = await pending;
      expect(r.deltaVersion).toBe(2);
      expect((await lake.catalog.loadTable(identOf('dur.t'))).metadataLocation).toMatch(new RegExp(`/${next.replace(/\./g, '\\.')}$`));
      await expectBothEqual(t, [1, 2]);
    } finally {
      await lake.close();
      tmp.cleanup();
    }
  });

  it('commits nothing when a manifest write fails, and removes the metadata file written beside it', async () => {
    const tmp = tempDir();
    let failing = false;
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      const faulty = new FaultyStore(store);
      faulty.failWhen = (call, path) => failing && call === 'put' && /(^|\/)snap-[^/]+\.avro$/.test(path);
      return { store: faulty, key };
    });
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: () => undefined });
    try {
      const t = lake.table('dur.f');
      await t.append([{ id: 1 }]);
      const dir = join(tmp.path, 'dur', 'f');
      const before = (await lake.catalog.loadTable(identOf('dur.f'))).metadataLocation;
      const files = metadataFiles(dir);
      failing = true;
      await expect(t.append([{ id: 2 }])).rejects.toThrow(/injected failure: put .*snap-/);
      failing = false;
      expect((await lake.catalog.loadTable(identOf('dur.f'))).metadataLocation).toBe(before);
      expect(metadataFiles(dir)).toEqual(files);
      await expectBothEqual(t, [1]);
      await t.append([{ id: 3 }]);
      await expectBothEqual(t, [1, 3]);
    } finally {
      await lake.close();
      tmp.cleanup();
    }
  });
});
