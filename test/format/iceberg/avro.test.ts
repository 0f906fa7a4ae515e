import { crc32 } from 'node:zlib';
import avro from 'avsc';
import { describe, expect, test } from 'vitest';
import { readAvroContainer, snappyUncompress, writeAvroContainer } from '../../../src/format/iceberg/avro.ts';
import { decodeWithAvsc } from './avsc-reader.ts';

const sync = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);

const schemaJson = {
  type: 'record',
  name: 'thing',
  fields: [
    { name: 'id', type: 'long', 'field-id': 1 },
    { name: 'maybe', type: ['null', 'long'], default: null, 'field-id': 2 },
    { name: 'blob', type: 'bytes', 'field-id': 3 },
    { name: 'tags', type: { type: 'array', items: 'string', 'element-id': 5 }, 'field-id': 4 },
    { name: 'inner', type: { type: 'record', name: 'r6', fields: [{ name: 'n', type: 'int', 'field-id': 7 }] }, 'field-id': 6 },
  ],
};

const big = 2n ** 62n + 12345n; // beyond 2^53: would round as a double
const records = [
  { id: big, maybe: null, blob: Buffer.from([1, 2, 3]), tags: ['a', 'b'], inner: { n: -5 } },
  { id: -big, maybe: 7n, blob: Buffer.alloc(0), tags: [], inner: { n: 2147483647 } },
];

describe('avro container', () => {
  for (const codec of ['null', 'deflate'] as const) {
    test(`round trip with codec ${codec}, longs beyond 2^53 exact`, () => {
      const bytes = writeAvroContainer({ schemaJson, records, metadata: { hello: 'wörld' }, codec, syncMarker: sync });
      const back = readAvroContainer(bytes);
      expect(back.metadata.hello).toBe('wörld');
      expect(back.metadata['avro.codec']).toBe(codec);
      expect(back.records.length).toBe(2);
      expect(back.records[0].id).toBe(big);
      expect(back.records[1].id).toBe(-big);
      expect(back.records[1].maybe).toBe(7n);
      expect(back.records[0].maybe).toBeNull();
      expect([...back.records[0].blob]).toEqual([1, 2, 3]);
      expect(back.records[0].tags).toEqual(['a', 'b']);
      expect(back.records[1].inner.n).toBe(2147483647);
      expect(back.schemaJson).toEqual(schemaJson);
    });

    test(`avsc's own decoder reads what we wrote (codec ${codec}) and sees the field IDs`, async () => {
      const bytes = writeAvroContainer({ schemaJson, records, metadata: { k: 'v' }, codec, syncMarker: sync });
      const decoded = await decodeWithAvsc(bytes);
      expect(decoded.codec).toBe(codec);
      expect(decoded.metadata.k).toBe('v');
      expect(decoded.schemaJson.fields.map((f: any) => f['field-id'])).toEqual([1, 2, 3, 4, 6]);
      expect(decoded.schemaJson.fields[3].type['element-id']).toBe(5);
      expect(decoded.records.map((r) => r.id)).toEqual([big.toString(), (-big).toString()]);
      expect(decoded.records[1].maybe).toBe('7');
    });
  }

  test('many records span several blocks and still read back in order', () => {
    const many = Array.from({ length: 30000 }, (_, i) => ({ id: BigInt(i), maybe: null, blob: Buffer.alloc(40, i % 256), tags: [], inner: { n: i } }));
    const bytes = writeAvroContainer({ schemaJson, records: many, metadata: {}, codec: 'null', syncMarker: sync });
    const back = readAvroContainer(bytes);
    expect(back.records.length).toBe(30000);
    expect(back.records[29999].inner.n).toBe(29999);
    // More than one block: the sync marker appears after the header and after each block.
    let markers = 0;
    for (let i = 0; i + 16 <= bytes.length; i++) if (Buffer.from(bytes.subarray(i, i + 16)).equals(Buffer.from(sync))) markers++;
    expect(markers).toBeGreaterThan(2);
  });

  test('reads a file written by avsc (with a deflate codec)', async () => {
    const type = avro.Type.forSchema({ type: 'record', name: 'p', fields: [{ name: 'x', type: 'int' }, { name: 's', type: 'string' }] });
    const encoder = new avro.streams.BlockEncoder(type, { codec: 'deflate', metadata: { who: Buffer.from('avsc') } } as any);
    const chunks: Buffer[] = [];
    encoder.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise((r) => encoder.on('end', r));
    for (let i = 0; i < 5; i++) encoder.write({ x: i * 3, s: `n${i}` });
    encoder.end();
    await done;
    const back = readAvroContainer(Buffer.concat(chunks));
    expect(back.metadata.who).toBe('avsc');
    expect(back.records.map((r) => r.x)).toEqual([0, 3, 6, 9, 12]);
    expect(back.records[4].s).toBe('n4');
  });

  test('reads snappy blocks (Avro framing: raw snappy + big-endian CRC32)', async () => {
    // A literal-only snappy encoder is enough to produce valid blocks; copies are tested below.
    const snappyLiteral = (buf: Buffer): Buffer => {
      const parts: number[] = [];
      let n = buf.length;
      while (n >= 0x80) {
        parts.push((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      parts.push(n);
      const out: Buffer[] = [Buffer.from(parts)];
      for (let i = 0; i < buf.length; i += 60) {
        const chunk = buf.subarray(i, i + 60);
        out.push(Buffer.from([(chunk.length - 1) << 2]), chunk);
      }
      const crc = Buffer.alloc(4);
      crc.writeUInt32BE(crc32(buf));
      return Buffer.concat([...out, crc]);
    };
    const type = avro.Type.forSchema({ type: 'record', name: 'p', fields: [{ name: 's', type: 'string' }] });
    const encoder = new avro.streams.BlockEncoder(type, { codec: 'snappy', codecs: { snappy: (b: Buffer, cb: any) => cb(null, snappyLiteral(b)) } } as any);
    const chunks: Buffer[] = [];
    encoder.on('data', (c: Buffer) => chunks.push(c));
    const done = new Promise((r) => encoder.on('end', r));
    for (let i = 0; i < 50; i++) encoder.write({ s: `value number ${i}` });
    encoder.end();
    await done;
    const bytes = Buffer.concat(chunks);
    const back = readAvroContainer(bytes);
    expect(back.metadata['avro.codec']).toBe('snappy');
    expect(back.records.length).toBe(50);
    expect(back.records[49].s).toBe('value number 49');

    // The block's checksum sits just before the final sync marker; a flipped bit is detected.
    const corrupt = Buffer.from(bytes);
    corrupt[corrupt.length - 17]! ^= 0x01;
    expect(() => readAvroContainer(corrupt)).toThrow(/checksum mismatch/);
  });

  test('snappy: literals and 1-, 2- and 4-byte-offset copies, overlapping copies included', () => {
    // "abc" + copy(offset 3, length 9) → "abcabcabcabc" (an overlapping copy).
    expect(snappyUncompress(Uint8Array.from([12, 0x08, 0x61, 0x62, 0x63, 0x15, 0x03])).toString()).toBe('abcabcabcabc');
    // "xy" + copy with 2-byte offset (offset 2, length 4) → "xyxyxy".
    expect(snappyUncompress(Uint8Array.from([6, 0x04, 0x78, 0x79, (3 << 2) | 2, 0x02, 0x00])).toString()).toBe('xyxyxy');
    // "q" + copy with 4-byte offset (offset 1, length 3) → "qqqq".
    expect(snappyUncompress(Uint8Array.from([4, 0x00, 0x71, (2 << 2) | 3, 0x01, 0, 0, 0])).toString()).toBe('qqqq');
    // A 100-byte literal needs one extra length byte (tag 60 << 2).
    const long = Buffer.alloc(100, 0x7a);
    expect(snappyUncompress(Uint8Array.from([100, 60 << 2, 99, ...long])).equals(long)).toBe(true);
    // A copy reaching before the start of the output is corrupt.
    expect(() => snappyUncompress(Uint8Array.from([5, 0x00, 0x61, 0x01 | (0 << 2), 0x05]))).toThrow(/corrupt snappy/);
  });

  test('malformed files fail with data-invalid; unknown codecs with unsupported', () => {
    const good = writeAvroContainer({ schemaJson, records, metadata: {}, codec: 'null', syncMarker: sync });
    expect(() => readAvroContainer(Uint8Array.from([1, 2, 3, 4, 5]))).toThrow(expect.objectContaining({ kind: 'data-invalid' }));
    const badSync = Uint8Array.from(good);
    badSync[badSync.length - 1]! ^= 0xff;
    expect(() => readAvroContainer(badSync)).toThrow(/sync marker/);
    expect(() => readAvroContainer(good.subarray(0, good.length - 20))).toThrow(expect.objectContaining({ kind: 'data-invalid' }));

    const zstd = writeAvroContainer({ schemaJson, records, metadata: {}, codec: 'null', syncMarker: sync });
    const text = Buffer.from(zstd).toString('latin1').replace('\x08null', '\x08zstd');
    expect(() => readAvroContainer(Buffer.from(text, 'latin1'))).toThrow(expect.objectContaining({ kind: 'unsupported' }));
  });

  test('writing rejects records that do not fit the schema and bad sync markers', () => {
    expect(() => writeAvroContainer({ schemaJson, records: [{ id: 'x' }], metadata: {}, codec: 'null', syncMarker: sync })).toThrow(
      expect.objectContaining({ kind: 'invalid-input' }),
    );
    expect(() => writeAvroContainer({ schemaJson, records: [], metadata: {}, codec: 'null', syncMarker: new Uint8Array(4) })).toThrow(/16 bytes/);
  });
});
