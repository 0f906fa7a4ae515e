import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..');
export const testdata = resolve(repoRoot, '../shared/testdata');
export const hasTestdata = existsSync(testdata);

export function tempDir(prefix = 'twinlake-test-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `twinlake` binary in a child process. */
export function cli(args: string[], opts: { input?: string; cwd?: string } = {}): CliResult {
  const r = spawnSync(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), ...args], {
    cwd: opts.cwd ?? repoRoot,
    input: opts.input,
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function cliAsync(args: string[], opts: { cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), ...args], { cwd: opts.cwd ?? repoRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
  });
}

/** Every file below `dir`, relative, sorted (for "nothing changed" checks). */
export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p, rel + name + '/');
      else out.push(rel + name);
    }
  };
  walk(dir, '');
  return out.sort();
}

export function ndjson(rows: unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}
