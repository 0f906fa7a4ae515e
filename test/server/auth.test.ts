import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { TokenAuth, TokenStore } from '../../src/server/auth.ts';
import { icebergRestPlugin } from '../../src/server/iceberg-rest/plugin.ts';
import type { Scope } from '../../src/server/auth-types.ts';
import { cli, ndjson, tempDir } from '../helpers.ts';
import { seedCreateBody, startServer, type TestServer } from './server-fixture.ts';

const SCOPES: Scope[] = ['read', 'write', 'admin'];

// Stands in for a route module that forgot its scope: it must fail closed.
const extraRoutes: FastifyPluginAsync = async (app) => {
  app.get('/v1/undeclared', async () => ({ secret: 'should never be served' }));
  app.get('/v1/declared', { config: { scope: 'read' } }, async () => ({ ok: true }));
};

let s: TestServer;
let tableId: string;
const responses: string[] = [];

beforeAll(async () => {
  // The Iceberg REST catalog as serve mounts it, plus the two routes above.
  s = await startServer({
    iceberg: async (app, o) => {
      await icebergRestPlugin(app, o);
      await extraRoutes(app, o);
    },
  });
  const created = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('events') });
  expect(created.status, created.text).toBe(201);
  tableId = created.json.tableId;
  const posted = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: ndjson([{ id: 1 }]) });
  expect(posted.status, posted.text).toBe(200);
});
afterAll(async () => {
  await s?.close();
});

describe('the auth matrix: every route × {no token, bad token, read, write, admin}', () => {
  test('generated from the route table, so a new route cannot escape it', async () => {
    const routes = s.app.routeTable;
    // Every management route is in the table (a route added later is checked the same way).
    expect(routes.filter((r) => r.method !== 'HEAD').length).toBeGreaterThanOrEqual(12);
    expect(routes.some((r) => r.method === 'HEAD' && r.url === '/api/managed-lakehouse/tables')).toBe(true);
    // ... and so is every route of the Iceberg REST catalog.
    expect(routes.filter((r) => r.url.startsWith('/iceberg/v1/') && !r.url.includes('declared')).length).toBeGreaterThanOrEqual(20);
    const rows: string[] = [];
    for (const route of routes) {
      const url = route.url.replace(':tableId', tableId);
      const who: [string, string | null][] = [['none', null], ['bad', 'tlk_not-a-real-token'], ...SCOPES.map((sc) => [sc, s.tokens[sc]] as [string, string])];
      for (const [name, token] of who) {
        // No body: a caller allowed through meets validation (400/415), not a write.
        const r = await s.call(route.method, url, { token });
        responses.push(r.text);
        const needs = route.config?.public ? 'public' : (route.config?.scope ?? 'none');
        let expected: 'pass' | 401 | 403;
        if (needs === 'public') expected = 'pass';
        else if (token === null || name === 'bad') expected = 401;
        else if (needs === 'none') expected = 403;
        else expected = SCOPES.indexOf(name as Scope) >= SCOPES.indexOf(needs as Scope) ? 'pass' : 403;
        rows.push(`${route.method} ${route.url} ${name}: ${r.status}`);
        if (expected === 'pass') expect([401, 403], `${route.method} ${route.url} as ${name}: ${r.text}`).not.toContain(r.status);
        else {
          expect(r.status, `${route.method} ${route.url} as ${name}: ${r.text}`).toBe(expected);
          // HEAD (fastify answers it for every GET) has the status and no body.
          if (route.method !== 'HEAD') expect(r.json.error).toMatchObject({ code: expected, type: expected === 401 ? 'NotAuthorizedException' : 'ForbiddenException' });
        }
      }
    }
    expect(rows.length).toBe(routes.length * 5);
  });

  test('the scopes of the management routes: read for GETs, write for records, admin for create and maintenance', () => {
    const scopeOf = (method: string, url: string) => s.app.routeTable.find((r) => r.method === method && r.url === url)?.config;
    const base = '/api/managed-lakehouse/tables';
    expect(scopeOf('GET', base)).toEqual({ scope: 'read' });
    expect(scopeOf('POST', base)).toEqual({ scope: 'admin' });
    expect(scopeOf('GET', `${base}/:tableId/commits`)).toEqual({ scope: 'read' });
    expect(scopeOf('POST', `${base}/:tableId/maintenance`)).toEqual({ scope: 'admin' });
    expect(scopeOf('POST', `${base}/:tableId/records`)).toEqual({ scope: 'write' });
    expect(scopeOf('GET', '/health')).toEqual({ public: true });
    for (const r of s.app.routeTable) if (!r.url.startsWith('/iceberg')) expect(r.config?.public === true || r.config?.scope !== undefined, `${r.method} ${r.url}`).toBe(true);
  });

  test('a route that declares no scope fails closed, even for an admin token', async () => {
    for (const token of [s.tokens.admin, s.tokens.write, s.tokens.read]) {
      const r = await s.call('GET', '/iceberg/v1/undeclared', { token });
      expect(r.status).toBe(403);
      expect(r.text).not.toContain('should never be served');
    }
    expect((await s.call('GET', '/iceberg/v1/declared', { token: s.tokens.read })).status).toBe(200);
  });

  test('a revoked token is refused on the next request, with no restart', async () => {
    const { token } = await s.store.create('short-lived', 'read');
    expect((await s.call('GET', '/api/managed-lakehouse/tables', { token })).status).toBe(200);
    await s.store.revoke('short-lived');
    expect((await s.call('GET', '/api/managed-lakehouse/tables', { token })).status).toBe(401);
  });

  test('no secret appears in a response or a log line', () => {
    const secrets = Object.values(s.tokens);
    const logs = s.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      expect(logs).not.toContain(secret);
      for (const text of responses) expect(text).not.toContain(secret);
    }
    expect(logs).not.toContain('tlk_not-a-real-token');
    expect(logs).not.toMatch(/Bearer\s+tl[ka]_/i);
    expect(logs).not.toMatch(/"authorization"\s*:\s*"[^*]/i);
    // Every failure is a deliberate answer: none of the matrix's calls broke the server.
    expect(logs).not.toContain('"level":50');
  });
});

describe('tokens', () => {
  test('the tokens file holds hashes only, readable by its owner only', async () => {
    const text = readFileSync(s.store.path, 'utf8');
    for (const secret of Object.values(s.tokens)) expect(text).not.toContain(secret);
    expect(text).toMatch(/"hash": "sha256:[0-9a-f]{64}"/);
    expect(statSync(s.store.path).mode & 0o077).toBe(0);
  });

  test('exchange: client credentials (name, token) → a short-lived access token of that scope, dying with its token', async () => {
    const dir = tempDir();
    try {
      let now = 1_000_000;
      const store = new TokenStore(join(dir.path, 'tokens.json'));
      const auth = new TokenAuth(store, () => now);
      const { token } = await store.create('ci', 'write');
      expect(await auth.exchange('ci', 'tlk_wrong')).toBeUndefined();
      expect(await auth.exchange('other-name', token)).toBeUndefined();
      const granted = await auth.exchange('ci', token);
      expect(granted).toMatchObject({ scope: 'write', expiresIn: 3600 });
      expect(granted!.accessToken).not.toBe(token);
      expect(await auth.verify(granted!.accessToken)).toBe('write');
      now += 3600 * 1000;
      expect(await auth.verify(granted!.accessToken)).toBeUndefined();
      const again = await auth.exchange('ci', token);
      expect(await auth.verify(again!.accessToken)).toBe('write');
      await store.revoke('ci');
      expect(await auth.verify(again!.accessToken)).toBeUndefined();
      expect(await auth.verify(token)).toBeUndefined();
    } finally {
      dir.cleanup();
    }
  });

  test('twinlake token create prints the token once; list never shows it; revoke stops it', async () => {
    const dir = tempDir();
    try {
      const wh = join(dir.path, 'wh');
      const created = cli(['token', 'create', '--name', 'ci', '--scope', 'write', '--warehouse', wh]);
      expect(created.code, created.stderr).toBe(0);
      const token = created.stdout.trim();
      expect(token).toMatch(/^tlk_[A-Za-z0-9_-]{43}$/);
      expect(created.stderr).toContain('created token ci (scope write); it is shown only this once');
      const store = new TokenStore(join(wh, '.twinlake', 'tokens.json'));
      expect((await store.find(token))?.scope).toBe('write');
      const list = cli(['token', 'list', '--warehouse', wh]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toMatch(/^ci\s+write\s+created /);
      expect(list.stdout).not.toContain(token);
      const json = JSON.parse(cli(['token', 'list', '--json', '--warehouse', wh]).stdout);
      expect(json).toEqual([expect.objectContaining({ name: 'ci', scope: 'write' })]);
      expect(JSON.stringify(json)).not.toContain(token);
      const dup = cli(['token', 'create', '--name', 'ci', '--scope', 'read', '--warehouse', wh]);
      expect(dup.code).toBe(5);
      const bad = cli(['token', 'create', '--name', 'x', '--scope', 'root', '--warehouse', wh]);
      expect(bad.code).toBe(3);
      expect(bad.stderr).toContain('token: --scope must be read, write or admin, found "root"');
      const revoked = cli(['token', 'revoke', 'ci', '--warehouse', wh]);
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout).toContain('revoked token ci');
      expect(await store.find(token)).toBeUndefined();
      expect(cli(['token', 'revoke', 'ci', '--warehouse', wh]).code).toBe(4);
    } finally {
      dir.cleanup();
    }
  });
});
