import { connect } from 'node:net';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { fileUri } from '../../src/core/uri.ts';
import { addSecret } from '../../src/config/redact.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { buildServer } from '../../src/server/app.ts';
import { ACCESS_TOKEN_SECONDS, SCOPES, TokenAuth, TokenStore } from '../../src/server/auth.ts';
import type { ServerLimits } from '../../src/server/limits.ts';
import type { Scope } from '../../src/server/auth-types.ts';
import { listFiles, tempDir } from '../helpers.ts';

/**
 * The server under attack (issue 14, item 7), over real HTTP on loopback: every route without a
 * token and with bad, malformed, expired and wrong-scope tokens; path traversal in every route
 * parameter and in the locations a body names; oversized, malformed and mistyped bodies; slow
 * clients; more connections than the limit. The server never crashes, never answers with a
 * secret, and reads and writes nothing outside its warehouse: the folders around it are walked
 * before and after.
 */

const LIMITS: Partial<ServerLimits> = { headersTimeoutMs: 600, requestTimeoutMs: 1500, keepAliveTimeoutMs: 1000, maxJsonBytes: 64 * 1024, maxConnections: 0 };
const MAX_RECORD_BYTES = 128 * 1024;

interface Server {
  url: string;
  port: number;
  app: FastifyInstance;
  lake: Lakehouse;
  logs: string[];
  close(): Promise<void>;
}

let root: { path: string; cleanup: () => void };
let warehouse: string;
let outside: string;
let store: TokenStore;
let tokens: Record<Scope, string>;
let clock = Date.now();
const SECRET_TEXT = 'secret-outside-the-warehouse-5f1e';
/** Every response body of this file, for the secrets check at the end. */
const responses: string[] = [];
let s: Server;

async function start(limits: Partial<ServerLimits>): Promise<Server> {
  const lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
  const logs: string[] = [];
  const log = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const app = await buildServer({ lake, tokens: new TokenAuth(store, () => clock), log, tempDir: join(root.path, 'spool'), maxRecordBytes: MAX_RECORD_BYTES, limits });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    app,
    lake,
    logs,
    async close() {
      await app.close();
      await lake.close();
    },
  };
}

async function call(method: string, path: string, o: { token?: string | null; body?: string; type?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers };
  const token = o.token === undefined ? tokens.admin : o.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (o.body !== undefined) headers['content-type'] = o.type ?? 'application/json';
  const res = await fetch(s.url + path, { method, headers, body: o.body });
  const text = await res.text();
  responses.push(text);
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

/** Every file and folder under the root (the warehouse's parent), with its size, except the spool folder. */
function snapshotAround(): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        out.push(rel + e.name + '/');
        walk(p, rel + e.name + '/');
      } else out.push(`${rel}${e.name} ${statSync(p).size}`);
    }
  };
  walk(root.path, '');
  // The tokens file is the test's to change (it creates and revokes tokens).
  return out.filter((p) => !p.startsWith('wh/') && !p.startsWith('spool/') && !p.startsWith('tokens.json')).sort();
}

/** A raw HTTP exchange: `parts` are written `gapMs` apart; resolves with what came back and when the server closed. */
function raw(port: number, parts: string[], gapMs: number): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (d) => (text += d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
    let i = 0;
    const next = () => {
      if (i >= parts.length || socket.destroyed) return;
      socket.write(parts[i++]!);
      timer = setTimeout(next, gapMs);
    };
    socket.on('connect', next);
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept a slow client for ${Date.now() - started} ms`));
    }, 10_000).unref();
  });
}

const TRAVERSALS = ['..%2f..%2foutside', '%2e%2e%2f%2e%2e%2foutside%2fsecret.txt', '..%5c..%5coutside', 'a%00b', '%2Fetc%2Fpasswd', '....%2f%2f', '..', '%252e%252e%252f'];

let tableId: string;
let before: string[];

beforeAll(async () => {
  root = tempDir('twinlake-attack-');
  warehouse = join(root.path, 'wh');
  outside = join(root.path, 'outside');
  mkdirSync(outside);
  mkdirSync(join(root.path, 'spool'));
  writeFileSync(join(outside, 'secret.txt'), SECRET_TEXT + '\n');
  store = new TokenStore(join(root.path, 'tokens.json'));
  tokens = {
    read: (await store.create('reader', 'read')).token,
    write: (await store.create('writer', 'write')).token,
    admin: (await store.create('operator', 'admin')).token,
  };
  s = await start(LIMITS);
  await s.lake.table('ns.events').write([{ id: 1, v: 'a' }]);
  tableId = (await s.lake.table('ns.events').metadata())['table-uuid'];
  before = snapshotAround();
});

afterAll(async () => {
  await s?.close();
  root?.cleanup();
});

describe('every route, every kind of bad token', () => {
  test('no token, unknown, malformed, oversized, expired, revoked and wrong-scope tokens are refused on every route (from the route table)', async () => {
    const { accessToken: expiring } = (await new TokenAuth(store, () => clock).exchange('reader', tokens.read))!;
    // The server's own TokenAuth holds its access tokens: get one from it, then let it expire.
    const grant = await call('POST', '/iceberg/v1/oauth/tokens', {
      token: null,
      type: 'application/x-www-form-urlencoded',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'writer', client_secret: tokens.write }).toString(),
    });
    expect(grant.status).toBe(200);
    const access = grant.json.access_token as string;
    expect((await call('GET', '/api/managed-lakehouse/tables', { token: access })).status).toBe(200);
    clock += (ACCESS_TOKEN_SECONDS + 1) * 1000;
    const revoked = (await store.create('gone', 'admin')).token;
    await store.revoke('gone');

    const bad: [string, Record<string, string>][] = [
      ['none', {}],
      ['unknown', { authorization: 'Bearer tlk_not-a-real-token' }],
      ['wrong prefix', { authorization: `Bearer x${tokens.admin}` }],
      ['basic', { authorization: `Basic ${Buffer.from(`operator:${tokens.admin}`).toString('base64')}` }],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['two tokens', { authorization: `Bearer ${tokens.read} ${tokens.admin}` }],
      ['huge', { authorization: `Bearer tlk_${'A'.repeat(8000)}` }],
      ['expired access token', { authorization: `Bearer ${access}` }],
      ['access token of another process', { authorization: `Bearer ${expiring}` }],
      ['revoked', { authorization: `Bearer ${revoked}` }],
      ['token in the query', {}],
    ];
    const routes = s.app.routeTable.filter((r) => !r.config?.public);
    expect(routes.length).toBeGreaterThanOrEqual(30);
    let calls = 0;
    for (const route of routes) {
      const url = route.url.replace(/:tableId/g, tableId).replace(/:[A-Za-z]+/g, 'x');
      for (const [name, headers] of bad) {
        const path = name === 'token in the query' ? `${url}${url.includes('?') ? '&' : '?'}token=${tokens.admin}&access_token=${tokens.admin}` : url;
        const r = await call(route.method, path, { token: null, headers });
        calls++;
        expect(r.status, `${route.method} ${route.url} with ${name}: ${r.text}`).toBe(401);
      }
      // A scope below the route's: 403, never the route.
      const needs = route.config?.scope;
      for (const scope of SCOPES) {
        if (needs !== undefined && SCOPES.indexOf(scope) >= SCOPES.indexOf(needs)) continue;
        const r = await call(route.method, url, { token: tokens[scope] });
        calls++;
        expect(r.status, `${route.method} ${route.url} as ${scope}: ${r.text}`).toBe(403);
      }
    }
    expect(calls).toBeGreaterThan(routes.length * bad.length);
  });
});

describe('path traversal', () => {
  test('traversal in every route parameter, as every scope allows: a clean 4xx, nothing read or written outside the warehouse', async () => {
    const routes = s.app.routeTable.filter((r) => r.url.includes(':'));
    expect(routes.length).toBeGreaterThanOrEqual(15);
    for (const route of routes) {
      for (const t of TRAVERSALS) {
        const url = route.url.replace(/:[A-Za-z]+/g, t);
        const body = route.method === 'POST' || route.method === 'PUT' ? '{}' : undefined;
        const r = await call(route.method, url, { body });
        expect(r.status, `${route.method} ${url}: ${r.text}`).toBeGreaterThanOrEqual(400);
        expect(r.status, `${route.method} ${url}: ${r.text}`).toBeLessThan(500);
        expect(r.text).not.toContain(SECRET_TEXT);
      }
    }
    expect(snapshotAround()).toEqual(before);
  });

  test('names and locations in bodies that point outside: refused with the rule, nothing created outside', async () => {
    const out = fileUri(outside);
    const escape = `${fileUri(warehouse)}/ns/../../outside`;
    const attempts: [string, string, unknown, RegExp][] = [
      ['POST', '/api/managed-lakehouse/tables', { connectionId: 'c', tableName: '..%2f..%2foutside', storageProvider: 'local', icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: 'ns' }, /tableName must match pattern/],
      ['POST', '/api/managed-lakehouse/tables', { connectionId: 'c', tableName: '%2e%2e%2foutside', storageProvider: 'local', icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: 'ns' }, /contains '%'/],
      ['POST', '/api/managed-lakehouse/tables', { connectionId: 'c', tableName: 't', storageProvider: 'local', icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: '..' }, /contains '\.\.'|is empty/],
      ['POST', '/api/managed-lakehouse/tables', { connectionId: 'c', tableName: 't', storageProvider: 'local', storagePath: outside, icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: 'ns' }, /storagePath must be where this warehouse keeps/],
      ['POST', '/iceberg/v1/namespaces', { namespace: ['..', 'outside'] }, /contains '\.\.'/],
      ['POST', '/iceberg/v1/namespaces/ns/tables', { name: 'evil', location: `${out}/evil`, schema: { type: 'struct', fields: [] } }, /location .* is not inside this server's warehouse/],
      ['POST', '/iceberg/v1/namespaces/ns/tables', { name: 'evil2', location: escape, schema: { type: 'struct', fields: [] } }, /is not inside this server's warehouse/],
      ['POST', '/iceberg/v1/namespaces/ns/tables', { name: 'evil3', location: `${fileUri(warehouse)}/ns/events`, schema: { type: 'struct', fields: [] } }, /must be this table's folder/],
      ['POST', '/iceberg/v1/namespaces/ns/tables', { name: 'EVENTS', schema: { type: 'struct', fields: [] } }, /differs from table ns\.events's only in case/],
      ['POST', '/iceberg/v1/namespaces/ns/register', { name: 'stolen', 'metadata-location': `${out}/secret.txt` }, /metadata-location .* is not inside this server's warehouse/],
      ['POST', '/iceberg/v1/namespaces/ns/register', { name: 'stolen2', 'metadata-location': '/etc/passwd' }, /is not inside this server's warehouse/],
      ['POST', '/iceberg/v1/namespaces/ns/tables/events', { requirements: [], updates: [{ action: 'set-location', location: `${out}/moved` }] }, /set-location: location .* is not inside/],
      [
        'POST',
        '/iceberg/v1/namespaces/ns/tables/events',
        { requirements: [], updates: [{ action: 'add-snapshot', snapshot: { 'snapshot-id': 99, 'sequence-number': 9, 'timestamp-ms': 1, 'manifest-list': `${out}/secret.txt`, summary: { operation: 'append' }, 'schema-id': 0 } }] },
        /add-snapshot: manifest-list .* is not inside/,
      ],
    ];
    for (const [method, path, body, why] of attempts) {
      const r = await call(method, path, { body: JSON.stringify(body) });
      expect(r.status, `${path} ${r.text}`).toBe(400);
      expect(r.json.error.message).toMatch(why);
      expect(r.text).not.toContain(SECRET_TEXT);
    }
    expect(snapshotAround()).toEqual(before);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET_TEXT + '\n');
    // The table the commits aimed at is as it was.
    expect((await s.lake.table('ns.events').read()).map((r) => Number(r.id))).toEqual([1]);
  });
});

describe('bodies', () => {
  const records = () => `/api/managed-lakehouse/tables/${tableId}/records`;

  test('oversized: 413 naming the limit, declared or streamed, JSON or records', async () => {
    const big = JSON.stringify({ namespace: ['ns2'], properties: { pad: 'x'.repeat(70 * 1024) } });
    const declared = await call('POST', '/iceberg/v1/namespaces', { body: big });
    expect(declared.status).toBe(413);
    expect(declared.json.error.message).toMatch(/larger than the limit of 65536 bytes/);
    const mgmt = await call('POST', '/api/managed-lakehouse/tables', { body: big });
    expect(mgmt.status).toBe(413);
    expect(mgmt.json.error.message).toMatch(/larger than the limit of 65536 bytes for a JSON body/);
    // Streamed, with no Content-Length: the same answer once the limit is passed.
    const chunked = await raw(s.port, [`POST /api/managed-lakehouse/tables HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tokens.admin}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`, `${(70 * 1024).toString(16)}\r\n${'{'.padEnd(70 * 1024, ' ')}\r\n0\r\n\r\n`], 10);
    expect(chunked.text).toMatch(/^HTTP\/1\.1 413/);
    expect(chunked.text).toMatch(/limit of 65536 bytes/);
    const post = await call('POST', records(), { body: '{"id":2,"v":"b"}\n'.repeat(10_000), type: 'application/x-ndjson' });
    expect(post.status).toBe(413);
    expect(post.json.error.message).toMatch(/larger than the limit of 131072 bytes/);
  });

  test('malformed JSON and NDJSON: 400 with line and column; wrong or missing content types: 415', async () => {
    const bad = await call('POST', '/api/managed-lakehouse/tables', { body: '{\n  "connectionId": "c",\n  tableName: 1\n}' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/line 3, column 3/);
    const rest = await call('POST', '/iceberg/v1/namespaces', { body: '{"namespace": ["a"],,}' });
    expect(rest.status).toBe(400);
    expect(rest.json.error.message).toMatch(/line 1, column 21/);
    // One parser for every JSON body: the REST catalog's message names the body once, behind its prefix.
    expect(rest.json.error.message).toMatch(/^iceberg rest: request body: /);
    expect((await call('POST', '/iceberg/v1/namespaces', { body: '' })).status).toBe(400);
    // A charset parameter is still JSON: the body reaches validation.
    const charset = await call('POST', '/api/managed-lakehouse/tables', { body: '{}', type: 'application/json; charset=utf-8' });
    expect(charset.status).toBe(400);
    expect(charset.json.error.message).toMatch(/request body: .*connectionId/);
    const nd = await call('POST', records(), { body: '{"id":2,"v":"b"}\n{"id":3,"v":\n', type: 'application/x-ndjson' });
    expect(nd.status).toBe(400);
    expect(nd.json.error.message).toMatch(/line 2/);
    const mistyped = await call('POST', records(), { body: '{"id":2}', type: 'text/plain' });
    expect(mistyped.status).toBe(415);
    expect(mistyped.json.error.message).toMatch(/Content-Type must be/);
    const mgmt = await call('POST', '/api/managed-lakehouse/tables', { body: 'connectionId=c', type: 'application/x-www-form-urlencoded' });
    expect(mgmt.status).toBe(415);
    expect(mgmt.json.error.message).toMatch(/Content-Type must be application\/json/);
    const xml = await call('POST', `/api/managed-lakehouse/tables/${tableId}/maintenance`, { body: '<x/>', type: 'application/xml' });
    expect(xml.status).toBe(415);
    // None of it was committed.
    expect((await s.lake.table('ns.events').read()).map((r) => Number(r.id))).toEqual([1]);
  });
});

describe('slow clients', () => {
  test('slow headers and slow bodies are answered 408 and dropped after their timeout, while others are served', async () => {
    const header = `GET /health HTTP/1.1\r\nHost: x\r\n`;
    const slowHeaders = raw(s.port, [header, ...Array.from({ length: 40 }, (_, i) => `X-${i}: y\r\n`)], 150);
    const body = '{"id":9,"v":"slow"}\n'.repeat(50);
    const slowBody = raw(
      s.port,
      [`POST /api/managed-lakehouse/tables/${tableId}/records HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tokens.write}\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${body.length}\r\n\r\n`, ...body.match(/.{1,20}/gs)!],
      150,
    );
    // Idle after connecting: never a byte.
    const silent = raw(s.port, [], 100);
    // Meanwhile the server serves everyone else, promptly.
    const started = Date.now();
    for (let i = 0; i < 10; i++) {
      const r = await call('GET', '/health', { token: null });
      expect(r.status).toBe(200);
    }
    expect(Date.now() - started).toBeLessThan(2000);
    const [h, b, quiet] = await Promise.all([slowHeaders, slowBody, silent]);
    expect(h.text).toMatch(/^HTTP\/1\.1 408/);
    expect(h.closedAfterMs).toBeLessThan(600 + 1500);
    expect(b.text).toMatch(/^HTTP\/1\.1 408/);
    expect(b.closedAfterMs).toBeGreaterThanOrEqual(1400);
    expect(b.closedAfterMs).toBeLessThan(1500 + 1500);
    expect(quiet.closedAfterMs).toBeLessThan(600 + 1500);
    // The slow post committed nothing and left no spooled file.
    await new Promise((r) => setTimeout(r, 200));
    expect((await s.lake.table('ns.events').read()).map((r) => Number(r.id))).toEqual([1]);
    expect(listFiles(join(root.path, 'spool'))).toEqual([]);
  });
});

describe('the connection limit', () => {
  test('past the limit a new connection is answered 503 and closed; the ones inside it are served, and the server recovers', async () => {
    const limited = await start({ ...LIMITS, headersTimeoutMs: 5000, requestTimeoutMs: 8000, maxConnections: 20 });
    const holders = await Promise.all(
      Array.from({ length: 20 }, () => new Promise<ReturnType<typeof connect>>((resolve) => {
        const c = connect(limited.port, '127.0.0.1', () => resolve(c));
        c.on('error', () => undefined);
      })),
    );
    try {
      const over = await Promise.all(Array.from({ length: 10 }, () => raw(limited.port, ['GET /health HTTP/1.1\r\nHost: x\r\n\r\n'], 10)));
      for (const r of over) {
        expect(r.text).toMatch(/^HTTP\/1\.1 503/);
        expect(r.text).toMatch(/20 connections are open, the limit; retry later/);
        expect(r.text.toLowerCase()).toContain('connection: close');
      }
      // A connection inside the limit is served.
      holders[0]!.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      const served = await new Promise<string>((resolve) => {
        let t = '';
        holders[0]!.on('data', (d) => (t += d)).on('close', () => resolve(t));
      });
      expect(served).toMatch(/^HTTP\/1\.1 200/);
    } finally {
      for (const h of holders) h.destroy();
    }
    await new Promise((r) => setTimeout(r, 100));
    expect((await fetch(`${limited.url}/health`)).status).toBe(200);
    expect(limited.logs.join('')).not.toContain('"level":50');
    await limited.close();
  });
});

describe('secrets', () => {
  test('a password, connection string or storage key that an error would quote is redacted', async () => {
    addSecret('AKIAEXAMPLESTORAGEKEY9');
    for (const text of ["id = 'postgresql://app:hunter2pass@db.internal/lake'", "id = 'AKIAEXAMPLESTORAGEKEY9'", "id = 'AccountName=a;AccountKey=c2VjcmV0a2V5MQ==;'"]) {
      const r = await call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?where=${encodeURIComponent(text)}`, { token: tokens.read });
      expect(r.status, r.text).toBe(400);
      for (const secret of ['hunter2pass', 'AKIAEXAMPLESTORAGEKEY9', 'c2VjcmV0a2V5MQ==']) expect(r.text).not.toContain(secret);
      expect(r.text).toContain('***');
    }
  });

  test('no token, token hash or file outside the warehouse in any response or log line; no crash', async () => {
    const hashes = (JSON.parse(readFileSync(join(root.path, 'tokens.json'), 'utf8')) as { tokens: { hash: string }[] }).tokens.map((t) => t.hash.slice('sha256:'.length));
    const logs = s.logs.join('');
    expect(responses.length).toBeGreaterThan(500);
    for (const text of [...responses, logs]) {
      for (const secret of [...Object.values(tokens), ...hashes, SECRET_TEXT, 'hunter2pass', 'AKIAEXAMPLESTORAGEKEY9', 'c2VjcmV0a2V5MQ==']) {
        const at = text.indexOf(secret);
        expect(at, `a secret in: ${text.slice(Math.max(0, at - 200), at + 20)}`).toBe(-1);
      }
    }
    expect(logs).not.toMatch(/Bearer\s+tl[ka]_/i);
    expect(logs).not.toContain('"level":50');
    expect((await call('GET', '/health', { token: null })).status).toBe(200);
    expect(snapshotAround()).toEqual(before);
  });
});
