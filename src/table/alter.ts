import { invalidInput, TwinlakeError, unsupported } from '../core/errors.ts';
import { joinUri } from '../core/uri.ts';
import type { LoadTableResult } from '../catalog/catalog.ts';
import type { Action, CommitInfo } from '../format/delta/actions.ts';
import { commitPath } from '../format/delta/actions.ts';
import { currentSchema, currentSnapshot, specById } from '../format/iceberg/table-metadata.ts';
import { indexById } from '../format/iceberg/schema.ts';
import { toDeltaSchema } from '../format/delta/schema.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import type { TableUpdate } from '../format/iceberg/updates.ts';
import { commitChange } from './commit.ts';
import { readDeltaSnapshot, writeDeltaCommit } from './delta-log.ts';
import { DELTA_START_KEY, operationSummary } from '../format/dual/summary-keys.ts';
import { commitDelta, finishDelta, repairDelta } from './delta-sync.ts';
import { liveFiles } from './iceberg-scan.ts';
import { checkDeltaPartitioning } from '../format/dual/delta-partitioning.ts';
import { planSchema } from './schema-plan.ts';
import type { TableContext } from './table-context.ts';
import { identString, warningLog } from './table-context.ts';
import {
  checkPropertyValues,
  DELTA_MIRRORED_PROPERTIES,
  parseFormats,
  Props,
  readPhysicalNames,
  reservedPropertyReason,
  tableFormats,
  type TableFormat,
} from '../format/dual/table-properties.ts';
import { ENGINE_INFO } from '../format/dual/version.ts';

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

const MAX_ATTEMPTS = 20;

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
  const deltaLocation = ctx.deltaRegistry?.location(ctx.ident);
  if (deltaLocation) return alterDeltaOnly(ctx, deltaLocation, set, unset, wanted);

  const log = warningLog(ctx);
  let loaded: LoadTableResult = await ctx.catalog.loadTable(ctx.ident);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const metadata = loaded.metadata;
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
    if (all.length === 0) return { table: name, changed: [], properties: metadata.properties, formats: before, warnings: log.warnings };

    const updates: TableUpdate[] = [];
    if (changed.length) updates.push({ action: 'set-properties', updates: Object.fromEntries(changed.map((k) => [k, next[k]!])) });
    if (removed.length) updates.push({ action: 'remove-properties', removals: removed });
    const addsDelta = formats.includes('delta') && !before.includes('delta');
    const dropsDelta = before.includes('delta') && !formats.includes('delta');
    const mirrored = formats.includes('delta') && before.includes('delta') && all.some((k) => DELTA_MIRRORED_PROPERTIES.includes(k));
    if (addsDelta) await checkCanAddDelta(ctx, metadata, `alter ${name}`);
    // Delta must hold every snapshot before the one that changes what it mirrors, or it stops.
    if (dropsDelta || mirrored) await repairDelta(ctx, metadata, log.warn);

    const result = (after: TableMetadata, extra: Partial<AlterResult> = {}): AlterResult => ({
      table: name,
      changed: all.sort(),
      properties: after.properties,
      formats: tableFormats(after.properties),
      warnings: log.warnings,
      ...extra,
    });

    // A mirrored property goes through a snapshot even on a table without one yet: otherwise Delta
    // would never see it (its next versions copy the metaData of the last).
    if ((addsDelta && currentSnapshot(metadata)) || mirrored) {
      const parameters: Record<string, string> = changed.length ? { properties: JSON.stringify(Object.fromEntries(changed.map((k) => [k, next[k]!]))) } : { propertyKeys: JSON.stringify(removed), ifExists: 'true' };
      const plan = planSchema(ctx, metadata, currentSchema(metadata), {});
      const summary = { ...operationSummary('alter', parameters), ...(addsDelta ? { [DELTA_START_KEY]: 'true' } : {}) };
      const outcome = await commitChange(ctx, plan, { operation: 'append', added: [], replaceAll: false, summary, updates }, loaded, {});
      if (outcome.status !== 'committed') {
        loaded = outcome.loaded;
        continue;
      }
      const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot, log.warn);
      return result(outcome.metadata, { snapshotId: outcome.snapshot['snapshot-id'], deltaVersion: delta.deltaVersion });
    }

    const committed = await ctx.catalog.commitTable(ctx.ident, { requirements: [{ type: 'assert-table-uuid', uuid: metadata['table-uuid'] }], updates });
    if (committed.status === 'conflict') {
      loaded = await ctx.catalog.loadTable(ctx.ident);
      continue;
    }
    if (addsDelta) {
      // No snapshot yet: Delta version 0 records the table as created, as for a new table.
      await commitDelta(ctx, committed.metadata, log.warn);
      return result(committed.metadata, { deltaVersion: 0 });
    }
    if (dropsDelta) {
      log.warn(`alter ${name}: Delta is no longer written; the Delta log in ${joinUri(metadata.location, '_delta_log')} stays as it is and goes stale, so remove it once no reader uses it`);
    }
    return result(committed.metadata);
  }
  throw new TwinlakeError('commit-conflict', `alter ${name}: gave up after ${MAX_ATTEMPTS} attempts lost to concurrent commits`);
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
  const physicalNames = opts.physicalNames ?? readPhysicalNames(metadata);
  if (await ctx.io.exists(joinUri(metadata.location, commitPath(0)))) {
    throw unsupported(`${what}: the table has a Delta log from before (${joinUri(metadata.location, '_delta_log')}); adding Delta again would mix two histories — remove that folder first`);
  }
  const schema = currentSchema(metadata);
  toDeltaSchema(schema, physicalNames); // types without a Delta twin are refused here
  const spec = specById(metadata, metadata['default-spec-id']);
  checkDeltaPartitioning(spec, schema);
  const snapshot = currentSnapshot(metadata);
  if (!snapshot) return;
  const { data, deletes } = await liveFiles(ctx.io, metadata, snapshot);
  if (deletes.length > 0 && !opts.rowDeletes) {
    throw unsupported(`${what}: adding Delta to a table with row-level deletes (${deletes.length} delete file(s)) is not supported yet; rewrite them first (copy-on-write)`);
  }
  if (data.some((f) => f['spec-id'] !== spec['spec-id'])) {
    throw unsupported(`${what}: adding Delta to a table whose files were written with an older partition spec is not supported yet`);
  }
  const index = indexById(schema);
  for (const f of spec.fields) {
    if (f.transform !== 'identity' || index.get(f['source-id'])?.field.type !== 'string') continue;
    if (data.some((d) => d.partition[f.name] === '')) {
      throw invalidInput(`${what}: partition ${f.name} holds an empty string, which Delta reads back as null; the table cannot keep Delta`);
    }
  }
}

/** A Delta-only table: the new configuration in a `metaData` action of the next version. */
async function alterDeltaOnly(ctx: TableContext, location: string, set: Record<string, string>, unset: string[], wanted: TableFormat[] | undefined): Promise<AlterResult> {
  const name = identString(ctx.ident);
  if (wanted && wanted.join() !== 'delta') throw unsupported(`alter ${name}: adding Iceberg to a Delta-only table is not supported`);
  const { store, key } = ctx.io.storeAt(location);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const base = await readDeltaSnapshot(store, key, {});
    const configuration: Record<string, string> = { ...base.metadata.configuration, ...set };
    for (const k of unset) delete configuration[k];
    checkPropertyValues(configuration, 2);
    const changed = Object.keys(configuration).filter((k) => configuration[k] !== base.metadata.configuration[k]);
    const removed = unset.filter((k) => k in base.metadata.configuration);
    if (changed.length + removed.length === 0) return { table: name, changed: [], properties: base.metadata.configuration, formats: ['delta'], deltaVersion: base.version, warnings: [] };
    const nowMs = Math.max(ctx.clock.nowMs(), (base.timestampMs ?? 0) + 1);
    const commitInfo: CommitInfo = {
      timestamp: nowMs,
      operation: changed.length ? 'SET TBLPROPERTIES' : 'UNSET TBLPROPERTIES',
      operationParameters: changed.length ? { properties: JSON.stringify(Object.fromEntries(changed.map((k) => [k, configuration[k]!]))) } : { propertyKeys: JSON.stringify(removed), ifExists: 'true' },
      isBlindAppend: false,
      engineInfo: ENGINE_INFO,
    };
    const actions: Action[] = [{ commitInfo }, { metaData: { ...base.metadata, configuration } }];
    const version = base.version + 1;
    if (await writeDeltaCommit(store, key, version, actions)) {
      return { table: name, changed: [...changed, ...removed].sort(), properties: configuration, formats: ['delta'], deltaVersion: version, warnings: [] };
    }
  }
  throw new TwinlakeError('commit-conflict', `alter ${name}: gave up after ${MAX_ATTEMPTS} attempts lost to concurrent Delta commits`);
}
