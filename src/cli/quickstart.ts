import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { parseTableIdentifier } from '../catalog/catalog.ts';
import { invalidInput } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import { trackStaging } from '../table/write/interrupt.ts';
import type { Lakehouse } from '../table/lakehouse.ts';

const REGIONS = ['us-east', 'us-west', 'eu-central', 'eu-west', 'ap-south', 'ap-northeast', 'sa-east'];
const DEVICES = ['ios', 'android', 'web', 'desktop'];
const EVENTS = ['view', 'click', 'add_to_cart', 'purchase', 'signup'];

/** A deterministic pseudo-random sequence, so every quickstart writes the same sample. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `--rows`: a whole number of events, at least one. */
export function parseRowCount(raw: string): number {
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw invalidInput(`quickstart: --rows expects a whole number of at least 1, found ${JSON.stringify(raw)}`);
  return n;
}

/**
 * Writes the sample into analytics.events. A second run appends the same sample again (and says
 * so, with the table's new row count) unless `replace` asks to overwrite it.
 */
export async function runQuickstart(lake: Lakehouse, rows: number, out: (line: string) => void, opts: { replace?: boolean } = {}): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'twinlake-quickstart-'));
  const untrack = trackStaging(dir);
  try {
    const path = join(dir, 'events.ndjson');
    const file = createWriteStream(path);
    const rand = rng(42);
    const start = Date.UTC(2026, 0, 1);
    let buf = '';
    for (let i = 1; i <= rows; i++) {
      const ts = new Date(start + Math.floor(rand() * 30 * 86400_000) * 1 + (i % 1000) / 1000).toISOString();
      const event = {
        id: i,
        ts,
        user: `user_${Math.floor(rand() * 5000)}`,
        region: REGIONS[Math.floor(rand() * REGIONS.length)],
        event: EVENTS[Math.floor(rand() * EVENTS.length)],
        amount: Math.round(rand() * 50000) / 100,
        attributes: {
          device: DEVICES[Math.floor(rand() * DEVICES.length)],
          session: Math.floor(rand() * 1e9),
          tags: rand() < 0.3 ? ['promo', 'returning'] : ['organic'],
        },
      };
      buf += JSON.stringify(event) + '\n';
      if (buf.length > 1 << 20) {
        if (!file.write(buf)) await new Promise<void>((r) => file.once('drain', () => r()));
        buf = '';
      }
    }
    file.end(buf);
    await finished(file);

    const table = lake.table('analytics.events');
    const existed = await table.exists();
    const result = opts.replace ? await table.overwrite({ path, format: 'ndjson' }) : await table.append({ path, format: 'ndjson' });
    const desc = await table.describe();
    const viaIceberg = await table.count({ format: 'iceberg' });
    const viaDelta = await table.count({ format: 'delta' });
    const tableDir = localPath(desc.location);
    const { metadataLocation } = await lake.catalog.loadTable(parseTableIdentifier('analytics.events'));
    const commit = `snapshot ${result.snapshotId}, delta version ${result.deltaVersion}`;
    if (!existed) out(`created analytics.events with ${result.rows} events (${commit})`);
    else if (opts.replace) out(`replaced the rows of analytics.events with ${result.rows} events (${commit}); older snapshots stay readable`);
    else {
      out(`appended ${result.rows} more events to analytics.events, which already existed: it now holds ${viaIceberg} rows (${commit})`);
      out('  (the same sample again, ids included; run with --replace to start the table over)');
    }
    out(`  location        ${desc.location}`);
    out(`  table rows      ${desc.records} (${desc.files} data files, ${desc.bytes} bytes)`);
    out(`  read (iceberg)  ${viaIceberg} rows`);
    out(`  read (delta)    ${viaDelta} rows`);
    out('');
    out('query it:');
    out(`  twinlake read analytics.events --limit 5 --format delta`);
    // Exactly the live files: a data/*.parquet glob also counts files an overwrite, merge or delete replaced.
    const live = await table.files();
    const paths = live.files.map((f) => `'${localPath(f.path)}'`).join(', ');
    const withDeletes = live.files.filter((f) => f.deletes.length > 0).length;
    out(`  twinlake files analytics.events   # the live data files and their delete files, for any engine`);
    out(`  duckdb -c "SELECT region, count(*) FROM read_parquet([${paths}]) GROUP BY 1"${withDeletes ? `   # ${withDeletes} of these files have row-level deletes (see twinlake files)` : ''}`);
    out(`  spark.read.format("delta").load("${tableDir}").groupBy("region").count().show()`);
    out(`  StaticTable.from_metadata("${metadataLocation}").scan().to_arrow()   # pyiceberg`);
  } finally {
    await rm(dir, { recursive: true, force: true });
    untrack();
  }
}
