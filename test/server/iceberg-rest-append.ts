import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileUri, localPath } from '../../src/core/uri.ts';
import { stringifyJson } from '../../src/core/json.ts';
import { currentSchema, currentSnapshot, snapshotToJson } from '../../src/format/iceberg/table-metadata.ts';
import type { Snapshot } from '../../src/format/iceberg/types.ts';
import { liveFiles } from '../../src/table/read/iceberg-scan.ts';
import { SnapshotProducer } from '../../src/table/commit/snapshot-producer.ts';
import type { Lakehouse } from '../../src/index.ts';

let scratch = 0;

/**
 * What another engine's append sends a REST catalog: a Parquet file in the table's `data/`, its
 * manifest and manifest list, and the snapshot naming them (committed by the caller, through REST).
 * The Parquet file is written by a scratch table (field IDs 1.. as the REST table's schema has
 * them) and copied; the snapshot summary has none of Twinlake's keys. `snapshotId` stays below
 * 2^53 so JavaScript clients carry it exactly.
 */
export async function foreignAppend(lake: Lakehouse, table: { namespace: string[]; name: string }, rows: Record<string, unknown>[], snapshotId: bigint): Promise<{ snapshot: Snapshot; json: any }> {
  const name = `scratch.s${scratch++}`;
  await lake.table(name).append(rows);
  const source = await lake.table(name).metadata();
  const [file] = (await liveFiles(lake.io, source, currentSnapshot(source)!)).data;
  const { metadata } = await lake.catalog.loadTable(table);
  const dir = join(localPath(metadata.location), 'data');
  mkdirSync(dir, { recursive: true });
  const dest = join(dir, `foreign-${snapshotId}.parquet`);
  copyFileSync(localPath(file!['file-path']), dest);
  const producer = new SnapshotProducer(lake.io, snapshotId, { operation: 'append', added: [{ ...file!, 'file-path': fileUri(dest) }], replaceAll: false });
  const produced = await producer.produce(metadata, metadata['last-updated-ms'] + 1, { schema: currentSchema(metadata), summaryExtra: { 'engine-name': 'iceberg-js' } });
  const json = JSON.parse(stringifyJson(snapshotToJson(produced.snapshot, metadata['format-version'])));
  return { snapshot: produced.snapshot, json };
}

/** The updates of an append of `snapshot` on main, as a client sends them. */
export function appendUpdatesJson(json: any): any[] {
  return [
    { action: 'add-snapshot', snapshot: json },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': json['snapshot-id'] },
  ];
}

export const SCHEMA = {
  type: 'struct' as const,
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', type: 'long', required: false },
    { id: 2, name: 'name', type: 'string', required: false },
  ],
};
