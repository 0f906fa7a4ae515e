import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { localPath } from '../../src/core/uri.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { cli, ndjson, tempDir } from '../helpers.ts';

/**
 * `twinlake register` on Iceberg tables as another engine leaves them: Iceberg only, none of
 * Twinlake's properties (no formats, physical names or name mapping), known to no catalog entry.
 */
describe('twinlake register', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  afterAll(() => tmp.cleanup());
  const run = (...args: string[]) => cli(['--warehouse', wh, ...args]);
  const metadataFiles: Record<string, string> = {};

  beforeAll(async () => {
    const lake = await Lakehouse.open({ warehouse: wh });
    try {
      for (const name of ['orders', 'items']) {
        const id = { namespace: ['spark'], name };
        await lake.table(id).append([{ id: 1, v: 'a' }, { id: 2, v: 'b' }], { formats: ['iceberg'] });
        const stripped = await lake.catalog.commitTable(id, {
          requirements: [],
          updates: [{ action: 'remove-properties', removals: ['twinlake.formats', 'twinlake.column-physical-names', 'schema.name-mapping.default'] }],
        });
        if (stripped.status !== 'committed') throw new Error(stripped.reason);
        metadataFiles[name] = localPath(stripped.metadataLocation);
        await lake.catalog.dropTable(id);
      }
    } finally {
      await lake.close();
    }
  });

  it('registers the table where it is, projects it to Delta, and later writes keep both formats', () => {
    const r = run('register', 'adopted.orders', metadataFiles.orders!);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`registered adopted.orders: file://${metadataFiles.orders}`);
    expect(r.stdout).toContain(`location          ${join(wh, 'spark', 'orders')}`);
    expect(r.stdout).toMatch(/^  formats           delta, iceberg$/m);
    expect(r.stdout).toMatch(/^  delta version     0$/m);
    const read = (format: string) =>
      run('read', 'adopted.orders', '--format', format, '--output', 'ndjson')
        .stdout.trim()
        .split('\n')
        .map((l) => parseJson(l) as { id: number; v: string })
        .sort((a, b) => a.id - b.id);
    expect(read('delta')).toEqual([{ id: 1, v: 'a' }, { id: 2, v: 'b' }]);

    const more = join(tmp.path, 'more.ndjson');
    writeFileSync(more, ndjson([{ id: 3, v: 'c' }]));
    const w = run('write', 'adopted.orders', '--input', more);
    expect(w.code, w.stderr).toBe(0);
    expect(read('delta')).toEqual(read('iceberg'));
    expect(read('delta')).toHaveLength(3);
    expect(run('verify', 'adopted.orders', '--all-versions').code).toBe(0);
  });

  it('--json gives the result; a taken name, a missing file and a copy that names another place are refused', () => {
    const j = run('register', 'adopted.items', metadataFiles.items!, '--json');
    expect(j.code, j.stderr).toBe(0);
    const out = parseJson(j.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ table: 'adopted.items', registeredMetadata: `file://${metadataFiles.items}`, formats: ['delta', 'iceberg'], deltaVersion: 0 });
    expect(out.metadataLocation).not.toBe(out.registeredMetadata);

    const again = run('register', 'adopted.items', metadataFiles.items!);
    expect(again.code).toBe(5);
    expect(again.stderr).toContain('register adopted.items: the table already exists');

    const missing = run('register', 'adopted.none', join(wh, 'nope', 'v1.metadata.json'));
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain(`register adopted.none: metadata file file://${join(wh, 'nope', 'v1.metadata.json')} does not exist`);

    // A copied folder still names the place it was written: registering it would write there.
    cpSync(join(wh, 'spark', 'items'), join(wh, 'copied', 'items'), { recursive: true });
    const copy = metadataFiles.items!.replace(join(wh, 'spark'), join(wh, 'copied'));
    const copied = run('register', 'copied.items', copy);
    expect(copied.code).toBe(3);
    expect(copied.stderr).toContain(`register copied.items: metadata file file://${copy} is not in the table's metadata folder file://${join(wh, 'spark', 'items')}/metadata`);
    expect(run('tables').stdout.split('\n')).not.toContain('copied.items');

    expect(run('register', 'adopted.x').code).toBe(2);
    expect(run('register', '--help').stdout).toContain('twinlake register sales.orders /data/spark/orders/metadata/00007-0c1f.metadata.json');
  });
});
