import { stringifyJson } from '../../src/core/json.ts';

/**
 * 100k deterministic rows covering every type Twinlake writes in dual-format tables, with nulls,
 * unicode, negative numbers, nested structs and lists, maps, timestamps with microseconds (also
 * before 1970) and leap days — and, for each row, the canonical form every reader must return.
 *
 * The types come from inference: the table is created with only the columns whose type JSON
 * cannot say (int, float, decimal, binary), and every other column is inferred from the NDJSON of
 * the first batch (`INFERRED_TYPES`). The maps are inferred too: their objects' keys vary from
 * record to record, more of them than DuckDB's `map_inference_threshold` (200) in the sample, and
 * most in under a tenth of the objects (its `field_appearance_threshold`). Rows of the
 * second batch up to `QUIET_UNTIL` hold only nulls, empty lists and empty objects in many columns,
 * more rows than inference samples, so that batch is read against the table's types.
 */
export const DECLARED_SCHEMA = {
  type: 'struct',
  fields: [
    { id: 0, name: 'i', required: false, type: 'int' },
    { id: 0, name: 'f', required: false, type: 'float' },
    { id: 0, name: 'dec', required: false, type: 'decimal(12, 2)' },
    { id: 0, name: 'bin', required: false, type: 'binary' },
  ],
};

/** The table's schema after both batches, as `typeToString` prints it. */
export const INFERRED_TYPES =
  'struct<i: int, f: float, dec: decimal(12, 2), bin: binary, ' +
  'id: long, b: boolean, l: long, d: double, dt: date, ts: timestamptz, tsn: timestamp, s: string, ' +
  'st: struct<a: long, b: string>, lst: list<long>, m: map<string, long>, ls: list<struct<x: double, y: string>>, big: decimal(38, 0), attrs: map<string, string>>';

/** The first row of the second batch. */
export const SECOND_BATCH = 50_000;
/** Rows from SECOND_BATCH up to here are quiet: more than the 20,480 rows inference samples. */
export const QUIET_UNTIL = 75_000;

const COLORS = ['red', 'grün', '青', 'blue', 'black'];

const STRINGS = ['', 'plain ascii', 'ünïcödé', '日本語テキスト', '🙂 emoji 🎉', 'quote " and \\ backslash', 'line\nbreak\ttab', 'x'.repeat(300), 'ZZZ\u{10FFFF}'];

const pad = (n: number, w: number) => String(Math.abs(n)).padStart(w, '0');

function isoDate(epochDay: number): string {
  return new Date(epochDay * 86400_000).toISOString().slice(0, 10);
}

function isoMicros(micros: bigint, zone: boolean): string {
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  const frac = ((micros % 1_000_000n) + 1_000_000n) % 1_000_000n;
  const base = new Date(Number(ms)).toISOString().slice(0, 19);
  return `${base}.${pad(Number(frac), 6)}${zone ? 'Z' : ''}`;
}

export interface GeneratedRow {
  /** The record as written to NDJSON (bigint-safe). */
  input: Record<string, unknown>;
  /** The canonical form readers are compared on. */
  canonical: Record<string, unknown>;
}

export function generateRow(k: number): GeneratedRow {
  const n = (mod: number) => k % mod === 0;
  const quiet = k >= SECOND_BATCH && k < QUIET_UNTIL;
  const i = n(7) ? null : ((k * 7919) % 200001) - 100000;
  const l = n(11) ? null : BigInt(k) * 92233720368547n - 4_000_000_000_000_000_000n;
  const f = n(13) ? null : ((k % 2000) - 1000) / 8;
  const d = n(17) ? null : k * 1.000001 - 50000.5;
  const decCents = ((k * 37) % 100_000_000) - 50_000_000;
  const dec = n(19) ? null : `${decCents < 0 ? '-' : ''}${Math.floor(Math.abs(decCents) / 100)}.${pad(Math.abs(decCents) % 100, 2)}`;
  const day = (k % 40000) - 20000;
  const dt = quiet || n(23) ? null : isoDate(day === 0 ? 19782 : day); // 19782 = 2024-02-29, a leap day
  const micros = BigInt(k) * 1_234_567_891_234n - 50_000_000_000_000_000n;
  const ts = n(29) ? null : micros;
  const tsn = n(31) ? null : micros + 7n;
  const s = n(37) ? null : `${STRINGS[k % STRINGS.length]}#${k}`;
  const binBytes = n(41) ? null : Uint8Array.from([k & 0xff, (k >> 8) & 0xff, (k >> 16) & 0xff, 0, 255]);
  const st = quiet || n(43) ? null : { a: n(3) ? null : -k, b: n(5) ? null : `s${k}` };
  const lst = n(47) ? null : quiet || k % 4 === 0 ? [] : [BigInt(k), BigInt(-k), null];
  const m = n(53) ? null : quiet ? {} : { [`k${k}`]: BigInt(k), z: null };
  const ls = n(59) ? null : quiet ? [] : [{ x: k / 4, y: 'ä' + k }, null, { x: null, y: null }];
  // Integers just beyond 64 bits, of either sign: decimal(38, 0).
  const big = quiet || n(61) ? null : (k % 2 ? -1n : 1n) * (9_223_372_036_854_775_808n + BigInt(k) * 7n);
  // Attributes as pipelines send them: a few common keys and one of hundreds of rarer ones.
  const attrs = n(67) ? null : quiet ? {} : { color: COLORS[k % COLORS.length]!, ...(n(3) ? { size: k % 2 ? 'L' : 'M' } : {}), [`label_${k % 257}`]: `v${k}` };

  const input = {
    id: k,
    b: quiet || n(3) ? null : k % 2 === 0,
    i,
    l,
    f,
    d,
    dec,
    dt,
    ts: ts === null ? null : isoMicros(ts, true),
    tsn: tsn === null ? null : isoMicros(tsn, false),
    s,
    bin: binBytes === null ? null : Buffer.from(binBytes).toString('base64'),
    st,
    lst,
    m,
    ls,
    big,
    attrs,
  };
  const entries = (o: Record<string, unknown> | null) => (o === null ? null : Object.entries(o).map(([key, v]) => [key, v === null ? null : String(v)]).sort());
  const canonical = {
    id: String(k),
    b: input.b,
    i,
    l: l === null ? null : String(l),
    f,
    d,
    dec,
    dt,
    ts: ts === null ? null : String(ts),
    tsn: tsn === null ? null : String(tsn),
    s,
    bin: binBytes === null ? null : Buffer.from(binBytes).toString('hex'),
    st,
    lst: lst === null ? null : lst.map((x) => (x === null ? null : String(x))),
    m: entries(m),
    ls,
    big: big === null ? null : String(big),
    attrs: entries(attrs),
  };
  return { input, canonical };
}

export function ndjsonLine(row: GeneratedRow): string {
  return stringifyJson(row.input) + '\n';
}
