import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Lakehouse } from '../../src/index.ts';
import { interruptWrites } from '../../src/table/write/interrupt.ts';
import { tempDir } from '../helpers.ts';

// interruptWrites refuses every later write of the process: this file has a worker of its own.
describe('an interrupt', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it("removes the engine's spill folder, which only closing the session would remove", async () => {
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh'), engine: { tempDir: join(tmp.path, 'engine-temp') }, onWarning: () => undefined });
    const session = await lake.session();
    // What DuckDB creates once it spills; a process that exits on the signal never closes it.
    mkdirSync(session.spillDir, { recursive: true });
    const { left } = await interruptWrites();
    expect(left).toEqual([]);
    expect(existsSync(session.spillDir)).toBe(false);
    await lake.close();
  });
});
