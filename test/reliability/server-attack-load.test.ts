import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { TokenStore } from '../../src/server/auth.ts';
import { repoRoot, tempDir } from '../helpers.ts';

/**
 * 1,000 connections at once against a real `twinlake serve` process on loopback (issue 14,
 * item 7): every request is answered, the process's memory stays bounded, and with a connection
 * limit below the load the connections past it are answered 503 and closed, never dropped
 * unanswered. The numbers (connections, p50/p99, peak memory) are printed for the README.
 */

const CONNECTIONS = 1000;

let dir: { path: string; cleanup: () => void };
let token: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = tempDir('twinlake-load-');
  const lake = await Lakehouse.open({ warehouse: join(dir.path, 'wh'), onWarning: () => {} });
  await lake.table('ns.events').write([{ id: 1 }]);
  await lake.close();
  token = (await new TokenStore(join(dir.path, 'tokens.json')).create('reader', 'read')).token;
});
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  dir?.cleanup();
});

async function serve(...flags: string[]): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), '--warehouse', join(dir.path, 'wh'), 'serve', '--port', '0', '--tokens-file', join(dir.path, 'tokens.json'), '--log-level', 'error', ...flags], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return {
    port,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => {
          // No crash, no error line, whatever the load.
          expect(stderr).not.toMatch(/"level":(50|60)/);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** VmRSS and VmHWM (the peak) of a process, in MiB. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

interface Outcome {
  status: number;
  ms: number;
  body: string;
  error?: string;
}

/** `n` requests at once, each on its own connection (kept open until all have answered). */
async function burst(port: number, n: number, path: string): Promise<{ outcomes: Outcome[]; sockets: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: n });
  const sockets = new Set<unknown>();
  try {
    const outcomes = await Promise.all(
      Array.from({ length: n }, () =>
        new Promise<Outcome>((resolve) => {
          const started = performance.now();
          const req = request({ host: '127.0.0.1', port, path, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body }));
            res.on('error', (e) => resolve({ status: 0, ms: performance.now() - started, body, error: e.message }));
          });
          req.on('socket', (s) => sockets.add(s));
          req.on('error', (e) => resolve({ status: 0, ms: performance.now() - started, body: '', error: (e as NodeJS.ErrnoException).code ?? e.message }));
          req.end();
        }),
      ),
    );
    return { outcomes, sockets: sockets.size };
  } finally {
    agent.destroy();
  }
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

describe('1,000 connections at once', () => {
  test('every request answered, memory bounded; past a connection limit, 503 and closed', async () => {
    const server = await serve('--max-connections', '0');
    const idle = memoryOf(server.pid);
    const started = performance.now();
    // A request that reads the catalog and each table's metadata, then one that reads nothing.
    const tables = await burst(server.port, CONNECTIONS, '/api/managed-lakehouse/tables');
    const health = await burst(server.port, CONNECTIONS, '/health');
    const rounds = [...tables.outcomes, ...health.outcomes];
    const seconds = (performance.now() - started) / 1000;
    const loaded = memoryOf(server.pid);
    expect(tables.sockets).toBe(CONNECTIONS);
    expect(health.sockets).toBe(CONNECTIONS);
    const failed = rounds.filter((o) => o.status !== 200);
    expect(failed.slice(0, 3)).toEqual([]);
    for (const o of tables.outcomes) expect(JSON.parse(o.body).tables.map((t: { tableName: string }) => t.tableName)).toEqual(['events']);
    // Bounded: the peak stays within a few hundred MiB over the idle process, whatever the load.
    expect(loaded.peak - idle.rss).toBeLessThan(300);
    const p = (o: Outcome[], q: number) => percentile(o.map((x) => x.ms), q).toFixed(0);
    // Still serving after the load.
    const after = await burst(server.port, 1, '/health');
    expect(after.outcomes[0]!.status).toBe(200);
    await server.stop();

    const limited = await serve('--max-connections', '200');
    const over = await burst(limited.port, CONNECTIONS, '/api/managed-lakehouse/tables');
    const served = over.outcomes.filter((o) => o.status === 200).length;
    const refused = over.outcomes.filter((o) => o.status === 503);
    // Each connection is served or answered 503 with the limit: none is dropped unanswered.
    expect(served + refused.length).toBe(CONNECTIONS);
    expect(served).toBeGreaterThanOrEqual(200);
    expect(refused.length).toBeGreaterThan(0);
    for (const o of refused) expect(JSON.parse(o.body).error.message).toBe('server: 200 connections are open, the limit; retry later');
    expect((await burst(limited.port, 1, '/health')).outcomes[0]!.status).toBe(200);
    await limited.stop();

    console.log(
      `server load: ${CONNECTIONS} connections at once, ${rounds.length} requests in ${seconds.toFixed(1)} s, all answered 200; ` +
        `table list p50 ${p(tables.outcomes, 50)} ms, p99 ${p(tables.outcomes, 99)} ms; health p50 ${p(health.outcomes, 50)} ms, p99 ${p(health.outcomes, 99)} ms; ` +
        `memory ${idle.rss.toFixed(0)} MiB idle, peak ${loaded.peak.toFixed(0)} MiB; ` +
        `with --max-connections 200: ${served} served, ${refused.length} answered 503`,
    );
  }, 60_000);
});
