import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { finished } from 'node:stream/promises';

/**
 * A deterministic NDJSON file of `rows` events (id, ts, user, region, amount, nested attributes),
 * written once and reused by later runs.
 */
export async function eventsFile(path: string, rows: number): Promise<string> {
  if ((await stat(path).catch(() => undefined))?.size) return path;
  const out = createWriteStream(path);
  const regions = ['us-east', 'us-west', 'eu-central', 'eu-west', 'ap-south'];
  let seed = 7;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const start = Date.UTC(2025, 0, 1);
  let buf = '';
  for (let i = 0; i < rows; i++) {
    const row = {
      id: i,
      ts: new Date(start + Math.floor(rand() * 90 * 86400_000)).toISOString(),
      user_id: Math.floor(rand() * 100000),
      region: regions[i % regions.length],
      amount: Math.round(rand() * 1e6) / 100,
      attributes: { device: rand() < 0.5 ? 'ios' : 'web', score: Math.floor(rand() * 100) },
    };
    buf += JSON.stringify(row) + '\n';
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
      buf = '';
    }
  }
  out.end(buf);
  await finished(out);
  return path;
}
