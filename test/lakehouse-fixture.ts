import { afterAll, beforeAll } from 'vitest';
import { Lakehouse } from '../src/index.ts';
import { tempDir } from './helpers.ts';

/**
 * A lakehouse in a temporary warehouse for the tests of one `describe`, opened before them and
 * closed after: `const fx = lakehouseFixture();` then `fx.lake`, `fx.warehouse`.
 */
export function lakehouseFixture(): { lake: Lakehouse; warehouse: string } {
  const tmp = tempDir();
  const fx = { warehouse: tmp.path } as { lake: Lakehouse; warehouse: string };
  beforeAll(async () => {
    fx.lake = await Lakehouse.open({ warehouse: tmp.path });
  });
  afterAll(async () => {
    await fx.lake?.close();
    tmp.cleanup();
  });
  return fx;
}
