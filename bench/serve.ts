import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { buildServer } from '../src/server/app.ts';
import { TokenAuth, TokenStore } from '../src/server/auth.ts';

/**
 * `npm run bench serve`: a bounded load test of `twinlake serve` on loopback. Concurrent record
 * posts (BENCH_SERVE_POSTS batches of BENCH_SERVE_BATCH rows over BENCH_SERVE_CONNECTIONS
 * connections) to one table while readers page its commits and read rows. Then: no request
 * failed, and every posted row is in the table exactly once through Iceberg, through Delta, and
 * for DuckDB over each format's live files. Prints p50/p99 latency of posts and reads.
 */
export async function serveBench(root: string): Promise<void> {
  const posts = Number(process.env.BENCH_SERVE_POSTS ?? 120);
  const batch = Number(process.env.BENCH_SERVE_BATCH ?? 100);
  const connections = Number(process.env.BENCH_SERVE_CONNECTIONS ?? 4);
  const dir = join(root, 'serve');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const lake = await Lakehouse.open({ warehouse: join(dir, 'wh'), onWarning: (m) => console.log(`  warning: ${m}`) });
  const store = new TokenStore(join(dir, 'tokens.json'));
  const { token } = await store.create('bench', 'admin');
  const app = await buildServer({ lake, tokens: new TokenAuth(store), tempDir: dir });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  const headers = { authorization: `Bearer ${token}` };
  try {
    const created = await fetch(`${url}/api/managed-lakehouse/tables`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ connectionId: 'bench', tableName: 'events', storageProvider: 'local', icebergEnabled: true, deltaEnabled: true, icebergCatalogType: 'sql', icebergNamespace: 'bench' }),
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`);
    const { tableId } = (await created.json()) as { tableId: string };
    const base = `${url}/api/managed-lakehouse/tables/${tableId}`;

    let next = 0;
    let postedRows = 0;
    const failures: string[] = [];
    const readResponse = (what: string) => (status: number, body: string) => {
      if (status !== 200) failures.push(`${what}: ${status} ${body.slice(0, 300)}`);
    };
    const t0 = performance.now();
    const writers = autocannon({
      url: `${base}/records`,
      connections,
      amount: posts,
      timeout: 60,
      requests: [
        {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/x-ndjson' },
          setupRequest: (req: Record<string, unknown>) => {
            const b = next++;
            let body = '';
            for (let i = 0; i < batch; i++) body += `{"id":${b * batch + i},"batch":${b},"name":"row ${i}"}\n`;
            return { ...req, body };
          },
          onResponse: (status: number, body: string) => {
            if (status === 200) postedRows += (JSON.parse(body) as { rows: number }).rows;
            else failures.push(`${status} ${body.slice(0, 200)}`);
          },
        },
      ],
    });
    const readers = autocannon({
      url: base,
      connections: 2,
      amount: posts * 2,
      timeout: 60,
      requests: [
        { method: 'GET', path: `/api/managed-lakehouse/tables/${tableId}/commits?limit=20`, headers, onResponse: readResponse('commits') },
        { method: 'GET', path: `/api/managed-lakehouse/tables/${tableId}/rows?limit=100`, headers, onResponse: readResponse('rows') },
      ],
    });
    const [w, r] = await Promise.all([writers, readers]);
    const seconds = (performance.now() - t0) / 1000;

    const table = lake.table('bench.events');
    const expected = posts * batch;
    const icebergRows = await table.count();
    const deltaRows = await table.count({ format: 'delta' });
    const duck = async (format: 'iceberg' | 'delta') => {
      const files = (await table.files({ format })).files.map((f) => `'${f.path.replace(/^file:\/\//, '')}'`);
      const db = await DuckDBInstance.create(':memory:');
      const c = await db.connect();
      const row = (await c.runAndReadAll(`SELECT count(*)::BIGINT AS n, count(DISTINCT id)::BIGINT AS d, min(id)::BIGINT AS lo, max(id)::BIGINT AS hi FROM read_parquet([${files.join(', ')}])`)).getRowObjectsJson()[0]!;
      c.closeSync();
      db.closeSync();
      return row as { n: string; d: string; lo: string; hi: string };
    };
    const di = await duck('iceberg');
    const dd = await duck('delta');
    const history = await table.history();
    const commits = history.filter((h) => h.addedRecords > 0).length;
    const deltaGapFree = history.every((h, i) => h.deltaVersion === history.length - i);

    console.log(`serve: ${posts} posts × ${batch} rows over ${connections} connections, with ${posts * 2} reads over 2 connections, ${seconds.toFixed(1)} s`);
    console.log(`  posts   p50 ${w.latency.p50} ms   p99 ${w.latency.p99} ms   ${(posts / seconds).toFixed(1)} commits/s   errors ${w.errors}   non-2xx ${w.non2xx}`);
    console.log(`  reads   p50 ${r.latency.p50} ms   p99 ${r.latency.p99} ms   errors ${r.errors}   non-2xx ${r.non2xx}`);
    console.log(`  rows    posted ${postedRows}/${expected}   iceberg ${icebergRows}   delta ${deltaRows}   duckdb over iceberg files ${di.n} (${di.d} distinct, ${di.lo}..${di.hi})   over delta files ${dd.n} (${dd.d} distinct)`);
    console.log(`  commits ${commits} snapshots with rows, Delta versions gap-free: ${deltaGapFree}`);
    const ok =
      failures.length === 0 && w.errors === 0 && w.non2xx === 0 && r.errors === 0 && r.non2xx === 0 && postedRows === expected &&
      icebergRows === expected && deltaRows === expected && Number(di.n) === expected && Number(di.d) === expected && Number(dd.n) === expected && Number(dd.d) === expected &&
      Number(di.lo) === 0 && Number(di.hi) === expected - 1 && commits === posts && deltaGapFree;
    for (const f of failures.slice(0, 5)) console.log(`  failed: ${f}`);
    console.log(`  ${ok ? 'OK: no errors, every row once in both formats' : 'FAILED'}`);
    if (!ok) process.exitCode = 1;
  } finally {
    await app.close();
    await lake.close();
  }
}
