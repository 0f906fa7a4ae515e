import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { encodeDeletionVectorBlob, encodeDeletionVectorFile } from '../../../src/format/delta/deletion-vector.ts';
import {
  DELETION_VECTOR_V1,
  decodePuffinFooter,
  encodeDeletionVectorPuffin,
  encodePuffin,
  puffinBlob,
  readDeletionVectorBlob,
  readDeletionVectorPuffin,
} from '../../../src/format/iceberg/puffin.ts';
import { RoaringBitmap64 } from '../../../src/format/roaring.ts';
import { testdata } from '../../helpers.ts';

const MAGIC = [0x50, 0x46, 0x41, 0x31];

function failure(f: () => unknown, kind: 'data-invalid' | 'unsupported' = 'data-invalid'): string {
  try {
    f();
  } catch (e) {
    if (isTwinlakeError(e, kind)) return (e as Error).message;
    throw e;
  }
  throw new Error(`expected a ${kind} error`);
}

describe('Puffin files', () => {
  it('round-trips blobs and the footer: magic, payload, little-endian size, flags, magic', () => {
    const a = new Uint8Array([1, 2, 3]);
    const b = new Uint8Array([9, 8, 7, 6, 5]);
    const big = 2n ** 62n + 3n;
    const { bytes, metadata } = encodePuffin(
      [
        { type: 'apache-datasketches-theta-v1', fields: [1], snapshotId: big, sequenceNumber: 7, data: a, properties: { ndv: '3' } },
        { type: 'x-test', fields: [2, 3], snapshotId: 1, sequenceNumber: 1, data: b },
      ],
      { 'created-by': 'twinlake test' },
    );
    expect([...bytes.subarray(0, 4)]).toEqual(MAGIC);
    expect([...bytes.subarray(bytes.length - 4)]).toEqual(MAGIC);
    const view = new DataView(bytes.buffer);
    expect(view.getInt32(bytes.length - 8, true)).toBe(0); // flags: not compressed
    const payloadSize = view.getInt32(bytes.length - 12, true);
    const json = new TextDecoder().decode(bytes.subarray(bytes.length - 12 - payloadSize, bytes.length - 12));
    expect(json).toContain(`"snapshot-id":${big}`); // a long, not a rounded double
    expect([...bytes.subarray(bytes.length - 16 - payloadSize, bytes.length - 12 - payloadSize)]).toEqual(MAGIC);

    const footer = decodePuffinFooter(bytes);
    expect(footer.properties).toEqual({ 'created-by': 'twinlake test' });
    expect(footer.blobs.map((x) => [x.type, x.offset, x.length, x.fields])).toEqual([
      ['apache-datasketches-theta-v1', 4, 3, [1]],
      ['x-test', 7, 5, [2, 3]],
    ]);
    expect(footer.blobs[0]!['snapshot-id']).toBe(big);
    expect(metadata.blobs).toEqual(footer.blobs);
    expect([...puffinBlob(bytes, footer.blobs[1]!)]).toEqual([...b]);
    // A ranged read of the tail is enough, given the file's length.
    const tail = bytes.subarray(bytes.length - 12 - payloadSize - 4);
    expect(decodePuffinFooter(tail, { fileLength: bytes.length }).blobs).toEqual(footer.blobs);
  });

  it('writes deletion-vector-v1 blobs whose manifest offsets and sizes read back', () => {
    const vectors = [
      { referencedDataFile: 's3://b/t/data/a.parquet', bitmap: RoaringBitmap64.of([0, 3, 4]) },
      { referencedDataFile: 's3://b/t/data/b.parquet', bitmap: RoaringBitmap64.of(Array.from({ length: 70000 }, (_, i) => i * 2)) },
    ];
    const { bytes, entries } = encodeDeletionVectorPuffin(vectors);
    const footer = decodePuffinFooter(bytes);
    footer.blobs.forEach((blob, i) => {
      expect(blob.type).toBe(DELETION_VECTOR_V1);
      expect(blob['snapshot-id']).toBe(-1);
      expect(blob['sequence-number']).toBe(-1);
      expect(blob['compression-codec']).toBeUndefined();
      expect(blob.properties).toEqual({ 'referenced-data-file': vectors[i]!.referencedDataFile, cardinality: String(vectors[i]!.bitmap.cardinality) });
      expect([entries[i]!.contentOffset, entries[i]!.contentSizeInBytes]).toEqual([blob.offset, blob.length]);
    });
    for (const [i, e] of entries.entries()) {
      const blob = bytes.subarray(e.contentOffset, e.contentOffset + e.contentSizeInBytes);
      expect([...readDeletionVectorBlob(blob, { cardinality: e.cardinality }).values()]).toEqual([...vectors[i]!.bitmap.values()]);
    }
    const all = readDeletionVectorPuffin(bytes);
    expect([...all.keys()]).toEqual(vectors.map((v) => v.referencedDataFile));
    expect(() => encodeDeletionVectorPuffin([vectors[0]!, vectors[0]!])).toThrow(/at most one deletion vector per data file/);
  });

  it('stores the same bytes as a Delta DV file, so one write can serve both formats', () => {
    const bitmap = RoaringBitmap64.of([1, 2, 3, 100, 2 ** 35]);
    const { bytes, entries } = encodeDeletionVectorPuffin([{ referencedDataFile: 'f', bitmap }]);
    const puffinBlobBytes = bytes.subarray(entries[0]!.contentOffset, entries[0]!.contentOffset + entries[0]!.contentSizeInBytes);
    const delta = encodeDeletionVectorFile([bitmap]);
    expect([...puffinBlobBytes]).toEqual([...delta.bytes.subarray(1)]);
    // Delta's sizeInBytes counts the magic and bitmap; Iceberg's content size adds the size and CRC fields.
    expect(delta.entries[0]!.sizeInBytes + 8).toBe(entries[0]!.contentSizeInBytes);
  });

  it('fails loudly on corruption and on what it does not support', () => {
    const { bytes, entries } = encodeDeletionVectorPuffin([{ referencedDataFile: 'f', bitmap: RoaringBitmap64.of([5, 6, 7, 9]) }]);
    const e = entries[0]!;
    const blob = bytes.slice(e.contentOffset, e.contentOffset + e.contentSizeInBytes);
    const flipped = blob.slice();
    flipped[12] = flipped[12]! ^ 0x40;
    expect(failure(() => readDeletionVectorBlob(flipped))).toMatch(/expected CRC-32 0x[0-9a-f]{8}, computed/);
    expect(failure(() => readDeletionVectorBlob(blob, { cardinality: 3 }))).toMatch(/expected cardinality 3, found 4/);
    expect(failure(() => readDeletionVectorBlob(blob.subarray(0, blob.length - 1)))).toMatch(/expected size \d+, found \d+/);

    expect(failure(() => decodePuffinFooter(bytes.subarray(0, bytes.length - 1)))).toMatch(/magic at the end/);
    const noStart = bytes.slice();
    noStart[0] = 0;
    expect(failure(() => decodePuffinFooter(noStart))).toMatch(/magic at the start/);
    const compressed = bytes.slice();
    compressed[compressed.length - 8] = 1;
    expect(failure(() => decodePuffinFooter(compressed), 'unsupported')).toMatch(/LZ4-compressed Puffin footers/);
    const badSize = bytes.slice();
    new DataView(badSize.buffer).setInt32(badSize.length - 12, 3, true);
    expect(failure(() => decodePuffinFooter(badSize))).toMatch(/footer magic before a 3-byte payload/);
    expect(failure(() => puffinBlob(bytes, { offset: 4, length: 'codec'.length, 'compression-codec': 'zstd' }), 'unsupported')).toMatch(/compressed blobs \(zstd\)/);
  });

  const fixtures: [string, string, [number, number][]][] = [
    ['icebergcxx-deletion_vectors', 'data/dv-20260504_111849_00012_8gkte-2ed65adb-8895-4026-bb5e-efcedbf874e5.puffin', [[4, 44], [48, 52]]],
    ['impala-iceberg_v3_deletion_vectors', 'data/00000-9-08e88179-85b6-4635-8b34-94b49abc87d9-00001-deletes.puffin', [[4, 42], [46, 42]]],
  ];
  for (const [table, file, blobs] of fixtures) {
    const path = join(testdata, 'iceberg', table, file);
    it.skipIf(!existsSync(path))(`${table}: reads the DVs other engines wrote and re-encodes each blob byte for byte`, () => {
      const bytes = new Uint8Array(readFileSync(path));
      const footer = decodePuffinFooter(bytes, { source: file });
      // The manifests name these content offsets and sizes.
      expect(footer.blobs.map((b) => [b.offset, b.length])).toEqual(blobs);
      const dvs = readDeletionVectorPuffin(bytes, file);
      expect(dvs.size).toBe(blobs.length);
      for (const b of footer.blobs) {
        const bitmap = dvs.get(b.properties!['referenced-data-file']!)!;
        expect(bitmap.cardinality).toBe(Number(b.properties!.cardinality));
        expect([...encodeDeletionVectorBlob(bitmap)]).toEqual([...puffinBlob(bytes, b)]);
      }
    });
  }
});
