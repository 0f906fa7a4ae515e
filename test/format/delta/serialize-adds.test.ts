import { describe, expect, test } from 'vitest';
import { stringifyJson } from '../../../src/core/json.ts';
import { type Action, parseCommit, serializeCommit } from '../../../src/format/delta/actions.ts';

/**
 * `add` lines are written by the engine's JSON.stringify (the commit of a large add-files holds
 * 100,000 of them); they must be the text the bigint-aware writer gives every other action.
 */
describe('serializing add actions', () => {
  const adds: Action[] = [
    { add: { path: 'data/a.parquet', partitionValues: {}, size: 1, modificationTime: 2, dataChange: true, stats: '{"numRecords":3,"minValues":{"s":"\\"q\\" é 😀"}}' } },
    { add: { path: 'p=%C3%A9/b c.parquet', partitionValues: { p: 'é', q: null }, size: 2 ** 50, modificationTime: 1700000000000, dataChange: false, tags: { a: 'x\u0001\u2028', b: null } } },
    {
      add: {
        path: 'x.parquet',
        partitionValues: {},
        size: 3,
        modificationTime: 4,
        dataChange: true,
        stats: undefined,
        deletionVector: { storageType: 'u', pathOrInlineDv: 'ab^-aqEH.-t@S}K{vb[*k^', offset: 1, sizeInBytes: 36, cardinality: 2 },
        baseRowId: 10,
        defaultRowCommitVersion: 3,
      },
    },
    // A bigint (another engine's huge row ID read back as one) goes to the bigint-aware writer.
    { add: { path: 'y.parquet', partitionValues: {}, size: 3, modificationTime: 4, dataChange: true, baseRowId: 2n ** 60n as unknown as number } },
    { add: { path: 'z.parquet', partitionValues: {}, size: NaN, modificationTime: Infinity, dataChange: true, stats: '\ud800' } },
  ];

  test('each line is what stringifyJson writes, and parses back', () => {
    const text = serializeCommit([{ commitInfo: { icebergSnapshotId: 2n ** 62n + 1n, timestamp: 5 } }, ...adds]);
    const lines = text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toEqual([{ commitInfo: { icebergSnapshotId: 2n ** 62n + 1n, timestamp: 5 } }, ...adds].map((a) => stringifyJson(a)));
    expect(lines[4]).toContain(`"baseRowId":${2n ** 60n}`);
    expect(parseCommit(serializeCommit(adds.slice(0, 3)), 'test')).toEqual(adds.slice(0, 3).map((a) => JSON.parse(JSON.stringify(a))));
  });
});
