import { afterAll, beforeAll } from 'vitest';
import { DuckDBSession } from '../src/engine/duckdb-session.ts';
import { tempDir } from './helpers.ts';

/**
 * A DuckDB session and a temporary folder for the tests of one file, opened before them and
 * closed after: `const fx = duckdbFixture();` then `fx.session`, `fx.dir.path`.
 */
export function duckdbFixture(): { session: DuckDBSession; dir: { path: string; cleanup: () => void } } {
  const fx = {} as { session: DuckDBSession; dir: { path: string; cleanup: () => void } };
  beforeAll(async () => {
    fx.session = await DuckDBSession.open();
    fx.dir = tempDir();
  });
  afterAll(() => {
    fx.session?.close();
    fx.dir?.cleanup();
  });
  return fx;
}
