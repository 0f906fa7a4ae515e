import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, tempDir } from '../helpers.ts';

describe('twinlake engine and the engine options', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('reports each setting and where it came from: option, environment or machine default', () => {
    const r = cli(['--memory-limit', '2GB', 'engine', '--temp-dir', join(tmp.path, 'spill'), '--json']);
    expect(r.stderr).toBe('');
    const s = JSON.parse(r.stdout);
    expect(s).toMatchObject({ memoryLimitBytes: 2e9, tempDir: join(tmp.path, 'spill'), sources: { memoryLimit: 'option', threads: 'default', tempDir: 'option' } });
    expect(s.threads).toBeGreaterThanOrEqual(1);
    const text = cli(['engine']).stdout;
    expect(text).toMatch(/^memory limit  [\d.]+ [GM]iB  \(default: half of [\d.]+ [GM]iB\)\nthreads       \d+  \(default: every core\)\ntemp folder   \S+  \(default: the system temp folder\)\n$/);
  });

  it('takes TWINLAKE_MEMORY_LIMIT, TWINLAKE_THREADS and TWINLAKE_TEMP_DIR from the environment', () => {
    const r = cli(['engine', '--json'], { env: { TWINLAKE_MEMORY_LIMIT: '300MB', TWINLAKE_THREADS: '1', TWINLAKE_TEMP_DIR: tmp.path } });
    expect(JSON.parse(r.stdout)).toMatchObject({ memoryLimitBytes: 3e8, threads: 1, tempDir: tmp.path, sources: { memoryLimit: 'environment', threads: 'environment', tempDir: 'environment' } });
  });

  it('refuses a bad setting before writing anything, naming the option', () => {
    const warehouse = join(tmp.path, 'wh');
    const r = cli(['--warehouse', warehouse, '--memory-limit', 'lots', 'write', 'a.b', '--input', '-', '--input-format', 'ndjson'], { input: '{"x":1}\n' });
    expect(r.code).not.toBe(0);
    expect(existsSync(warehouse)).toBe(false);
    expect(r.stderr).toBe('twinlake: --memory-limit must be a size such as "512MB", "2GiB" or "50%" (string), found "lots"\n');
    const t = cli(['--threads', 'many', 'engine']);
    expect(t.stderr).toBe('twinlake: --threads must be a positive whole number, found "many"\n');
  });

  it('runs a write with the engine it was given', () => {
    const warehouse = join(tmp.path, 'wh2');
    const rows = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: i, h: `2024-01-01T${String(i % 24).padStart(2, '0')}:00:00Z` })).join('\n');
    const r = cli(['--warehouse', warehouse, '--memory-limit', '128MB', '--threads', '1', 'write', 'a.b', '--input', '-', '--input-format', 'ndjson', '--partition', 'hour(h)', '--json'], { input: rows });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ rows: 300, files: 24 });
  });
});
