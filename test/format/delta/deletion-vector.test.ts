import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { encodeDeletionVectorPuffin } from '../../../src/format/iceberg/puffin.ts';
import {
  DV_MAGIC,
  crc32,
  decodeDeletionVectorBlob,
  deletionVectorLocation,
  encodeDeletionVectorBlob,
  deletionVectorFileFromPuffin,
  encodeDeletionVectorFile,
  fileDescriptor,
  puffinBlobInDeletionVectorFile,
  soleDeletionVector,
  inlineDeletionVector,
  inlineDescriptor,
  parseDeletionVector,
  readDeletionVectorFile,
  serializeDeletionVector,
  uuidFromZ85,
  uuidToZ85,
  z85Decode,
  z85Encode,
} from '../../../src/format/delta/deletion-vector.ts';
import { RoaringBitmap64 } from '../../../src/format/roaring.ts';
import { testdata } from '../../helpers.ts';

function dataInvalidMessage(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (isTwinlakeError(e, 'data-invalid')) return (e as Error).message;
    throw e;
  }
  throw new Error('expected a data-invalid error');
}

describe('z85', () => {
  it('encodes the ZeroMQ RFC 32 test vector', () => {
    const bytes = new Uint8Array([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b]);
    expect(z85Encode(bytes)).toBe('HelloWorld');
    expect([...z85Decode('HelloWorld')]).toEqual([...bytes]);
  });

  it('pads to 4 bytes and cuts back to the given length', () => {
    for (let n = 0; n < 13; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff);
      const text = z85Encode(bytes);
      expect(text.length).toBe(Math.ceil(n / 4) * 5);
      expect([...z85Decode(text, n)]).toEqual([...bytes]);
    }
  });

  it('refuses text that is not Z85', () => {
    expect(dataInvalidMessage(() => z85Decode('abcd'))).toMatch(/multiple of 5/);
    expect(dataInvalidMessage(() => z85Decode('abcd~'))).toMatch(/Z85 character at 4/);
    expect(dataInvalidMessage(() => z85Decode('#####'))).toMatch(/overflows 32 bits/);
  });
});

describe('deletion vector descriptors (PROTOCOL.md §Deletion Vectors examples)', () => {
  it('example 1: a UUID-relative path with a random prefix', () => {
    const dv = { storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 4, sizeInBytes: 40, cardinality: 6 };
    expect(deletionVectorLocation(dv, 's3://mytable')).toBe('s3://mytable/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin');
    expect(uuidFromZ85('^-aqEH.-t@S}K{vb[*k^')).toBe('d2c639aa-8816-431a-aaf6-d3fe2512ff61');
    expect(uuidToZ85('d2c639aa-8816-431a-aaf6-d3fe2512ff61')).toBe('^-aqEH.-t@S}K{vb[*k^');
    expect(fileDescriptor({ uuid: 'd2c639aa-8816-431a-aaf6-d3fe2512ff61', prefix: 'ab' }, { offset: 4, sizeInBytes: 40, cardinality: 6 })).toEqual(dv);
    // Without a prefix the file sits in the table's root.
    expect(deletionVectorLocation({ ...dv, pathOrInlineDv: '^-aqEH.-t@S}K{vb[*k^' }, 's3://mytable')).toBe('s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin');
  });

  it('example 2: an absolute path', () => {
    const path = 's3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin';
    const dv = { storageType: 'p', pathOrInlineDv: path, offset: 4, sizeInBytes: 40, cardinality: 6 };
    expect(deletionVectorLocation(dv, 's3://other')).toBe(path);
    // Encoded like an add path: a space travels as %20 and comes back.
    const spaced = fileDescriptor({ absolutePath: 'file:///t/a b/dv.puffin' }, { offset: 4, sizeInBytes: 40, cardinality: 6 });
    expect(spaced.pathOrInlineDv).toBe('file:///t/a%20b/dv.puffin');
    expect(deletionVectorLocation(spaced, 'file:///x')).toBe('file:///t/a b/dv.puffin');
    expect(dataInvalidMessage(() => deletionVectorLocation({ ...dv, pathOrInlineDv: 'relative/dv.bin' }, 's3://t'))).toMatch(/absolute path/);
  });

  it('example 3: an inline DV holding rows 3, 4, 7, 11, 18, 29', () => {
    const dv = { storageType: 'i', pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L', sizeInBytes: 40, cardinality: 6 };
    const bitmap = inlineDeletionVector(dv);
    expect([...bitmap.values()].map(Number)).toEqual([3, 4, 7, 11, 18, 29]);
    expect(bitmap.cardinality).toBe(dv.cardinality);
    expect(deletionVectorLocation(dv, 's3://t')).toBeUndefined();
  });

  it('inline descriptors round-trip, also when the bytes are not a multiple of 4', () => {
    for (const positions of [[1, 2, 3], [0], [5, 70000, 2 ** 33], Array.from({ length: 5000 }, (_, i) => i * 2)]) {
      const b = RoaringBitmap64.of(positions);
      const dv = inlineDescriptor(b);
      expect(dv.sizeInBytes).toBe(serializeDeletionVector(b).length);
      expect(dv.pathOrInlineDv.length).toBe(Math.ceil(dv.sizeInBytes / 4) * 5);
      expect(dv.cardinality).toBe(new Set(positions).size);
      expect([...inlineDeletionVector(dv).values()].map(Number)).toEqual(positions);
    }
  });
});

describe('deletion vector bytes', () => {
  it('computes the standard CRC-32', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array())).toBe(0);
  });

  it('frames a DV as big-endian size, little-endian magic and bitmap, big-endian CRC-32', () => {
    const b = RoaringBitmap64.of([3, 4, 7, 11, 18, 29]);
    const blob = encodeDeletionVectorBlob(b);
    const view = new DataView(blob.buffer);
    const size = view.getUint32(0, false);
    expect(size).toBe(blob.length - 8);
    expect([...blob.subarray(4, 8)]).toEqual([0xd1, 0xd3, 0x39, 0x64]);
    expect(view.getUint32(4, true)).toBe(DV_MAGIC);
    expect(view.getUint32(4 + size, false)).toBe(crc32(blob.subarray(4, 4 + size)));
    expect([...decodeDeletionVectorBlob(blob).values()].map(Number)).toEqual([3, 4, 7, 11, 18, 29]);
  });

  it('writes DV files that read back at the offsets they report', () => {
    const bitmaps = [RoaringBitmap64.of([0, 7, 14]), RoaringBitmap64.of(Array.from({ length: 100000 }, (_, i) => i + 10)), RoaringBitmap64.of([2 ** 40])];
    const { bytes, entries } = encodeDeletionVectorFile(bitmaps);
    expect(bytes[0]).toBe(1);
    expect(entries[0]!.offset).toBe(1);
    entries.forEach((e, i) => {
      expect(e.cardinality).toBe(bitmaps[i]!.cardinality);
      expect([...readDeletionVectorFile(bytes, e).values()]).toEqual([...bitmaps[i]!.values()]);
    });
    expect(entries[1]!.offset).toBe(entries[0]!.offset + entries[0]!.sizeInBytes + 8);
  });

  it('fails loudly on corruption: CRC, size, magic, version', () => {
    const { bytes, entries } = encodeDeletionVectorFile([RoaringBitmap64.of([1, 2, 3, 500])]);
    const e = entries[0]!;
    const flipped = bytes.slice();
    flipped[e.offset + 4 + 20] = flipped[e.offset + 4 + 20]! ^ 0x01;
    expect(dataInvalidMessage(() => readDeletionVectorFile(flipped, e))).toMatch(/^deletion vector file at 1: expected CRC-32 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}$/);
    expect(dataInvalidMessage(() => readDeletionVectorFile(bytes, { ...e, sizeInBytes: e.sizeInBytes + 1 }))).toMatch(/expected size \d+, found \d+/);
    expect(dataInvalidMessage(() => readDeletionVectorFile(bytes.subarray(0, bytes.length - 2), e))).toMatch(/expected \d+ bytes, found/);
    const version = bytes.slice();
    version[0] = 2;
    expect(dataInvalidMessage(() => readDeletionVectorFile(version, e))).toMatch(/expected format version 1, found 2/);
    const dv = serializeDeletionVector(RoaringBitmap64.of([1]));
    dv[0] = 0;
    expect(dataInvalidMessage(() => parseDeletionVector(dv))).toMatch(/expected magic 1681511377/);
  });

  const golden = join(testdata, 'delta-golden');
  it.skipIf(!existsSync(golden))('reads every DV file Spark wrote in the golden tables and rewrites it byte for byte', () => {
    let checked = 0;
    for (const table of ['dv-partitioned-with-checkpoint', 'dv-with-columnmapping', 'log-replay-dv-key-cases']) {
      const dir = join(golden, table);
      for (const name of readdirSync(dir).filter((n) => /^deletion_vector_.*\.bin$/.test(n))) {
        const file = new Uint8Array(readFileSync(join(dir, name)));
        const size = new DataView(file.buffer).getUint32(1, false);
        const bitmap = readDeletionVectorFile(file, { offset: 1, sizeInBytes: size });
        expect(bitmap.cardinality).toBeGreaterThan(0);
        expect([...encodeDeletionVectorFile([bitmap]).bytes]).toEqual([...file]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe('a Delta DV file repeating a Puffin file of deletion vectors', () => {
  it('holds each blob byte for byte where puffinBlobInDeletionVectorFile says, readable as a DV file', () => {
    const vectors = [
      { referencedDataFile: 'file:///t/a.parquet', bitmap: RoaringBitmap64.of([0, 5, 70000]) },
      { referencedDataFile: 'file:///t/b.parquet', bitmap: RoaringBitmap64.of([3]) },
    ];
    const { bytes, entries } = encodeDeletionVectorPuffin(vectors);
    const dvFile = deletionVectorFileFromPuffin(bytes, entries);
    expect(dvFile[0]).toBe(1);
    for (const [i, e] of entries.entries()) {
      const at = puffinBlobInDeletionVectorFile(e);
      expect(Buffer.from(dvFile.subarray(at.offset, at.offset + at.sizeInBytes + 8)).equals(Buffer.from(bytes.subarray(e.contentOffset, e.contentOffset + e.contentSizeInBytes)))).toBe(true);
      expect([...readDeletionVectorFile(dvFile, at).values()]).toEqual([...vectors[i]!.bitmap.values()]);
      expect(at.cardinality).toBe(vectors[i]!.bitmap.cardinality);
    }
  });

  it('finds the one vector of a single-vector DV file', () => {
    const bitmap = RoaringBitmap64.of([1, 2, 3, 1000]);
    const { bytes, entries } = encodeDeletionVectorFile([bitmap]);
    const sole = soleDeletionVector(bytes);
    expect(sole.entry).toEqual(entries[0]);
    expect([...sole.bitmap.values()]).toEqual([...bitmap.values()]);
  });
});
