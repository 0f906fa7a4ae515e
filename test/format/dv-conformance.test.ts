import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeDeletionVectorBlob, encodeDeletionVectorBlob } from '../../src/format/delta/deletion-vector.ts';
import { decodePuffinFooter, puffinBlob } from '../../src/format/iceberg/puffin.ts';
import { testdata } from '../helpers.ts';

/** Files under `dir` whose name matches. */
function find(dir: string, match: RegExp): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...find(p, match));
    else if (match.test(name)) out.push(p);
  }
  return out.sort();
}

/**
 * Our deletion vector writer against the vectors other engines wrote: Spark's Delta DV files (the
 * golden tables) and the Puffin blobs of Impala and iceberg-cpp. Each decoded vector encodes back
 * to the same bytes: size, magic, portable Roaring layout, CRC.
 */
describe.skipIf(!existsSync(testdata))('deletion vectors written elsewhere re-encode byte for byte (../shared/testdata)', () => {
  it('Puffin deletion-vector-v1 blobs (Impala, iceberg-cpp)', () => {
    const files = find(join(testdata, 'iceberg'), /\.puffin$/);
    expect(files.length).toBeGreaterThanOrEqual(3);
    let blobs = 0;
    for (const f of files) {
      const bytes = new Uint8Array(readFileSync(f));
      for (const b of decodePuffinFooter(bytes, { source: f }).blobs) {
        const blob = puffinBlob(bytes, b);
        const again = encodeDeletionVectorBlob(decodeDeletionVectorBlob(blob, { where: f }));
        expect(Buffer.from(again).equals(Buffer.from(blob)), `${f}@${b.offset}`).toBe(true);
        blobs++;
      }
    }
    expect(blobs).toBeGreaterThanOrEqual(5);
  });

  it('Delta DV files (Spark, golden tables)', () => {
    const files = find(join(testdata, 'delta-golden'), /^deletion_vector_.*\.bin$/);
    expect(files.length).toBeGreaterThanOrEqual(10);
    for (const f of files) {
      const bytes = new Uint8Array(readFileSync(f));
      expect(bytes[0], f).toBe(1);
      for (let pos = 1; pos < bytes.length; ) {
        const size = new DataView(bytes.buffer).getUint32(pos, false);
        const blob = bytes.subarray(pos, pos + size + 8);
        const again = encodeDeletionVectorBlob(decodeDeletionVectorBlob(blob, { where: f }));
        expect(Buffer.from(again).equals(Buffer.from(blob)), `${f}@${pos}`).toBe(true);
        pos += size + 8;
      }
    }
  });
});
