import { afterEach, describe, expect, test } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { RestCatalog } from '../../src/catalog/rest-catalog.ts';
import { cli, ndjson, repoRoot, tempDir } from '../helpers.ts';
import { seedCreateBody } from './server-fixture.ts';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) if (p.exitCode === null) p.kill('SIGKILL');
});

/** `twinlake serve` as a real process on a free port; resolves once it prints where it listens. */
function serve(args: string[]): Promise<{ proc: ChildProcess; url: string; stdout: () => string; stderr: () => string; exit: Promise<number | null> }> {
  const proc = spawn(process.execPath, [join(repoRoot, 'bin/twinlake.mjs'), 'serve', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  proc.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve({ proc, url: m[1]!, stdout: () => out, stderr: () => err, exit });
    });
    exit.then((code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

describe('twinlake serve', () => {
  test('serves, and on SIGTERM lets a commit in flight finish before it exits', async () => {
    const dir = tempDir();
    try {
      const wh = join(dir.path, 'wh');
      const token = cli(['token', 'create', '--name', 'ops', '--scope', 'admin', '--warehouse', wh]).stdout.trim();
      const server = await serve(['--warehouse', wh]);
      const auth = { authorization: `Bearer ${token}` };
      expect((await fetch(`${server.url}/health`)).status).toBe(200);
      const created = await fetch(`${server.url}/api/managed-lakehouse/tables`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(seedCreateBody('events')) });
      expect(created.status).toBe(201);
      const { tableId } = (await created.json()) as { tableId: string };

      // A batch whose body is still arriving when the signal comes.
      const rows = Array.from({ length: 2000 }, (_, i) => ({ id: i, name: `row ${i}` }));
      const parts = [ndjson(rows.slice(0, 1000)), ndjson(rows.slice(1000))];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let sent = 0;
      const body = new ReadableStream({
        async pull(c) {
          if (sent === 1) await held;
          if (sent < parts.length) c.enqueue(new TextEncoder().encode(parts[sent++]!));
          else c.close();
        },
      });
      const post = fetch(`${server.url}/api/managed-lakehouse/tables/${tableId}/records`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-ndjson' }, body, duplex: 'half' } as RequestInit);
      await new Promise((r) => setTimeout(r, 300));
      server.proc.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      // Stopping: no new connections, while the request in flight goes on.
      await expect(fetch(`${server.url}/health`)).rejects.toThrow();
      expect(server.proc.exitCode).toBeNull();
      release();
      const res = await post;
      const result = (await res.json()) as { rows: number; deltaVersion: number };
      expect(res.status, JSON.stringify(result)).toBe(200);
      expect(result).toMatchObject({ rows: 2000, deltaVersion: 1 });
      expect(await server.exit).toBe(0);
      expect(server.stdout()).toContain('twinlake: stopped; requests in flight finished');

      const lake = await Lakehouse.open({ warehouse: wh, readOnly: true });
      try {
        const t = lake.table('sales.events');
        expect((await t.read()).length).toBe(2000);
        expect((await t.read({ format: 'delta' })).length).toBe(2000);
      } finally {
        await lake.close();
      }
      // The log is JSON lines with request IDs, and holds no token.
      const lines = server.stderr().trim().split('\n').map((l) => JSON.parse(l));
      expect(lines.some((l) => l.reqId && l.msg === 'request completed')).toBe(true);
      expect(lines.some((l) => l.msg?.startsWith('shutting down'))).toBe(true);
      expect(server.stderr()).not.toContain(token);
    } finally {
      dir.cleanup();
    }
  });

  test('a bad --port is a usage error before anything starts', () => {
    const r = cli(['serve', '--port', 'http']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('serve: --port expects a port number 0-65535, found "http"');
  });
  test('serves the Iceberg REST catalog: a lakehouse using it as its catalog writes a table the server warehouse holds in both formats', async () => {
    const dir = tempDir();
    try {
      const wh = join(dir.path, 'wh');
      const token = cli(['token', 'create', '--name', 'pipeline', '--scope', 'write', '--warehouse', wh]).stdout.trim();
      const server = await serve(['--warehouse', wh]);
      expect((await fetch(`${server.url}/iceberg/v1/config`)).status).toBe(401);
      // OAuth2 client credentials: the token's name and the token.
      const catalog = new RestCatalog({ uri: `${server.url}/iceberg`, credential: { clientId: 'pipeline', clientSecret: token } });
      const client = await Lakehouse.open({ warehouse: wh, catalog, onWarning: () => {} });
      try {
        await client.table('analytics.events').append([{ id: 1, name: 'a' }, { id: 2, name: 'b' }]);
        await client.table('analytics.events').append([{ id: 3, name: 'c' }]);
      } finally {
        await client.close();
      }
      // The server committed both; Delta followed each commit.
      for (const format of ['iceberg', 'delta']) {
        const r = cli(['read', 'analytics.events', '--format', format, '--output', 'ndjson', '--warehouse', wh]);
        expect([r.code, r.stderr]).toEqual([0, '']);
        expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l).id).sort()).toEqual([1, 2, 3]);
      }
      expect(cli(['verify', 'analytics.events', '--warehouse', wh]).code).toBe(0);
      expect(server.stderr()).not.toContain(token);
      server.proc.kill('SIGTERM');
      expect(await server.exit).toBe(0);
    } finally {
      dir.cleanup();
    }
  }, 60_000);
});
