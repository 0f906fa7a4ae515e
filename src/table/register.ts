import { resolve } from 'node:path';
import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError, unsupported } from '../core/errors.ts';
import { fileUri, isUri, relativeTo } from '../core/uri.ts';
import { ensureNamespace, type LoadTableResult } from '../catalog/catalog.ts';
import { toDeltaSchema } from '../spec/delta/schema.ts';
import { indexById, nameMapping } from '../spec/iceberg/schema.ts';
import { currentSchema, currentSnapshot, parseTableMetadata } from '../spec/iceberg/table-metadata.ts';
import type { TableMetadata } from '../spec/iceberg/types.ts';
import type { TableUpdate } from '../spec/iceberg/updates.ts';
import { checkCanAddDelta } from './alter.ts';
import { commitChange } from './commit.ts';
import { DELTA_START_KEY, operationSummary } from './delta-projection.ts';
import { commitDelta, finishDelta } from './delta-sync.ts';
import { assignPhysicalNames } from './physical-names.ts';
import { planSchema } from './schema-plan.ts';
import type { TableContext } from './table-context.ts';
import { identString, warningLog } from './table-context.ts';
import { Props, readPhysicalNames, tableFormats, writePhysicalNames, type TableFormat } from './table-properties.ts';

export interface RegisterResult {
  table: string;
  /** The metadata file registered (another engine's, left as it is). */
  registeredMetadata: string;
  /** The table's current metadata file after Twinlake recorded its own properties. */
  metadataLocation: string;
  location: string;
  formats: TableFormat[];
  /** The snapshot that started the Delta log; absent for a table without snapshots. */
  snapshotId?: bigint;
  /** The Delta version holding the table's state (0). */
  deltaVersion?: number;
  warnings: string[];
}

const MAX_ATTEMPTS = 20;

/**
 * Adopts an Iceberg table another engine wrote, as the REST catalog's registerTable does: the
 * table stays where it is and the metadata file named becomes its current one. Twinlake then
 * records what it needs — both formats, the physical column names and (when missing) a name
 * mapping — through an Iceberg commit of its own, never by editing the other engine's file, and
 * that commit's snapshot starts the Delta log (DELTA_START_KEY): Delta version 0 holds the live
 * files of the current snapshot, as `alter --formats iceberg,delta` writes it. What Delta cannot
 * hold is refused before anything is registered, so a refused table is left unregistered.
 */
export async function registerTable(ctx: TableContext, metadataFile: string): Promise<RegisterResult> {
  const name = identString(ctx.ident);
  const what = `register ${name}`;
  if (ctx.deltaRegistry?.location(ctx.ident) !== undefined || (await ctx.catalog.tableExists(ctx.ident))) {
    throw new TwinlakeError('already-exists', `${what}: the table already exists`, { table: name });
  }
  const registered = isUri(metadataFile) ? metadataFile : fileUri(resolve(metadataFile));
  let metadata: TableMetadata;
  try {
    metadata = parseTableMetadata(await ctx.io.readText(registered), registered);
  } catch (e) {
    if (isTwinlakeError(e, 'not-found')) throw new TwinlakeError('not-found', `${what}: metadata file ${registered} does not exist`, { uri: registered });
    throw e;
  }
  const physicalNames = await checkAdoptable(ctx, metadata, registered, what);

  const log = warningLog(ctx);
  await ensureNamespace(ctx.catalog, ctx.ident.namespace);
  let loaded: LoadTableResult = await ctx.catalog.registerTable(ctx.ident, registered);
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const base = loaded.metadata;
      const properties: Record<string, string> = {
        [Props.formats]: 'delta,iceberg',
        [Props.physicalNames]: writePhysicalNames(physicalNames),
      };
      // Another engine's mapping (files without field IDs rely on it) stays; one is added when missing.
      if (base.properties[Props.nameMapping] === undefined) properties[Props.nameMapping] = JSON.stringify(nameMapping(currentSchema(base), physicalNames));
      const updates: TableUpdate[] = [{ action: 'set-properties', updates: properties }];
      const done = (after: TableMetadata, metadataLocation: string, extra: Partial<RegisterResult>): RegisterResult => ({
        table: name,
        registeredMetadata: registered,
        metadataLocation,
        location: after.location,
        formats: tableFormats(after.properties),
        warnings: log.warnings,
        ...extra,
      });
      if (!currentSnapshot(base)) {
        // No snapshot: Delta version 0 records the table as created, as for a new table.
        const committed = await ctx.catalog.commitTable(ctx.ident, { requirements: [{ type: 'assert-table-uuid', uuid: base['table-uuid'] }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates });
        if (committed.status === 'conflict') {
          loaded = await ctx.catalog.loadTable(ctx.ident);
          continue;
        }
        await commitDelta(ctx, committed.metadata, log.warn);
        return done(committed.metadata, committed.metadataLocation, { deltaVersion: 0 });
      }
      const plan = planSchema(ctx, base, currentSchema(base), {});
      const summary = { ...operationSummary('alter', { properties: JSON.stringify({ [Props.formats]: properties[Props.formats] }) }), [DELTA_START_KEY]: 'true' };
      const outcome = await commitChange(ctx, plan, { operation: 'append', added: [], replaceAll: false, summary, updates }, loaded, {});
      if (outcome.status !== 'committed') {
        loaded = outcome.loaded;
        continue;
      }
      const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot, log.warn);
      const now = await ctx.catalog.loadTable(ctx.ident);
      return done(outcome.metadata, now.metadataLocation, { snapshotId: outcome.snapshot['snapshot-id'], deltaVersion: delta.deltaVersion });
    }
    throw new TwinlakeError('commit-conflict', `${what}: gave up after ${MAX_ATTEMPTS} attempts lost to concurrent commits`);
  } catch (e) {
    // Nothing of ours was committed: the table goes back to being unregistered, its files untouched.
    const now = await ctx.catalog.loadTable(ctx.ident).catch(() => undefined);
    if (now && now.metadataLocation === registered) await ctx.catalog.dropTable(ctx.ident).catch(() => undefined);
    throw e;
  }
}

/**
 * What adopting needs beyond what adding Delta needs (checkCanAddDelta): the metadata file lies
 * in the table it describes (a copied table still names the folder it was written in, and
 * Twinlake would write there), every type has a Delta twin, and each column has one name in
 * every data file — Delta's column mapping reads a column by one physical name, so a column
 * renamed since files were written, or a column with an initial default that older files lack,
 * cannot be projected. Returns the physical names: the columns' names.
 */
async function checkAdoptable(ctx: TableContext, metadata: TableMetadata, registered: string, what: string): Promise<Map<number, string>> {
  const location = metadata.location;
  if (!isUri(location) && !location.startsWith('/')) {
    throw unsupported(`${what}: the table location ${JSON.stringify(location)} is relative; expected an absolute location (a URI or an absolute path)`);
  }
  const metadataDir = metadata.properties['write.metadata.path'] ?? `${location.replace(/\/+$/, '')}/metadata`;
  const inside = (dir: string) => relativeTo(isUri(dir) ? dir : fileUri(dir), registered) !== undefined;
  if (!inside(metadataDir)) {
    throw invalidInput(
      `${what}: metadata file ${registered} is not in the table's metadata folder ${metadataDir}; a copied table still names the place it was written (rewrite its locations first, e.g. with Iceberg's rewrite_table_path), or register the metadata file in that place`,
    );
  }
  const schema = currentSchema(metadata);
  const recorded = readPhysicalNames(metadata);
  const physicalNames = assignPhysicalNames(schema, recorded);
  try {
    toDeltaSchema(schema, physicalNames);
  } catch (e) {
    if (isTwinlakeError(e, 'unsupported')) throw unsupported(`${what}: ${errorMessage(e)}; the table cannot keep Delta`);
    throw e;
  }
  const now = indexById(schema);
  for (const other of metadata.schemas) {
    for (const [id, { path }] of indexById(other)) {
      const current = now.get(id);
      if (current && !recorded.has(id) && current.path[current.path.length - 1] !== path[path.length - 1]) {
        throw unsupported(
          `${what}: column ${current.path.join('.')} was renamed from ${path.join('.')} (schema ${other['schema-id']}); its data files may hold either name, and Delta's column mapping reads one physical name per column`,
        );
      }
    }
  }
  for (const [, { path, field }] of now) {
    if (field['initial-default'] !== undefined && field['initial-default'] !== null) {
      throw unsupported(`${what}: column ${path.join('.')} has an initial default (${JSON.stringify(field['initial-default'])}) for rows written before it existed, which Delta cannot hold`);
    }
  }
  await checkCanAddDelta(ctx, metadata, what, physicalNames);
  return physicalNames;
}
