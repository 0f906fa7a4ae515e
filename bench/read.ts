import { execFileSync, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { Lakehouse } from '../src/index.ts';
import { localPath } from '../src/core/uri.ts';
import { eventsFile } from './data.ts';

/**
 * Issue goal 5, reads of a 1M-row table (the events file: a nested struct, a timestamp, doubles),
 * each against DuckDB over the same live files in the same run, three runs each:
 * - `twinlake read --output ndjson` (and csv) into a pipe as a whole process, against a node
 *   process that runs DuckDB's own `COPY (SELECT * FROM read_parquet([...])) TO '/dev/stdout'`
 *   in that format (both pay process start). Goal ≤ 1.5x; peak RSS of each is reported.
 * - `Table.read()` into JS objects in process, against DuckDB's own `getRowObjects()` over the
 *   same files. Goal ≤ 2x.
 */
export async function readBench(root: string, rows: number): Promise<void> {
  const input = await eventsFile(join(root, `events-${rows}.ndjson`), rows);
  const warehouse = join(root, 'wh-read');
  rmSync(warehouse, { recursive: true, force: true });
  const lake = await Lakehouse.open({ warehouse });
  const table = lake.table('bench.events');
  await table.append({ path: input });
  const files = (await table.files()).files.map((f) => localPath(f.path));
  await lake.close();

  const duckScript = join(root, 'duckdb-export.mjs');
  writeFileSync(
    duckScript,
    `import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const format = process.argv[2] === 'csv' ? 'FORMAT csv, HEADER true' : 'FORMAT json';
await c.run(\`COPY (SELECT * FROM read_parquet(${JSON.stringify(files).replaceAll('"', "'")})) TO '/dev/stdout' (\${format})\`);
`,
  );
  // The script imports @duckdb/node-api as this project resolves it.
  const cwd = process.cwd();
  // Standard output is a pipe into `wc -c`, for both processes: DuckDB's COPY cannot
  // open /dev/stdout when it is a socket (node's own child pipes) or /dev/null while another
  // process holds its lock.
  const processRun = (args: string[]) =>
    new Promise<{ ms: number; rssMb: number; bytes: number }>((resolve, reject) => {
      const t0 = performance.now();
      const script = '/usr/bin/time -f rss=%M "$@" | wc -c >&2';
      const child = spawn('sh', ['-c', script, 'sh', process.execPath, ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => {
        // time's line (peak RSS in KB) and wc's byte count, in either order.
        const rss = /^rss=(\d+)$/m.exec(stderr);
        const bytes = /^\s*(\d+)\s*$/m.exec(stderr);
        if (code !== 0 || !rss || !bytes || /exited with non-zero status/.test(stderr)) return reject(new Error(`read bench: ${args.join(' ')} failed: ${stderr}`));
        resolve({ ms: performance.now() - t0, rssMb: Number(rss[1]) / 1024, bytes: Number(bytes[1]) });
      });
    });
  // /usr/bin/time must exist for the memory figures; without it the bench says so and stops.
  try {
    execFileSync('/usr/bin/time', ['-f', '%M', 'true'], { stdio: 'ignore' });
  } catch {
    console.log('read bench: /usr/bin/time is missing (it measures peak RSS); skipped');
    return;
  }

  for (const output of ['ndjson', 'csv'] as const) {
    const duck: { ms: number; rssMb: number }[] = [];
    const ours: { ms: number; rssMb: number }[] = [];
    for (let i = 0; i < 3; i++) {
      duck.push(await processRun([duckScript, output]));
      ours.push(await processRun(['bin/twinlake.mjs', '--warehouse', warehouse, 'read', 'bench.events', '--output', output]));
    }
    report(`twinlake read --output ${output} (CLI process, into a pipe)`, `duckdb COPY … TO '/dev/stdout' (FORMAT ${output === 'csv' ? 'csv' : 'json'}) (node process)`, duck, ours, 1.5);
  }

  const duck: { ms: number }[] = [];
  const ours: { ms: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    const t0 = performance.now();
    const got = (await c.runAndReadAll(`SELECT * FROM read_parquet(${JSON.stringify(files).replaceAll('"', "'")})`)).getRowObjects();
    duck.push({ ms: performance.now() - t0 });
    if (got.length !== rows) throw new Error(`read bench: DuckDB read ${got.length} rows, expected ${rows}`);
    c.closeSync();
    db.closeSync();
    const l = await Lakehouse.open({ warehouse, readOnly: true });
    await l.session();
    const t1 = performance.now();
    const read = await l.table('bench.events').read();
    ours.push({ ms: performance.now() - t1 });
    if (read.length !== rows) throw new Error(`read bench: Table.read returned ${read.length} rows, expected ${rows}`);
    await l.close();
  }
  report('Table.read() into JS objects (library)', 'duckdb getRowObjects() over the live files', duck, ours, 2);
  rmSync(warehouse, { recursive: true, force: true });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function report(label: string, baseline: string, duck: { ms: number; rssMb?: number }[], ours: { ms: number; rssMb?: number }[], goal: number): void {
  const base = median(duck.map((r) => r.ms));
  const mine = median(ours.map((r) => r.ms));
  const ratios = ours.map((r, i) => r.ms / duck[i]!.ms);
  const ratio = mine / base;
  const rss = (rs: { rssMb?: number }[]) => (rs[0]?.rssMb === undefined ? '' : `, peak RSS ${Math.max(...rs.map((r) => r.rssMb!)).toFixed(0)} MB`);
  console.log(`  ${baseline.padEnd(62)} ${base.toFixed(0).padStart(6)} ms${rss(duck)}`);
  console.log(
    `  ${label.padEnd(62)} ${mine.toFixed(0).padStart(6)} ms   ${ratio.toFixed(2)}x (runs ${ratios.map((r) => r.toFixed(2)).join(', ')})   goal ≤ ${goal}x ${ratio <= goal ? 'MET' : 'NOT MET'}${rss(ours)}`,
  );
}
