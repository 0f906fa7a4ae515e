import type { Metadata } from '../delta/actions.ts';
import { serializePartitionValue } from '../delta/partition-values.ts';
import { toDeltaSchema } from '../delta/schema.ts';
import { specById } from '../iceberg/table-metadata.ts';
import type { DataFile, Schema, TableMetadata } from '../iceberg/types.ts';
import type { LiteralValue } from '../scan-task.ts';
import { intProp, Props, readPhysicalNames } from './table-properties.ts';

/**
 * Delta `metaData` for an Iceberg schema. The Delta table id is the Iceberg table UUID; column
 * mapping is always on (PROTOCOL.md §Column Mapping: mode `name`, physical names from
 * `twinlake.column-physical-names`, `delta.columnMapping.maxColumnId` Iceberg's last column id,
 * which also counts the ids of dropped columns, so a Delta writer never reuses one).
 */
export function deltaMetadata(metadata: TableMetadata, schema: Schema, createdTime: number, deletionVectors = false): Metadata {
  const physicalNames = readPhysicalNames(metadata);
  return {
    id: metadata['table-uuid'],
    format: { provider: 'parquet', options: {} },
    schemaString: JSON.stringify(toDeltaSchema(schema, physicalNames)),
    partitionColumns: identityColumns(metadata, schema).map((c) => c.name),
    configuration: {
      'delta.columnMapping.mode': 'name',
      'delta.columnMapping.maxColumnId': String(metadata['last-column-id']),
      'delta.checkpointInterval': String(checkpointInterval(metadata)),
      ...(deletionVectors ? { 'delta.enableDeletionVectors': 'true' } : {}),
      // Delta readers and writers honour the log retention the table promises (alter sets it).
      ...(metadata.properties[Props.deltaLogRetention] !== undefined ? { [Props.deltaLogRetention]: metadata.properties[Props.deltaLogRetention]! } : {}),
    },
    createdTime,
  };
}

export function checkpointInterval(metadata: TableMetadata): number {
  return intProp(metadata.properties, Props.deltaCheckpointInterval, 10);
}

export interface IdentityColumn {
  /** The source column's (logical) name: Delta's `partitionColumns` entry. */
  name: string;
  fieldId: number;
  /** The Iceberg partition field's name: the key of a data file's `partition` tuple. */
  partitionField: string;
  type: string;
}

/**
 * Delta partition columns: the identity-partitioned source columns of the default spec
 * (DESIGN.md §4). Other transforms (bucket, truncate, day, …) have no Delta column: Delta data
 * files are not partitioned by them, and queries on them are served by per-file stats.
 */
export function identityColumns(metadata: TableMetadata, schema: Schema): IdentityColumn[] {
  const spec = specById(metadata, metadata['default-spec-id']);
  const out: IdentityColumn[] = [];
  for (const f of spec.fields) {
    if (f.transform !== 'identity') continue;
    const source = schema.fields.find((c) => c.id === f['source-id']);
    if (source && typeof source.type === 'string') out.push({ name: source.name, fieldId: source.id, partitionField: f.name, type: source.type });
  }
  return out;
}

/**
 * `partitionValues` of a table's data files, keyed by the columns' physical names
 * (PROTOCOL.md §Writer Requirements for Column Mapping: "Track partition values, column level
 * statistics … with the physical name of the column"); a null partition value stays null
 * (§Partition Value Serialization).
 */
export function partitionValuesOf(metadata: TableMetadata, schema: Schema, physicalNames: Map<number, string>): (file: DataFile) => Record<string, string | null> {
  const columns = identityColumns(metadata, schema);
  return (file) => {
    const out: Record<string, string | null> = {};
    for (const c of columns) {
      const value = (file.partition[c.partitionField] ?? null) as LiteralValue;
      out[physicalNames.get(c.fieldId) ?? c.name] = serializePartitionValue(value, c.type, c.name);
    }
    return out;
  };
}

/** The schema the table was created with (the one Delta version 0 holds). */
export function initialSchema(metadata: TableMetadata): Schema {
  return metadata.schemas.reduce((a, b) => (a['schema-id'] <= b['schema-id'] ? a : b));
}
