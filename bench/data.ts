import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { finished } from 'node:stream/promises';

/**
 * A deterministic NDJSON file of `rows` events, written once and reused by later runs: what an
 * event feed holds: a zoned timestamp with microseconds, a date, integers and fractions, text with
 * unicode, a nested struct holding a list and a struct, a list of text, and nulls (a tenth of the
 * notes, some devices, whole `geo` structs, empty lists).
 */
export async function eventsFile(path: string, rows: number): Promise<string> {
  return ndjsonFile(path, rows, eventRows());
}

/** The same events as a CSV file with a header (the flat columns; nested ones have no CSV form). */
export async function eventsCsvFile(path: string, rows: number): Promise<string> {
  const columns = ['id', 'ts', 'day', 'user_id', 'region', 'amount', 'device', 'score', 'note'] as const;
  const cell = (v: unknown) => {
    if (v === null || v === undefined) return '';
    const s = String(v);
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const event = eventRows();
  return textFile(path, rows, columns.join(','), (i) => {
    const e = event(i);
    const flat: Record<string, unknown> = { ...e, device: e.attributes.device, score: e.attributes.score };
    return columns.map((c) => cell(flat[c])).join(',');
  });
}

/** Event `i` of the deterministic feed the event files hold; bench/scale.ts streams the same events. */
export function eventRows() {
  const regions = ['us-east', 'us-west', 'eu-zürich', 'eu-west', 'ap-東京'];
  const notes = ['ok', 'retry, then ok', 'said "hi"', 'naïve café', 'emoji 🚀 launch'];
  let seed = 7;
  const rand = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 4294967296;
  };
  const start = Date.UTC(2025, 0, 1);
  return (i: number) => {
    const ms = start + Math.floor(rand() * 90 * 86400_000);
    const iso = new Date(ms).toISOString();
    const micros = String(Math.floor(rand() * 1000)).padStart(3, '0');
    return {
      id: i,
      ts: `${iso.slice(0, -1)}${micros}Z`,
      day: iso.slice(0, 10),
      user_id: Math.floor(rand() * 100000),
      region: regions[i % regions.length],
      amount: Math.round(rand() * 1e6) / 100,
      attributes: {
        device: i % 13 === 0 ? null : rand() < 0.5 ? 'ios' : 'web',
        score: Math.floor(rand() * 100),
        labels: Array.from({ length: i % 3 }, (_, j) => `l${(i + j) % 7}`),
        geo: i % 4 === 0 ? null : { lat: Math.round(rand() * 18000 - 9000) / 100, lon: Math.round(rand() * 36000 - 18000) / 100 },
      },
      tags: Array.from({ length: i % 4 }, (_, j) => `t${(i * 3 + j) % 11}`),
      note: i % 10 === 0 ? null : `${notes[i % notes.length]} #${i % 1000}`,
    };
  };
}

/**
 * A deterministic NDJSON file of `rows` orders with 12 columns, nested ones among them (a
 * customer with an address, a list of item structs, a struct of tags), whose `order_ts` falls into
 * `hours` distinct hours. Consecutive rows land in far-apart hours, as an unsorted feed does.
 */
export async function ordersFile(path: string, rows: number, hours: number): Promise<string> {
  const start = Date.UTC(2024, 0, 1);
  // A step coprime to `hours` visits every hour before repeating one.
  let step = 7919;
  while (gcd(step, hours) !== 1) step += 2;
  return ndjsonFile(path, rows, (i) => {
    const hour = (i * step) % hours;
    return {
      order_id: i,
      order_ts: new Date(start + hour * 3_600_000 + (i % 3600) * 1000).toISOString(),
      customer_id: `cust-${i % 5000}`,
      customer: { name: `Name ${i % 1000}`, email: `u${i}@example.com`, address: { street: `${i % 999} Main St`, city: `City ${i % 50}`, zip: String(i % 99999).padStart(5, '0'), country: i % 3 ? 'DE' : 'Ü' } },
      items: Array.from({ length: 1 + (i % 3) }, (_, j) => ({ sku: `SKU-${(i + j) % 300}`, qty: 1 + ((i + j) % 5), price: ((i + j) % 1000) / 10 + 0.5 })),
      tags: { channel: i % 2 ? 'web' : 'app', campaign: `c${i % 20}` },
      total: (i % 100_000) / 100 + 0.25,
      note: i % 7 === 0 ? null : `note ${i.toString(36)}`,
      paid: i % 2 === 0,
      status: ['new', 'paid', 'shipped'][i % 3],
      discount: i % 11,
      payload: `${i.toString(16).padStart(8, '0')}`.repeat(8),
    };
  });
}

/** Writes `rows` records, `row(i)` each, one JSON line apiece; a file already written is reused. */
function ndjsonFile(path: string, rows: number, row: (i: number) => unknown): Promise<string> {
  return textFile(path, rows, undefined, (i) => JSON.stringify(row(i)));
}

/** Writes a header line (if any) and `rows` lines, `line(i)` each; a file already written is reused. */
async function textFile(path: string, rows: number, header: string | undefined, line: (i: number) => string): Promise<string> {
  if ((await stat(path).catch(() => undefined))?.size) return path;
  const out = createWriteStream(path);
  let buf = header === undefined ? '' : `${header}\n`;
  for (let i = 0; i < rows; i++) {
    buf += line(i) + '\n';
    if (buf.length > 1 << 20) {
      if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
      buf = '';
    }
  }
  out.end(buf);
  await finished(out);
  return path;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}
