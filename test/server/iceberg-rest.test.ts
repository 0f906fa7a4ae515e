import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { IcebergError, IcebergRestCatalog } from 'iceberg-js';
import { localPath } from '../../src/core/uri.ts';
import { parseJson } from '../../src/core/json.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { appendUpdatesJson, foreignAppend, SCHEMA } from './iceberg-rest-append.ts';
import { OpenApiResponses, startRestServer, type RestServer } from './iceberg-rest-server.ts';

const openapi = new OpenApiResponses();

describe('Iceberg REST catalog', () => {
  let server: RestServer;
  let js: IcebergRestCatalog;
  let checked = 0;

  beforeAll(async () => {
    server = await startRestServer();
    js = new IcebergRestCatalog({ baseUrl: server.base, warehouse: 'main', auth: { type: 'bearer', token: server.token.admin } });
  });
  afterAll(async () => {
    await server?.close();
  });
  // Every response the server gave in a test conforms to the OpenAPI document.
  afterEach(() => {
    const fresh = server.responses.slice(checked);
    checked = server.responses.length;
    expect(fresh.flatMap((r) => openapi.problems(r))).toEqual([]);
  });

  /** A raw request with a token (admin unless given) and a JSON body. */
  const http = async (method: string, path: string, body?: unknown, opts: { token?: string; headers?: Record<string, string> } = {}) => {
    const res = await fetch(`${server.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${opts.token ?? server.token.admin}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text ? parseJson(text) : undefined };
  };
  const tablePath = (ns: string, t: string) => `/v1/twinlake/namespaces/${ns}/tables/${t}`;

  it('serves its config with the prefix and the endpoints it implements', async () => {
    const config = await js.loadConfig();
    expect(config.overrides).toMatchObject({ prefix: 'twinlake' });
    const raw = await http('GET', '/v1/config?warehouse=anything');
    expect(raw.json.endpoints).toContain('POST /v1/{prefix}/transactions/commit');
    expect(raw.json.endpoints).toContain('HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}');
    expect((await http('GET', '/v1/elsewhere/namespaces')).json.error).toMatchObject({ code: 404, type: 'NoSuchWarehouseException' });
  });

  it('creates, lists, loads and drops namespaces through iceberg-js, nested ones and pages too', async () => {
    await js.createNamespace({ namespace: ['acct'] }, { properties: { owner: 'finance' } });
    await js.createNamespace({ namespace: ['acct', 'tax'] });
    await js.createNamespace({ namespace: ['acct', 'pay'] });
    expect(await js.namespaceExists({ namespace: ['acct', 'tax'] })).toBe(true);
    expect(await js.namespaceExists({ namespace: ['acct', 'nope'] })).toBe(false);
    expect((await js.loadNamespaceMetadata({ namespace: ['acct'] })).properties).toMatchObject({ owner: 'finance' });
    const children = await js.listNamespaces({ parent: { namespace: ['acct'] } });
    expect(children.namespaces.map((n) => n.namespace)).toEqual([
      ['acct', 'pay'],
      ['acct', 'tax'],
    ]);
    // Pages of one: a token leads to the next page, the last page has none.
    const first = await js.listNamespaces({ parent: { namespace: ['acct'] }, pageSize: 1 });
    expect(first.namespaces.map((n) => n.namespace)).toEqual([['acct', 'pay']]);
    expect(first.nextPageToken).toBeTruthy();
    const second = await js.listNamespaces({ parent: { namespace: ['acct'] }, pageSize: 1, pageToken: first.nextPageToken! });
    expect(second.namespaces.map((n) => n.namespace)).toEqual([['acct', 'tax']]);
    expect(second.nextPageToken).toBeFalsy();

    const dup = await js.createNamespace({ namespace: ['acct'] }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(IcebergError);
    expect((dup as IcebergError).status).toBe(409);
    const notEmpty = await http('DELETE', '/v1/twinlake/namespaces/acct');
    expect(notEmpty.status).toBe(409);
    expect(notEmpty.json.error.type).toBe('NamespaceNotEmptyException');
    await js.dropNamespace({ namespace: ['acct', 'tax'] });
    expect(await js.namespaceExists({ namespace: ['acct', 'tax'] })).toBe(false);
    expect((await http('GET', '/v1/twinlake/namespaces/ghost')).json.error).toMatchObject({ code: 404, type: 'NoSuchNamespaceException' });
    const update = await http('POST', '/v1/twinlake/namespaces/acct/properties', { removals: ['gone', 'never'], updates: { owner: 'ops', tier: 'gold' } });
    expect([update.status, update.json]).toEqual([200, { updated: ['owner', 'tier'], removed: [], missing: ['gone', 'never'] }]);
    const again = await http('POST', '/v1/twinlake/namespaces/acct/properties', { removals: ['tier'], updates: {} });
    expect(again.json).toEqual({ updated: [], removed: ['tier'], missing: [] });
    expect((await js.loadNamespaceMetadata({ namespace: ['acct'] })).properties).toEqual({ owner: 'ops' });
    expect((await http('POST', '/v1/twinlake/namespaces/acct/properties', { removals: ['owner'], updates: { owner: 'x' } })).status).toBe(422);
  });

  it('creates a table through iceberg-js that is also a Delta table, and an append committed through it is read by both formats', async () => {
    await js.createNamespace({ namespace: ['web'] });
    const created = await js.createTable({ namespace: ['web'] }, { name: 'events', schema: SCHEMA, properties: { 'created.by': 'iceberg-js' } });
    expect(created['table-uuid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.properties).toMatchObject({ 'created.by': 'iceberg-js', 'twinlake.formats': 'iceberg,delta' });
    const location = localPath(created.location!);
    expect(existsSync(join(location, '_delta_log', '00000000000000000000.json'))).toBe(true);
    expect((await js.listTables({ namespace: ['web'] })).identifiers).toEqual([{ namespace: ['web'], name: 'events' }]);

    const ident = { namespace: ['web'], name: 'events' };
    const rows = [
      { id: 1, name: 'a' },
      { id: 2, name: 'b' },
    ];
    const { json } = await foreignAppend(server.lake, ident, rows, 1001n);
    const committed = await js.commitTable(ident, { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates: appendUpdatesJson(json) });
    expect(committed.metadata['current-snapshot-id']).toBe(1001);
    const loaded = await js.loadTable(ident);
    expect(loaded['current-snapshot-id']).toBe(1001);

    // The Delta side: our reader, and DuckDB over the live files either format names.
    const t = server.lake.table('web.events');
    await expectBothEqual(t, [1, 2]);
    expect(readdirSync(join(location, '_delta_log')).filter((f) => f.endsWith('.json'))).toEqual(['00000000000000000000.json', '00000000000000000001.json']);

    // A second append on top, and a property change, as iceberg-js sends them.
    const next = await foreignAppend(server.lake, ident, [{ id: 3, name: 'c' }], 1002n);
    await js.commitTable(ident, {
      requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 1001 }],
      updates: [...appendUpdatesJson(next.json), { action: 'set-properties', updates: { team: 'web' } }],
    });
    await expectBothEqual(t, [1, 2, 3]);
    expect((await js.loadTable(ident)).properties).toMatchObject({ team: 'web' });
  });

  it('answers 409 for a failed requirement, 400 for unknown updates and requirements, and leaves the table as it was', async () => {
    await js.createNamespace({ namespace: ['c409'] });
    await js.createTable({ namespace: ['c409'] }, { name: 't', schema: SCHEMA });
    const before = await http('GET', tablePath('c409', 't'));
    const stale = await js.commitTable({ namespace: ['c409'], name: 't' }, { requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 77 }], updates: [{ action: 'set-properties', updates: { x: 'y' } }] }).catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(IcebergError);
    expect((stale as IcebergError).status).toBe(409);
    expect((stale as IcebergError).isConflict()).toBe(true);

    const uuid = await http('POST', tablePath('c409', 't'), { requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }], updates: [] });
    expect(uuid.status).toBe(409);
    expect(uuid.json.error.type).toBe('CommitFailedException');
    expect(uuid.json.error.message).toMatch(/requirement assert-table-uuid failed: expected 00000000-0000-0000-0000-000000000000, found [0-9a-f-]{36}/);

    const unknownUpdate = await http('POST', tablePath('c409', 't'), { requirements: [], updates: [{ action: 'teleport-table', where: 'mars' }] });
    expect(unknownUpdate.status).toBe(400);
    expect(unknownUpdate.json.error).toMatchObject({ code: 400, type: 'BadRequestException' });
    expect(unknownUpdate.json.error.message).toContain('teleport-table');
    const unknownRequirement = await http('POST', tablePath('c409', 't'), { requirements: [{ type: 'assert-moon-phase' }], updates: [] });
    expect(unknownRequirement.status).toBe(400);
    expect(unknownRequirement.json.error.message).toContain('assert-moon-phase');
    // An update that cannot apply (a snapshot that does not exist) is a bad request too.
    const badRef = await http('POST', tablePath('c409', 't'), { requirements: [], updates: [{ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 5 }] });
    expect(badRef.status).toBe(400);
    const malformed = await http('POST', tablePath('c409', 't'), '{"requirements": [');
    expect(malformed.status).toBe(400);

    const after = await http('GET', tablePath('c409', 't'));
    expect(after.json['metadata-location']).toBe(before.json['metadata-location']);
    expect(after.json.metadata.properties.x).toBeUndefined();
    const missing = await http('POST', tablePath('c409', 'ghost'), { requirements: [], updates: [] });
    expect(missing.json.error).toMatchObject({ code: 404, type: 'NoSuchTableException' });
  });

  it('loads with an ETag and answers 304 while the table is unchanged', async () => {
    await js.createNamespace({ namespace: ['etag'] });
    await js.createTable({ namespace: ['etag'] }, { name: 't', schema: SCHEMA });
    const first = await http('GET', tablePath('etag', 't'));
    const etag = first.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const same = await http('GET', tablePath('etag', 't'), undefined, { headers: { 'if-none-match': etag } });
    expect(same.status).toBe(304);
    expect(await js.loadTable({ namespace: ['etag'], name: 't' }, { ifNoneMatch: etag })).toBeNull();
    await js.commitTable({ namespace: ['etag'], name: 't' }, { requirements: [], updates: [{ action: 'set-properties', updates: { v: '2' } }] });
    const changed = await http('GET', tablePath('etag', 't'), undefined, { headers: { 'if-none-match': etag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.json.metadata.properties.v).toBe('2');
  });

  it('stage-creates a table that exists only once the client commits it with assert-create', async () => {
    await js.createNamespace({ namespace: ['stage'] });
    const staged = await http('POST', '/v1/twinlake/namespaces/stage/tables', { name: 't', schema: SCHEMA, 'stage-create': true });
    expect(staged.status).toBe(200);
    expect(staged.json['metadata-location']).toBeUndefined();
    expect(await js.tableExists({ namespace: ['stage'], name: 't' })).toBe(false);
    const m = staged.json.metadata;
    const commit = await http('POST', tablePath('stage', 't'), {
      requirements: [{ type: 'assert-create' }],
      updates: [
        { action: 'assign-uuid', uuid: m['table-uuid'] },
        { action: 'upgrade-format-version', 'format-version': 2 },
        { action: 'add-schema', schema: m.schemas[0] },
        { action: 'set-current-schema', 'schema-id': -1 },
        { action: 'add-spec', spec: { 'spec-id': 0, fields: [] } },
        { action: 'set-default-spec', 'spec-id': -1 },
        { action: 'set-location', location: m.location },
        { action: 'set-properties', updates: { staged: 'yes' } },
      ],
    });
    expect(commit.status).toBe(200);
    expect(commit.json.metadata['table-uuid']).toBe(m['table-uuid']);
    expect(commit.json.metadata.properties).toMatchObject({ staged: 'yes', 'twinlake.formats': 'iceberg,delta' });
    expect(existsSync(join(localPath(m.location), '_delta_log', '00000000000000000000.json'))).toBe(true);
    // Committing the creation again: the table exists.
    const again = await http('POST', tablePath('stage', 't'), { requirements: [{ type: 'assert-create' }], updates: [{ action: 'assign-uuid', uuid: m['table-uuid'] }] });
    expect(again.status).toBe(409);
  });

  it('commits a multi-table transaction all or nothing, and Delta follows each table', async () => {
    await js.createNamespace({ namespace: ['txn'] });
    for (const n of ['a', 'b']) await js.createTable({ namespace: ['txn'] }, { name: n, schema: SCHEMA });
    const a = { namespace: ['txn'], name: 'a' };
    const b = { namespace: ['txn'], name: 'b' };
    const sa = await foreignAppend(server.lake, a, [{ id: 10, name: 'x' }], 2001n);
    const sb = await foreignAppend(server.lake, b, [{ id: 20, name: 'y' }], 2002n);
    // One failing requirement (b's main is not at 99): nothing is committed.
    const refused = await http('POST', '/v1/twinlake/transactions/commit', {
      'table-changes': [
        { identifier: a, requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates: appendUpdatesJson(sa.json) },
        { identifier: b, requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 99 }], updates: appendUpdatesJson(sb.json) },
      ],
    });
    expect(refused.status).toBe(409);
    expect(refused.json.error.type).toBe('CommitFailedException');
    expect((await js.loadTable(a))['current-snapshot-id']).toBe(-1);
    expect((await js.loadTable(b))['current-snapshot-id']).toBe(-1);
    // An unknown update in the second change: nothing is committed either.
    const bad = await http('POST', '/v1/twinlake/transactions/commit', {
      'table-changes': [
        { identifier: a, requirements: [], updates: appendUpdatesJson(sa.json) },
        { identifier: b, requirements: [], updates: [{ action: 'unheard-of' }] },
      ],
    });
    expect(bad.status).toBe(400);
    expect((await js.loadTable(a))['current-snapshot-id']).toBe(-1);

    const ok = await http('POST', '/v1/twinlake/transactions/commit', {
      'table-changes': [
        { identifier: a, requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates: appendUpdatesJson(sa.json) },
        { identifier: b, requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates: appendUpdatesJson(sb.json) },
      ],
    });
    expect(ok.status).toBe(204);
    await expectBothEqual(server.lake.table('txn.a'), [10]);
    await expectBothEqual(server.lake.table('txn.b'), [20]);
  });

  it('renames a table, keeping its files and both formats', async () => {
    await js.createNamespace({ namespace: ['ren'] });
    await js.createNamespace({ namespace: ['ren2'] });
    await js.createTable({ namespace: ['ren'] }, { name: 'old', schema: SCHEMA });
    const ident = { namespace: ['ren'], name: 'old' };
    const { json } = await foreignAppend(server.lake, ident, [{ id: 5, name: 'e' }], 3001n);
    await js.commitTable(ident, { requirements: [], updates: appendUpdatesJson(json) });
    await js.renameTable({ source: ident, destination: { namespace: ['ren2'], name: 'new' } });
    expect(await js.tableExists(ident)).toBe(false);
    expect((await js.loadTable({ namespace: ['ren2'], name: 'new' }))['current-snapshot-id']).toBe(3001);
    await expectBothEqual(server.lake.table('ren2.new'), [5]);
    const missing = await http('POST', '/v1/twinlake/tables/rename', { source: ident, destination: { namespace: ['ren2'], name: 'other' } });
    expect(missing.json.error).toMatchObject({ code: 404, type: 'NoSuchTableException' });
    await js.createTable({ namespace: ['ren'] }, { name: 'taken', schema: SCHEMA });
    const taken = await http('POST', '/v1/twinlake/tables/rename', { source: { namespace: ['ren'], name: 'taken' }, destination: { namespace: ['ren2'], name: 'new' } });
    expect(taken.json.error).toMatchObject({ code: 409, type: 'AlreadyExistsException' });
    expect(await js.tableExists({ namespace: ['ren'], name: 'taken' })).toBe(true);
  });

  it('drops a table, keeping its files unless a purge is requested', async () => {
    await js.createNamespace({ namespace: ['drop'] });
    const kept = await js.createTable({ namespace: ['drop'] }, { name: 'kept', schema: SCHEMA });
    const purged = await js.createTable({ namespace: ['drop'] }, { name: 'purged', schema: SCHEMA });
    const pIdent = { namespace: ['drop'], name: 'purged' };
    const { json } = await foreignAppend(server.lake, pIdent, [{ id: 1, name: 'z' }], 4001n);
    await js.commitTable(pIdent, { requirements: [], updates: appendUpdatesJson(json) });
    expect(existsSync(join(localPath(purged.location!), '_delta_log', '00000000000000000001.json'))).toBe(true);

    await js.dropTable({ namespace: ['drop'], name: 'kept' });
    expect(await js.tableExists({ namespace: ['drop'], name: 'kept' })).toBe(false);
    expect(readdirSync(join(localPath(kept.location!), 'metadata')).length).toBeGreaterThan(0);
    await js.dropTable(pIdent, { purge: true });
    expect(await js.tableExists(pIdent)).toBe(false);
    const left = existsSync(localPath(purged.location!)) ? readdirSync(localPath(purged.location!), { recursive: true }).filter((f) => !String(f).match(/^(data|metadata|_delta_log)$/)) : [];
    expect(left).toEqual([]);
    expect((await http('DELETE', tablePath('drop', 'purged'))).json.error).toMatchObject({ code: 404, type: 'NoSuchTableException' });
    expect((await http('HEAD', tablePath('drop', 'purged'))).status).toBe(404);
  });

  it('registers a metadata file under a new name and accepts metrics reports', async () => {
    await js.createNamespace({ namespace: ['reg'] });
    const src = await http('POST', '/v1/twinlake/namespaces/reg/tables', { name: 'src', schema: SCHEMA });
    const registered = await js.registerTable({ namespace: ['reg'] }, { name: 'copy', 'metadata-location': src.json['metadata-location'] });
    expect(registered['table-uuid']).toBe(src.json.metadata['table-uuid']);
    const metrics = await http('POST', `${tablePath('reg', 'src')}/metrics`, {
      'report-type': 'commit-report',
      'table-name': 'reg.src',
      'snapshot-id': 1,
      'sequence-number': 1,
      operation: 'append',
      metrics: {},
    });
    expect(metrics.status).toBe(204);
  });

  it('declares each route’s scope: reads need read, commits write, drops, renames and registers admin', async () => {
    await js.createNamespace({ namespace: ['scope'] });
    await js.createTable({ namespace: ['scope'] }, { name: 't', schema: SCHEMA });
    const { read, write } = server.token;
    expect((await http('GET', tablePath('scope', 't'), undefined, { token: read })).status).toBe(200);
    expect((await http('POST', tablePath('scope', 't'), { requirements: [], updates: [] }, { token: read })).status).toBe(403);
    expect((await http('POST', tablePath('scope', 't'), { requirements: [], updates: [] }, { token: write })).status).toBe(200);
    expect((await http('POST', '/v1/twinlake/namespaces/scope/tables', { name: 'u', schema: SCHEMA }, { token: read })).status).toBe(403);
    expect((await http('DELETE', tablePath('scope', 't'), undefined, { token: write })).status).toBe(403);
    expect((await http('POST', '/v1/twinlake/tables/rename', { source: { namespace: ['scope'], name: 't' }, destination: { namespace: ['scope'], name: 'v' } }, { token: write })).status).toBe(403);
    expect((await http('POST', '/v1/twinlake/namespaces/scope/register', { name: 'r', 'metadata-location': 'x' }, { token: write })).status).toBe(403);
    expect((await http('DELETE', '/v1/twinlake/namespaces/scope', undefined, { token: write })).status).toBe(403);
    expect((await http('GET', '/v1/config', undefined, { token: 'wrong' })).status).toBe(401);
    // Readers send scan reports.
    const report = { 'report-type': 'scan-report', 'table-name': 'scope.t', 'snapshot-id': 1, filter: true, 'schema-id': 0, 'projected-field-ids': [1], 'projected-field-names': ['id'], metrics: {} };
    expect((await http('POST', `${tablePath('scope', 't')}/metrics`, report, { token: read })).status).toBe(204);
  });

  it('exchanges client credentials for a bearer token', async () => {
    const form = (body: Record<string, string>) =>
      fetch(`${server.base}/v1/oauth/tokens`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body).toString() });
    const ok = await form({ grant_type: 'client_credentials', client_id: 'reader', client_secret: server.token.read, scope: 'catalog' });
    expect(ok.status).toBe(200);
    const token = (await ok.json()) as { access_token: string; token_type: string; expires_in: number };
    expect(token.token_type).toBe('bearer');
    expect(token.expires_in).toBe(3600);
    expect(token.access_token).not.toContain(server.token.read);
    const reader = new IcebergRestCatalog({ baseUrl: server.base, auth: { type: 'bearer', token: token.access_token } });
    expect((await reader.listNamespaces()).namespaces.length).toBeGreaterThan(0);
    const bad = await form({ grant_type: 'client_credentials', client_id: 'reader', client_secret: 'guess' });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { error: string }).error).toBe('invalid_client');
    const grant = await form({ grant_type: 'password', client_id: 'reader', client_secret: server.token.read });
    expect(grant.status).toBe(400);
  });

  it('lets a library read what was committed through REST, by either format', async () => {
    // The table of the first append test, read back through the lakehouse the server serves.
    expect(ids(await server.lake.table('web.events').read({ format: 'delta' }))).toEqual([1, 2, 3]);
  });
});
