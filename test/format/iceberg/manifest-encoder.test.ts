import { describe, expect, test } from 'vitest';
import { decodeManifest, encodeManifest, encodeManifestGeneric, type EncodeManifestArgs } from '../../../src/format/iceberg/manifest.ts';
import type { DataFile, ManifestEntry, PartitionSpec, Schema } from '../../../src/format/iceberg/types.ts';
import { decodeWithAvsc } from './avsc-reader.ts';
import { rng as mulberry32 } from '../expressions/random-filters.ts';

/**
 * The compiled manifest-entry encoder (`encodeManifest`) against the generic one (avsc walking an
 * Avro record per entry, `encodeManifestGeneric`): the same bytes for random entries of every
 * partition type, every optional field present or absent, and every format version; and what an
 * independent reader (avsc's BlockDecoder) reads back is what was written.
 */

/** A small deterministic PRNG (mulberry32), so a failure names its seed. */
function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  const chance = (p: number) => next() < p;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => int(0, 255));
  const bigint64 = () => BigInt.asIntN(64, (BigInt(int(0, 0xffffffff)) << 32n) | BigInt(int(0, 0xffffffff)));
  // Code points from every UTF-8 length, surrogate pairs included.
  const text = (n: number) => Array.from({ length: n }, () => String.fromCodePoint(pick([0x41 + int(0, 25), 0xe9, 0x3b1 + int(0, 20), 0x4e2d, 0x1f600 + int(0, 50), 0x2f]))).join('');
  return { next, int, pick, chance, bytes, bigint64, text };
}

type R = ReturnType<typeof rng>;

const TYPES = [
  'boolean', 'int', 'long', 'float', 'double', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns',
  'string', 'uuid', 'binary', 'fixed[3]', 'fixed[16]', 'decimal(9,2)', 'decimal(18,0)', 'decimal(38,10)', 'decimal(1,0)',
] as const;

const schema: Schema = {
  type: 'struct',
  'schema-id': 7,
  fields: [
    ...TYPES.map((type, k) => ({ id: k + 1, name: `c_${type.replace(/\W/g, '_')}`, required: false, type })),
    // Nested columns: their IDs appear as metric keys, never as partition sources here.
    { id: 100, name: 'nested', required: false, type: { type: 'struct', fields: [{ id: 101, name: 'x', required: false, type: 'long' }] } },
    { id: 102, name: 'tags', required: false, type: { type: 'list', 'element-id': 103, element: 'string', 'element-required': false } },
  ],
};

/** Identity partitions on every type (partition names that need Avro escaping), and one of each transform. */
const fullSpec: PartitionSpec = {
  'spec-id': 3,
  fields: [
    ...TYPES.map((type, k) => ({ 'source-id': k + 1, 'field-id': 1000 + k, name: `p.${type}`, transform: 'identity' })),
    { 'source-id': 2, 'field-id': 1100, name: 'b', transform: 'bucket[16]' },
    { 'source-id': 9, 'field-id': 1101, name: 'd', transform: 'day' },
    { 'source-id': 12, 'field-id': 1102, name: 't', transform: 'truncate[4]' },
    { 'source-id': 1, 'field-id': 1103, name: 'v', transform: 'void' },
  ],
};

function decimalText(r: R, precision: number, scale: number): string {
  const digits = Array.from({ length: r.int(1, precision) }, () => r.int(0, 9)).join('');
  const padded = digits.padStart(scale + 1, '0');
  const text = scale === 0 ? padded : `${padded.slice(0, -scale)}.${padded.slice(-scale)}`;
  return r.chance(0.5) ? `-${text}` : text;
}

function uuid(r: R): string {
  const h = Buffer.from(r.bytes(16)).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A value of a partition field's result type, in the forms `LiteralValue` allows. */
function partitionValue(r: R, type: string, name: string): unknown {
  if (r.chance(0.15) || name === 'v') return null;
  if (name === 'b') return r.int(0, 15);
  if (name === 'd') return r.int(-800000, 800000);
  if (name === 't') return r.text(r.int(0, 4));
  switch (type) {
    case 'boolean':
      return r.chance(0.5);
    case 'int':
      return r.pick([r.int(-0x80000000, 0x7fffffff), 0, -1, 0x7fffffff, -0x80000000]);
    case 'date':
      return r.int(-800000, 800000);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
    case 'timestamp_ns':
    case 'timestamptz_ns':
      return r.pick([r.bigint64(), BigInt(r.int(-100, 100)), 2n ** 63n - 1n, -(2n ** 63n), BigInt(r.int(-(2 ** 31), 2 ** 31))]);
    case 'float':
      return Math.fround((r.next() - 0.5) * 10 ** r.int(-5, 30));
    case 'double':
      return r.pick([(r.next() - 0.5) * 10 ** r.int(-300, 300), -0, Infinity, NaN]);
    case 'string':
      return r.text(r.int(0, 40));
    case 'uuid':
      return r.chance(0.5) ? uuid(r) : r.bytes(16);
    case 'binary':
      return r.bytes(r.int(0, 70));
    case 'fixed[3]':
      return r.bytes(3);
    case 'fixed[16]':
      return r.bytes(16);
  }
  const [, p, s] = /decimal\((\d+),(\d+)\)/.exec(type)!;
  return decimalText(r, Number(p), Number(s));
}

const metricIds = [1, 2, 3, 12, 13, 101, 103, 1 << 20, 2 ** 31 - 1];

function longMap(r: R): Map<number, number> | undefined {
  if (r.chance(0.2)) return undefined;
  return new Map(Array.from({ length: r.int(0, 5) }, () => [r.pick(metricIds), r.pick([0, 1, r.int(0, 2 ** 31), Number.MAX_SAFE_INTEGER, 2 ** 40 + r.int(0, 99)])] as [number, number]));
}

function boundMap(r: R): Map<number, Uint8Array> | undefined {
  if (r.chance(0.2)) return undefined;
  return new Map(Array.from({ length: r.int(0, 5) }, () => [r.pick(metricIds), r.bytes(r.pick([0, 1, 4, 8, 16, r.int(0, 200)]))] as [number, Uint8Array]));
}

function entry(r: R, v: 1 | 2 | 3, spec: PartitionSpec, content: 0 | 1): ManifestEntry {
  const partition: Record<string, unknown> = {};
  for (const f of spec.fields) partition[f.name] = partitionValue(r, schema.fields.find((c) => c.id === f['source-id'])!.type as string, f.name);
  // Paths long enough to need 1- to 4-byte length prefixes (64 and 8,192 bytes are the steps).
  const path = `s3://bucket/${r.text(r.pick([1, 10, 20, 30, 200, 2800, 3000]))}.parquet`;
  const f: DataFile = {
    content: content === 0 ? 0 : r.pick([1, 2] as const),
    'file-path': path,
    'file-format': r.pick(['PARQUET', 'AVRO', 'ORC', 'PUFFIN'] as const),
    partition,
    'record-count': r.pick([0, 1, r.int(0, 2 ** 31), Number.MAX_SAFE_INTEGER]),
    'file-size-in-bytes': r.int(0, 2 ** 40),
    'spec-id': spec['spec-id'],
  };
  const maybe = <K extends keyof DataFile>(key: K, value: () => DataFile[K] | undefined) => {
    const x = r.chance(0.6) ? value() : undefined;
    if (x !== undefined) f[key] = x;
  };
  maybe('column-sizes', () => longMap(r));
  maybe('value-counts', () => longMap(r));
  maybe('null-value-counts', () => longMap(r));
  maybe('nan-value-counts', () => longMap(r));
  maybe('lower-bounds', () => boundMap(r));
  maybe('upper-bounds', () => boundMap(r));
  maybe('key-metadata', () => r.bytes(r.int(0, 40)));
  maybe('split-offsets', () => Array.from({ length: r.int(0, 4) }, () => r.int(0, 2 ** 45)));
  if (v >= 2) maybe('equality-ids', () => Array.from({ length: r.int(0, 3) }, () => r.pick(metricIds)));
  maybe('sort-order-id', () => r.int(0, 5));
  if (v >= 3) maybe('first-row-id', () => r.int(0, 2 ** 50));
  if (v >= 2) maybe('referenced-data-file', () => `s3://bucket/${r.text(r.int(0, 30))}`);
  if (v >= 3) maybe('content-offset', () => r.int(0, 2 ** 40));
  if (v >= 3) maybe('content-size-in-bytes', () => r.int(0, 2 ** 40));
  const status = r.pick([0, 1, 2] as const);
  const e: ManifestEntry = { status, 'data-file': f };
  if (v === 1 || status !== 1 || r.chance(0.5)) e['snapshot-id'] = r.pick([r.bigint64(), 1n, BigInt(r.int(0, 1000))]);
  if (v >= 2 && (status !== 1 || r.chance(0.5))) {
    e['sequence-number'] = r.int(0, 2 ** 40);
    e['file-sequence-number'] = r.int(0, 2 ** 40);
  }
  return e;
}

const sync = Uint8Array.from({ length: 16 }, (_, i) => 255 - i * 3);
const v1Spec: PartitionSpec = { 'spec-id': 3, fields: fullSpec.fields };

function both(args: EncodeManifestArgs): { fast: Uint8Array; generic: Uint8Array } {
  return { fast: encodeManifest(args), generic: encodeManifestGeneric(args) };
}

describe('compiled manifest encoder', () => {
  for (const v of [1, 2, 3] as const) {
    for (const content of v === 1 ? ([0] as const) : ([0, 1] as const)) {
      test(`v${v} ${content === 0 ? 'data' : 'delete'} manifests: the same bytes as the generic encoder over random entries`, async () => {
        for (let seed = 1; seed <= 12; seed++) {
          const r = rng(seed * 31 + v * 7 + content);
          const spec = seed % 4 === 0 ? { 'spec-id': 0, fields: [] } : v === 1 ? v1Spec : fullSpec;
          const entries = Array.from({ length: r.int(0, 40) }, () => entry(r, v, spec, content));
          for (const codec of ['null', 'deflate'] as const) {
            const args: EncodeManifestArgs = { formatVersion: v, schema, spec, content, entries, syncMarker: sync, codec };
            const { fast, generic } = both(args);
            expect(Buffer.from(fast).equals(Buffer.from(generic)), `seed ${seed}, codec ${codec}`).toBe(true);
          }
          // What an independent reader sees is what was written.
          const bytes = encodeManifest({ formatVersion: v, schema, spec, content, entries, syncMarker: sync, codec: 'deflate' });
          const { records } = await decodeWithAvsc(bytes);
          expect(records.length).toBe(entries.length);
          records.forEach((rec, i) => {
            const e = entries[i]!;
            const f = e['data-file'];
            expect(rec.status).toBe(e.status);
            expect(rec.snapshot_id).toBe(e['snapshot-id'] === undefined ? null : String(e['snapshot-id']));
            expect(rec.data_file.file_path).toBe(f['file-path']);
            expect(rec.data_file.record_count).toBe(String(f['record-count']));
            const lower = rec.data_file.lower_bounds;
            if (f['lower-bounds'] === undefined) expect(lower).toBeNull();
            else expect(lower.map((kv: any) => [kv.key, [...kv.value]])).toEqual([...f['lower-bounds']].map(([k, b]) => [k, [...b]]));
            const sizes = rec.data_file.column_sizes;
            if (f['column-sizes'] === undefined) expect(sizes).toBeNull();
            else expect(sizes.map((kv: any) => [kv.key, kv.value])).toEqual([...f['column-sizes']].map(([k, n]) => [k, String(n)]));
            expect(Object.keys(rec.data_file.partition).length).toBe(spec.fields.length);
          });
          // And our reader gives the entries back (partition values in their canonical forms).
          const decoded = decodeManifest(bytes);
          expect(decoded.entries.map((e) => e['data-file']['file-path'])).toEqual(entries.map((e) => e['data-file']['file-path']));
          expect(decoded.entries.map((e) => e['data-file']['upper-bounds'])).toEqual(entries.map((e) => e['data-file']['upper-bounds']));
        }
      });
    }
  }

  test('partition values of every type read back through the independent reader in their Avro forms', async () => {
    const r = rng(99);
    const entries = Array.from({ length: 60 }, () => entry(r, 2, fullSpec, 0));
    const bytes = encodeManifest({ formatVersion: 2, schema, spec: fullSpec, content: 0, entries, syncMarker: sync, codec: 'null' });
    const { records, schemaJson } = await decodeWithAvsc(bytes);
    const partFields = schemaJson.fields.find((f: any) => f.name === 'data_file').type.fields.find((f: any) => f.name === 'partition').type.fields;
    records.forEach((rec, i) => {
      const tuple = entries[i]!['data-file'].partition;
      fullSpec.fields.forEach((pf, k) => {
        const got = rec.data_file.partition[partFields[k].name];
        const want = tuple[pf.name];
        if (want === null) return expect(got).toBeNull();
        const type = pf.transform === 'identity' ? TYPES[pf['source-id'] - 1]! : '';
        if (typeof want === 'bigint') expect(got).toBe(String(want));
        else if (type === 'uuid') expect(Buffer.from(got).toString('hex')).toBe(typeof want === 'string' ? want.replace(/-/g, '') : Buffer.from(want as Uint8Array).toString('hex'));
        else if (want instanceof Uint8Array) expect([...got]).toEqual([...want]);
        else if (type.startsWith('decimal')) {
          // Big-endian two's complement of the unscaled value, sign-extended to the fixed size.
          const scale = Number(/,(\d+)\)/.exec(type)![1]);
          const unscaled = BigInt(String(want).replace('.', ''));
          expect(BigInt.asIntN(got.length * 8, BigInt(`0x${Buffer.from(got).toString('hex') || '0'}`))).toBe(unscaled);
          expect(scale).toBeGreaterThanOrEqual(0);
        } else if (typeof want === 'number' && Number.isNaN(want)) expect(got).toBeNaN();
        else expect(got).toEqual(want);
      });
    });
  });

  test('entries spanning several 1 MB blocks cut the blocks where the generic encoder does', () => {
    const r = rng(5);
    const entries = Array.from({ length: 1500 }, () => entry(r, 2, fullSpec, 0));
    const args: EncodeManifestArgs = { formatVersion: 2, schema, spec: fullSpec, content: 0, entries, syncMarker: sync, codec: 'null' };
    const { fast, generic } = both(args);
    expect(fast.length).toBeGreaterThan(2 * 1024 * 1024);
    expect(Buffer.from(fast).equals(Buffer.from(generic))).toBe(true);
    expect(decodeManifest(fast).entries.length).toBe(1500);
  });

  test('values that do not fit their Avro types are refused by both encoders as invalid input', () => {
    const r = rng(11);
    const good = entry(r, 2, { 'spec-id': 0, fields: [] }, 0);
    const withFile = (patch: Partial<DataFile>): ManifestEntry => ({ ...good, 'data-file': { ...good['data-file'], ...patch } });
    const bad: ManifestEntry[] = [
      withFile({ 'record-count': 1.5 }),
      withFile({ 'file-size-in-bytes': 2 ** 60 }),
      withFile({ 'file-path': 7 as unknown as string }),
      withFile({ 'column-sizes': new Map([[2 ** 31, 1]]) }),
      withFile({ 'lower-bounds': new Map([[1, 'x' as unknown as Uint8Array]]) }),
      withFile({ 'sort-order-id': 2 ** 31 }),
      { ...good, 'snapshot-id': 2n ** 63n },
    ];
    for (const e of bad) {
      for (const encode of [encodeManifest, encodeManifestGeneric]) {
        expect(() => encode({ formatVersion: 2, schema, spec: { 'spec-id': 0, fields: [] }, content: 0, entries: [e], syncMarker: sync, codec: 'null' })).toThrow(
          expect.objectContaining({ kind: 'invalid-input', message: expect.stringMatching(/^avro: record 0 does not match the schema/) }),
        );
      }
    }
    const badPartition: ManifestEntry = { ...good, 'data-file': { ...good['data-file'], partition: { ...entry(r, 2, fullSpec, 0)['data-file'].partition, 'p.int': 2 ** 40 } } };
    for (const encode of [encodeManifest, encodeManifestGeneric]) {
      expect(() => encode({ formatVersion: 2, schema, spec: fullSpec, content: 0, entries: [badPartition], syncMarker: sync, codec: 'null' })).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
    }
  });
});
