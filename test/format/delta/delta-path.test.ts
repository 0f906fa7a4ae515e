import { describe, expect, test } from 'vitest';
import { decodePath, deltaPath } from '../../../src/format/delta/replay.ts';

/** A data file's Delta path: relative to the table root, URI-encoded byte by byte of its UTF-8 (PROTOCOL.md §Add File). */
describe('deltaPath', () => {
  test('characters outside the BMP are one UTF-8 sequence, and decode back', () => {
    expect(deltaPath('file:///t', 'file:///t/d/😀 x.parquet')).toBe('d/%F0%9F%98%80%20x.parquet');
    expect(decodePath(deltaPath('s3://b/t', 's3://b/t/p=中😀/f.parquet'))).toBe('p=中😀/f.parquet');
  });

  test('plain paths are kept as they are; the rest is escaped, segment by segment', () => {
    expect(deltaPath('file:///t/', 'file:///t/imported/g0/f1.parquet')).toBe('imported/g0/f1.parquet');
    expect(deltaPath('file:///t', 'file:///t/a=1,b+c@d~e/x_y-z.parquet')).toBe('a=1,b+c@d~e/x_y-z.parquet');
    expect(deltaPath('file:///t', 'file:///t/q?=#%/é.parquet')).toBe('q%3F=%23%25/%C3%A9.parquet');
    expect(deltaPath('file:///t', 's3://other/x.parquet')).toBe('s3://other/x.parquet');
  });
});
