import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import type { Action, AddFile, DeletionVectorDescriptor } from '../../../src/format/delta/actions.ts';
import { checkReadSupported, decodePath, listLogSegment, replay } from '../../../src/format/delta/replay.ts';
import { thrown } from '../../helpers.ts';

const protocol: Action = { protocol: { minReaderVersion: 1, minWriterVersion: 2 } };
const metaData: Action = {
  metaData: { id: 't', format: { provider: 'parquet', options: {} }, schemaString: '{"type":"struct","fields":[]}', partitionColumns: [], configuration: {} },
};

function add(path: string, extra: Partial<AddFile> = {}): Action {
  return { add: { path, partitionValues: {}, size: 1, modificationTime: 1, dataChange: true, ...extra } };
}
function remove(path: string, dv?: DeletionVectorDescriptor): Action {
  return { remove: { path, dataChange: true, deletionTimestamp: 100, ...(dv ? { deletionVector: dv } : {}) } };
}
const dv = (p: string): DeletionVectorDescriptor => ({ storageType: 'u', pathOrInlineDv: p, offset: 1, sizeInBytes: 10, cardinality: 1 });

describe('replay', () => {
  it('applies removes after adds, across commits', () => {
    const s = replay({
      commits: [
        { version: 0, actions: [protocol, metaData, add('a'), add('b')] },
        { version: 1, actions: [remove('a'), add('c')] },
      ],
    });
    expect(s.version).toBe(1);
    expect(s.files.map((f) => f.path)).toEqual(['b', 'c']);
    expect(s.tombstones.map((r) => r.path)).toEqual(['a']);
  });

  it('lets a re-add replace the stats of a live file and revive a removed one', () => {
    const s = replay({
      commits: [
        { version: 0, actions: [protocol, metaData, add('a', { stats: '{"numRecords":1}' }), add('b')] },
        { version: 1, actions: [add('a', { stats: '{"numRecords":2}', dataChange: false }), remove('b')] },
        { version: 2, actions: [add('b')] },
      ],
    });
    expect(s.files.map((f) => [f.path, f.stats])).toEqual([
      ['a', '{"numRecords":2}'],
      ['b', undefined],
    ]);
    expect(s.tombstones).toEqual([]);
  });

  it('compares paths decoded: a%20b and a b are one file', () => {
    const s = replay({ commits: [{ version: 0, actions: [protocol, metaData, add('x/a%20b.parquet')] }, { version: 1, actions: [remove('x/a b.parquet')] }] });
    expect(s.files).toEqual([]);
  });

  it('keys logical files by path and deletion vector', () => {
    const s = replay({
      commits: [
        { version: 0, actions: [protocol, metaData, add('f')] },
        // PROTOCOL.md: the same path may be added with a DV and removed without one in one commit.
        { version: 1, actions: [add('f', { deletionVector: dv('one') }), remove('f')] },
        { version: 2, actions: [add('f', { deletionVector: dv('two') }), remove('f', dv('one'))] },
      ],
    });
    expect(s.files).toHaveLength(1);
    expect(s.files[0]!.deletionVector?.pathOrInlineDv).toBe('two');
    expect(s.tombstones).toHaveLength(2);
  });

  it('keeps the latest protocol, metadata, txn per app and live domains', () => {
    const s = replay({
      commits: [
        {
          version: 0,
          actions: [protocol, metaData, { txn: { appId: 'a', version: 1 } }, { domainMetadata: { domain: 'd1', configuration: '{}', removed: false } }],
        },
        {
          version: 1,
          actions: [
            { protocol: { minReaderVersion: 2, minWriterVersion: 5 } },
            { txn: { appId: 'a', version: 3 } },
            { txn: { appId: 'b', version: 9 } },
            { domainMetadata: { domain: 'd1', configuration: '{}', removed: true } },
            { domainMetadata: { domain: 'd2', configuration: '{"x":1}', removed: false } },
          ],
        },
      ],
    });
    expect(s.protocol).toEqual({ minReaderVersion: 2, minWriterVersion: 5 });
    expect([...s.txns.values()].map((t) => [t.appId, t.version])).toEqual([
      ['a', 3],
      ['b', 9],
    ]);
    expect([...s.domainMetadata.keys()]).toEqual(['d2']);
  });

  it('takes the time of the last commit: in-commit timestamp, then commitInfo.timestamp, then the file time', () => {
    const base = { version: 0, actions: [protocol, metaData] };
    expect(replay({ commits: [{ ...base, modifiedMs: 5 }] }).timestampMs).toBe(5);
    expect(replay({ commits: [{ version: 0, actions: [{ commitInfo: { timestamp: 7 } }, protocol, metaData], modifiedMs: 5 }] }).timestampMs).toBe(7);
    const ict = replay({ commits: [{ version: 0, actions: [{ commitInfo: { timestamp: 7, inCommitTimestamp: 6 } }, protocol, metaData] }] });
    expect(ict.timestampMs).toBe(6);
    expect(ict.commitInfo).toEqual({ timestamp: 7, inCommitTimestamp: 6 });
  });

  it('starts from a checkpoint, taking only provenance from the commit at its version', () => {
    const s = replay({
      checkpoint: { version: 5, actions: [protocol, metaData, add('a'), remove('gone')] },
      commits: [{ version: 5, actions: [{ commitInfo: { timestamp: 55 } }, add('ignored-already-in-checkpoint')] }],
    });
    expect(s.version).toBe(5);
    expect(s.files.map((f) => f.path)).toEqual(['a']);
    expect(s.tombstones.map((r) => r.path)).toEqual(['gone']);
    expect(s.timestampMs).toBe(55);
    const next = replay({ checkpoint: { version: 5, actions: [protocol, metaData, add('a')] }, commits: [{ version: 6, actions: [remove('a')] }] });
    expect(next.version).toBe(6);
    expect(next.files).toEqual([]);
  });

  it('refuses gaps, missing protocol or metadata, and unresolved sidecars', () => {
    expect(thrown(() => replay({ commits: [{ version: 0, actions: [protocol, metaData] }, { version: 2, actions: [] }] })).message).toBe(
      'delta replay: expected commit 1 next, found 2',
    );
    expect(isTwinlakeError(thrown(() => replay({ commits: [{ version: 0, actions: [protocol] }] })), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => replay({ commits: [] })), 'data-invalid')).toBe(true);
    const sidecar: Action = { sidecar: { path: 's.parquet', sizeInBytes: 1, modificationTime: 1 } };
    expect(thrown(() => replay({ checkpoint: { version: 1, actions: [protocol, metaData, sidecar] }, commits: [] })).message).toMatch(/resolve sidecars/);
  });
});

describe('decodePath', () => {
  it('decodes once and keeps malformed escapes', () => {
    expect(decodePath('letter=%252F%252520%2525f/x')).toBe('letter=%2F%2520%25f/x');
    expect(decodePath('a+b%20c')).toBe('a+b c');
    expect(decodePath('bad%zz%20ok')).toBe('bad%zz ok');
    expect(decodePath('%E2%82%AC')).toBe('€');
  });
});

describe('listLogSegment', () => {
  const v = (n: number) => String(n).padStart(20, '0');
  const commits = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${v(from + i)}.json`);

  it('replays from version 0 without a checkpoint', () => {
    const s = listLogSegment([...commits(0, 3), '_last_checkpoint', `.${v(0)}.json.crc`]);
    expect(s.version).toBe(3);
    expect(s.checkpoint).toBeUndefined();
    expect(s.commits.map((c) => c.version)).toEqual([0, 1, 2, 3]);
  });

  it('uses the newest checkpoint at or before the version', () => {
    const names = [...commits(0, 25), `${v(10)}.checkpoint.parquet`, `${v(20)}.checkpoint.parquet`];
    expect(listLogSegment(names)).toMatchObject({ checkpoint: { version: 20, files: [`${v(20)}.checkpoint.parquet`] }, version: 25 });
    expect(listLogSegment(names).commits.map((c) => c.version)).toEqual([21, 22, 23, 24, 25]);
    const travel = listLogSegment(names, { version: 15 });
    expect(travel.checkpoint?.version).toBe(10);
    expect(travel.commits.map((c) => c.name)).toEqual(commits(11, 15));
    expect(listLogSegment(names, { version: 20 }).commits).toEqual([]);
  });

  it('ignores multi-part checkpoints with missing parts', () => {
    const names = [...commits(0, 12), `${v(5)}.checkpoint.0000000001.0000000002.parquet`, `${v(5)}.checkpoint.0000000002.0000000002.parquet`];
    names.push(`${v(10)}.checkpoint.0000000001.0000000003.parquet`, `${v(10)}.checkpoint.0000000003.0000000003.parquet`);
    const s = listLogSegment(names);
    expect(s.checkpoint).toEqual({ version: 5, files: [`${v(5)}.checkpoint.0000000001.0000000002.parquet`, `${v(5)}.checkpoint.0000000002.0000000002.parquet`] });
    expect(s.commits[0]!.version).toBe(6);
  });

  it('prefers a classic checkpoint to others at the same version', () => {
    const uuid = `${v(4)}.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json`;
    const names = [...commits(0, 4), uuid, `${v(4)}.checkpoint.parquet`];
    expect(listLogSegment(names).checkpoint?.files).toEqual([`${v(4)}.checkpoint.parquet`]);
    expect(listLogSegment([...commits(3, 4), uuid]).checkpoint?.files).toEqual([uuid]);
  });

  it('works when old commits were cleaned up behind a checkpoint', () => {
    const s = listLogSegment([`${v(2)}.checkpoint.parquet`, ...commits(2, 3)]);
    expect(s.checkpoint?.version).toBe(2);
    expect(s.commits.map((c) => c.version)).toEqual([3]);
    const e = thrown(() => listLogSegment([`${v(2)}.checkpoint.parquet`, ...commits(2, 3)], { version: 1 }));
    expect(isTwinlakeError(e, 'not-found')).toBe(true);
  });

  it('adds the checkpoint _last_checkpoint names when the listing lags', () => {
    const s = listLogSegment(commits(0, 12), { lastCheckpoint: { version: 10 } });
    expect(s.checkpoint).toEqual({ version: 10, files: [`${v(10)}.checkpoint.parquet`] });
    const multi = listLogSegment(commits(0, 12), { lastCheckpoint: { version: 10, parts: 2 } });
    expect(multi.checkpoint?.files).toHaveLength(2);
  });

  it('reports gaps and versions that do not exist', () => {
    const gap = thrown(() => listLogSegment([...commits(0, 2), ...commits(4, 5)]));
    expect(isTwinlakeError(gap, 'data-invalid')).toBe(true);
    expect(gap.message).toBe('delta log: expected commit 3 between version 0 and version 5, found a gap');
    const late = thrown(() => listLogSegment(commits(0, 2), { version: 7 }));
    expect(isTwinlakeError(late, 'not-found')).toBe(true);
    expect(late.message).toBe('delta log: version 7 does not exist, the newest is 2');
    expect(isTwinlakeError(thrown(() => listLogSegment(['_last_checkpoint'])), 'not-found')).toBe(true);
  });
});

describe('checkReadSupported', () => {
  it('accepts the reader features Twinlake follows and refuses others', () => {
    checkReadSupported({ minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['columnMapping', 'timestampNtz', 'v2Checkpoint', 'deletionVectors'], writerFeatures: [] });
    const e = thrown(() => checkReadSupported({ minReaderVersion: 3, minWriterVersion: 7, readerFeatures: ['variantType', 'timestampNtz'], writerFeatures: [] }));
    expect(isTwinlakeError(e, 'unsupported')).toBe(true);
    expect(e.message).toMatch(/^delta protocol: reader features \[variantType\] are not supported/);
    expect(isTwinlakeError(thrown(() => checkReadSupported({ minReaderVersion: 4, minWriterVersion: 7 })), 'unsupported')).toBe(true);
  });
});
