import { existsSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { removeOrphans } from '../../src/maintenance/orphans.ts';
import { expectBothEqual } from '../both-formats.ts';
import { tempDir } from '../helpers.ts';

/**
 * A local write goes to a temporary file beside its object and is moved into place; a writer killed
 * in between leaves the temporary file. The store never lists it as an object, and orphan cleanup
 * still finds it and removes it once it is past the safety window.
 */

const DAY = 86400e3;
let dir: ReturnType<typeof tempDir> | undefined;
afterEach(() => dir?.cleanup());

describe('orphan cleanup and a killed writer\'s temporary files', () => {
  test('a local store\'s leftover temporary file is no object, and orphan cleanup removes it past the window', async () => {
    dir = tempDir();
    const lake = await Lakehouse.open({ warehouse: join(dir.path, 'wh'), onWarning: () => {} });
    const t = lake.table('ns.t');
    await t.append([{ id: 1 }]);
    const root = join(dir.path, 'wh', 'ns', 't');
    // Named as the local store names its temporary files (`.<name>.<16 hex>.tmp`).
    const leftovers = ['metadata/.v9.metadata.json.0123456789abcdef.tmp', '_delta_log/.00000000000000000009.json.fedcba9876543210.tmp'];
    for (const f of leftovers) writeFileSync(join(root, f), '{"half": ');
    const store = new LocalStore(root);
    const listed: string[] = [];
    for await (const o of store.list('')) listed.push(o.path);
    expect(listed.filter((p) => p.endsWith('.tmp'))).toEqual([]);
    const temporary: string[] = [];
    for await (const o of store.listTemporary('')) temporary.push(o.path);
    expect(temporary.sort()).toEqual([...leftovers].sort());

    // Young: it may be a write in flight.
    expect((await removeOrphans(t)).files).toEqual([]);
    const old = (Date.now() - 4 * DAY) / 1000;
    for (const f of leftovers) utimesSync(join(root, f), old, old);
    const r = await removeOrphans(t);
    expect(r.files.map((f) => [f.path, f.kind]).sort()).toEqual(leftovers.map((f) => [f, 'staging']).sort());
    for (const f of leftovers) expect(existsSync(join(root, f)), f).toBe(false);
    await expectBothEqual(t, [1]);
    await lake.close();
  });
});
