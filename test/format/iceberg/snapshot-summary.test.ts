import { describe, expect, test } from 'vitest';
import { summarize } from '../../../src/format/iceberg/snapshot-summary.ts';
import type { DataFile } from '../../../src/format/iceberg/types.ts';

const file = (path: string, rows: number, size: number, partition: Record<string, unknown> = {}, content: 0 | 1 | 2 = 0, specId = 0): DataFile => ({
  content,
  'file-path': path,
  'file-format': 'PARQUET',
  partition,
  'record-count': rows,
  'file-size-in-bytes': size,
  'spec-id': specId,
});

describe('summarize', () => {
  test('first append: added counters and totals from zero', () => {
    const s = summarize({ operation: 'append', added: [file('a', 10, 100, { d: 1 }), file('b', 5, 50, { d: 2 })], removed: [] });
    expect(s).toEqual({
      operation: 'append',
      'added-data-files': '2',
      'added-records': '15',
      'added-files-size': '150',
      'total-records': '15',
      'total-files-size': '150',
      'total-data-files': '2',
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
      'changed-partition-count': '2',
    });
  });

  test('overwrite carries totals forward from the previous summary', () => {
    const previous = { operation: 'append', 'total-records': '100', 'total-files-size': '1000', 'total-data-files': '4', 'total-delete-files': '1', 'total-position-deletes': '3', 'total-equality-deletes': '0' };
    const s = summarize({
      operation: 'overwrite',
      added: [file('n', 7, 70, { d: 1 })],
      removed: [file('o1', 20, 200, { d: 1 }), file('o2', 30, 300, { d: 9 }), file('del', 3, 33, { d: 1 }, 1)],
      previous,
      extra: { 'engine-name': 'twinlake', operation: 'ignored' },
    });
    expect(s.operation).toBe('overwrite');
    expect(s['engine-name']).toBe('twinlake');
    expect(s['deleted-data-files']).toBe('2');
    expect(s['deleted-records']).toBe('50');
    expect(s['removed-files-size']).toBe('533');
    expect(s['removed-delete-files']).toBe('1');
    expect(s['removed-position-delete-files']).toBe('1');
    expect(s['removed-position-deletes']).toBe('3');
    expect(s['total-records']).toBe(String(100 + 7 - 50));
    expect(s['total-files-size']).toBe(String(1000 + 70 - 533));
    expect(s['total-data-files']).toBe('3');
    expect(s['total-delete-files']).toBe('0');
    expect(s['total-position-deletes']).toBe('0');
    expect(s['changed-partition-count']).toBe('2'); // d=1 and d=9
    expect(s['added-delete-files']).toBeUndefined(); // zero counters are left out
  });

  test('deletion vectors count as delete files and DVs, not position delete files; each is its blob size', () => {
    const dv = (ref: string, offset: number, blob: number, rows: number): DataFile => ({
      ...file('x.puffin', rows, 1000, {}, 1),
      'file-format': 'PUFFIN',
      'referenced-data-file': ref,
      'content-offset': offset,
      'content-size-in-bytes': blob,
    });
    const previous = { operation: 'delete', 'total-records': '10', 'total-files-size': '500', 'total-data-files': '2', 'total-delete-files': '1', 'total-position-deletes': '2', 'total-equality-deletes': '0' };
    const s = summarize({ operation: 'delete', added: [dv('a', 4, 42, 3), dv('b', 46, 44, 1)], removed: [dv('a', 4, 40, 2)], previous });
    expect(s['added-dvs']).toBe('2');
    expect(s['removed-dvs']).toBe('1');
    expect(s['added-delete-files']).toBe('2');
    expect(s['removed-delete-files']).toBe('1');
    expect(s['added-position-delete-files']).toBeUndefined();
    expect(s['added-position-deletes']).toBe('4');
    expect(s['removed-position-deletes']).toBe('2');
    expect(s['added-files-size']).toBe(String(42 + 44));
    expect(s['removed-files-size']).toBe('40');
    expect(s['total-files-size']).toBe(String(500 + 86 - 40));
    expect(s['total-delete-files']).toBe('2');
    expect(s['total-position-deletes']).toBe(String(2 + 4 - 2));
  });

  test('a total the previous summary lacks is not guessed', () => {
    const s = summarize({ operation: 'append', added: [file('a', 1, 1)], removed: [], previous: { operation: 'append', 'total-records': '9' } });
    expect(s['total-records']).toBe('10');
    expect(s['total-data-files']).toBeUndefined();
  });

  test('partitions are told apart by spec and by byte values', () => {
    const s = summarize({
      operation: 'append',
      added: [file('a', 1, 1, { b: Uint8Array.from([1]) }), file('b', 1, 1, { b: Uint8Array.from([1]) }), file('c', 1, 1, { b: Uint8Array.from([2]) }), file('d', 1, 1, { b: Uint8Array.from([1]) }, 0, 1)],
      removed: [],
    });
    expect(s['changed-partition-count']).toBe('3');
  });
});
