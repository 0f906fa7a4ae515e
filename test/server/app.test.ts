import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { seedCreateBody, startServer, type TestServer } from './server-fixture.ts';

let s: TestServer;
beforeAll(async () => {
  s = await startServer();
});
afterAll(async () => {
  await s?.close();
});

describe('the server', () => {
  test('health is public and names the version', async () => {
    const r = await s.call('GET', '/health', { token: null });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'ok', version: expect.any(String) });
  });

  test('every response carries a request ID, and the log lines of that request name it', async () => {
    const r = await s.call('GET', '/api/managed-lakehouse/tables', { token: s.tokens.read });
    const id = r.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const lines = s.logs.join('').trim().split('\n').map((l) => JSON.parse(l));
    const mine = lines.filter((l) => l.reqId === id);
    expect(mine.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
    // A client's own ID is kept, so a pipeline can follow its request through our logs.
    const given = await s.call('GET', '/health', { token: null, headers: { 'x-request-id': 'pipeline-run-42' } });
    expect(given.headers.get('x-request-id')).toBe('pipeline-run-42');
  });

  test('/openapi.json is generated from the route schemas', async () => {
    const r = await s.call('GET', '/openapi.json', { token: s.tokens.read });
    expect(r.status).toBe(200);
    const doc = r.json;
    expect(doc.openapi).toBe('3.1.0');
    const base = '/api/managed-lakehouse/tables';
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([base, `${base}/{tableId}/commits`, `${base}/{tableId}/maintenance`, `${base}/{tableId}/records`, `${base}/{tableId}/rows`, `${base}/{tableId}/schema`, `${base}/{tableId}/snapshots`, `${base}/{tableId}/files`, '/health']));
    const create = doc.paths[base].post;
    const body = create.requestBody.content['application/json'].schema;
    // The very schema that validates the request.
    const route = s.app.routeTable.find((x) => x.url === base && x.method === 'POST')!;
    expect(body).toEqual(route.schema!.body);
    expect(body.required).toEqual(expect.arrayContaining(['connectionId', 'tableName', 'storageProvider', 'icebergEnabled', 'deltaEnabled', 'icebergCatalogType', 'icebergNamespace']));
    expect(create['x-twinlake-scope']).toBe('admin');
    const commits = doc.paths[`${base}/{tableId}/commits`].get;
    expect(commits.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(['path:tableId', 'query:limit', 'query:cursor']);
    expect(doc.paths['/health'].get.security).toEqual([]);
    expect(Object.keys(doc.paths[`${base}/{tableId}/records`].post.requestBody.content)).toEqual(expect.arrayContaining(['application/x-ndjson', 'application/json', 'text/csv']));
  });

  test('requests are validated by the same schemas: 400 naming the field, in the one error shape', async () => {
    const missing = { ...seedCreateBody() };
    delete missing.tableName;
    const cases: [unknown, RegExp][] = [
      [missing, /^request body: tableName is required$/],
      [seedCreateBody('t', { icebergEnabled: 'yes' }), /^request body: icebergEnabled must be boolean, found "yes"$/],
      [seedCreateBody('t', { storageProvider: 'ftp' }), /^request body: storageProvider must be one of local, s3, azure, gcs, found "ftp"$/],
      [seedCreateBody('t', { colour: 'blue' }), /^request body: unknown field colour$/],
      [seedCreateBody('t', { keyColumns: [1] }), /^request body: keyColumns\.0 must be string/],
    ];
    for (const [body, message] of cases) {
      const r = await s.call('POST', '/api/managed-lakehouse/tables', { body });
      expect(r.status, r.text).toBe(400);
      expect(r.json).toEqual({ error: { message: expect.stringMatching(message), type: 'BadRequestException', code: 400 } });
    }
    const limit = await s.call('GET', '/api/managed-lakehouse/tables/x/commits?limit=0', { token: s.tokens.read });
    expect(limit.status).toBe(400);
    expect(limit.json.error.message).toBe('query: limit must be >= 1, found 0');
    const notJson = await s.call('POST', '/api/managed-lakehouse/tables', { raw: '{"tableName":', type: 'application/json' });
    expect(notJson.status).toBe(400);
    expect(notJson.json.error.type).toBe('BadRequestException');
    expect(await s.lake.listTables()).toEqual([]);
  });

  test('an unknown path answers 404 in the error shape (to a valid token)', async () => {
    const r = await s.call('GET', '/api/nothing-here', { token: s.tokens.read });
    expect(r.status).toBe(404);
    expect(r.json.error).toMatchObject({ code: 404, message: 'server: no route GET /api/nothing-here' });
    expect((await s.call('GET', '/api/nothing-here', { token: null })).status).toBe(401);
  });
});
