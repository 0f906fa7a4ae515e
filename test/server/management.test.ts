import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { fileUri } from '../../src/core/uri.ts';
import { ndjson } from '../helpers.ts';
import { seedCreateBody, startServer, type TestServer } from './server-fixture.ts';

let s: TestServer;
const ORDERS_SCHEMA = {
  type: 'struct',
  fields: [
    { id: 1, name: 'id', type: 'long', required: false },
    { id: 2, name: 'region', type: 'string', required: false },
    { id: 3, name: 'amount', type: 'double', required: false },
  ],
};
beforeAll(async () => {
  s = await startServer({ maxRecordBytes: 64 * 1024 });
});
afterAll(async () => {
  await s?.close();
});

/** DuckDB over the live files each format names (no code of ours reads the rows). */
async function duckRows(files: string[]): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    const list = files.map((f) => `'${f.replace(/^file:\/\//, '')}'`).join(', ');
    const r = await c.runAndReadAll(`SELECT * FROM read_parquet([${list}]) ORDER BY id`);
    return r.getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

describe('the seed management API', () => {
  let tableId: string;

  test('POST /tables creates the table in both formats from the seed body', async () => {
    const storagePath = fileUri(join(s.warehouse, 'sales', 'orders'));
    const r = await s.call('POST', '/api/managed-lakehouse/tables', {
      body: seedCreateBody('orders', { storagePath, keyColumns: ['id'], writeMode: 'append', retentionDays: 7, compactionTargetFileSizeBytes: 67108864, partitionSpec: 'region', schema: ORDERS_SCHEMA }),
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({ tableName: 'orders', icebergNamespace: 'sales', connectionId: 'conn-postgres-orders', icebergEnabled: true, deltaEnabled: true, storagePath, keyColumns: ['id'], retentionDays: 7, compactionTargetFileSizeBytes: 67108864, partitionSpec: 'region' });
    tableId = r.json.tableId;
    const described = await s.lake.table('sales.orders').describe();
    expect(tableId).toBe(described.tableUuid);
    expect(described.formats).toEqual(['delta', 'iceberg']);
    // Delta version 0 records the creation.
    expect(readdirSync(join(s.warehouse, 'sales', 'orders', '_delta_log'))).toContain('00000000000000000000.json');
    const again = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('orders') });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ type: 'AlreadyExistsException', code: 409 });
  });

  test('formats follow the two flags', async () => {
    const r = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('iceberg_only', { deltaEnabled: false }) });
    expect(r.status, r.text).toBe(201);
    expect((await s.lake.table('sales.iceberg_only').describe()).formats).toEqual(['iceberg']);
    // Created without a schema: no columns and no rows yet, which reads say plainly.
    const empty = await s.call('GET', `/api/managed-lakehouse/tables/${r.json.tableId}/rows`, { token: s.tokens.read });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.text).toBe('');
    // A Delta-only table: version 0 holds its (empty) schema; the first post adds the columns.
    const deltaOnly = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('delta_only', { icebergEnabled: false }) });
    expect(deltaOnly.status, deltaOnly.text).toBe(201);
    expect(deltaOnly.json).toMatchObject({ icebergEnabled: false, deltaEnabled: true });
    expect((await s.lake.table('sales.delta_only').describe()).formats).toEqual(['delta']);
    const posted = await s.call('POST', `/api/managed-lakehouse/tables/${deltaOnly.json.tableId}/records`, { raw: ndjson([{ id: 1, v: 'a' }, { id: 2, v: 'b' }]) });
    expect(posted.status, posted.text).toBe(200);
    expect((await s.lake.table('sales.delta_only').read({ format: 'delta' })).map((r) => r.id)).toEqual([1, 2]);
    expect((await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('delta_only', { icebergEnabled: false }) })).status).toBe(409);
    const none = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('neither', { deltaEnabled: false, icebergEnabled: false }) });
    expect(none.status).toBe(400);
    expect(none.json.error.message).toMatch(/icebergEnabled and deltaEnabled/);
    const noSchema = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('parted', { partitionSpec: 'day(ts)' }) });
    expect(noSchema.status).toBe(400);
    expect(noSchema.json.error.message).toMatch(/partitionSpec needs schema/);
    const wrongPath = await s.call('POST', '/api/managed-lakehouse/tables', { body: seedCreateBody('elsewhere', { storagePath: '/somewhere/else' }) });
    expect(wrongPath.status).toBe(400);
    expect(wrongPath.json.error.message).toMatch(/storagePath must be where this warehouse keeps sales\.elsewhere/);
  });

  test('records posted as NDJSON, a JSON array and CSV appear in both formats; the response is the write result', async () => {
    const a = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: ndjson([{ id: 1, region: 'eu', amount: 1.5 }, { id: 2, region: 'us', amount: 2.5 }]) });
    expect(a.status, a.text).toBe(200);
    expect(a.json).toMatchObject({ table: 'sales.orders', mode: 'append', rows: 2, deltaCommitted: true, deltaVersion: 1 });
    expect(typeof a.json.snapshotId).toBe('string');
    const b = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: JSON.stringify([{ id: 3, region: 'eu', amount: 3.5 }]), type: 'application/json' });
    expect(b.status, b.text).toBe(200);
    const c = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: 'id,region,amount\n4,us,4.5\n', type: 'text/csv' });
    expect(c.status, c.text).toBe(200);
    expect(c.json.rows).toBe(1);
    const want = [1, 2, 3, 4];
    const t = s.lake.table('sales.orders');
    expect((await t.read()).map((r) => r.id).sort()).toEqual(want);
    expect((await t.read({ format: 'delta' })).map((r) => r.id).sort()).toEqual(want);
    expect((await t.describe()).partitionSpec).toBe('region');
    for (const format of ['iceberg', 'delta'] as const) {
      const files = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/files?format=${format}`, { token: s.tokens.read });
      expect(files.status).toBe(200);
      const paths = (files.json.files as { path: string }[]).map((f) => f.path);
      expect((await duckRows(paths)).map((r) => Number(r.id))).toEqual(want);
    }
  });

  test('merge mode with keys, and an idempotency key: a replayed batch writes nothing', async () => {
    const path = `/api/managed-lakehouse/tables/${tableId}/records?mode=merge&keys=id&txn=${encodeURIComponent('app=ingest-7,version=1')}`;
    const body = ndjson([{ id: 2, region: 'us', amount: 20 }, { id: 5, region: 'eu', amount: 5 }]);
    const first = await s.call('POST', path, { raw: body, token: s.tokens.write });
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({ mode: 'merge', inserted: 1, updated: 1, txn: { status: 'committed' } });
    const replay = await s.call('POST', path, { raw: body, token: s.tokens.write });
    expect(replay.status, replay.text).toBe(200);
    expect(replay.json.txn.status).toBe('already-committed');
    const rows = await s.lake.table('sales.orders').read({ format: 'delta' });
    expect(rows.map((r) => r.id).sort()).toEqual([1, 2, 3, 4, 5]);
    expect(rows.find((r) => r.id === 2)!.amount).toBe(20);
  });

  test('a bad record answers 400 with its line, column and value, and commits nothing', async () => {
    const before = (await s.lake.table('sales.orders').history()).length;
    const r = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: ndjson([{ id: 6, region: 'eu', amount: 1 }, { id: 'seven', region: 'eu', amount: 1 }]) });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.type).toBe('BadRequestException');
    expect(r.json.error.message).toMatch(/id/);
    expect(r.json.error.message).toMatch(/line 2/);
    expect(r.json.error.message).toMatch(/seven/);
    expect((await s.lake.table('sales.orders').history()).length).toBe(before);
  });

  test("a bad record's error speaks of the request body, never of the server's spool file", async () => {
    const r = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: '{"id": 8, "region": "eu", "amount": 1}\n{"id": 9, "region": \n' });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.message).toMatch(/^request body: line 2/);
    expect(r.text).not.toMatch(/twinlake-post-|records\.ndjson/);
  });

  test('a body over the limit answers 413 (declared or streamed), an unknown content type 415', async () => {
    const before = (await s.lake.table('sales.orders').history()).length;
    const big = ndjson(Array.from({ length: 3000 }, (_, i) => ({ id: 1000 + i, region: 'eu', amount: i })));
    expect(big.length).toBeGreaterThan(64 * 1024);
    const declared = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: big });
    expect(declared.status).toBe(413);
    expect(declared.json.error).toMatchObject({ type: 'PayloadTooLargeException', code: 413 });
    // Chunked: no Content-Length, so the limit is found while streaming.
    const chunks = [big.slice(0, 40_000), big.slice(40_000)];
    const res = await fetch(`${s.url}/api/managed-lakehouse/tables/${tableId}/records`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.tokens.write}`, 'content-type': 'application/x-ndjson' },
      body: new ReadableStream({ pull(c) { const next = chunks.shift(); if (next) c.enqueue(new TextEncoder().encode(next)); else c.close(); } }),
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await s.lake.table('sales.orders').history()).length).toBe(before);
    const xml = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/records`, { raw: '<a/>', type: 'application/xml' });
    expect(xml.status).toBe(415);
    expect(xml.json.error.message).toMatch(/Content-Type must be/);
  });

  test('GET /tables lists the tables with formats, rows and whether Delta is in step', async () => {
    const r = await s.call('GET', '/api/managed-lakehouse/tables', { token: s.tokens.read });
    expect(r.status).toBe(200);
    const orders = r.json.tables.find((t: { tableId: string }) => t.tableId === tableId);
    expect(orders).toMatchObject({ tableName: 'orders', rows: 5, deltaEnabled: true, deltaInStep: true, storageProvider: 'local' });
    expect(r.json.tables.map((t: { tableName: string }) => t.tableName).sort()).toEqual(['delta_only', 'iceberg_only', 'orders']);
  });

  test('GET /commits pages through the history: snapshot, Delta version, operation, rows and files', async () => {
    const all = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/commits`, { token: s.tokens.read });
    expect(all.status).toBe(200);
    const history = await s.lake.table('sales.orders').history();
    expect(all.json.commits.map((c: { icebergSnapshotId: string }) => c.icebergSnapshotId)).toEqual(history.map((h) => String(h.snapshotId)));
    expect(all.json.commits.map((c: { deltaVersion: number }) => c.deltaVersion)).toEqual(history.map((h) => h.deltaVersion));
    expect(all.json.commits.every((c: { deltaInStep: boolean }) => c.deltaInStep)).toBe(true);
    const merge = all.json.commits[0];
    expect(merge).toMatchObject({ rowsAdded: expect.any(Number), filesAdded: expect.any(Number), filesRemoved: expect.any(Number) });
    const oldest = all.json.commits.at(-1);
    expect(oldest).toMatchObject({ operation: 'append', rowsAdded: 2, rowsRemoved: 0, filesRemoved: 0, deltaVersion: 1 });
    expect(all.json.nextCursor).toBeNull();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/commits?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: s.tokens.read });
      expect(page.status).toBe(200);
      expect(page.json.commits.length).toBeLessThanOrEqual(2);
      seen.push(...page.json.commits.map((c: { icebergSnapshotId: string }) => c.icebergSnapshotId));
      cursor = page.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.json.commits.map((c: { icebergSnapshotId: string }) => c.icebergSnapshotId));
  });

  test('POST /maintenance: delta_checkpoint writes a checkpoint; every other operation runs and says what it did', async () => {
    const r = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/maintenance`, { body: { operation: 'delta_checkpoint' } });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ operation: 'delta_checkpoint', status: 'completed' });
    const log = readdirSync(join(s.warehouse, 'sales', 'orders', '_delta_log'));
    expect(log).toContain(`${String(r.json.deltaVersion).padStart(20, '0')}.checkpoint.parquet`);
    expect(log).toContain('_last_checkpoint');
    expect((await s.lake.table('sales.orders').read({ format: 'delta' })).length).toBe(5);
    for (const operation of ['orphan_cleanup', 'compaction', 'metadata_cleanup']) {
      const n = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/maintenance`, { body: { operation, dryRun: true } });
      expect(n.status, n.text).toBe(200);
      expect(n.json).toMatchObject({ operation, status: 'completed', dryRun: true });
    }
    expect((await s.lake.table('sales.orders').read({ format: 'delta' })).length).toBe(5);
    const bad = await s.call('POST', `/api/managed-lakehouse/tables/${tableId}/maintenance`, { body: { operation: 'vacuum' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/operation must be one of/);
  });

  test('read endpoints: schema, snapshots, and rows as NDJSON with limit, where and time travel', async () => {
    const schema = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/schema`, { token: s.tokens.read });
    expect(schema.status).toBe(200);
    expect(schema.json.schema.fields.map((f: { name: string; id: number }) => [f.name, typeof f.id])).toEqual([['id', 'number'], ['region', 'number'], ['amount', 'number']]);
    const snaps = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/snapshots`, { token: s.tokens.read });
    expect(snaps.json.snapshots.length).toBe((await s.lake.table('sales.orders').history()).length);
    const rows = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?where=${encodeURIComponent("region = 'eu'")}`, { token: s.tokens.read });
    expect(rows.status).toBe(200);
    expect(rows.headers.get('content-type')).toMatch(/application\/x-ndjson/);
    expect(rows.text.trim().split('\n').map((l) => JSON.parse(l).id).sort()).toEqual([1, 3, 5]);
    const limited = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?limit=2&format=delta`, { token: s.tokens.read });
    expect(limited.text.trim().split('\n')).toHaveLength(2);
    const v1 = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?version=1&format=delta`, { token: s.tokens.read });
    expect(v1.text.trim().split('\n').map((l) => JSON.parse(l).id).sort()).toEqual([1, 2]);
    const first = snaps.json.snapshots.at(-1).snapshotId;
    const bySnapshot = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?snapshot=${first}`, { token: s.tokens.read });
    expect(bySnapshot.text.trim().split('\n').map((l) => JSON.parse(l).id).sort()).toEqual([1, 2]);
    const badWhere = await s.call('GET', `/api/managed-lakehouse/tables/${tableId}/rows?where=${encodeURIComponent('nope = 1')}`, { token: s.tokens.read });
    expect(badWhere.status).toBe(400);
    const unknown = await s.call('GET', '/api/managed-lakehouse/tables/00000000-0000-0000-0000-000000000000/schema', { token: s.tokens.read });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.type).toBe('NoSuchTableException');
  });
});
