import { Writable } from 'node:stream';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { buildServer, type ServerOptions } from '../../src/server/app.ts';
import { TokenAuth, TokenStore } from '../../src/server/auth.ts';
import type { Scope } from '../../src/server/auth-types.ts';
import { tempDir } from '../helpers.ts';

export interface TestServer {
  url: string;
  app: FastifyInstance;
  lake: Lakehouse;
  warehouse: string;
  store: TokenStore;
  tokens: Record<Scope, string>;
  /** Every log line the server wrote, as text. */
  logs: string[];
  call(method: string, path: string, opts?: { token?: string | null; body?: unknown; raw?: string; type?: string; headers?: Record<string, string> }): Promise<{ status: number; json: any; text: string; headers: Headers }>;
  close(): Promise<void>;
}

/** A real server on a free loopback port over a fresh warehouse, with one token per scope. */
export async function startServer(opts: Partial<Omit<ServerOptions, 'lake' | 'tokens'>> = {}): Promise<TestServer> {
  const dir = tempDir('twinlake-server-');
  const warehouse = join(dir.path, 'wh');
  const lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
  const store = new TokenStore(join(dir.path, 'tokens.json'));
  const tokens = {
    read: (await store.create('reader', 'read')).token,
    write: (await store.create('writer', 'write')).token,
    admin: (await store.create('operator', 'admin')).token,
  };
  const logs: string[] = [];
  const log = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildServer({ lake, tokens: new TokenAuth(store), log, tempDir: dir.path, ...opts });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address() as { port: number };
  const url = `http://127.0.0.1:${address.port}`;
  return {
    url,
    app,
    lake,
    warehouse,
    store,
    tokens,
    logs,
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const token = o.token === undefined ? tokens.admin : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      let body: string | undefined;
      if (o.raw !== undefined) {
        body = o.raw;
        headers['content-type'] = o.type ?? 'application/x-ndjson';
      } else if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['content-type'] = 'application/json';
      }
      const res = await fetch(url + path, { method, headers, body });
      const text = await res.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, json, text, headers: res.headers };
    },
    async close() {
      await app.close();
      await lake.close();
      dir.cleanup();
    },
  };
}

/** The seed's own create body for a table (the management API's documented example). */
export function seedCreateBody(tableName = 'orders', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    connectionId: 'conn-postgres-orders',
    tableName,
    storageProvider: 'local',
    icebergEnabled: true,
    deltaEnabled: true,
    icebergCatalogType: 'sql',
    icebergNamespace: 'sales',
    ...extra,
  };
}
