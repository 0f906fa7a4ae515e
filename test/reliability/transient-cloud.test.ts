import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient } from '@azure/storage-blob';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StorageOptions } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/index.ts';
import { cloudCatalog, objectsUnder } from '../cloud/cloud-fixture.ts';
import { errorOf, tempDir } from '../helpers.ts';
import { type Azurite, azuriteMissing, startAzurite } from '../servers/azurite.ts';
import { FAULTS, type LossyProxy, startLossyProxy } from '../servers/lossy-proxy.ts';
import { type RadosGateway, radosGatewayMissing, startRadosGateway } from '../servers/radosgw.ts';

/**
 * Transient faults against real servers (RADOS Gateway for S3, Azurite for Azure Blob), through a
 * loopback proxy that fails one chosen request — a reset connection, no answer (a timeout), a 500,
 * a 503 SlowDown / ServerBusy — for a table's creation, an append and a read. The SDKs' retries,
 * configured in the stores (4 attempts, exponential backoff), repeat it and the operation
 * succeeds; a fault that persists fails the write with the service's error named, and the table is
 * left as it was.
 */

const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

for (const kind of ['s3', 'azure'] as const) {
  const missing = kind === 's3' ? radosGatewayMissing() : azuriteMissing();
  const skip = missing !== undefined && !process.env.CI;
  if (skip) console.warn(`transient-cloud: ${kind} tests skipped: ${missing}`);

  describe.skipIf(skip)(`transient faults on ${kind === 's3' ? 'S3 (RADOS Gateway)' : 'Azure Blob (Azurite)'}`, () => {
    let rgw: RadosGateway | undefined;
    let azurite: Azurite | undefined;
    let proxy: LossyProxy;
    let storage: StorageOptions;
    let newWarehouse: () => Promise<string>;
    const tmp = tempDir('twinlake-transient-');
    let n = 0;

    beforeAll(async () => {
      if (missing) throw new Error(`CI is set, so the ${kind} tests must run, but ${missing}`);
      if (kind === 's3') {
        rgw = await startRadosGateway();
        proxy = await startLossyProxy(rgw.endpoint, { flavor: 's3' });
        const credentials = { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey };
        // A short socket timeout, so a request left unanswered is retried within the test's time.
        storage = { s3: { region: 'us-east-1', endpoint: proxy.endpoint, forcePathStyle: true, credentials, socketTimeout: 1500 } };
        const admin = new S3Client({ region: 'us-east-1', endpoint: rgw.endpoint, forcePathStyle: true, credentials });
        newWarehouse = async () => {
          const bucket = `t-${process.pid}-${n++}`;
          await admin.send(new CreateBucketCommand({ Bucket: bucket }));
          return `s3://${bucket}/wh`;
        };
      } else {
        azurite = await startAzurite();
        proxy = await startLossyProxy(azurite.endpoint, { flavor: 'azure' });
        storage = { azure: { account: azurite.account, endpoint: `${proxy.endpoint}/${azurite.account}`, accountKey: azurite.accountKey } };
        const service = BlobServiceClient.fromConnectionString(azurite.connectionString);
        newWarehouse = async () => {
          const container = `t-${process.pid}-${n++}`;
          await service.getContainerClient(container).create();
          return `az://${container}/wh`;
        };
      }
    }, 120_000);
    afterAll(async () => {
      await proxy?.stop();
      await rgw?.stop();
      await azurite?.stop();
      tmp.cleanup();
    });

    /** A lakehouse on a fresh warehouse behind the proxy, with its own catalog. */
    async function open() {
      const warehouse = await newWarehouse();
      const catalog = cloudCatalog(warehouse, storage, join(tmp.path, `catalog-${n}.db`));
      const lake = await Lakehouse.open({ warehouse, storage, catalog, engine: { threads: 1, memoryLimit: '512MB' }, onWarning: () => undefined });
      return { lake, warehouse, close: async () => (await lake.close(), catalog.close()) };
    }

    /** The operation under test: create a table with an append, append again, read both formats. */
    async function writeCommitRead(lake: Lakehouse): Promise<{ iceberg: number[]; delta: number[] }> {
      const t = lake.table('ns.t');
      await t.append([{ id: 1 }, { id: 2 }]);
      await t.append([{ id: 3 }]);
      return { iceberg: ids(await t.read()), delta: ids(await t.read({ format: 'delta' })) };
    }

    it('every kind of fault on requests throughout a create, append and read: retried, and it succeeds', async () => {
      // How many requests the operation makes, without faults.
      const clean = await open();
      const start = proxy.requests;
      expect(await writeCommitRead(clean.lake)).toEqual({ iceberg: [1, 2, 3], delta: [1, 2, 3] });
      const total = proxy.requests - start;
      await clean.close();
      expect(total).toBeGreaterThan(10);

      // Request k of the operation fails once, the kind turning with k; every third request is
      // enough to meet each step (creates, puts, gets, lists) with each kind. Azure: no timeout
      // kind, as the SDK's per-try timeout does not end a request the server never answers.
      const faults = kind === 's3' ? FAULTS : FAULTS.filter((f) => f !== 'timeout');
      for (let k = 1; k <= total; k += 3) {
        const fault = faults[((k - 1) / 3) % faults.length]!;
        const { lake, close } = await open();
        try {
          const log = proxy.log.length;
          proxy.failRequest(proxy.requests + k, fault);
          expect(await writeCommitRead(lake), `request ${k} failing with ${fault}`).toEqual({ iceberg: [1, 2, 3], delta: [1, 2, 3] });
          expect(proxy.log.slice(log).some((l) => l.endsWith(` ${fault}`)), `request ${k} met ${fault}`).toBe(true);
        } finally {
          await close();
        }
      }
    }, 300_000);

    it('a fault that persists fails the write naming the service error, and leaves the table as it was', async () => {
      const { lake, warehouse, close } = await open();
      try {
        const t = lake.table('ns.t');
        await t.append([{ id: 1 }]);
        const before = await objectsUnder(lake.io, `${warehouse}/ns/t`);
        // Every upload of a metadata file answered 503: the commit cannot happen.
        proxy.failAll((req) => req.method === 'PUT' && /\.metadata\.json/.test(req.url ?? ''), '503');
        try {
          const e = await errorOf(t.append([{ id: 2 }]));
          expect(e.kind).toBe('io');
          expect(e.message).toMatch(kind === 's3' ? /s3 store: PutObject s3:\/\/\S+\.metadata\.json failed \(SlowDown, HTTP 503/ : /azure store: cannot write blob "\S+\.metadata\.json" .*\(ServerBusy, HTTP 503/);
        } finally {
          proxy.failAll(undefined);
        }
        // Only files nothing references may be left (the data file and manifests of the failed
        // write, for orphan cleanup); the table reads as before in both formats.
        const after = await objectsUnder(lake.io, `${warehouse}/ns/t`);
        expect(after.filter((f) => /metadata\/v\d+\.metadata\.json|_delta_log|version-hint/.test(f))).toEqual(before.filter((f) => /metadata\/v\d+\.metadata\.json|_delta_log|version-hint/.test(f)));
        expect(ids(await t.read())).toEqual([1]);
        expect(ids(await t.read({ format: 'delta' }))).toEqual([1]);
        await t.append([{ id: 2 }]);
        expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);
      } finally {
        await close();
      }
    }, 120_000);
  });
}
