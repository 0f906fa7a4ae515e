import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, ndjson, tempDir } from '../helpers.ts';

describe('twinlake write reports schema evolution', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const file = (name: string, rows: unknown[]) => {
    const p = join(tmp.path, name);
    writeFileSync(p, ndjson(rows));
    return p;
  };

  it('names the columns added and the types widened, with nested paths, in its output and in --json', () => {
    const schema = join(tmp.path, 'schema.json');
    writeFileSync(schema, JSON.stringify({ type: 'struct', fields: [{ id: 0, name: 'id', required: false, type: 'long' }, { id: 0, name: 'n', required: false, type: 'int' }, { id: 0, name: 'o', required: false, type: { type: 'struct', fields: [{ id: 0, name: 'f', required: false, type: 'float' }] } }] }));
    const first = cli(['--warehouse', wh, 'write', 'ev.t', '--input', file('1.ndjson', [{ id: 1, n: 1, o: { f: 1.5 } }]), '--schema', schema]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).not.toMatch(/columns added|types widened/);

    const second = cli(['--warehouse', wh, 'write', 'ev.t', '--input', file('2.ndjson', [{ id: 2, n: 5_000_000_000, o: { f: 1e39, g: 'x' }, items: [{ sku: 'a' }] }])]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/^ {2}columns added {5}o\.g: string, items: list<struct<sku: string>>$/m);
    expect(second.stdout).toMatch(/^ {2}types widened {5}n: int → long, o\.f: float → double$/m);

    const third = cli(['--warehouse', wh, 'write', 'ev.t', '--json', '--input', file('3.ndjson', [{ id: 3, items: [{ sku: 'b', qty: 2 }] }])]);
    expect(third.code, third.stderr).toBe(0);
    expect(parseJson(third.stdout).schemaChanges).toEqual([{ change: 'added', column: 'items.element.qty', type: 'long' }]);

    const same = cli(['--warehouse', wh, 'write', 'ev.t', '--json', '--input', file('4.ndjson', [{ id: 4 }])]);
    expect(parseJson(same.stdout).schemaChanges).toEqual([]);
  });
});
