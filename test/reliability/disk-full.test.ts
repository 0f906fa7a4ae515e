import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { errorOf, listFiles } from '../helpers.ts';

/**
 * A warehouse on a full disk and on read-only mounts (a tiny tmpfs; we run as root, so file
 * permissions would not stop a write). Every failed write leaves the table as it was — the catalog
 * pointer, the version hint and the Delta log unchanged, no file the table references torn — and
 * says which path and why (ENOSPC, EROFS); once there is room again, or the mount is writable, the
 * next write works and both formats agree.
 */

const mounts: string[] = [];

function run(args: string[]): boolean {
  return spawnSync(args[0]!, args.slice(1), { stdio: 'ignore' }).status === 0;
}

/** A fresh tmpfs of `size`, or undefined when this machine does not let us mount one. */
function tmpfs(size: string): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'twinlake-disk-'));
  if (!run(['mount', '-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir])) {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  mounts.push(dir);
  return dir;
}

/** Makes `dir` read-only (a read-only bind mount over itself), or writable again. */
function readOnly(dir: string, on: boolean): void {
  if (on) {
    expect(run(['mount', '--bind', dir, dir])).toBe(true);
    mounts.push(dir);
    expect(run(['mount', '-o', 'remount,bind,ro', dir])).toBe(true);
  } else {
    expect(run(['umount', dir])).toBe(true);
    mounts.splice(mounts.lastIndexOf(dir), 1);
  }
}

const probe = tmpfs('4m');
if (!probe) {
  const why = 'disk tests: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN)';
  if (process.env.CI) throw new Error(`${why}, and CI is set`);
  console.warn(`${why}: skipped`);
}

afterAll(() => {
  // Innermost first: bind mounts inside a tmpfs go before it.
  for (const dir of mounts.splice(0).reverse()) run(['umount', '-l', dir]);
  if (probe) rmSync(probe, { recursive: true, force: true });
});

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);
const free = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};
const batch = (from: number) => Array.from({ length: 3000 }, (_, i) => ({ id: from + i, s: `row ${from + i} `.repeat(8) }));

/** What a reader of the table goes by: the rows of both formats, the hint, the log. */
async function state(lake: Lakehouse, warehouse: string, name: string) {
  const t = lake.table(name);
  const dir = join(warehouse, ...name.split('.'));
  return {
    iceberg: (await t.read()).length,
    byPath: (await lake.readPath(dir)).length,
    hint: readFileSync(join(dir, 'metadata', 'version-hint.text'), 'utf8'),
    log: listFiles(join(dir, '_delta_log')),
  };
}

describe.skipIf(!probe)('a full disk', () => {
  it('fails a write at whichever step runs out of room, leaves the table as it was, and the next write works', async () => {
    const warehouse = probe!;
    const warnings: string[] = [];
    const lake = await Lakehouse.open({ warehouse, onWarning: (m) => warnings.push(m) });
    try {
      const t = lake.table('ns.full');
      await t.append(batch(0));
      let rows = 3000;
      const failedAt = new Set<string>();
      let succeeded = 0;
      // From no room at all to room for a whole append, 2 KiB at a time: the room runs out while
      // writing the data file, a manifest, the manifest list, the metadata file, the catalog's
      // pointer, the Delta commit, or not at all.
      for (let leave = 0; leave <= 40 * 1024; leave += 2048) {
        const before = await state(lake, warehouse, 'ns.full');
        const filler = join(warehouse, 'filler');
        writeFileSync(filler, Buffer.alloc(Math.max(0, free(warehouse) - leave)));
        const warned = warnings.length;
        let error: Error | undefined;
        try {
          await t.append(batch(rows));
        } catch (e) {
          error = e as Error;
        }
        rmSync(filler);

        const after = await state(lake, warehouse, 'ns.full');
        if (error) {
          // Named: the path, and that the disk is full.
          const e = await errorOf(Promise.reject(error));
          expect(e.message).toMatch(/no space left on the device \(ENOSPC\)|database or disk is full \(SQLITE_FULL in \S+catalog\.db\)/);
          expect(e.message).toContain(warehouse);
          failedAt.add(e.message);
          // Nothing moved: the pointer (read through the catalog and by path), the hint. The log
          // moves only when the write first caught Delta up with an earlier Iceberg commit.
          expect({ ...after, log: [] }).toEqual({ ...before, log: [] });
          if (after.log.length !== before.log.length) {
            expect(after.log.slice(0, before.log.length)).toEqual(before.log);
            expect((await t.read({ format: 'delta' })).length).toBe(after.iceberg);
          }
        } else {
          succeeded++;
          rows += 3000;
          expect(after.iceberg).toBe(rows);
          // The hint is written after the catalog's commit, as an aid to path readers: one that
          // ran out of room leaves them the state before, which verify names and the next write
          // moves on. Never a hint naming a file that is not whole.
          if (after.byPath !== rows) {
            expect(after.byPath).toBe(before.byPath);
            expect(after.hint).toBe(before.hint);
            expect((await t.verify()).findings.map((f) => f.kind)).toContain('version-hint-behind');
          }
          // The Delta commit may be what ran out of room: the Iceberg commit stands, the write
          // warns naming the file, and the next write catches Delta up.
          const w = warnings.slice(warned).join('\n');
          if (after.log.length === before.log.length) expect(w).toMatch(/_delta_log\/\d+\.json: no space left on the device \(ENOSPC\)/);
        }
        // Whatever happened, nothing the table references is torn.
        const v = await t.verify();
        expect(v.findings.filter((f) => f.kind === 'table-file-damaged')).toEqual([]);
        expect(Number.isInteger(Number(after.hint))).toBe(true);
      }
      // Every step a write takes ran out of room at least once, and the sweep ended with room.
      expect([...failedAt].some((m) => m.includes('/data/'))).toBe(true);
      expect([...failedAt].some((m) => /\.avro/.test(m))).toBe(true);
      expect([...failedAt].some((m) => m.includes('.metadata.json'))).toBe(true);
      expect([...failedAt].some((m) => m.includes('SQLITE_FULL'))).toBe(true);
      expect(succeeded).toBeGreaterThan(0);

      // With room again: a write works, Delta catches up, and the formats agree row for row.
      await t.append([{ id: -1, s: 'last' }]);
      const iceberg = ids(await t.read());
      expect(iceberg.length).toBe(rows + 1);
      expect(ids(await t.read({ format: 'delta' }))).toEqual(iceberg);
      const v = await t.verify({ allVersions: true });
      expect(v.findings).toEqual([]);
    } finally {
      await lake.close();
    }
  });
});

describe.skipIf(!probe)('read-only mounts', () => {
  it('a read-only folder of the table fails the write naming it (EROFS) and changes nothing; writable again, the next write works', async () => {
    const warehouse = join(probe!, 'rw');
    mkdirSync(warehouse);
    const warnings: string[] = [];
    const lake = await Lakehouse.open({ warehouse, onWarning: (m) => warnings.push(m) });
    try {
      const t = lake.table('ns.ro');
      await t.append(batch(0));
      await t.append(batch(3000));
      const dir = join(warehouse, 'ns', 'ro');
      let rows = 6000;
      for (const folder of ['data', 'metadata', '_delta_log']) {
        const before = await state(lake, warehouse, 'ns.ro');
        readOnly(join(dir, folder), true);
        try {
          if (folder === '_delta_log') {
            // The Iceberg commit is the truth and stands; the Delta commit fails, named, and the
            // next write catches it up.
            await t.append(batch(rows));
            rows += 3000;
            expect(warnings.join('\n')).toMatch(/_delta_log\/\d+\.json: the path is not writable \(EROFS\)/);
            expect((await state(lake, warehouse, 'ns.ro')).log).toEqual(before.log);
          } else {
            const e = await errorOf(t.append(batch(rows)));
            expect(e.kind).toBe('io');
            expect(e.message).toMatch(new RegExp(`local store: cannot write ${dir}/${folder}/\\S+: the path is not writable \\(EROFS\\)`));
            expect(await state(lake, warehouse, 'ns.ro')).toEqual(before);
          }
        } finally {
          readOnly(join(dir, folder), false);
        }
      }
      await t.append([{ id: -1, s: 'last' }]);
      const iceberg = ids(await t.read());
      expect(iceberg.length).toBe(rows + 1);
      expect(ids(await t.read({ format: 'delta' }))).toEqual(iceberg);
      expect((await t.verify({ allVersions: true })).findings).toEqual([]);
    } finally {
      await lake.close();
    }
  });

  it('a read-only warehouse: opened for reading, reads work and writes fail cleanly; opened for writing, it says the catalog is not writable', async () => {
    const warehouse = join(probe!, 'whole');
    mkdirSync(warehouse);
    const writer = await Lakehouse.open({ warehouse });
    await writer.table('ns.t').append(batch(0));
    await writer.close();
    const before = listFiles(warehouse);
    readOnly(warehouse, true);
    try {
      const e = await errorOf(Lakehouse.open({ warehouse }));
      expect(e.message).toMatch(new RegExp(`sql catalog: cannot use ${warehouse}/catalog\\.db while opening the catalog database: the file or its folder is not writable`));

      const reader = await Lakehouse.open({ warehouse, readOnly: true });
      try {
        const t = reader.table('ns.t');
        expect((await t.read()).length).toBe(3000);
        expect((await t.read({ format: 'delta' })).length).toBe(3000);
        expect((await reader.readPath(join(warehouse, 'ns', 't'))).length).toBe(3000);
        const w = await errorOf(t.append(batch(3000)));
        expect(w.kind).toBe('io');
      } finally {
        await reader.close();
      }
      expect(listFiles(warehouse)).toEqual(before);
    } finally {
      readOnly(warehouse, false);
    }
  });
});
