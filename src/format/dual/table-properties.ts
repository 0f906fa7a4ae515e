import { invalidInput, unsupported } from '../../core/errors.ts';
import { parseJson, stringifyJson } from '../../core/json.ts';
import type { TableMetadata } from '../iceberg/types.ts';
import { schedulesOfProperties } from './maintenance-schedule.ts';

/** Table properties Twinlake reads, with their defaults. Iceberg's own names where one exists. */
export const Props = {
  /** `iceberg,delta` (default), `iceberg` or `delta`. */
  formats: 'twinlake.formats',
  /** Evolve the schema from incoming batches (`true`) or refuse any difference (`false`). */
  schemaEvolution: 'twinlake.schema-evolution.enabled',
  /** Field ID → physical (Parquet) column name, JSON; see DESIGN.md §2. */
  physicalNames: 'twinlake.column-physical-names',
  /** `true` once files written elsewhere without field IDs were added (add-files): reads resolve them by name. */
  filesWithoutFieldIds: 'twinlake.files-without-field-ids',
  targetFileSize: 'write.target-file-size-bytes',
  parquetCompression: 'write.parquet.compression-codec',
  manifestMinCountToMerge: 'commit.manifest.min-count-to-merge',
  manifestMergeEnabled: 'commit.manifest-merge.enabled',
  avroCompression: 'write.avro.compression-codec',
  /** Iceberg's commit retry settings; see commit-retry.ts for how they are used and Twinlake's defaults. */
  commitRetries: 'commit.retry.num-retries',
  commitMinWaitMs: 'commit.retry.min-wait-ms',
  commitMaxWaitMs: 'commit.retry.max-wait-ms',
  commitTotalTimeoutMs: 'commit.retry.total-timeout-ms',
  nameMapping: 'schema.name-mapping.default',
  deltaCheckpointInterval: 'delta.checkpointInterval',
  /** How long the Delta log keeps versions (`interval 30 days`); snapshot expiry keeps as long for both formats. */
  deltaLogRetention: 'delta.logRetentionDuration',
  /** How merges change rows: `copy-on-write` (default) or `merge-on-read` (deletion vectors). */
  mergeMode: 'write.merge.mode',
  /** How deletes by predicate remove rows: `copy-on-write` (default) or `merge-on-read`. */
  deleteMode: 'write.delete.mode',
  /** A creation-time choice, not stored as a property (spec §Reserved properties): 2 (default) or 3. */
  formatVersion: 'format-version',
} as const;

export type RowChangeStrategy = 'copy-on-write' | 'merge-on-read';

/**
 * The strategy a merge or delete uses: the caller's choice, else the table's `write.merge.mode` /
 * `write.delete.mode`. Merge-on-read needs row-level deletes, which Iceberg v1 cannot hold.
 */
export function rowChangeStrategy(metadata: TableMetadata, op: 'merge' | 'delete', requested?: string): RowChangeStrategy {
  const key = op === 'merge' ? Props.mergeMode : Props.deleteMode;
  const raw = requested ?? metadata.properties[key];
  const strategy = checkStrategy(raw, requested !== undefined ? `${op} strategy` : `table property ${key}`);
  const where = requested !== undefined ? `${op} strategy` : `table property ${key}`;
  if (strategy === 'merge-on-read' && metadata['format-version'] < 2) {
    throw invalidInput(
      `${where}: merge-on-read writes row-level deletes, which an Iceberg v${metadata['format-version']} table cannot hold; use copy-on-write or a v2/v3 table`,
    );
  }
  return strategy;
}

/** A strategy name, checked (undefined is the default, copy-on-write). */
export function checkStrategy(raw: string | undefined, where: string): RowChangeStrategy {
  if (raw === undefined) return 'copy-on-write';
  if (raw !== 'copy-on-write' && raw !== 'merge-on-read') throw invalidInput(`${where}: expected copy-on-write or merge-on-read, found ${JSON.stringify(raw)}`);
  return raw;
}

export type TableFormat = 'iceberg' | 'delta';

export const DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024;

export function tableFormats(props: Record<string, string>): TableFormat[] {
  const raw = props[Props.formats] ?? 'iceberg,delta';
  return parseFormats(raw);
}

export function parseFormats(raw: string | string[]): TableFormat[] {
  const list = (Array.isArray(raw) ? raw : raw.split(',')).map((s) => s.trim().toLowerCase()).filter(Boolean);
  const out: TableFormat[] = [];
  for (const f of list) {
    if (f !== 'iceberg' && f !== 'delta') throw invalidInput(`table: formats must be iceberg and/or delta, found ${JSON.stringify(f)}`);
    if (!out.includes(f)) out.push(f);
  }
  if (out.length === 0) throw invalidInput('table: at least one format (iceberg, delta) must be enabled');
  return out.sort();
}

export function intProp(props: Record<string, string>, key: string, fallback: number): number {
  const raw = props[key];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw invalidInput(`table property ${key}: expected a positive number, found ${JSON.stringify(raw)}`);
  return Math.floor(n);
}

export function boolProp(props: Record<string, string>, key: string, fallback: boolean): boolean {
  const raw = props[key];
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw invalidInput(`table property ${key}: expected true or false, found ${JSON.stringify(raw)}`);
}

export function readPhysicalNames(metadata: TableMetadata): Map<number, string> {
  const raw = metadata.properties[Props.physicalNames];
  const out = new Map<number, string>();
  if (!raw) return out;
  const obj = parseJson(raw, `table property ${Props.physicalNames}`) as Record<string, string>;
  for (const [k, v] of Object.entries(obj)) out.set(Number(k), v);
  return out;
}

export function writePhysicalNames(names: Map<number, string>): string {
  const obj: Record<string, string> = {};
  for (const [k, v] of [...names].sort((a, b) => a[0] - b[0])) obj[String(k)] = v;
  return stringifyJson(obj);
}

/**
 * Formats and properties given to a write are creation options: on an existing table they must
 * match what the table has (repeating them is fine, so one pipeline command creates and appends),
 * and a different value is an error that points to `alter` instead of being silently ignored.
 */
export function checkCreationOptions(
  table: string,
  current: { formats: TableFormat[]; properties: Record<string, string>; formatVersion?: number },
  opts: { formats?: TableFormat[] | string; properties?: Record<string, string> },
): void {
  if (opts.formats !== undefined) {
    const wanted = parseFormats(opts.formats);
    if (wanted.join() !== current.formats.join()) {
      // alter cannot give a Delta-only table Iceberg metadata: pointing there would only fail again.
      if (current.formats.join() === 'delta' && wanted.includes('iceberg')) {
        throw unsupported(`table ${table}: keeps delta only, and this write asks for formats ${wanted.join(',')}; adding Iceberg to a Delta-only table is not supported`);
      }
      throw invalidInput(
        `table ${table}: keeps ${current.formats.join(',')}, and this write asks for formats ${wanted.join(',')}; formats are changed with \`twinlake alter ${table} --formats ${wanted.join(',')}\` (table.alter({ formats }))`,
      );
    }
  }
  for (const [key, value] of Object.entries(opts.properties ?? {})) {
    const has = key === Props.formatVersion ? (current.formatVersion === undefined ? undefined : String(current.formatVersion)) : current.properties[key];
    if (has === value) continue;
    const now = has === undefined ? 'is not set' : `is ${JSON.stringify(has)}`;
    throw invalidInput(
      `table ${table}: property ${key} ${now}, and this write gives ${JSON.stringify(value)}; an existing table's properties are changed with \`twinlake alter ${table} --property ${key}=${value}\` (table.alter({ set }))`,
    );
  }
}

/** Iceberg properties the Delta projection copies into Delta's `metaData.configuration`. */
export const DELTA_MIRRORED_PROPERTIES: readonly string[] = [Props.deltaCheckpointInterval, Props.deltaLogRetention];

const DELTA_INTERVAL_UNITS: Record<string, number> = { millisecond: 1, second: 1e3, minute: 60e3, hour: 3600e3, day: 86400e3, week: 7 * 86400e3 };

/** A Delta interval property's milliseconds: `interval 30 days` (PROTOCOL.md's CalendarInterval form; the unit singular or plural, `interval` optional). */
export function deltaIntervalMs(text: string, key: string): number {
  const m = /^\s*(?:interval\s+)?(\d+)\s+(millisecond|second|minute|hour|day|week)s?\s*$/i.exec(text);
  if (!m) throw invalidInput(`table property ${key} expects a Delta interval such as "interval 30 days" (units: millisecond, second, minute, hour, day, week), found ${JSON.stringify(text)}`, { key });
  return Number(m[1]) * DELTA_INTERVAL_UNITS[m[2]!.toLowerCase()]!;
}

/**
 * Checks the values of the properties Twinlake reads, as a write would read them: a table is
 * never left with a setting that fails its next write.
 */
export function checkPropertyValues(properties: Record<string, string>, formatVersion: number): void {
  const asMetadata = { properties, 'format-version': formatVersion } as TableMetadata;
  rowChangeStrategy(asMetadata, 'merge');
  rowChangeStrategy(asMetadata, 'delete');
  for (const key of [Props.targetFileSize, Props.manifestMinCountToMerge, Props.commitTotalTimeoutMs, Props.deltaCheckpointInterval]) intProp(properties, key, 1);
  // Retries and waits may be 0.
  for (const key of [Props.commitRetries, Props.commitMinWaitMs, Props.commitMaxWaitMs]) if (properties[key] !== '0') intProp(properties, key, 1);
  for (const key of [Props.schemaEvolution, Props.manifestMergeEnabled]) boolProp(properties, key, true);
  if (properties[Props.deltaLogRetention] !== undefined) deltaIntervalMs(properties[Props.deltaLogRetention]!, Props.deltaLogRetention);
  schedulesOfProperties(properties);
  tableFormats(properties);
}

/**
 * Why a property cannot be set or removed by `alter`, or undefined when it can: Twinlake keeps
 * some itself, and some are choices of the table's creation.
 */
export function reservedPropertyReason(key: string): string | undefined {
  if (key === Props.formats) return 'is changed with formats (`--formats`)';
  if (key === Props.physicalNames || key === Props.nameMapping) return 'is kept by Twinlake from the schema';
  if (key === Props.formatVersion) return 'is chosen when the table is created';
  if (key.startsWith('delta.') && !DELTA_MIRRORED_PROPERTIES.includes(key)) {
    return `is kept by Twinlake in the Delta log, or not one it mirrors (mirrored: ${DELTA_MIRRORED_PROPERTIES.join(', ')})`;
  }
  return undefined;
}
