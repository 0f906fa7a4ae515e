import { afterAll, describe, expect, it, vi } from 'vitest';
import { writeFileSync } from 'node:fs';
import { Lakehouse } from '../../src/index.ts';
import { serializeTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { tempDir } from '../helpers.ts';

/**
 * A metadata file parsed by one Lakehouse of the process is not read again by another one on the
 * same warehouse while the file is the same: at 10,000 snapshots it is megabytes.
 */
describe('parsed metadata shared by the Lakehouses of a process', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('plans a read in a new Lakehouse without reading the metadata file again, and reads a changed file', async () => {
    const writer = await Lakehouse.open({ warehouse: tmp.path });
    const t = writer.table('shared.t');
    for (let i = 0; i < 3; i++) await t.append([{ id: i }]);
    await writer.close();
    const first = await Lakehouse.open({ warehouse: tmp.path, readOnly: true });
    expect((await first.table('shared.t').plan()).task.files).toHaveLength(3);
    await first.close();

    const get = vi.spyOn(LocalStore.prototype, 'get');
    try {
      const metadataGets = () => get.mock.calls.filter(([path]) => /\.metadata\.json$/.test(path)).length;
      const second = await Lakehouse.open({ warehouse: tmp.path, readOnly: true });
      try {
        expect((await second.table('shared.t').plan()).task.files).toHaveLength(3);
        expect(metadataGets()).toBe(0);
        // The same name holding other bytes (size and time differ) is read again.
        const metadata = await second.table('shared.t').metadata();
        const pointer = (await second.catalog.metadataLocation!({ namespace: ['shared'], name: 't' }))!;
        writeFileSync(new URL(pointer), serializeTableMetadata({ ...metadata, properties: { ...metadata.properties, padding: 'x'.repeat(100) } }));
        expect((await second.table('shared.t').plan()).task.files).toHaveLength(3);
        expect((await second.table('shared.t').metadata()).properties.padding).toBe('x'.repeat(100));
        expect(metadataGets()).toBe(1);
      } finally {
        await second.close();
      }
    } finally {
      get.mockRestore();
    }
  });
});
