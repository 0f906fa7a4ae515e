import { describe, expect, test } from 'vitest';
import { liveDataFiles, liveDeleteFiles } from '../../../src/format/iceberg/scan.ts';
import type { DataFile, ManifestEntry } from '../../../src/format/iceberg/types.ts';

const entry = (path: string, status: 0 | 1 | 2, content: 0 | 1 | 2): ManifestEntry => ({
  status,
  'snapshot-id': 1n,
  'sequence-number': 1,
  'file-sequence-number': 1,
  'data-file': { content, 'file-path': path, 'file-format': 'PARQUET', partition: {}, 'record-count': 1, 'file-size-in-bytes': 1, 'spec-id': 0 } as DataFile,
});

describe('live files', () => {
  const entries = [entry('added', 1, 0), entry('existing', 0, 0), entry('deleted', 2, 0), entry('pos', 1, 1), entry('eq', 0, 2), entry('gone-eq', 2, 2)];

  test('data files: ADDED and EXISTING entries with content DATA', () => {
    expect(liveDataFiles(entries).map((f) => f['file-path'])).toEqual(['added', 'existing']);
  });

  test('delete files: live position and equality deletes', () => {
    expect(liveDeleteFiles(entries).map((f) => f['file-path'])).toEqual(['pos', 'eq']);
  });
});
