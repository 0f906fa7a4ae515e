import { stringifyJson } from '../../src/core/json.ts';

/**
 * 100k deterministic rows covering every type Twinlake writes in dual-format tables, with nulls,
 * unicode, negative numbers, nested structs and lists, maps, timestamps with microseconds (also
 * before 1970) and leap days — and, for each row, the canonical form every reader must return.
 */
export const ALL_TYPES_SCHEMA = {
  type: 'struct',
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'b', required: false, type: 'boolean' },
    { id: 3, name: 'i', required: false, type: 'int' },
    { id: 4, name: 'l', required: false, type: 'long' },
    { id: 5, name: 'f', required: false, type: 'float' },
    { id: 6, name: 'd', required: false, type: 'double' },
    { id: 7, name: 'dec', required: false, type: 'decimal(12, 2)' },
    { id: 8, name: 'dt', required: false, type: 'date' },
    { id: 9, name: 'ts', required: false, type: 'timestamptz' },
    { id: 10, name: 'tsn', required: false, type: 'timestamp' },
    { id: 11, name: 's', required: false, type: 'string' },
    { id: 12, name: 'bin', required: false, type: 'binary' },
    {
      id: 13,
      name: 'st',
      required: false,
      type: {
        type: 'struct',
        fields: [
          { id: 14, name: 'a', required: false, type: 'int' },
          { id: 15, name: 'b', required: false, type: 'string' },
        ],
      },
    },
    { id: 16, name: 'lst', required: false, type: { type: 'list', 'element-id': 17, element: 'long', 'element-required': false } },
    { id: 18, name: 'm', required: false, type: { type: 'map', 'key-id': 19, key: 'string', 'value-id': 20, value: 'long', 'value-required': false } },
    {
      id: 21,
      name: 'ls',
      required: false,
      type: {
        type: 'list',
        'element-id': 22,
        element: {
          type: 'struct',
          fields: [
            { id: 23, name: 'x', required: false, type: 'double' },
            { id: 24, name: 'y', required: false, type: 'string' },
          ],
        },
        'element-required': false,
      },
    },
  ],
};

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
  const i = n(7) ? null : ((k * 7919) % 200001) - 100000;
  const l = n(11) ? null : BigInt(k) * 92233720368547n - 4_000_000_000_000_000_000n;
  const f = n(13) ? null : ((k % 2000) - 1000) / 8;
  const d = n(17) ? null : k * 1.000001 - 50000.5;
  const decCents = ((k * 37) % 100_000_000) - 50_000_000;
  const dec = n(19) ? null : `${decCents < 0 ? '-' : ''}${Math.floor(Math.abs(decCents) / 100)}.${pad(Math.abs(decCents) % 100, 2)}`;
  const day = (k % 40000) - 20000;
  const dt = n(23) ? null : isoDate(day === 0 ? 19782 : day); // 19782 = 2024-02-29, a leap day
  const micros = BigInt(k) * 1_234_567_891_234n - 50_000_000_000_000_000n;
  const ts = n(29) ? null : micros;
  const tsn = n(31) ? null : micros + 7n;
  const s = n(37) ? null : `${STRINGS[k % STRINGS.length]}#${k}`;
  const binBytes = n(41) ? null : Uint8Array.from([k & 0xff, (k >> 8) & 0xff, (k >> 16) & 0xff, 0, 255]);
  const st = n(43) ? null : { a: n(3) ? null : -k, b: n(5) ? null : `s${k}` };
  const lst = n(47) ? null : k % 4 === 0 ? [] : [BigInt(k), BigInt(-k), null];
  const m = n(53) ? null : { [`k${k}`]: BigInt(k), z: null };
  const ls = n(59) ? null : [{ x: k / 4, y: 'ä' + k }, null, { x: null, y: null }];

  const input = {
    id: k,
    b: n(3) ? null : k % 2 === 0,
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
  };
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
    m: m === null ? null : [[`k${k}`, String(k)], ['z', null]],
    ls,
  };
  return { input, canonical };
}

export function ndjsonLine(row: GeneratedRow): string {
  return stringifyJson(row.input) + '\n';
}
