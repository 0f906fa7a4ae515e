import { describe, expect, it } from 'vitest';
import { RestCatalog } from '../../src/catalog/rest-catalog.ts';
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
