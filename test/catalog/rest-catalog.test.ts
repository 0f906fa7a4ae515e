import { describe, expect, it } from 'vitest';
import { RestCatalog } from '../../src/catalog/rest-catalog.ts';
import { Lakehouse } from '../../src/index.ts';
import { expectBothEqual } from '../both-formats.ts';
import { errorOf } from '../helpers.ts';
import { OpenApiResponses, startRestServer } from '../server/iceberg-rest-server.ts';
import { catalogContract } from './catalog-contract.ts';

const openapi = new OpenApiResponses();

// The one contract suite, through the REST client, against our REST catalog on a real port; every
// response the server gave on the way is checked against the OpenAPI document.
catalogContract('rest (RestCatalog against the Iceberg REST plugin)', async () => {
  const server = await startRestServer();
  const catalog = new RestCatalog({ uri: server.base, token: server.token.admin });
  return {
    catalog,
    async cleanup() {
      await server.close();
      expect(server.responses.flatMap((r) => openapi.problems(r))).toEqual([]);
    },
  };
});

describe('RestCatalog', () => {
  it('asks /v1/config first and uses the prefix it names', async () => {
    const server = await startRestServer();
    try {
      const catalog = new RestCatalog({ uri: server.base, token: server.token.read, warehouse: 'main' });
      expect(await catalog.listNamespaces()).toEqual([]);
      expect(server.responses.map((r) => `${r.method} ${r.route}`)).toEqual(['GET /iceberg/v1/config', 'GET /iceberg/v1/:prefix/namespaces']);
    } finally {
      await server.close();
    }
  });
});

describe('RestCatalog authentication', () => {
  it('exchanges client credentials, refreshes the token before it expires and once more on a 401', async () => {
    // Tokens live 5 s: the client replaces one within 5 s of its end, so every call here exchanges.
    const server = await startRestServer({ tokenLifetimeSeconds: 5 });
    try {
      const catalog = new RestCatalog({ uri: server.base, credential: { clientId: 'writer', clientSecret: server.token.write } });
      await catalog.createNamespace(['auth']);
      expect(await catalog.namespaceExists(['auth'])).toBe(true);
      expect(server.tokens.exchanges).toBeGreaterThanOrEqual(2);
      const posted = server.responses.filter((r) => r.route === '/iceberg/v1/oauth/tokens');
      expect(posted.every((r) => r.status === 200)).toBe(true);
    } finally {
      await server.close();
    }
    const longLived = await startRestServer();
    try {
      const catalog = new RestCatalog({ uri: longLived.base, credential: { clientId: 'writer', clientSecret: longLived.token.write } });
      await catalog.createNamespace(['auth']);
      expect(longLived.tokens.exchanges).toBe(1);
      // The server forgets every access token: the next call gets a 401, exchanges again and succeeds.
      longLived.tokens.expireAll();
      expect(await catalog.listNamespaces()).toEqual([['auth']]);
      expect(longLived.tokens.exchanges).toBe(2);
      expect(longLived.responses.filter((r) => r.status === 401)).toHaveLength(1);
      // Wrong credentials fail with the reason; a token of too small a scope is refused by the route.
      const wrong = new RestCatalog({ uri: longLived.base, credential: { clientId: 'writer', clientSecret: 'nope' } });
      expect((await errorOf(wrong.listNamespaces())).message).toMatch(/token exchange for client writer failed \(401 invalid_client/);
      const reader = new RestCatalog({ uri: longLived.base, token: longLived.token.read });
      const e = await errorOf(reader.createNamespace(['nope']));
      expect(e.message).toMatch(/forbidden/);
      expect(await reader.namespaceExists(['nope'])).toBe(false);
      expect(longLived.responses.flatMap((r) => openapi.problems(r))).toEqual([]);
    } finally {
      await longLived.close();
    }
  });
});

describe('A lakehouse over the REST catalog', () => {
  it('writes through RestCatalog and reads back by both formats, on the client and on the server', async () => {
    const server = await startRestServer();
    const catalog = new RestCatalog({ uri: server.base, credential: { clientId: 'writer', clientSecret: server.token.write }, warehouse: 'main' });
    const lake = await Lakehouse.open({ warehouse: server.warehouse, catalog, onWarning: () => undefined });
    try {
      const t = lake.table('lib.orders');
      const first = await t.append([
        { id: 1, amount: 10 },
        { id: 2, amount: 20 },
      ]);
      expect(first.created).toBe(true);
      expect(first.deltaCommitted).toBe(true);
      await t.append([{ id: 3, amount: 30 }]);
      await expectBothEqual(t, [1, 2, 3]);
      // The server's own lakehouse sees the same table, both formats in step.
      await expectBothEqual(server.lake.table('lib.orders'), [1, 2, 3]);
      expect((await t.history()).map((h) => h.deltaVersion)).toEqual([2, 1]);
      // Two writers racing through REST: the loser's 409 is a conflict the commit driver retries.
      const other = await Lakehouse.open({ warehouse: server.warehouse, catalog: new RestCatalog({ uri: server.base, token: server.token.write }), onWarning: () => undefined });
      try {
        await Promise.all([t.append([{ id: 4, amount: 40 }]), other.table('lib.orders').append([{ id: 5, amount: 50 }])]);
      } finally {
        await other.close();
      }
      await expectBothEqual(t, [1, 2, 3, 4, 5]);
      expect(server.responses.flatMap((r) => openapi.problems(r))).toEqual([]);
    } finally {
      await lake.close();
      await server.close();
    }
  });
});
