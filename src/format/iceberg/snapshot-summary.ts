import { stringifyJson } from '../../core/json.ts';
import { DataFileContent, type DataFile, type Operation, type Snapshot } from './types.ts';

/**
 * Snapshot summary metrics (spec Appendix F §Metrics). Like Java, added/removed counters appear
 * only when non-zero; totals are carried forward from the previous snapshot's summary, and a
 * total the previous summary lacks is left out rather than guessed (a table without a previous
 * snapshot starts from zero).
 */
export function summarize(args: {
  operation: Operation;
  added: readonly DataFile[];
  removed: readonly DataFile[];
  previous?: Record<string, string>;
  extra?: Record<string, string>;
}): Snapshot['summary'] {
  const { added, removed } = args;
  const isData = (f: DataFile) => f.content === DataFileContent.Data;
  // A deletion vector is a position delete but not a position delete *file*: it is one blob of a
  // Puffin file whose other blobs are entries of their own, so its size is its blob's.
  const isDv = (f: DataFile) => f.content === DataFileContent.PositionDeletes && f['file-format'].toUpperCase() === 'PUFFIN';
  const isPos = (f: DataFile) => f.content === DataFileContent.PositionDeletes;
  const isPosFile = (f: DataFile) => isPos(f) && !isDv(f);
  const isEq = (f: DataFile) => f.content === DataFileContent.EqualityDeletes;
  const count = (files: readonly DataFile[], p: (f: DataFile) => boolean) => files.filter(p).length;
  const records = (files: readonly DataFile[], p: (f: DataFile) => boolean) => files.filter(p).reduce((n, f) => n + f['record-count'], 0);
  const size = (files: readonly DataFile[]) => files.reduce((n, f) => n + (isDv(f) ? (f['content-size-in-bytes'] ?? 0) : f['file-size-in-bytes']), 0);
  const isDelete = (f: DataFile) => !isData(f);

  const delta = {
    'added-data-files': count(added, isData),
    'deleted-data-files': count(removed, isData),
    'added-delete-files': count(added, isDelete),
    'removed-delete-files': count(removed, isDelete),
    'added-position-delete-files': count(added, isPosFile),
    'removed-position-delete-files': count(removed, isPosFile),
    'added-dvs': count(added, isDv),
    'removed-dvs': count(removed, isDv),
    'added-equality-delete-files': count(added, isEq),
    'removed-equality-delete-files': count(removed, isEq),
    'added-records': records(added, isData),
    'deleted-records': records(removed, isData),
    'added-files-size': size(added),
    'removed-files-size': size(removed),
    'added-position-deletes': records(added, isPos),
    'removed-position-deletes': records(removed, isPos),
    'added-equality-deletes': records(added, isEq),
    'removed-equality-deletes': records(removed, isEq),
  };
  const summary: Record<string, string> = {};
  for (const [k, v] of Object.entries(delta)) if (v > 0) summary[k] = String(v);

  const totals: [string, number][] = [
    ['total-records', delta['added-records'] - delta['deleted-records']],
    ['total-files-size', delta['added-files-size'] - delta['removed-files-size']],
    ['total-data-files', delta['added-data-files'] - delta['deleted-data-files']],
    ['total-delete-files', delta['added-delete-files'] - delta['removed-delete-files']],
    ['total-position-deletes', delta['added-position-deletes'] - delta['removed-position-deletes']],
    ['total-equality-deletes', delta['added-equality-deletes'] - delta['removed-equality-deletes']],
  ];
  for (const [key, change] of totals) {
    if (args.previous === undefined) {
      summary[key] = String(change);
      continue;
    }
    const before = args.previous[key];
    if (before === undefined || !/^-?\d+$/.test(before)) continue;
    summary[key] = String(Number(before) + change);
  }

  const partitions = new Set<string>();
  for (const f of [...added, ...removed]) partitions.add(partitionIdentity(f));
  summary['changed-partition-count'] = String(partitions.size);

  return { ...args.extra, ...summary, operation: args.operation };
}

/** A partition identity: spec plus values (bytes as hex so equal bytes compare equal). */
export function partitionIdentity(f: DataFile): string {
  const values = Object.entries(f.partition).map(([k, v]) => [k, v instanceof Uint8Array ? `0x${Buffer.from(v).toString('hex')}` : v]);
  return `${f['spec-id']}:${stringifyJson(values)}`;
}
