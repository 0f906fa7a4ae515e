import type { NestedField, Schema } from './iceberg/types.ts';
import type { RoaringBitmap64 } from './roaring.ts';

/**
 * What a reader hands the engine: the files to read and how to find the table's columns in them.
 * Both formats plan into this one shape, so one engine routine reads Iceberg and Delta alike.
 */
export interface ScanFile {
  /** Absolute URI of a Parquet data file. */
  path: string;
  /** Rows stored in the file, deleted ones included. */
  recordCount?: number;
  /**
   * Values of columns that are not (or need not be) stored in the file, keyed by field ID: Delta
   * partition columns, Iceberg identity partitions whose source column is missing from the file.
   * Values are in the engine-neutral form of `LiteralValue`.
   */
  constants?: Map<number, LiteralValue>;
  /** Row-level deletes that apply to this file; the engine drops the rows they match. */
  deletes?: ScanDeletes;
}

/**
 * The deletes a planner found for one data file, after its format's scoping rules (Iceberg
 * sequence numbers and partitions, Delta's one DV per logical file). A row is dropped when any
 * position source lists its position or any equality file matches it.
 */
export interface ScanDeletes {
  positions?: PositionDeletes[];
  equality?: EqualityDeleteFile[];
}

/** Positions (0-based, in the data file's row order) of deleted rows. */
export type PositionDeletes =
  /** Positions in memory: a Delta inline DV, or a vector already loaded. */
  | { kind: 'bitmap'; bitmap: RoaringBitmap64 }
  /**
   * A framed deletion vector at `offset` of the file `path` (absolute URI), `length` bytes: a
   * big-endian size, the magic and portable Roaring bitmap, a big-endian CRC-32 — Iceberg's
   * Puffin `deletion-vector-v1` blob and a DV in a Delta DV file alike. `cardinality` is what
   * the metadata says it holds.
   */
  | {
      kind: 'vector';
      path: string;
      offset: number;
      length: number;
      cardinality?: number;
      /**
       * An Iceberg DV's data file as the metadata names it: the Puffin footer names it too, and a
       * blob of another file (another table's Puffin put in this one's place) must not apply.
       */
      dataFile?: string;
    }
  /**
   * An Iceberg position delete file (Parquet with `file_path` and `pos`, spec §Position Delete
   * Files) at `path`: its rows whose `file_path` equals `dataFile`, the data file's location as
   * the table metadata names it.
   */
  | {
      kind: 'position-file';
      path: string;
      dataFile: string;
      /**
       * The metadata says the file holds deletes of `dataFile` alone (its referenced_data_file):
       * a row for any other file means another delete file is in its place.
       */
      only?: boolean;
    };

/**
 * An Iceberg equality delete file (Parquet, absolute URI): a row is deleted when its values equal
 * one of the file's rows on every column of `equalityIds`, null matching null (spec §Equality
 * Delete Files). Columns are found in the file like the data file's, by field ID or name.
 */
export interface EqualityDeleteFile {
  path: string;
  equalityIds: number[];
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
  /**
   * Every file is known to carry field IDs (a table Twinlake wrote), so the engine need not open
   * each footer to look for files written without them.
   */
  fieldIdsKnown?: boolean;
  /** field ID → name of that column in the data files (top-level and nested struct fields). */
  physicalNames: Map<number, string>;
  files: ScanFile[];
  /**
   * Top-level columns that are read from the data files but not returned: equality delete
   * columns that were dropped from the schema being read (spec §Equality Delete Files).
   */
  hiddenFields?: NestedField[];
  /** A row filter over the logical columns (DuckDB SQL), applied after the files are read. */
  filterSql?: string;
  /** What planning skipped, for `read --explain`. */
  explain?: ScanExplain;
  /**
   * The size each file the task names must have, as the table metadata records it, keyed by the
   * path as the task names it. A file of another size is truncated or another file put in its
   * place; reading it would give wrong rows or drop deletes without a word.
   */
  fileSizes?: Map<string, number>;
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
