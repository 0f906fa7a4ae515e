/**
 * The Iceberg table model, in the shapes of the spec's JSON serialization (Appendix C), so a
 * parsed metadata file is usable as is. Snapshot IDs are `bigint` everywhere (they exceed 2^53).
 */

export type PrimitiveType =
  | 'boolean'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'date'
  | 'time'
  | 'timestamp'
  | 'timestamptz'
  | 'timestamp_ns'
  | 'timestamptz_ns'
  | 'string'
  | 'uuid'
  | 'binary'
  | 'unknown'
  | 'variant'
  | `decimal(${number}, ${number})`
  | `fixed[${number}]`
  | (string & {}); // geometry(...), geography(...) and future types pass through

export interface NestedField {
  id: number;
  name: string;
  required: boolean;
  type: IcebergType;
  doc?: string;
  'initial-default'?: unknown;
  'write-default'?: unknown;
}

export interface StructType {
  type: 'struct';
  fields: NestedField[];
}

export interface ListType {
  type: 'list';
  'element-id': number;
  element: IcebergType;
  'element-required': boolean;
}

export interface MapType {
  type: 'map';
  'key-id': number;
  key: IcebergType;
  'value-id': number;
  value: IcebergType;
  'value-required': boolean;
}

export type IcebergType = PrimitiveType | StructType | ListType | MapType;

export interface Schema extends StructType {
  'schema-id': number;
  'identifier-field-ids'?: number[];
}

export type Transform = string; // 'identity' | 'year' | ... | 'bucket[16]' | 'truncate[4]' | 'void'

export interface PartitionField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: Transform;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

export interface SortField {
  transform: Transform;
  'source-id': number;
  direction: 'asc' | 'desc';
  'null-order': 'nulls-first' | 'nulls-last';
}

export interface SortOrder {
  'order-id': number;
  fields: SortField[];
}

export type Operation = 'append' | 'replace' | 'overwrite' | 'delete';

export interface Snapshot {
  'snapshot-id': bigint;
  'parent-snapshot-id'?: bigint;
  'sequence-number': number;
  'timestamp-ms': number;
  'manifest-list': string;
  summary: { operation: Operation } & Record<string, string>;
  'schema-id'?: number;
  'first-row-id'?: number;
  'added-rows'?: number;
}

export interface SnapshotRef {
  'snapshot-id': bigint;
  type: 'branch' | 'tag';
  'max-ref-age-ms'?: number;
  'max-snapshot-age-ms'?: number;
  'min-snapshots-to-keep'?: number;
}

export interface SnapshotLogEntry {
  'timestamp-ms': number;
  'snapshot-id': bigint;
}

export interface MetadataLogEntry {
  'timestamp-ms': number;
  'metadata-file': string;
}

export interface TableMetadata {
  'format-version': 1 | 2 | 3;
  'table-uuid': string;
  location: string;
  'last-sequence-number': number;
  'last-updated-ms': number;
  'last-column-id': number;
  schemas: Schema[];
  'current-schema-id': number;
  'partition-specs': PartitionSpec[];
  'default-spec-id': number;
  'last-partition-id': number;
  properties: Record<string, string>;
  'current-snapshot-id'?: bigint | null;
  snapshots: Snapshot[];
  'snapshot-log': SnapshotLogEntry[];
  'metadata-log': MetadataLogEntry[];
  'sort-orders': SortOrder[];
  'default-sort-order-id': number;
  refs: Record<string, SnapshotRef>;
  statistics?: unknown[];
  'partition-statistics'?: unknown[];
  'next-row-id'?: number;
  // v1 only fields, kept when read
  schema?: StructType;
  'partition-spec'?: PartitionField[];
}

/** Manifest content and entry status codes (spec §Manifests). */
export const enum ManifestContent { Data = 0, Deletes = 1 }
export const enum EntryStatus { Existing = 0, Added = 1, Deleted = 2 }
export const enum DataFileContent { Data = 0, PositionDeletes = 1, EqualityDeletes = 2 }

/** A partition tuple: values keyed by partition field name, in spec order. */
export type PartitionTuple = Record<string, unknown>;

/** spec §Data File Fields. Maps keyed by field ID; bounds in single-value binary form. */
export interface DataFile {
  content: DataFileContent;
  'file-path': string;
  'file-format': 'PARQUET' | 'AVRO' | 'ORC' | 'PUFFIN';
  partition: PartitionTuple;
  'record-count': number;
  'file-size-in-bytes': number;
  'column-sizes'?: Map<number, number>;
  'value-counts'?: Map<number, number>;
  'null-value-counts'?: Map<number, number>;
  'nan-value-counts'?: Map<number, number>;
  'lower-bounds'?: Map<number, Uint8Array>;
  'upper-bounds'?: Map<number, Uint8Array>;
  'key-metadata'?: Uint8Array;
  'split-offsets'?: number[];
  'equality-ids'?: number[];
  'sort-order-id'?: number;
  'first-row-id'?: number;
  'referenced-data-file'?: string;
  'content-offset'?: number;
  'content-size-in-bytes'?: number;
  /** Not part of the Avro file: which spec the manifest was written with. */
  'spec-id': number;
}

export interface ManifestEntry {
  status: EntryStatus;
  'snapshot-id'?: bigint; // null → inherited from the manifest
  'sequence-number'?: number; // null → inherited
  'file-sequence-number'?: number;
  'data-file': DataFile;
}

export interface FieldSummary {
  'contains-null': boolean;
  'contains-nan'?: boolean;
  'lower-bound'?: Uint8Array;
  'upper-bound'?: Uint8Array;
}

/** spec §Manifest Lists: one entry per manifest. */
export interface ManifestFile {
  'manifest-path': string;
  'manifest-length': number;
  'partition-spec-id': number;
  content: ManifestContent;
  'sequence-number': number;
  'min-sequence-number': number;
  'added-snapshot-id': bigint;
  'added-files-count': number;
  'existing-files-count': number;
  'deleted-files-count': number;
  'added-rows-count': number;
  'existing-rows-count': number;
  'deleted-rows-count': number;
  partitions?: FieldSummary[];
  'key-metadata'?: Uint8Array;
  'first-row-id'?: number;
}
