/**
 * Twinlake: write Parquet once, commit it as an Apache Iceberg table and a Delta Lake table at the
 * same time.
 *
 * @example
 * import { Lakehouse } from 'twinlake';
 *
 * const lake = await Lakehouse.open({ warehouse: './warehouse' });
 * const events = lake.table('analytics.events');
 * const result = await events.append([
 *   { id: 1, ts: '2026-01-01T10:00:00Z', user: 'ada', amount: 12.5 },
 *   { id: 2, ts: '2026-01-01T10:00:01Z', user: 'linus', amount: 3 },
 * ]);
 * console.log(result.snapshotId, result.deltaVersion);
 * console.log(await events.read({ format: 'delta' }));
 * await lake.close();
 */
export { Lakehouse, type LakehouseOptions, type TableSummary } from './table/lakehouse.ts';
export { Table, type ReadOptions, type HistoryEntry, type TableDescription } from './table/table.ts';
export type { WriteOptions, WriteResult, WriteMode } from './table/write/writer.ts';
export type { AddFilesOptions, AddFilesResult } from './table/write/add-files.ts';
export type { WriteTxn, TxnResult } from './format/dual/write-txn.ts';
export type { SchemaChange } from './format/iceberg/schema.ts';
export type { DeleteOptions, MergeOptions, MergeResult } from './table/merge/merge.ts';
export type { AlterOptions, AlterResult } from './table/manage/alter.ts';
export type { RegisterResult } from './table/manage/register.ts';
export type { LiveFiles, LiveFile, LiveDelete } from './table/read/live-files.ts';
export type { VerifyOptions, VerifyResult, Finding, FindingKind } from './table/manage/verify.ts';
export type { WriteInput, InputFormat, Row } from './table/write/input.ts';
export { interruptWrites } from './table/write/interrupt.ts';
export type { ReadPlan, ReadFormat, TimeTravel } from './table/read/reader.ts';
export type { TableFormat } from './format/dual/table-properties.ts';
export { TwinlakeError, type ErrorKind } from './core/errors.ts';
export type { EngineOptions, EngineSettings } from './engine/engine-settings.ts';
export type { Catalog, TableIdentifier } from './catalog/catalog.ts';
export { SqlCatalog } from './catalog/sql-catalog.ts';
export { DeltaRegistry } from './catalog/delta-registry.ts';
export { openSqlCatalog, type OpenSqlCatalogOptions, type OpenedSqlCatalog } from './catalog/open-sql-catalog.ts';
export type { ObjectStore, ObjectMeta } from './io/object-store.ts';
export { storeForLocation, type StorageOptions } from './io/store-for-uri.ts';
export type { S3Options } from './io/s3-store.ts';
export type { AzureOptions } from './io/azure-store.ts';
export { LocalStore } from './io/local-store.ts';
export { MemoryStore } from './io/memory-store.ts';
export type { Schema, StructType, NestedField, IcebergType, TableMetadata, Snapshot } from './format/iceberg/types.ts';
