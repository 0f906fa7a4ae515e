import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Scope } from '../../src/server/auth-types.ts';
import { startServer, type TestServer } from '../server/server-fixture.ts';

// The console's one endpoint of its own: sizes per partition (the file-size histogram uses the
// management API's files endpoint as it is).
let s: TestServer;
let tableId: string;
let deltaOnlyId: string;
const rows = [
  ...Array.from({ length: 30 }, (_, i) => ({ id: i, region: ['us', 'eu', 'apac'][i % 3] })),
  ...Array.from({ length: 7 }, (_, i) => ({ id: 100 + i, region: 'us' })),
];

beforeAll(async () => {
  s = await startServer();
  const table = s.lake.table('sales.events');
  await table.write(rows.slice(0, 30), { partition: 'region' });
  await table.write(rows.slice(30), { mode: 'append' });
  tableId = (await table.describe()).tableUuid;
  const plain = s.lake.table('sales.plain');
  await plain.write([{ id: 1 }, { id: 2 }], { formats: ['delta'] });
  deltaOnlyId = (await plain.describe()).tableUuid;
});
afterAll(async () => {
  await s?.close();
});

describe('GET /api/managed-lakehouse/tables/{tableId}/partitions', () => {
  const path = () => `/api/managed-lakehouse/tables/${tableId}/partitions`;

  test('× {no token, bad token, read, write, admin}: 401, 401, then 200 for every scope', async () => {
    expect(s.app.routeTable.find((r) => r.method === 'GET' && r.url === '/api/managed-lakehouse/tables/:tableId/partitions')?.config).toEqual({ scope: 'read' });
    const none = await s.call('GET', path(), { token: null });
    expect(none.status).toBe(401);
    expect(none.json.error).toMatchObject({ code: 401, type: 'NotAuthorizedException' });
    const bad = await s.call('GET', path(), { token: 'tlk_not-a-real-token' });
    expect(bad.status).toBe(401);
    for (const scope of ['read', 'write', 'admin'] as Scope[]) expect((await s.call('GET', path(), { token: s.tokens[scope] })).status, scope).toBe(200);
  });

  test('one entry per partition with its files, rows and bytes, adding up to the live files', async () => {
    const r = await s.call('GET', path(), { token: s.tokens.read });
    expect(r.status, r.text).toBe(200);
    expect(r.json.partitionSpec).toBe('region');
    const byRegion = new Map<string, number>();
    for (const row of rows) byRegion.set(row.region, (byRegion.get(row.region) ?? 0) + 1);
    const got = r.json.partitions as { partition: { region: string }; files: number; records: number; bytes: number }[];
    expect(Object.fromEntries(got.map((p) => [p.partition.region, p.records]))).toEqual(Object.fromEntries(byRegion));
    const files = (await s.lake.table('sales.events').files()).files;
    expect(got.reduce((a, p) => a + p.files, 0)).toBe(files.length);
    expect(got.reduce((a, p) => a + p.bytes, 0)).toBe(files.reduce((a, f) => a + f.bytes, 0));
    // Largest first, as the chart draws them.
    expect(got.map((p) => p.bytes)).toEqual([...got.map((p) => p.bytes)].sort((a, b) => b - a));
  });

  test('a Delta-only table: its files from the Delta log, one unpartitioned entry', async () => {
    const r = await s.call('GET', `/api/managed-lakehouse/tables/${deltaOnlyId}/partitions`, { token: s.tokens.read });
    expect(r.status, r.text).toBe(200);
    expect(r.json.partitions).toHaveLength(1);
    expect(r.json.partitions[0]).toMatchObject({ partition: {}, records: 2 });
  });

  test('an unknown table answers 404 naming the tableId', async () => {
    const r = await s.call('GET', '/api/managed-lakehouse/tables/00000000-0000-0000-0000-000000000000/partitions');
    expect(r.status).toBe(404);
    expect(r.json.error).toMatchObject({ type: 'NoSuchTableException', message: 'table: no table with tableId "00000000-0000-0000-0000-000000000000"' });
  });
});
