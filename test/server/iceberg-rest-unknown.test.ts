import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwinlakeError } from '../../src/core/errors.ts';
import type { Catalog } from '../../src/catalog/catalog.ts';
import { RestCatalog } from '../../src/catalog/rest-catalog.ts';
import { errorOf } from '../helpers.ts';
import { SCHEMA } from './iceberg-rest-append.ts';
import { OpenApiResponses, startRestServer, type RestServer } from './iceberg-rest-server.ts';

const openapi = new OpenApiResponses();

/** The catalog under the server fails each commit in the way `failure` says (none: it commits). */
let failure: 'none' | 'unknown' | 'io' | 'bug' = 'none';
/** Commits straight to the catalog just before the server's commit of this table (a writer that bypasses the server). */
let rivalOn: { table: string; commit: Parameters<Catalog['commitTable']>[1] } | undefined;
function failing(inner: Catalog): Catalog {
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'commitTable') {
        return async (...args: Parameters<Catalog['commitTable']>) => {
          if (rivalOn && args[0].name === rivalOn.table) {
            const rival = rivalOn;
            rivalOn = undefined;
            expect((await target.commitTable(args[0], rival.commit)).status).toBe('committed');
          }
          if (failure === 'unknown') throw new TwinlakeError('commit-state-unknown', 'sql catalog: the connection was lost while committing');
          if (failure === 'io') throw new TwinlakeError('io', 'sql catalog: disk I/O error');
          if (failure === 'bug') throw new Error('something broke');
          return target.commitTable(...args);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('Iceberg REST catalog: a commit whose outcome is unknown', () => {
  let server: RestServer;
  beforeAll(async () => {
    server = await startRestServer({ wrapCatalog: failing });
  });
  afterAll(async () => {
    await server?.close();
  });

  const commit = (body: unknown) =>
    fetch(`${server.base}/v1/twinlake/namespaces/u/tables/t`, { method: 'POST', headers: { authorization: `Bearer ${server.token.admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('answers 500 CommitStateUnknownException, never 4xx or 503, and the client reports the state unknown', async () => {
    await fetch(`${server.base}/v1/twinlake/namespaces`, { method: 'POST', headers: { authorization: `Bearer ${server.token.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ namespace: ['u'] }) });
    const created = await fetch(`${server.base}/v1/twinlake/namespaces/u/tables`, { method: 'POST', headers: { authorization: `Bearer ${server.token.admin}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 't', schema: SCHEMA }) });
    expect(created.status).toBe(200);
    const client = new RestCatalog({ uri: server.base, token: server.token.write });
    for (const kind of ['unknown', 'io', 'bug'] as const) {
      failure = kind;
      const res = await commit({ requirements: [], updates: [{ action: 'set-properties', updates: { k: kind } }] });
      expect(res.status, kind).toBe(500);
      const body = (await res.json()) as { error: { type: string; code: number; message: string } };
      expect(body.error, kind).toMatchObject({ type: 'CommitStateUnknownException', code: 500 });
      const e = await errorOf(client.commitTable({ namespace: ['u'], name: 't' }, { requirements: [], updates: [{ action: 'set-properties', updates: { k: kind } }] }));
      expect(e.kind, kind).toBe('commit-state-unknown');
      expect(e.message).toMatch(/may or may not have happened/);
    }
    // A multi-table transaction whose swap fails: unknown too.
    failure = 'io';
    const txn = await fetch(`${server.base}/v1/twinlake/transactions/commit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.token.admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ 'table-changes': [{ identifier: { namespace: ['u'], name: 't' }, requirements: [], updates: [{ action: 'set-properties', updates: { k: 'txn' } }] }] }),
    });
    expect(txn.status).toBe(500);
    expect(((await txn.json()) as { error: { type: string } }).error.type).toBe('CommitStateUnknownException');
    // A failed requirement is still a certain failure: 409, even while the catalog would fail.
    const stale = await commit({ requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 1 }], updates: [] });
    expect(stale.status).toBe(409);
    failure = 'none';
    const ok = await commit({ requirements: [], updates: [{ action: 'set-properties', updates: { k: 'fine' } }] });
    expect(ok.status).toBe(200);
    expect(server.responses.flatMap((r) => openapi.problems(r))).toEqual([]);
  });

  it('reports a transaction that a writer bypassing the server broke after its first swap as partly committed (500), naming the tables', async () => {
    const post = (path: string, body: unknown) =>
      fetch(`${server.base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${server.token.admin}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await post('/v1/twinlake/namespaces', { namespace: ['p'] });
    for (const name of ['t1', 't2']) expect((await post('/v1/twinlake/namespaces/p/tables', { name, schema: SCHEMA })).status).toBe(200);
    // Between the swaps of t1 and t2, another writer adds a column to t2: t2's requirement no longer holds.
    rivalOn = {
      table: 't2',
      commit: { requirements: [], updates: [{ action: 'add-schema', schema: { 'schema-id': 1, type: 'struct', fields: [...SCHEMA.fields, { id: 3, name: 'extra', type: 'string', required: false }] }, 'last-column-id': 3 }] },
    };
    const change = (name: string) => ({ identifier: { namespace: ['p'], name }, requirements: [{ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': 2 }], updates: [{ action: 'set-properties', updates: { txn: 'yes' } }] });
    const res = await post('/v1/twinlake/transactions/commit', { 'table-changes': [change('t1'), change('t2')] });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('CommitStateUnknownException');
    expect(body.error.message).toMatch(/^iceberg rest: transaction partly committed: p\.t1 committed, p\.t2 failed \(iceberg commit: requirement assert-last-assigned-field-id failed/);
    const load = async (name: string) => ((await (await fetch(`${server.base}/v1/twinlake/namespaces/p/tables/${name}`, { headers: { authorization: `Bearer ${server.token.admin}` } })).json()) as { metadata: { properties: Record<string, string> } }).metadata.properties;
    expect((await load('t1')).txn).toBe('yes');
    expect((await load('t2')).txn).toBeUndefined();
    expect(server.responses.flatMap((r) => openapi.problems(r))).toEqual([]);
  });
});
