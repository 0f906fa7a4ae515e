import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { localPath } from '../../src/core/uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { identOf, ids } from '../both-formats.ts';
import { cli, errorOf, tempDir } from '../helpers.ts';

/**
 * A Delta read of a dual-format table needs only the table's location, never its Iceberg
 * metadata parsed (megabytes at 10,000 snapshots): by name and by path, a Delta read works while
 * the current metadata file is garbage or gone, as long as the Delta log is whole. The Iceberg
 * read of the same table says what is wrong with its metadata.
 */
describe('a delta read with damaged iceberg metadata', () => {
  let tmp: ReturnType<typeof tempDir>;
  let pointer: string;
  const dir = () => join(tmp.path, 'dmg', 't');

  beforeEach(async () => {
    tmp = tempDir();
    const lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => undefined });
    try {
      const t = lake.table('dmg.t');
      await t.append([{ id: 1 }, { id: 2 }]);
      await t.append([{ id: 3 }]);
      pointer = (await lake.catalog.loadTable(identOf('dmg.t'))).metadataLocation;
    } finally {
      await lake.close();
    }
  });
  afterEach(() => tmp.cleanup());

  for (const [damage, spoil] of [
    ['garbage', () => writeFileSync(localPath(pointer), 'not json {{{ \u0000\u0001')],
    ['truncated JSON', () => writeFileSync(localPath(pointer), '{"format-version": 2, "table-uuid": "')],
    ['missing', () => rmSync(localPath(pointer))],
  ] as const) {
    it(`reads by name and by path through delta when the current metadata file is ${damage}`, async () => {
      spoil();
      const lake = await Lakehouse.open({ warehouse: tmp.path, readOnly: true });
      try {
        const t = lake.table('dmg.t');
        expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2, 3]);
        expect(await t.count({ format: 'delta' })).toBe(3);
        expect(ids(await t.read({ format: 'delta', version: 1 }))).toEqual([1, 2]);
        expect((await t.plan({ format: 'delta' })).deltaVersion).toBe(2);
        expect(ids(await lake.readPath(dir(), { format: 'delta' }))).toEqual([1, 2, 3]);
        // The Iceberg side reports its damage.
        expect((await errorOf(t.read())).message).toMatch(/metadata/);
      } finally {
        await lake.close();
      }
    });
  }

  it('reads through delta from the CLI, by name and by path, with garbage iceberg metadata', () => {
    writeFileSync(localPath(pointer), 'garbage');
    for (const table of ['dmg.t', dir()]) {
      const r = cli(['--warehouse', tmp.path, 'read', table, '--format', 'delta', '--output', 'ndjson']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(ids(r.stdout.trim().split('\n').map((l) => JSON.parse(l)))).toEqual([1, 2, 3]);
    }
  });

  it('still refuses a delta read of a table that dropped delta, and reads one whose properties lie beyond the first bytes', async () => {
    const lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: () => undefined });
    try {
      const t = lake.table('dmg.t');
      // A large property: the properties end past what the Delta read peeks at, so it parses the file.
      await t.alter({ set: { 'comment': 'x'.repeat(100_000) } });
      expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2, 3]);
      await t.alter({ formats: ['iceberg'] });
      await t.alter({ unset: ['comment'] });
      expect((await errorOf(t.read({ format: 'delta' }))).message).toMatch(/only the Iceberg format/);
      expect(ids(await t.read())).toEqual([1, 2, 3]);
    } finally {
      await lake.close();
    }
  });
});
