import { invalidInput, isTwinlakeError, unsupported } from '../core/errors.ts';
import { checkpointPath } from '../format/delta/actions.ts';
import { writeDeltaCheckpoint } from '../table/delta/delta-checkpoint.ts';
import { latestDeltaVersion } from '../table/delta/delta-log.ts';
import { Props } from '../format/dual/table-properties.ts';
import type { Table } from '../table/table.ts';
import { expireSnapshots, type ExpireOptions, type ExpireResult } from './expire.ts';
import { compact, type CompactOptions, type CompactResult } from './compact.ts';
import { cleanMetadata, type CleanMetadataResult } from './metadata-cleanup.ts';
import { removeOrphans, type RemoveOrphansResult } from './orphans.ts';
import { tableSubject } from './reachable.ts';

/** The seed's maintenance operations, as the API and `twinlake maintain --operation` name them. */
export const MAINTENANCE_OPERATIONS = ['snapshot_expiry', 'orphan_cleanup', 'compaction', 'metadata_cleanup', 'delta_checkpoint', 'full_maintenance'] as const;
export type MaintenanceOperation = (typeof MAINTENANCE_OPERATIONS)[number];

/** What every operation accepts; each reads the options it knows. */
export interface MaintenanceOptions extends ExpireOptions, Pick<CompactOptions, 'targetFileSize' | 'sort' | 'zorder' | 'explainFilter'> {
  /** orphan_cleanup and metadata_cleanup: only files last modified longer ago than this (ms). */
  olderThan?: number;
  /**
   * The config file's settings for the table: used only where neither the option above nor the
   * table's own property gives one. Precedence: option > table property > config > the seed's
   * default (7 days, 128 MiB).
   */
  configured?: { retention?: number; targetFileSize?: number };
}

export interface DeltaCheckpointResult {
  operation: 'delta_checkpoint';
  dryRun: boolean;
  /** The version checkpointed (or, with dryRun, that would be). */
  deltaVersion: number;
  checkpoint: string;
  /** The checkpoint was there already (it is written again only when missing: a repair). */
  existed: boolean;
}

/** One step of full_maintenance: its result, or why it did not run. */
export type MaintenanceStep =
  | { operation: MaintenanceOperation; status: 'completed'; result: MaintenanceResult }
  | { operation: MaintenanceOperation; status: 'not-built' | 'skipped'; reason: string };

export interface FullMaintenanceResult {
  operation: 'full_maintenance';
  dryRun: boolean;
  steps: MaintenanceStep[];
}

export type MaintenanceResult = (
  | ExpireResult
  | DeltaCheckpointResult
  | ({ operation: 'orphan_cleanup' } & RemoveOrphansResult)
  | ({ operation: 'metadata_cleanup' } & CleanMetadataResult)
  | ({ operation: 'compaction' } & CompactResult)
  | FullMaintenanceResult
) & { durationMs?: number };

type Runner = (table: Table, opts: MaintenanceOptions) => Promise<MaintenanceResult>;

/**
 * Every single operation, in one place (`undefined` would mark one not built yet).
 */
const OPERATIONS: Record<Exclude<MaintenanceOperation, 'full_maintenance'>, Runner | undefined> = {
  snapshot_expiry: expireSnapshots,
  delta_checkpoint: deltaCheckpoint,
  compaction: async (table, opts) => ({ operation: 'compaction', ...(await compact(table, opts)) }),
  metadata_cleanup: async (table, opts) => ({ operation: 'metadata_cleanup', ...(await cleanMetadata(table, opts)) }),
  orphan_cleanup: async (table, opts) => ({ operation: 'orphan_cleanup', ...(await removeOrphans(table, opts)) }),
};

/**
 * full_maintenance's safe order (issue 13): rewrite first, then expire what the rewrite
 * replaced, checkpoint the log expiry cut, and only then delete files — data files before the
 * metadata that last named them goes, and nothing a retained snapshot or version still names.
 */
export const FULL_MAINTENANCE_ORDER = ['compaction', 'snapshot_expiry', 'delta_checkpoint', 'metadata_cleanup', 'orphan_cleanup'] as const;

/** Runs one maintenance operation on a table; the result says what it did. */
export async function runMaintenance(table: Table, operation: string, opts: MaintenanceOptions = {}): Promise<MaintenanceResult> {
  if (!(MAINTENANCE_OPERATIONS as readonly string[]).includes(operation)) {
    throw invalidInput(`maintenance: expected an operation of ${MAINTENANCE_OPERATIONS.join(', ')}, found ${JSON.stringify(operation)}`);
  }
  const started = performance.now();
  const { options, retentionFromConfig } = await withConfigured(table, operation, opts);
  const result = operation === 'full_maintenance' ? await fullMaintenance(table, options) : await runOne(table, operation as keyof typeof OPERATIONS, options);
  if (retentionFromConfig) markConfigured(result);
  return { ...result, durationMs: Math.round(performance.now() - started) };
}

/** Table properties maintenance reads before the config's values. */
const RETENTION_PROPERTY = 'history.expire.max-snapshot-age-ms';

/**
 * The options with the config's retention and target filled in where neither an option nor the
 * table's property gives them (the operations read the property themselves, so only a table
 * without one takes the config's value).
 */
async function withConfigured(table: Table, operation: string, opts: MaintenanceOptions): Promise<{ options: MaintenanceOptions; retentionFromConfig: boolean }> {
  const { configured, ...options } = opts;
  const wantsRetention = configured?.retention !== undefined && opts.retention === undefined && (operation === 'snapshot_expiry' || operation === 'full_maintenance');
  const wantsTarget = configured?.targetFileSize !== undefined && opts.targetFileSize === undefined && (operation === 'compaction' || operation === 'full_maintenance');
  if (!wantsRetention && !wantsTarget) return { options, retentionFromConfig: false };
  const properties = await tablePropertiesOf(table);
  let retentionFromConfig = false;
  if (wantsRetention && properties[RETENTION_PROPERTY] === undefined) {
    options.retention = configured!.retention;
    retentionFromConfig = true;
  }
  if (wantsTarget && properties[Props.targetFileSize] === undefined) options.targetFileSize = configured!.targetFileSize;
  return { options, retentionFromConfig };
}

/** A table's properties (a Delta-only table's are its log's configuration). */
export async function tablePropertiesOf(table: Table): Promise<Record<string, string>> {
  const s = await tableSubject(table);
  return s.metadata?.properties ?? (await table.describe()).properties;
}

/** Expiry reports a retention the config gave as the config's, not as an option. */
function markConfigured(result: MaintenanceResult): void {
  if (result.operation === 'snapshot_expiry' && result.retentionSource === 'option') result.retentionSource = 'config';
  if (result.operation === 'full_maintenance') for (const s of result.steps) if (s.status === 'completed') markConfigured(s.result);
}

function runOne(table: Table, operation: keyof typeof OPERATIONS, opts: MaintenanceOptions): Promise<MaintenanceResult> {
  const run = OPERATIONS[operation];
  if (!run) throw unsupported(`maintenance: ${operation} is not implemented yet; available: ${available().join(', ')}`);
  return run(table, opts);
}

const available = () => [...Object.entries(OPERATIONS).filter(([, r]) => r).map(([name]) => name), 'full_maintenance'];

async function fullMaintenance(table: Table, opts: MaintenanceOptions): Promise<FullMaintenanceResult> {
  const steps: MaintenanceStep[] = [];
  for (const operation of FULL_MAINTENANCE_ORDER) {
    if (!OPERATIONS[operation]) {
      steps.push({ operation, status: 'not-built', reason: `${operation} is not implemented yet` });
      continue;
    }
    try {
      steps.push({ operation, status: 'completed', result: await runOne(table, operation, opts) });
    } catch (e) {
      // A table without Delta has no log to checkpoint: the other steps still apply.
      if (operation === 'delta_checkpoint' && isTwinlakeError(e, 'invalid-input')) steps.push({ operation, status: 'skipped', reason: e.message });
      else throw e;
    }
  }
  return { operation: 'full_maintenance', dryRun: opts.dryRun === true, steps };
}

/** A checkpoint of the newest Delta version now, with `_last_checkpoint` (PROTOCOL.md §Checkpoints). */
async function deltaCheckpoint(table: Table, opts: MaintenanceOptions): Promise<DeltaCheckpointResult> {
  const d = await table.describe();
  if (!d.formats.includes('delta')) throw invalidInput(`maintenance: delta_checkpoint needs a Delta table; ${table.name} keeps only ${d.formats.join(', ')}`);
  const ctx = table.context;
  const { store, key } = ctx.io.storeAt(d.location);
  const deltaVersion = await latestDeltaVersion(store, key);
  if (deltaVersion === undefined) throw invalidInput(`maintenance: delta_checkpoint of ${table.name}: expected a Delta version to checkpoint, found none yet`);
  const checkpoint = checkpointPath(deltaVersion);
  const existed = (await store.head(`${key === '' ? '' : `${key.replace(/\/+$/, '')}/`}${checkpoint}`)) !== undefined;
  // Written again when there: the checkpoint is create-only, and `_last_checkpoint` is repaired.
  if (!opts.dryRun) await writeDeltaCheckpoint(ctx, d.location, deltaVersion);
  return { operation: 'delta_checkpoint', dryRun: opts.dryRun === true, deltaVersion, checkpoint, existed };
}
