import { checkColumnNames } from '../../core/names.ts';
import { invalidInput } from '../../core/errors.ts';
import { newUuid } from '../../core/ids.ts';
import { evolvePartitionSpec, parsePartitionSpec } from '../../format/iceberg/partition-spec-parser.ts';
import { assignFreshIds, evolveSchema, indexById, nameMapping, ROW_LINEAGE_FIELDS, typeToString, type SchemaChange } from '../../format/iceberg/schema.ts';
import { currentSchema, currentSnapshot, newTableMetadata, specById } from '../../format/iceberg/table-metadata.ts';
import type { PartitionSpec, Schema, StructType, TableMetadata } from '../../format/iceberg/types.ts';
import { applyUpdates, type TableRequirement, type TableUpdate } from '../../format/iceberg/updates.ts';
import { checkDeltaPartitioning, checkIdentityUnchanged } from '../../format/dual/delta-partitioning.ts';
import { assignPhysicalNames } from '../../format/dual/physical-names.ts';
import { schedulesOfProperties } from '../../format/dual/maintenance-schedule.ts';
import type { TableContext } from '../table-context.ts';
import { identString } from '../table-context.ts';
import {
  boolProp,
  DEFAULT_TARGET_FILE_SIZE,
  intProp,
  parseFormats,
  Props,
  readPhysicalNames,
  rowChangeStrategy,
  tableFormats,
  writePhysicalNames,
} from '../../format/dual/table-properties.ts';
import type { WriteOptions } from './writer.ts';

/**
 * The table a batch is written against: its schema with field IDs (evolved by the batch), the
 * physical column names, the partition spec (evolved by `--partition`), and — when a concurrent
 * commit won — whether the batch still fits the new metadata or must be prepared again.
 */

/** The table's schema for this batch, with field IDs, and what else changes with it. */
export interface SchemaPlan {
  schema: Schema;
  lastColumnId: number;
  schemaChanged: boolean;
  /** Columns this batch adds and types it widens (none for a new table). */
  schemaChanges: SchemaChange[];
  physicalNames: Map<number, string>;
  /** Set when the table does not exist yet: its metadata before the first snapshot. */
  newTable?: TableMetadata;
  location: string;
  targetFileSize: number;
  /** The spec this batch is written with. */
  spec: PartitionSpec;
  /** add-spec / set-default-spec when this write evolves the partitioning. */
  specUpdates: TableUpdate[];
}

export function planSchema(ctx: TableContext, metadata: TableMetadata | undefined, incoming: StructType, opts: WriteOptions): SchemaPlan {
  checkColumnNames(incoming, `table ${identString(ctx.ident)}`);
  if (!metadata) {
    let next = 1;
    const fresh = assignFreshIds(incoming, () => next++);
    const schema: Schema = { ...fresh, 'schema-id': 0 };
    const physicalNames = assignPhysicalNames(schema, new Map());
    const formats = parseFormats(opts.formats ?? ['iceberg', 'delta']);
    const { [Props.formatVersion]: requestedVersion, ...given } = opts.properties ?? {};
    const formatVersion = creationFormatVersion(requestedVersion, given);
    const properties: Record<string, string> = {
      [Props.formats]: formats.join(','),
      ...given,
      [Props.physicalNames]: writePhysicalNames(physicalNames),
      [Props.nameMapping]: JSON.stringify(nameMapping(schema, physicalNames)),
    };
    for (const op of ['merge', 'delete'] as const) rowChangeStrategy({ properties, 'format-version': formatVersion } as TableMetadata, op);
    schedulesOfProperties(properties);
    checkLineageNames(schema, formatVersion);
    const spec = opts.partition !== undefined ? parsePartitionSpec(opts.partition, schema, { specId: 0, lastPartitionId: 999 }) : { 'spec-id': 0, fields: [] };
    if (formats.includes('delta')) checkDeltaPartitioning(spec, schema);
    const newTable = newTableMetadata({
      location: ctx.location,
      schema,
      partitionSpec: spec,
      properties,
      formatVersion,
      tableUuid: newUuid(),
      nowMs: ctx.clock.nowMs(),
      lastColumnId: next - 1,
    });
    return {
      schema,
      lastColumnId: next - 1,
      schemaChanged: false,
      schemaChanges: [],
      physicalNames,
      newTable,
      location: ctx.location,
      targetFileSize: intProp(properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
      spec: specById(newTable, newTable['default-spec-id']),
      specUpdates: [],
    };
  }
  const current = currentSchema(metadata);
  const nextSchemaId = Math.max(...metadata.schemas.map((s) => s['schema-id'])) + 1;
  const evolved = evolveSchema(current, incoming, metadata['last-column-id'], {
    allowEvolution: boolProp(metadata.properties, Props.schemaEvolution, true),
    newSchemaId: nextSchemaId,
  });
  const known = new Set(current.fields.map((f) => f.id));
  checkLineageNames({ ...evolved.schema, fields: evolved.schema.fields.filter((f) => !known.has(f.id)) }, metadata['format-version']);
  let spec = specById(metadata, metadata['default-spec-id']);
  const specUpdates: TableUpdate[] = [];
  if (opts.partition !== undefined) {
    const wanted = parsePartitionSpec(opts.partition, { ...evolved.schema }, { lastPartitionId: metadata['last-partition-id'] });
    const next = evolvePartitionSpec(
      { specs: metadata['partition-specs'], lastPartitionId: metadata['last-partition-id'], defaultSpecId: metadata['default-spec-id'], formatVersion: metadata['format-version'] },
      wanted,
    );
    if (next.changed) {
      if (tableFormats(metadata.properties).includes('delta')) checkIdentityUnchanged(spec, next.spec, evolved.schema);
      if (next.isNew) specUpdates.push({ action: 'add-spec', spec: next.spec });
      specUpdates.push({ action: 'set-default-spec', 'spec-id': next.spec['spec-id'] });
      spec = next.spec;
    }
  }
  return {
    schema: evolved.schema,
    lastColumnId: evolved.lastColumnId,
    schemaChanged: evolved.changed,
    schemaChanges: evolved.changes,
    physicalNames: assignPhysicalNames(evolved.schema, readPhysicalNames(metadata)),
    location: metadata.location,
    targetFileSize: intProp(metadata.properties, Props.targetFileSize, DEFAULT_TARGET_FILE_SIZE),
    spec,
    specUpdates,
  };
}

/**
 * v3 tables carry row lineage in columns named `_row_id` and `_last_updated_sequence_number`
 * (spec §Row Lineage) when rows move between files; a new table column may not take those names.
 */
function checkLineageNames(schema: Schema, formatVersion: number): void {
  if (formatVersion < 3) return;
  for (const f of schema.fields) {
    if (ROW_LINEAGE_FIELDS.some((l) => l.name === f.name)) {
      throw invalidInput(`schema: column ${f.name} is reserved for row lineage in Iceberg v3 tables; rename it or use a v2 table (format-version=2)`);
    }
  }
}

/**
 * The Iceberg format version a new table is created with: `format-version` 2 or 3; by default 2,
 * or 3 when the table asks for merge-on-read, whose deletion vectors v3 holds (DESIGN.md §1).
 */
function creationFormatVersion(raw: string | undefined, properties: Record<string, string>): 2 | 3 {
  if (raw === undefined) {
    const asksForDvs = properties[Props.mergeMode] === 'merge-on-read' || properties[Props.deleteMode] === 'merge-on-read';
    return asksForDvs ? 3 : 2;
  }
  if (raw === '2' || raw === '3') return Number(raw) as 2 | 3;
  throw invalidInput(`table property ${Props.formatVersion}: expected 2 or 3, found ${JSON.stringify(raw)}`);
}

/**
 * Requirements and schema updates for committing this batch on `metadata`. Undefined when the
 * batch's field IDs no longer match the table (a concurrent writer added the same column with
 * another ID), so the batch must be encoded again.
 */
export function rebasePlan(ctx: TableContext, plan: SchemaPlan, metadata: TableMetadata, opts: WriteOptions):
  | { updates: TableUpdate[]; requirements: TableRequirement[]; metadataForSnapshot: TableMetadata }
  | undefined {
  const fresh = planSchema(ctx, metadata, plan.schema, { partition: opts.partition });
  if (!sameColumns(plan.schema, fresh)) return undefined;
  // Files were split by the spec they were encoded with; a concurrent partition change means again.
  if (!sameSpec(plan.spec, fresh.spec)) return undefined;
  const parent = currentSnapshot(metadata);
  const requirements: TableRequirement[] = [
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': parent ? parent['snapshot-id'] : null },
    { type: 'assert-current-schema-id', 'current-schema-id': metadata['current-schema-id'] },
    { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': metadata['last-column-id'] },
    { type: 'assert-default-spec-id', 'default-spec-id': metadata['default-spec-id'] },
  ];
  const updates: TableUpdate[] = [...fresh.specUpdates];
  if (fresh.schemaChanged) {
    updates.push({ action: 'add-schema', schema: fresh.schema, 'last-column-id': fresh.lastColumnId });
    updates.push({ action: 'set-current-schema', 'schema-id': -1 });
    updates.push({
      action: 'set-properties',
      updates: {
        [Props.physicalNames]: writePhysicalNames(fresh.physicalNames),
        [Props.nameMapping]: JSON.stringify(nameMapping(fresh.schema, fresh.physicalNames)),
      },
    });
  }
  // The snapshot's manifests are written against the schema it will carry.
  const metadataForSnapshot = updates.length ? applyUpdates(metadata, updates, { nowMs: ctx.clock.nowMs() }) : metadata;
  return { updates, requirements, metadataForSnapshot };
}

function sameSpec(a: PartitionSpec, b: PartitionSpec): boolean {
  const key = (s: PartitionSpec) => JSON.stringify(s.fields.map((f) => [f['field-id'], f['source-id'], f.transform, f.name]));
  return key(a) === key(b);
}

/** Every column the batch was encoded with still has the same field ID and name in `plan`. */
function sameColumns(encoded: Schema, plan: SchemaPlan): boolean {
  const after = indexById(plan.schema);
  for (const [id, { path, field }] of indexById(encoded)) {
    const now = after.get(id);
    if (!now || now.path.join('.') !== path.join('.')) return false;
    if (typeof field.type === 'string' && typeToString(now.field.type) !== typeToString(field.type)) {
      // A widened type (int → long) still reads the file correctly; anything else does not.
      if (!(field.type === 'int' && now.field.type === 'long') && !(field.type === 'float' && now.field.type === 'double')) return false;
    }
  }
  return true;
}
