import { invalidInput, unsupported } from '../../core/errors.ts';
import { joinUri } from '../../core/uri.ts';
import type { LoadTableResult } from '../../catalog/catalog.ts';
import type { CommitInfo } from '../../format/delta/actions.ts';
import type { DeltaSnapshot } from '../../format/delta/replay.ts';
import { commitPath } from '../../format/delta/actions.ts';
import { currentSnapshot } from '../../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../../format/iceberg/types.ts';
import { CommitRetry, commitRetryPolicy } from '../commit/commit-retry.ts';
import { readDeltaSnapshot } from '../delta/delta-log.ts';
import { DELTA_START_KEY, operationSummary } from '../../format/dual/summary-keys.ts';
import { commitDelta, finishDelta, repairDelta } from '../delta/delta-sync.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { checkDeltaCanHold } from '../../format/dual/delta-partitioning.ts';
import { snapshotOf, updateProperties } from '../commit/table-actions.ts';
import { committedOrThrow, DeltaTransaction, Transaction, type DeltaTableAction, type TableAction } from '../commit/transaction.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog } from '../table-context.ts';
import { checkPropertyValues, DELTA_MIRRORED_PROPERTIES, parseFormats, Props, reservedPropertyReason, tableFormats, type TableFormat } from '../../format/dual/table-properties.ts';
import { ENGINE_INFO } from '../../format/dual/version.ts';

export interface AlterOptions {
  /** Properties to set, checked like at creation (e.g. `write.merge.mode`). */
  set?: Record<string, string>;
  /** Properties to remove (back to their defaults). */
  unset?: string[];
  /**
   * The formats to keep from now on. Adding Delta to an Iceberg table writes a Delta log that
   * holds the current state; dropping Delta stops writing it (the log stays as it is).
   */
  formats?: TableFormat[] | string;
}

export interface AlterResult {
  table: string;
  /** The property keys whose value changed (formats: `twinlake.formats`). */
  changed: string[];
  properties: Record<string, string>;
  formats: TableFormat[];
  /** The snapshot that recorded the change, when Delta needed a version for it. */
  snapshotId?: bigint;
  /** The Delta version that records the change, when there is one. */
  deltaVersion?: number;
  warnings: string[];
}

/**
 * Changes table properties and formats after creation. An Iceberg property change is a metadata
 * commit (no snapshot), like Iceberg's UpdateProperties; a change Delta must see — a property its
 * `metaData` mirrors, or Delta being added — is a snapshot without data changes, so the Delta
 * version mirroring it stays a projection of the Iceberg lineage (DESIGN.md §1).
 */
export async function alterTable(ctx: TableContext, opts: AlterOptions): Promise<AlterResult> {
  const name = identString(ctx.ident);
  const set = opts.set ?? {};
  const unset = opts.unset ?? [];
  for (const key of [...Object.keys(set), ...unset]) {
    const why = reservedPropertyReason(key);
    if (why) throw invalidInput(`alter ${name}: property ${key} ${why}`);
    if (key in set && unset.includes(key)) throw invalidInput(`alter ${name}: property ${key} is both set and unset`);
  }
  const wanted = opts.formats !== undefined ? parseFormats(opts.formats) : undefined;
  const deltaLocation = await ctx.deltaRegistry?.location(ctx.ident);
  if (deltaLocation) return alterDeltaOnly(ctx, deltaLocation, set, unset, wanted);

  const log = warningLog(ctx);
  let loaded: LoadTableResult = await ctx.catalog.loadTable(ctx.ident);
  const retry = new CommitRetry(commitRetryPolicy(loaded.metadata.properties), `alter ${name}`);
  for (;;) {
    const metadata = loaded.metadata;
    const p = planAlter(metadata, set, unset, wanted, name);
    if (p.all.length === 0) return { table: name, changed: [], properties: metadata.properties, formats: p.before, warnings: log.warnings };
    if (p.addsDelta) await checkCanAddDelta(ctx, metadata, `alter ${name}`);
    // Delta must hold every snapshot before the one that changes what it mirrors, or it stops.
    if (p.dropsDelta || p.mirrored) await repairDelta(ctx, metadata, log.warn);
    const actions: TableAction[] = [
      {
        // The checks above were made on this base: a concurrent commit that changes what this alter means plans it again.
        apply: async ({ metadata: now }) =>
          planAlter(now, set, unset, wanted, name).key === p.key
            ? { status: 'apply', requirements: [], updates: [] }
            : { status: 'rerun', why: `a concurrent commit changed the properties or formats of ${name}` },
      },
      updateProperties(p.values, p.removed),
    ];
    if (p.withSnapshot) {
      const parameters: Record<string, string> = p.changed.length ? { properties: JSON.stringify(p.values) } : { propertyKeys: JSON.stringify(p.removed), ifExists: 'true' };
      const summary = { ...operationSummary('alter', parameters), ...(p.addsDelta ? { [DELTA_START_KEY]: 'true' } : {}) };
      actions.push(snapshotOf(ctx, { operation: 'append', added: [], replaceAll: false, summary }));
    }
    const outcome = await new Transaction(ctx, actions, { what: `alter ${name}`, retry }).commit(loaded);
    if (outcome.status === 'conflict') throw outcome.error;
    if (outcome.status !== 'committed') {
      loaded = outcome.base;
      continue;
    }
    const result = (extra: Partial<AlterResult> = {}): AlterResult => ({
      table: name,
      changed: p.all.sort(),
      properties: outcome.metadata.properties,
      formats: tableFormats(outcome.metadata.properties),
      warnings: log.warnings,
      ...extra,
    });
    if (outcome.snapshot) {
      const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot, log.warn);
      return result({ snapshotId: outcome.snapshot['snapshot-id'], deltaVersion: delta.deltaVersion });
    }
    if (p.addsDelta) {
      // No snapshot yet: Delta version 0 records the table as created, as for a new table.
      await commitDelta(ctx, outcome.metadata, log.warn);
      return result({ deltaVersion: 0 });
    }
    if (p.dropsDelta) {
      log.warn(`alter ${name}: Delta is no longer written; the Delta log in ${joinUri(metadata.location, '_delta_log')} stays as it is and goes stale, so remove it once no reader uses it`);
    }
    return result();
  }
}

/** What an alter changes on `metadata`: the properties after it, the keys changed, and what happens to Delta. */
function planAlter(metadata: TableMetadata, set: Record<string, string>, unset: string[], wanted: TableFormat[] | undefined, name: string) {
  const before = tableFormats(metadata.properties);
  const formats = wanted ?? before;
  if (!formats.includes('iceberg')) {
    throw unsupported(`alter ${name}: dropping Iceberg from a table is not supported; Iceberg is the table's source of truth`);
  }
  const next: Record<string, string> = { ...metadata.properties, ...set };
  if (wanted) next[Props.formats] = formats.join(',');
  for (const key of unset) delete next[key];
  checkPropertyValues(next, metadata['format-version']);
  const changed = Object.keys(next).filter((k) => next[k] !== metadata.properties[k]);
  const removed = unset.filter((k) => k in metadata.properties);
  const all = [...changed, ...removed];
  const addsDelta = formats.includes('delta') && !before.includes('delta');
  const dropsDelta = before.includes('delta') && !formats.includes('delta');
  const mirrored = formats.includes('delta') && before.includes('delta') && all.some((k) => DELTA_MIRRORED_PROPERTIES.includes(k));
  // A mirrored property goes through a snapshot even on a table without one yet: otherwise Delta
  // would never see it (its next versions copy the metaData of the last).
  const withSnapshot = (addsDelta && currentSnapshot(metadata) !== undefined) || mirrored;
  const values = Object.fromEntries(changed.map((k) => [k, next[k]!]));
  const decided = { before, values, removed, addsDelta, dropsDelta, mirrored, withSnapshot };
  return { ...decided, changed, all, key: JSON.stringify(decided) };
}

/**
 * Adding Delta projects the current snapshot as Delta version 0 (alter, and register of another
 * engine's table). Refused, rather than projected wrongly, for what that single version cannot
 * express yet; `what` starts the messages (`alter ns.t`).
 */
export async function checkCanAddDelta(
  ctx: TableContext,
  metadata: TableMetadata,
  what: string,
  opts: { physicalNames?: Map<number, string>; rowDeletes?: boolean } = {},
): Promise<void> {
  if (await ctx.io.exists(joinUri(metadata.location, commitPath(0)))) {
    throw unsupported(`${what}: the table has a Delta log from before (${joinUri(metadata.location, '_delta_log')}); adding Delta again would mix two histories — remove that folder first`);
  }
  const snapshot = currentSnapshot(metadata);
  checkDeltaCanHold(metadata, snapshot && (await liveFiles(ctx.io, metadata, snapshot)), what, opts);
}

/** A Delta-only table: the new configuration in a `metaData` action of the next version. */
async function alterDeltaOnly(ctx: TableContext, location: string, set: Record<string, string>, unset: string[], wanted: TableFormat[] | undefined): Promise<AlterResult> {
  const name = identString(ctx.ident);
  if (wanted && wanted.join() !== 'delta') throw unsupported(`alter ${name}: adding Iceberg to a Delta-only table is not supported`);
  const { store, key } = ctx.io.storeAt(location);
  const first = await readDeltaSnapshot(store, key, {});
  const change = (base: DeltaSnapshot) => {
    const configuration: Record<string, string> = { ...base.metadata.configuration, ...set };
    for (const k of unset) delete configuration[k];
    checkPropertyValues(configuration, 2);
    const changed = Object.keys(configuration).filter((k) => configuration[k] !== base.metadata.configuration[k]);
    const removed = unset.filter((k) => k in base.metadata.configuration);
    return { configuration, changed, removed };
  };
  let planned = change(first);
  if (planned.changed.length + planned.removed.length === 0) return { table: name, changed: [], properties: first.metadata.configuration, formats: ['delta'], deltaVersion: first.version, warnings: [] };
  const properties: DeltaTableAction = {
    async apply({ snapshot, nowMs }) {
      const { configuration, changed, removed } = (planned = change(snapshot!));
      const commitInfo: CommitInfo = {
        timestamp: nowMs,
        operation: changed.length ? 'SET TBLPROPERTIES' : 'UNSET TBLPROPERTIES',
        operationParameters: changed.length ? { properties: JSON.stringify(Object.fromEntries(changed.map((k) => [k, configuration[k]!]))) } : { propertyKeys: JSON.stringify(removed), ifExists: 'true' },
        isBlindAppend: false,
        engineInfo: ENGINE_INFO,
      };
      return { status: 'apply', actions: [{ commitInfo }, { metaData: { ...snapshot!.metadata, configuration } }] };
    },
  };
  const { version } = committedOrThrow(await new DeltaTransaction(ctx, location, [properties], { what: `alter ${name}` }).commit(first));
  return { table: name, changed: [...planned.changed, ...planned.removed].sort(), properties: planned.configuration, formats: ['delta'], deltaVersion: version, warnings: [] };
}
