import { invalidInput, unsupported } from '../../core/errors.ts';
import { toDeltaSchema } from '../delta/schema.ts';
import { indexById } from '../iceberg/schema.ts';
import { currentSchema, specById } from '../iceberg/table-metadata.ts';
import type { DataFile, PartitionSpec, Schema, TableMetadata } from '../iceberg/types.ts';
import { readPhysicalNames } from './table-properties.ts';

/**
 * What Delta's partitioning can hold of an Iceberg partition spec (DESIGN.md §4): the identity
 * fields become Delta partition columns, every other transform is Iceberg's alone.
 */

/**
 * Delta partition columns are the identity-partitioned source columns (DESIGN.md §4); Delta can
 * partition only by top-level primitive columns.
 */
export function checkDeltaPartitioning(spec: PartitionSpec, schema: Schema): void {
  const index = indexById(schema);
  for (const f of spec.fields) {
    if (f.transform !== 'identity') continue;
    const source = index.get(f['source-id']);
    if (source && source.path.length > 1) {
      throw invalidInput(`partition ${f.name}: Delta tables can partition by top-level columns only, found identity(${source.path.join('.')}); use --formats iceberg or another transform`);
    }
  }
}

/** Delta's partition columns cannot change once set: a dual-format table keeps its identity set. */
export function checkIdentityUnchanged(before: PartitionSpec, after: PartitionSpec, schema: Schema): void {
  const ids = (s: PartitionSpec) => s.fields.filter((f) => f.transform === 'identity').map((f) => f['source-id']).sort((a, b) => a - b).join(',');
  if (ids(before) !== ids(after)) {
    const names = (s: PartitionSpec) => {
      const index = indexById(schema);
      const list = s.fields.filter((f) => f.transform === 'identity').map((f) => index.get(f['source-id'])?.path.join('.') ?? `#${f['source-id']}`);
      return list.length ? list.join(', ') : 'none';
    };
    throw invalidInput(
      `partition: Delta partition columns cannot change once set, and this table keeps Delta: identity columns are ${names(before)}, the new spec has ${names(after)}; other transforms may change freely`,
    );
  }
  checkDeltaPartitioning(after, schema);
}

/**
 * The first identity partition field of a string column that holds an empty string in `files`,
 * if any: Delta reads an empty partition string back as null (PROTOCOL.md §Partition Value
 * Serialization), so Iceberg and Delta would disagree on those rows.
 */
export function emptyStringPartition(spec: PartitionSpec, schema: Schema, files: readonly DataFile[]): { field: string; column: string } | undefined {
  const index = indexById(schema);
  for (const f of spec.fields) {
    const source = index.get(f['source-id']);
    if (f.transform !== 'identity' || source?.field.type !== 'string') continue;
    if (files.some((d) => d.partition[f.name] === '')) return { field: f.name, column: source.path.join('.') };
  }
  return undefined;
}

/**
 * Adding Delta projects the current snapshot as Delta version 0 (alter, and register of another
 * engine's table): what that single version cannot express yet is refused rather than projected
 * wrongly. `live` is the current snapshot's live files (undefined for a table without
 * snapshots); `what` starts the messages (`alter ns.t`).
 */
export function checkDeltaCanHold(
  metadata: TableMetadata,
  live: { data: readonly DataFile[]; deletes: readonly DataFile[] } | undefined,
  what: string,
  opts: { physicalNames?: Map<number, string>; rowDeletes?: boolean } = {},
): void {
  const schema = currentSchema(metadata);
  toDeltaSchema(schema, opts.physicalNames ?? readPhysicalNames(metadata)); // types without a Delta twin are refused here
  const spec = specById(metadata, metadata['default-spec-id']);
  checkDeltaPartitioning(spec, schema);
  if (!live) return;
  if (live.deletes.length > 0 && !opts.rowDeletes) {
    throw unsupported(`${what}: adding Delta to a table with row-level deletes (${live.deletes.length} delete file(s)) is not supported yet; rewrite them first (copy-on-write)`);
  }
  if (live.data.some((f) => f['spec-id'] !== spec['spec-id'])) {
    throw unsupported(`${what}: adding Delta to a table whose files were written with an older partition spec is not supported yet`);
  }
  const empty = emptyStringPartition(spec, schema, live.data);
  if (empty) throw invalidInput(`${what}: partition ${empty.field} holds an empty string, which Delta reads back as null; the table cannot keep Delta`);
}
