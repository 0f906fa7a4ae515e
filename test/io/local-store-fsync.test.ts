import fsModule, { promises as fs } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalStore } from '../../src/io/local-store.ts';

/**
 * The folder fsyncs of LocalStore's writes, as the kernel is asked for them: writes that land in
 * one folder at once (a commit's manifest, manifest list and metadata file) share a folder fsync,
 * and still none of them returns before an fsync of its folder that began after its name was made.
 */

type Event = { kind: 'named'; path: string } | { kind: 'dir-start' | 'dir-end'; id: number; dir: string } | { kind: 'done'; key: string };

/**
 * A folder fsync is held until all four writes of the test made their names (or a second
 * passed): on a fast disk one write's fsync could otherwise end before the next write gets there,
 * and there would be nothing to share.
 */
async function untilNamed(events: Event[]): Promise<void> {
  for (let waited = 0; waited < 1000 && events.filter((e) => e.kind === 'named').length < 4; waited += 5) await new Promise((r) => setTimeout(r, 5));
}

/** Records every fsync of a folder and every rename or link, through both APIs a store may use. */
function recordCalls(events: Event[]): () => void {
  const restore: (() => void)[] = [];
  const patch = <T extends object, K extends keyof T>(target: T, name: K, wrap: (original: T[K]) => T[K]) => {
    const original = target[name];
    target[name] = wrap(original);
    restore.push(() => {
      target[name] = original;
    });
  };
  let ids = 0;
  const folderOf = (fd: number) => {
    const st = fsModule.fstatSync(fd);
    return st.isDirectory() ? `${st.dev}:${st.ino}` : undefined;
  };
  patch(fsModule, 'fsync', (original) =>
    ((fd: number, cb: (e: NodeJS.ErrnoException | null) => void) => {
      const dir = folderOf(fd);
      if (dir === undefined) return original(fd, cb);
      const id = ++ids;
      events.push({ kind: 'dir-start', id, dir });
      void untilNamed(events).then(() =>
        original(fd, (e) => {
          events.push({ kind: 'dir-end', id, dir });
          cb(e);
        }),
      );
    }) as typeof original,
  );
  for (const name of ['renameSync', 'linkSync'] as const) {
    patch(fsModule, name, (original) =>
      ((from: string, to: string) => {
        (original as (a: string, b: string) => void)(from, to);
        events.push({ kind: 'named', path: to });
      }) as typeof original,
    );
  }
  for (const name of ['rename', 'link'] as const) {
    patch(fs, name, (original) =>
      (async (from: string, to: string) => {
        await (original as (a: string, b: string) => Promise<void>)(from, to);
        events.push({ kind: 'named', path: to });
      }) as typeof original,
    );
  }
  return () => {
    for (const r of restore.reverse()) r();
    syncBuiltinESMExports();
  };
}

/** The same for FileHandle.sync, which a store writing through fs.promises calls. */
async function recordHandleSyncs(events: Event[], dir: string): Promise<() => void> {
  const handle = await fs.open(dir, 'r');
  const proto = Object.getPrototypeOf(handle) as { sync: () => Promise<void>; fd: number };
  await handle.close();
  const original = proto.sync;
  let ids = 1000;
  proto.sync = async function (this: { fd: number }) {
    const st = fsModule.fstatSync(this.fd);
    if (!st.isDirectory()) return original.call(this);
    const id = ++ids;
    const folder = `${st.dev}:${st.ino}`;
    events.push({ kind: 'dir-start', id, dir: folder });
    try {
      await untilNamed(events);
      return await original.call(this);
    } finally {
      events.push({ kind: 'dir-end', id, dir: folder });
    }
  };
  return () => {
    proto.sync = original;
  };
}

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'twinlake-local-fsync-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('LocalStore folder fsyncs', () => {
  it('shares one folder fsync among writes landing in the folder at once, each returning only after an fsync that began after its name was made', async () => {
    const store = new LocalStore(dir);
    await store.put('t/metadata/first', 'x');
    const folder = fsModule.statSync(path.join(dir, 't/metadata'));
    const folderId = `${folder.dev}:${folder.ino}`;
    const events: Event[] = [];
    const restoreFs = recordCalls(events);
    syncBuiltinESMExports();
    const restoreHandles = await recordHandleSyncs(events, dir);
    const writes: [string, () => Promise<unknown>][] = [
      ['t/metadata/m0.avro', () => store.put('t/metadata/m0.avro', new Uint8Array(3000))],
      ['t/metadata/snap.avro', () => store.put('t/metadata/snap.avro', new Uint8Array(2000))],
      ['t/metadata/v2.metadata.json', () => store.putIfAbsent('t/metadata/v2.metadata.json', '{}')],
      ['t/metadata/version-hint.text', () => store.put('t/metadata/version-hint.text', '2')],
    ];
    try {
      await Promise.all(writes.map(([key, write]) => write().then(() => events.push({ kind: 'done', key }))));
    } finally {
      restoreHandles();
      restoreFs();
    }
    const folderSyncs = events.filter((e) => e.kind === 'dir-start' && e.dir === folderId);
    for (const [key] of writes) {
      const named = events.findIndex((e) => e.kind === 'named' && e.path === path.join(dir, key));
      const done = events.findIndex((e) => e.kind === 'done' && e.key === key);
      expect(named, `${key} was renamed or linked into place`).toBeGreaterThanOrEqual(0);
      // Some fsync of the folder started after the name was made and ended before the write returned.
      const covering = events.some((e, i) => {
        if (e.kind !== 'dir-start' || e.dir !== folderId || i < named) return false;
        const end = events.findIndex((x) => x.kind === 'dir-end' && x.id === e.id);
        return end >= 0 && end < done;
      });
      expect(covering, `${key} returned after an fsync of its folder that began after its name was made`).toBe(true);
    }
    // The first fsync was under way when the others made their names: they share the next one.
    expect(folderSyncs.length).toBe(2);
    for (const [key] of writes) expect(await fs.readFile(path.join(dir, key))).toHaveLength(key.endsWith('m0.avro') ? 3000 : key.endsWith('snap.avro') ? 2000 : key.endsWith('.json') ? 2 : 1);
  });
});
