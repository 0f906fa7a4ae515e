import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import {
  type Action,
  checkpointPath,
  commitPath,
  dvUniqueId,
  multipartCheckpointPath,
  parseCommit,
  parseLogFileName,
  serializeCommit,
} from '../../../src/format/delta/actions.ts';
import { thrown } from '../../helpers.ts';

describe('commit serialization', () => {
  const actions: Action[] = [
    { commitInfo: { timestamp: 1700000000000, operation: 'WRITE', operationParameters: { mode: 'Append' }, engineInfo: 'twinlake', icebergSnapshotId: 9007199254740993n } },
    { protocol: { minReaderVersion: 2, minWriterVersion: 5 } },
    {
      metaData: {
        id: 'd1',
        format: { provider: 'parquet', options: {} },
        schemaString: '{"type":"struct","fields":[]}',
        partitionColumns: [],
        configuration: { 'delta.columnMapping.mode': 'name' },
        createdTime: 1,
      },
    },
    { txn: { appId: 'app', version: 12, lastUpdated: 5 } },
    { add: { path: 'a%20b.parquet', partitionValues: { p: null }, size: 10, modificationTime: 2, dataChange: true, stats: '{"numRecords":3}' } },
    { remove: { path: 'old.parquet', deletionTimestamp: 3, dataChange: true } },
  ];

  it('writes one newline-terminated JSON object per action, each wrapping one action', () => {
    const text = serializeCommit(actions);
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.split('\n').slice(0, -1);
    expect(lines).toHaveLength(actions.length);
    expect(lines.map((l) => Object.keys(JSON.parse(l)))).toEqual([['commitInfo'], ['protocol'], ['metaData'], ['txn'], ['add'], ['remove']]);
    // The snapshot ID is beyond 2^53 and must be written as an exact JSON number.
    expect(lines[0]).toContain('"icebergSnapshotId":9007199254740993');
  });

  it('parses back what it wrote, big integers included', () => {
    expect(parseCommit(serializeCommit(actions), 'x.json')).toEqual(actions);
  });

  it('normalizes a small icebergSnapshotId to bigint', () => {
    const [a] = parseCommit('{"commitInfo":{"icebergSnapshotId":42}}\n', 'c.json');
    expect(a).toEqual({ commitInfo: { icebergSnapshotId: 42n } });
  });

  it('refuses an action object that wraps zero or two actions', () => {
    expect(isTwinlakeError(thrown(() => serializeCommit([{} as Action])), 'invalid-input')).toBe(true);
    const two = { add: actions[4]!, txn: actions[3]! } as unknown as Action;
    expect(thrown(() => serializeCommit([two])).message).toMatch(/exactly one/);
  });

  it('skips unknown actions and blank lines, as readers must', () => {
    const text = '{"futureAction":{"x":1}}\n\n{"txn":{"appId":"a","version":1}}\n';
    expect(parseCommit(text, 'c.json')).toEqual([{ txn: { appId: 'a', version: 1 } }]);
  });

  it('names the file and line of malformed input', () => {
    const e = thrown(() => parseCommit('{"txn":{"appId":"a","version":1}}\n{"add":{"path":1}}\n', '_delta_log/00000000000000000007.json'));
    expect(isTwinlakeError(e, 'data-invalid')).toBe(true);
    expect(e.message).toBe('delta log _delta_log/00000000000000000007.json line 2: add.path: expected a string, found 1');
    const bad = thrown(() => parseCommit('{"txn":{"appId":"a","version":1}}\n{oops\n', 'v.json'));
    expect(bad.message).toMatch(/^delta log: v\.json line 2/);
  });

  it('requires the fields the protocol marks required', () => {
    expect(thrown(() => parseCommit('{"protocol":{"minReaderVersion":1}}', 'p.json')).message).toMatch(/protocol\.minWriterVersion: expected an integer/);
    expect(thrown(() => parseCommit('{"metaData":{"id":"x","schemaString":"{}","format":{}}}', 'm.json')).message).toMatch(/partitionColumns/);
    expect(thrown(() => parseCommit('{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":1}}', 'a.json')).message).toMatch(/dataChange/);
  });

  it('turns JSON nulls of optional fields into absent fields', () => {
    const [a] = parseCommit('{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":null,"baseRowId":null}}', 'a.json');
    expect(a).toEqual({ add: { path: 'p', partitionValues: {}, size: 1, modificationTime: 1, dataChange: true } });
  });
});

describe('log file names', () => {
  it('pads versions to 20 digits', () => {
    expect(commitPath(12)).toBe('_delta_log/00000000000000000012.json');
    expect(checkpointPath(10)).toBe('_delta_log/00000000000000000010.checkpoint.parquet');
    expect(multipartCheckpointPath(10, 2, 3)).toBe('_delta_log/00000000000000000010.checkpoint.0000000002.0000000003.parquet');
    expect(isTwinlakeError(thrown(() => commitPath(-1)), 'invalid-input')).toBe(true);
  });

  it('classifies every kind of file the protocol names', () => {
    expect(parseLogFileName('00000000000000000012.json')).toEqual({ version: 12, kind: 'commit' });
    expect(parseLogFileName('00000000000000000010.checkpoint.parquet')).toEqual({ version: 10, kind: 'checkpoint', format: 'parquet' });
    expect(parseLogFileName('00000000000000000010.checkpoint.0000000001.0000000003.parquet')).toEqual({
      version: 10,
      kind: 'checkpoint',
      format: 'parquet',
      part: 1,
      parts: 3,
    });
    expect(parseLogFileName('00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json')).toEqual({
      version: 2,
      kind: 'checkpoint',
      uuid: '6374b053-df23-479b-b2cf-c9c550132b49',
      format: 'json',
    });
    expect(parseLogFileName('00000000000000000003.crc')).toEqual({ version: 3, kind: 'checksum' });
    expect(parseLogFileName('00000000000000000004.00000000000000000006.compacted.json')).toEqual({ version: 4, kind: 'compacted', endVersion: 6 });
  });

  it('ignores everything else', () => {
    for (const name of ['_last_checkpoint', '.00000000000000000000.json.crc', '0000000000000000001.json', '00000000000000000001.json.tmp', '_sidecars']) {
      expect(parseLogFileName(name), name).toBeUndefined();
    }
  });
});

describe('deletion vector unique id', () => {
  it('is storage type and path, plus @offset when there is an offset (PROTOCOL.md §Derived Fields)', () => {
    expect(dvUniqueId({ storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 4, sizeInBytes: 40, cardinality: 6 })).toBe('uab^-aqEH.-t@S}K{vb[*k^@4');
    expect(dvUniqueId({ storageType: 'i', pathOrInlineDv: 'wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L', sizeInBytes: 40, cardinality: 6 })).toBe(
      'iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L',
    );
    expect(dvUniqueId(undefined)).toBeUndefined();
  });
});
