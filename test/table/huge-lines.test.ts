import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { cli, errorOf, listFiles, tempDir } from '../helpers.ts';

/**
 * A record far longer than the engine's default reader buffer (16 MB for JSON, 2 MB for CSV) is
 * read; one longer than the limit the engine's memory allows is refused with its line and size.
 */
describe('huge lines', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const MiB = 1024 * 1024;

  it('a 32 MB JSON line is written and reads back whole', () => {
    const f = join(tmp.path, 'big.ndjson');
    writeFileSync(f, `{"id":1,"s":"a"}\n${JSON.stringify({ id: 2, s: 'é'.repeat(1000) + 'x'.repeat(32 * MiB), n: -3 })}\n{"id":3,"s":"c"}\n`);
    const w = cli(['--warehouse', wh, 'write', 'big.json', '--input', f]);
    expect(w.code, w.stderr).toBe(0);
    expect(w.stdout).toMatch(/rows\s+3/);
    const r = cli(['--warehouse', wh, 'read', 'big.json', '--output', 'ndjson']);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((x) => x.id)).toEqual([1, 2, 3]);
    expect(rows[1].s).toHaveLength(1000 + 32 * MiB);
    expect(rows[1].s.startsWith('éé') && rows[1].s.endsWith('xx')).toBe(true);
  });

  it('a 32 MB CSV row is written and reads back whole', () => {
    const f = join(tmp.path, 'big.csv');
    writeFileSync(f, `id,s\n1,a\n2,${'q'.repeat(32 * MiB)}\n3,c\n`);
    const w = cli(['--warehouse', wh, 'write', 'big.csv', '--input', f]);
    expect(w.code, w.stderr).toBe(0);
    const r = cli(['--warehouse', wh, 'read', 'big.csv', '--output', 'ndjson']);
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(rows.map((x) => [x.id, x.s.length])).toEqual([[1, 1], [2, 32 * MiB], [3, 1]]);
  });

  it('a line over the limit names its line and size and the limit; one under it is read', async () => {
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh-small') });
    try {
      // An eighth of the engine's memory: 32 MB under 256 MiB.
      await (await lake.session()).run("SET memory_limit = '256MiB'");
      const ok = join(tmp.path, 'under.ndjson');
      writeFileSync(ok, `{"id":1,"s":"a"}\n${JSON.stringify({ id: 2, s: 'x'.repeat(24 * MiB) })}\n`);
      const table = lake.table('big.limited');
      expect((await table.append({ path: ok })).rows).toBe(2);
      const before = listFiles(join(tmp.path, 'wh-small', 'big', 'limited'));

      const over = join(tmp.path, 'over.ndjson');
      writeFileSync(over, `{"id":3,"s":"a"}\n\n{"id":4,"s":"b"}\n${JSON.stringify({ id: 5, s: 'y'.repeat(40 * MiB) })}\n`);
      const e = await errorOf(table.append({ path: over }));
      expect(e.kind).toBe('invalid-input');
      expect(e.message).toBe(`input ${over}: line 4 is 40 MB; the limit is 32 MB (an eighth of the engine's memory limit; raise the memory limit for longer lines)`);
      expect(listFiles(join(tmp.path, 'wh-small', 'big', 'limited'))).toEqual(before);
      expect(await table.count()).toBe(2);
    } finally {
      await lake.close();
    }
  });

  it('the JSON reader keeps integers exact inside megabytes of string', async () => {
    const { parseJson } = await import('../../src/core/json.ts');
    const text = `{"s":"${'z'.repeat(8 * MiB)}\\"q","id":9007199254740993}`;
    const v = parseJson(text);
    expect(v.id).toBe(9007199254740993n);
    expect(v.s).toHaveLength(8 * MiB + 2);
  });
});
