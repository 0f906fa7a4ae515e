import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DuckDBSession } from '../../src/engine/duckdb-session.ts';
import { machineMemoryBytes, resolveEngineSettings } from '../../src/engine/engine-settings.ts';
import { Lakehouse } from '../../src/index.ts';
import { errorOf, tempDir, thrown } from '../helpers.ts';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('engine settings', () => {
  it('take the option first, then the environment, then a default derived from the machine', () => {
    const env = { TWINLAKE_MEMORY_LIMIT: '2GB', TWINLAKE_THREADS: '3', TWINLAKE_TEMP_DIR: join(tmp.path, 'env') };
    const fromEnv = resolveEngineSettings({}, env);
    expect(fromEnv).toMatchObject({ memoryLimitBytes: 2e9, threads: 3, tempDir: join(tmp.path, 'env') });
    expect(fromEnv.sources).toEqual({ memoryLimit: 'environment', threads: 'environment', tempDir: 'environment' });

    const fromOption = resolveEngineSettings({ memoryLimit: '512MiB', threads: 1, tempDir: join(tmp.path, 'opt') }, env);
    expect(fromOption).toMatchObject({ memoryLimitBytes: 512 * 2 ** 20, threads: 1, tempDir: join(tmp.path, 'opt') });
    expect(fromOption.sources).toEqual({ memoryLimit: 'option', threads: 'option', tempDir: 'option' });

    const defaults = resolveEngineSettings({}, {});
    expect(defaults.sources).toEqual({ memoryLimit: 'default', threads: 'default', tempDir: 'default' });
    expect(defaults.memoryLimitBytes).toBe(Math.floor(machineMemoryBytes() / 2));
    expect(defaults.threads).toBeGreaterThanOrEqual(1);
    expect(resolveEngineSettings({ memoryLimit: '25%' }, {}).memoryLimitBytes).toBe(Math.floor(machineMemoryBytes() / 4));
  });

  it('refuse values that are not a size or a thread count, naming where they came from', () => {
    expect(thrown(() => resolveEngineSettings({}, { TWINLAKE_MEMORY_LIMIT: 'lots' })).message).toBe(
      'engine: TWINLAKE_MEMORY_LIMIT expects a memory size such as 512MB, 4GB or 50%, found "lots"',
    );
    expect(thrown(() => resolveEngineSettings({ memoryLimit: '1MB' }, {})).message).toMatch(/^engine: --memory-limit \(memoryLimit\) must be at least 32 MiB, found "1MB"$/);
    expect(thrown(() => resolveEngineSettings({ threads: 0 }, {})).message).toMatch(/^engine: --threads \(threads\) expects a whole number of threads from 1 to 1024, found 0$/);
    expect(thrown(() => resolveEngineSettings({}, { TWINLAKE_THREADS: '2.5' })).kind).toBe('invalid-input');
  });

  it('open DuckDB with them, spilling into a folder of the session that is gone after close', async () => {
    const session = await DuckDBSession.open({ memoryLimit: '64MB', threads: 1, tempDir: join(tmp.path, 'spill') });
    try {
      const [row] = await session.all(`SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t, current_setting('temp_directory') AS d`);
      expect(row).toEqual({ m: '61.0 MiB', t: 1n, d: session.spillDir });
      expect(session.spillDir.startsWith(join(tmp.path, 'spill', 'twinlake-spill-'))).toBe(true);
      // A sort of twice the limit spills, and succeeds.
      await session.run(`CREATE TEMP TABLE big AS SELECT i, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) AS s FROM range(1500000) r(i) ORDER BY s`);
      expect(existsSync(session.spillDir)).toBe(true);
    } finally {
      session.close();
    }
    expect(readdirSync(join(tmp.path, 'spill'))).toEqual([]);
  });

  it('say which setting to raise when the engine runs out of memory', async () => {
    const session = await DuckDBSession.open({ memoryLimit: '64MB', threads: 1, tempDir: join(tmp.path, 'oom') });
    try {
      const e = await errorOf(session.all(`SELECT string_agg(md5(i::VARCHAR) || md5(i::VARCHAR), ',') AS s FROM range(4000000) r(i)`));
      expect(e.message).toMatch(
        /^duckdb: out of memory at the engine's memory limit of 61 MiB \(as configured\); raise it with --memory-limit, TWINLAKE_MEMORY_LIMIT or the engine setting memoryLimit, or lower the threads \(1\) with --threads, TWINLAKE_THREADS or the engine setting threads \[/,
      );
    } finally {
      session.close();
    }
  });

  it('reach the lakehouse engine, and bad ones fail before anything is created', async () => {
    const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh'), engine: { memoryLimit: '300MB', threads: 1 } });
    try {
      const [row] = await (await lake.session()).all(`SELECT current_setting('memory_limit') AS m, current_setting('threads') AS t`);
      expect(row).toEqual({ m: '286.1 MiB', t: 1n });
      expect(lake.engineSettings()).toMatchObject({ memoryLimitBytes: 3e8, threads: 1 });
    } finally {
      await lake.close();
    }
    const e = await errorOf(Lakehouse.open({ warehouse: join(tmp.path, 'never'), engine: { memoryLimit: 'big' } }));
    expect(e.message).toMatch(/^engine: --memory-limit \(memoryLimit\) expects a memory size/);
    expect(existsSync(join(tmp.path, 'never'))).toBe(false);
  });
});
