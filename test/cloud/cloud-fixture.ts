import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, expect } from 'vitest';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import type { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation, type StorageOptions } from '../../src/io/store-for-uri.ts';
import { Lakehouse, type LakehouseOptions, type Table } from '../../src/index.ts';
import type { LiveFiles } from '../../src/table/read/live-files.ts';
import { tempDir } from '../helpers.ts';
import { type Azurite, azuriteMissing, startAzurite } from '../servers/azurite.ts';
import { type RadosGateway, radosGatewayMissing, startRadosGateway } from '../servers/radosgw.ts';
import { ids } from '../both-formats.ts';

/**
 * A cloud warehouse for the tests of one file: a real server (RADOS Gateway for S3, Azurite for
 * Azure Blob) started once, a fresh bucket or container per warehouse, and a SQLite catalog in a
 * temporary folder (a cloud warehouse needs a catalog of its own).
 */
export interface CloudServer {
  kind: 's3' | 'azure';
  /** Why the server cannot run here, or undefined. */
  missing: string | undefined;
  /** Set by beforeAll. */
  storage: StorageOptions;
  /** A new, empty warehouse URI (`s3://bucket/wh`, `az://container/wh`). */
  newWarehouse(): Promise<string>;
}

export function cloudServer(kind: 's3' | 'azure', file: string): CloudServer & { skip: boolean } {
  const missing = kind === 's3' ? radosGatewayMissing() : azuriteMissing();
  // Without the server the tests skip, except in CI, where a missing server is a failure.
  const skip = missing !== undefined && !process.env.CI;
  if (skip) console.warn(`${file}: ${kind} warehouse tests skipped: ${missing}`);
  let rgw: RadosGateway | undefined;
  let azurite: Azurite | undefined;
  let admin: S3Client | undefined;
  let service: BlobServiceClient | undefined;
  let n = 0;
  const server = {
    kind,
    missing,
    skip,
    storage: {} as StorageOptions,
    async newWarehouse(): Promise<string> {
      const name = `w-${process.pid}-${n++}`;
      if (kind === 's3') {
        await admin!.send(new CreateBucketCommand({ Bucket: name }));
        return `s3://${name}/wh`;
      }
      await service!.getContainerClient(name).create();
      return `az://${name}/wh`;
    },
  };
  if (skip) return server;
  beforeAll(async () => {
    if (missing) throw new Error(`CI is set, so the ${kind} warehouse tests must run, but ${missing}`);
    if (kind === 's3') {
      rgw = await startRadosGateway();
      const s3 = { region: 'us-east-1', endpoint: rgw.endpoint, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } };
      server.storage = { s3 };
      admin = new S3Client({ ...s3, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
    } else {
      azurite = await startAzurite();
      server.storage = { azure: { account: azurite.account, endpoint: azurite.endpoint, accountKey: azurite.accountKey } };
      service = BlobServiceClient.fromConnectionString(azurite.connectionString);
    }
  }, 120_000);
  afterAll(async () => {
    admin?.destroy();
    await rgw?.stop();
    await azurite?.stop();
  });
  return server;
}

/** A catalog for a cloud warehouse: a SQLite file on local disk, metadata files in the warehouse. */
export function cloudCatalog(warehouse: string, storage: StorageOptions, dbPath: string): SqlCatalog {
  return new SqlCatalog({ name: 'twinlake', dbPath, warehouse: { store: storeForLocation(warehouse, storage).store, rootUri: warehouse } });
}

/** Opens a lakehouse on a fresh cloud warehouse with its own catalog; `close` also removes the catalog folder. */
export async function openCloudLake(server: CloudServer, opts: Partial<LakehouseOptions> = {}): Promise<{ lake: Lakehouse; warehouse: string; dbPath: string; close(): Promise<void> }> {
  const warehouse = await server.newWarehouse();
  const tmp = tempDir('twinlake-cloud-');
  const dbPath = join(tmp.path, 'catalog.db');
  const catalog = cloudCatalog(warehouse, server.storage, dbPath);
  const lake = await Lakehouse.open({ warehouse, storage: server.storage, catalog, engine: { threads: 1, memoryLimit: '512MB' }, ...opts });
  return {
    lake,
    warehouse,
    dbPath,
    async close() {
      await lake.close();
      catalog.close();
      tmp.cleanup();
    },
  };
}

/** Every object below a location, as keys relative to it. */
export async function objectsUnder(io: FileIO, uri: string): Promise<string[]> {
  const out: string[] = [];
  const prefix = uri.replace(/\/+$/, '') + '/';
  for await (const m of io.list(prefix)) out.push(m.uri.slice(prefix.length));
  return out.sort();
}

/** Downloads every object below `location` into `dir`, mirroring the keys; returns the local path of each URI. */
export async function mirror(io: FileIO, location: string, dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const prefix = location.replace(/\/+$/, '') + '/';
  for await (const m of io.list(prefix)) {
    const local = join(dir, m.uri.slice(prefix.length));
    await mkdir(dirname(local), { recursive: true });
    await writeFile(local, await io.read(m.uri));
    out.set(m.uri, local);
  }
  return out;
}

/** The ids DuckDB reads from local copies of exactly the listed live files (no row deletes). */
export async function duckdbIdsOf(localFiles: string[]): Promise<number[]> {
  if (localFiles.length === 0) return [];
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    const list = localFiles.map((f) => `'${f}'`).join(', ');
    const reader = await conn.runAndReadAll(`SELECT id FROM read_parquet([${list}]) ORDER BY id`);
    return reader.getRowObjects().map((r) => Number(r.id));
  } finally {
    conn.closeSync();
  }
}

/**
 * Both formats of a cloud table expose the same rows and the same live files, and DuckDB reads
 * those rows from copies of the live files (tables without row deletes).
 */
export async function expectCloudBothEqual(t: Table, io: FileIO, expected: number[], scratch: string): Promise<void> {
  expect(ids(await t.read())).toEqual(expected);
  expect(ids(await t.read({ format: 'delta' }))).toEqual(expected);
  const iceberg: LiveFiles = await t.files();
  const delta: LiveFiles = await t.files({ format: 'delta' });
  expect(delta.files.map((f) => f.path).sort()).toEqual(iceberg.files.map((f) => f.path).sort());
  const hasDeletes = iceberg.files.some((f) => f.deletes.length > 0);
  if (hasDeletes) return;
  const local = await Promise.all(
    iceberg.files.map(async (f, i) => {
      const p = join(scratch, `${i}-${f.path.split('/').pop()}`);
      await writeFile(p, await io.read(f.path));
      return p;
    }),
  );
  expect(await duckdbIdsOf(local)).toEqual(expected);
}
