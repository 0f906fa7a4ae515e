import type { Schema } from './iceberg/types.ts';

/**
 * What a reader hands the engine: the files to read and how to find the table's columns in them.
 * Both formats plan into this one shape, so one engine routine reads Iceberg and Delta alike.
 */
export interface ScanFile {
  /** Absolute URI of a Parquet data file. */
  path: string;
  recordCount?: number;
  /**
   * Values of columns that are not (or need not be) stored in the file, keyed by field ID: Delta
   * partition columns, Iceberg identity partitions whose source column is missing from the file.
   * Values are in the engine-neutral form of `LiteralValue`.
   */
  constants?: Map<number, LiteralValue>;
}

/**
 * How a schema column is found in a data file:
 * - `field-id`: by the Parquet `field_id` (Iceberg; Delta column mapping mode `id`), falling back
 *   to `nameMapping`/`physicalNames` for files written without field IDs;
 * - `name`: by the physical column name in `physicalNames` (Delta column mapping mode `name`, or
 *   the logical name when a Delta table has no column mapping).
 */
export type ColumnResolution = 'field-id' | 'name';

export interface ScanTask {
  /** The logical schema to return (names as the user sees them, field IDs as the table assigns). */
  schema: Schema;
  resolution: ColumnResolution;
  /** field ID → name of that column in the data files (top-level and nested struct fields). */
  physicalNames: Map<number, string>;
  files: ScanFile[];
  /** A row filter over the logical columns (DuckDB SQL), applied after the files are read. */
  filterSql?: string;
  /** What planning skipped, for `read --explain`. */
  explain?: ScanExplain;
}

export interface ScanExplain {
  manifests: number;
  manifestsSkipped: number;
  files: number;
  filesSkipped: number;
}

/**
 * A typed value outside the data files (partition values, defaults): `null`, boolean, number,
 * bigint (long), string (string, decimal as text, uuid), Uint8Array (binary/fixed); dates as days
 * since epoch (number), timestamps as microseconds since epoch (bigint), time as microseconds.
 */
export type LiteralValue = null | boolean | number | bigint | string | Uint8Array;
