import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { SqlCatalog } from '../src/catalog/sql-catalog.ts';
import { storeForLocation, type StorageOptions } from '../src/io/store-for-uri.ts';
import { Lakehouse } from '../src/index.ts';
import { radosGatewayMissing, startRadosGateway } from '../test/servers/radosgw.ts';

export interface CloudWriteResult {
  bytes: number;
  rows: number;
  files: number;
  ms: number;
  /** This process's peak resident memory (the engine, the uploads and the commit). */
  peakRssMb: number;
  counts: { iceberg: number; delta: number };
  /** Data objects above the multipart threshold (16 MiB), i.e. sent in parts. */
  multipartFiles: number;
}

/**
 * `bytes` of NDJSON events, generated as they are read (bench/scale-gen.ts), appended to a table
 * of an s3:// warehouse on a RADOS Gateway started for the run: encoded by the engine under a
 * 512 MB memory limit into local staging and uploaded (multipart, several files at once). Then
 * both formats count the rows back through the read cache.
 */
export async function cloudWriteBench(dir: string, bytes: number): Promise<CloudWriteResult> {
  const missing = radosGatewayMissing();
  if (missing) throw new Error(`cloud bench: ${missing}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  // The gateway keeps objects in RAM (1 GiB, test/servers/radosgw.ts): 1 GB of NDJSON is a few hundred MB of Parquet.
  const rgw = await startRadosGateway();
  const s3 = { region: 'us-east-1', endpoint: rgw.endpoint, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } };
  const admin = new S3Client({ ...s3, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
  const storage: StorageOptions = { s3 };
  const warehouse = 's3://bench/wh';
  try {
    await admin.send(new CreateBucketCommand({ Bucket: 'bench' }));
    const catalog = new SqlCatalog({ name: 'twinlake', dbPath: join(dir, 'catalog.db'), warehouse: { store: storeForLocation(warehouse, storage).store, rootUri: warehouse } });
    const lake = await Lakehouse.open({ warehouse, storage, catalog, engine: { memoryLimit: '512MB', tempDir: join(dir, 'tmp') } });
    try {
      const gen = spawn(process.execPath, ['--import', 'tsx', 'bench/scale-gen.ts', String(bytes)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let genErr = '';
      gen.stderr.on('data', (d) => (genErr += d));
      const t = lake.table('bench.cloud');
      const t0 = performance.now();
      const r = await t.append({ stream: gen.stdout, format: 'ndjson' });
      const ms = performance.now() - t0;
      const peakRssMb = Math.round(process.resourceUsage().maxRSS / 1024);
      const generated = JSON.parse(genErr.trim().split('\n').at(-1)!) as { rows: number; bytes: number };
      const live = await t.files();
      const multipartFiles = live.files.filter((f) => f.bytes >= 16 * 1024 * 1024).length;
      const counts = { iceberg: await t.count(), delta: await t.count({ format: 'delta' }) };
      if (r.rows !== generated.rows) throw new Error(`cloud bench: generated ${generated.rows} rows, wrote ${r.rows}`);
      return { bytes: generated.bytes, rows: r.rows, files: r.files, ms, peakRssMb, counts, multipartFiles };
    } finally {
      await lake.close();
      catalog.close();
    }
  } finally {
    admin.destroy();
    await rgw.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
