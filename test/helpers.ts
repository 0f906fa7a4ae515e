import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { TwinlakeError } from '../src/core/errors.ts';
import { repoRoot } from './testdata.ts';

export { hasTestdata, repoRoot, testdata } from './testdata.ts';

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
export function cli(args: string[], opts: { input?: string; cwd?: string; env?: Record<string, string> } = {}): CliResult {
  const r = spawnSync(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), ...args], {
    cwd: opts.cwd ?? repoRoot,
    input: opts.input,
    ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}


/**
 * Every file below `dir`, relative, sorted (for "nothing changed" checks). Tests also poll a table
 * while a writer runs: a folder that vanishes between listing and reading it is simply not there.
 */
export function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) walk(join(d, entry.name), rel + entry.name + '/');
      else out.push(rel + entry.name);
    }
  };
  walk(dir, '');
  return out.sort();
}

export function ndjson(rows: unknown[]): string {
  return rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** The TwinlakeError a promise (or call) fails with; the test fails when there is none. */
export async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<TwinlakeError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(TwinlakeError);
    return e as TwinlakeError;
  }
  throw new Error('expected the call to fail');
}

/** The error a call throws; the test fails when there is none. */
export function thrown(f: () => unknown): Error & { kind?: string } {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}

/** The error a promise rejects with; the test fails when there is none. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

/** Runs `test/workers/<script>` in its own Node process (through tsx): its exit code and stderr. */
export function runWorker(script: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/workers', script), ...args], { cwd: repoRoot });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stderr }));
  });
}
