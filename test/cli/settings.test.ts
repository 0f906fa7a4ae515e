import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configPath, parseConfig, resolveSettings } from '../../src/cli/settings.ts';
import { nearest } from '../../src/cli/suggest.ts';
import { resolveEngineSettings } from '../../src/engine/engine-settings.ts';
import { thrown } from '../helpers.ts';

describe('config file', () => {
  const file = '/etc/lake/twinlake.json';

  it('reads the known keys, with relative paths against the file\'s folder', () => {
    const c = parseConfig(JSON.stringify({ warehouse: 'wh', memoryLimit: '512MB', threads: 4, tempDir: '../spill' }), file);
    expect(c).toEqual({ warehouse: '/etc/lake/wh', memoryLimit: '512MB', threads: 4, tempDir: '/etc/spill' });
    expect(parseConfig('{"warehouse": "/abs/wh"}', file)).toEqual({ warehouse: '/abs/wh' });
    expect(parseConfig('{"warehouse": "file:///abs/wh"}', file)).toEqual({ warehouse: 'file:///abs/wh' });
    // A relative config path is found from the current folder, its contents from the file's.
    expect(parseConfig('{"warehouse": "wh"}', 'conf/t.json').warehouse).toBe(join(process.cwd(), 'conf', 'wh'));
  });

  it('refuses unknown keys, suggesting the nearest one', () => {
    const cases: [string, string][] = [
      ['{"warehose": "x"}', 'config /etc/lake/twinlake.json: unknown key "warehose" (did you mean "warehouse"?); the keys are warehouse, memoryLimit, threads, tempDir'],
      ['{"memory_limit": "1GB"}', 'config /etc/lake/twinlake.json: unknown key "memory_limit" (did you mean "memoryLimit"?); the keys are warehouse, memoryLimit, threads, tempDir'],
      ['{"catalog": "x"}', 'config /etc/lake/twinlake.json: unknown key "catalog"; the keys are warehouse, memoryLimit, threads, tempDir'],
    ];
    for (const [text, message] of cases) {
      const e = thrown(() => parseConfig(text, file));
      expect([e.kind, e.message]).toEqual(['invalid-input', message]);
    }
  });

  it('refuses values of the wrong type, naming the key', () => {
    const cases: [string, string][] = [
      ['{"warehouse": 5}', '"warehouse" must be a folder path (string), found 5'],
      ['{"warehouse": ""}', '"warehouse" must be a folder path (string), found ""'],
      ['{"tempDir": ["a"]}', '"tempDir" must be a folder path (string), found ["a"]'],
      ['{"threads": 0}', '"threads" must be a positive whole number, found 0'],
      ['{"threads": 2.5}', '"threads" must be a positive whole number, found 2.5'],
      ['{"threads": "4"}', '"threads" must be a positive whole number, found "4"'],
      ['{"memoryLimit": 512}', '"memoryLimit" must be a size such as "512MB", "2GiB" or "50%" (string), found 512'],
      ['{"memoryLimit": "lots"}', '"memoryLimit" must be a size such as "512MB", "2GiB" or "50%" (string), found "lots"'],
      // A size, but below what the engine can run with: the minimum is named.
      ['{"memoryLimit": "32MB"}', '"memoryLimit" must be at least 32 MiB, found "32MB"'],
    ];
    for (const [text, message] of cases) expect(thrown(() => parseConfig(text, file)).message).toBe(`config ${file}: ${message}`);
    expect(thrown(() => parseConfig('[]', file)).message).toBe(`config ${file}: expected a JSON object such as {"warehouse": "./warehouse"}, found an array`);
    expect(thrown(() => parseConfig('{"warehouse": ', file)).message).toMatch(/^config \/etc\/lake\/twinlake\.json/);
  });
});

describe('settings precedence: option after the command > before it > environment > config file > default', () => {
  const config = { warehouse: '/from/config', memoryLimit: '1GB', threads: 8, tempDir: '/config/tmp' };
  const env = { TWINLAKE_WAREHOUSE: '/from/env', TWINLAKE_MEMORY_LIMIT: '2GB', TWINLAKE_THREADS: '3', TWINLAKE_TEMP_DIR: '/env/tmp' };

  it('takes each setting from the highest source that has it', () => {
    expect(resolveSettings([{}, {}], {}, {})).toEqual({ warehouse: './warehouse', engine: {} });
    expect(resolveSettings([{}, {}], {}, config)).toEqual({ warehouse: '/from/config', engine: { memoryLimit: '1GB', threads: 8, tempDir: '/config/tmp' } });
    // An engine variable in the environment hides the config file's value; the engine reads the
    // variable itself (and reports it as the source).
    expect(resolveSettings([{}, {}], env, config)).toEqual({ warehouse: '/from/env', engine: {} });
    expect(resolveEngineSettings(resolveSettings([{}, {}], env, config).engine, env)).toMatchObject({ threads: 3, tempDir: '/env/tmp', memoryLimitBytes: 2e9, sources: { memoryLimit: 'environment', threads: 'environment', tempDir: 'environment' } });
    expect(resolveSettings([{}, { warehouse: 'before', threads: '2' }], env, config, '/cwd')).toEqual({ warehouse: 'before', engine: { threads: 2 } });
    expect(resolveSettings([{ warehouse: 'after', tempDir: 'tmp' }, { warehouse: 'before' }], env, config, '/cwd')).toEqual({ warehouse: 'after', engine: { tempDir: '/cwd/tmp' } });
    expect(resolveSettings([{ threads: 6 }], env, config).engine.threads).toBe(6);
    // An empty environment variable is unset, as in most tools.
    expect(resolveSettings([{}], { TWINLAKE_WAREHOUSE: '' }, config).warehouse).toBe('/from/config');
  });

  it('reads the config file named after the command over one named before it', () => {
    expect(configPath([{ config: 'after.json' }, { config: 'before.json' }])).toBe('after.json');
    expect(configPath([{}, { config: 'before.json' }])).toBe('before.json');
    expect(configPath([{}, {}])).toBeUndefined();
  });

  it('checks values from the command line and the environment, naming where they came from', () => {
    expect(thrown(() => resolveSettings([{ threads: 'many' }], {}, {})).message).toBe('--threads must be a positive whole number, found "many"');
    expect(thrown(() => resolveSettings([{ threads: 0 }], {}, {})).message).toBe('--threads must be a positive whole number, found 0');
    expect(thrown(() => resolveSettings([{ memoryLimit: 'lots' }], {}, {})).message).toBe('--memory-limit must be a size such as "512MB", "2GiB" or "50%" (string), found "lots"');
    expect(resolveSettings([{ memoryLimit: '50%' }], {}, {}).engine.memoryLimit).toBe('50%');
    expect(thrown(() => resolveEngineSettings({}, { TWINLAKE_THREADS: '0' })).message).toBe('engine: TWINLAKE_THREADS expects a whole number of threads from 1 to 1024, found "0"');
  });
});

describe('nearest', () => {
  it('suggests within a few edits, ignoring case and separators, and nothing when far', () => {
    expect(nearest('wrte', ['write', 'read', 'delete'])).toBe('write');
    expect(nearest('TEMP_DIR', ['warehouse', 'tempDir'])).toBe('tempDir');
    expect(nearest('thraeds', ['threads', 'tempDir'])).toBe('threads');
    expect(nearest('zzzzzz', ['warehouse', 'tempDir'])).toBeUndefined();
  });
});
