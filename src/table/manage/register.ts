import { resolve } from 'node:path';
import { errorMessage, invalidInput, isTwinlakeError, TwinlakeError, unsupported } from '../../core/errors.ts';
import { fileUri, isUri, relativeTo } from '../../core/uri.ts';
import { ensureNamespace, type Catalog, type LoadTableResult, type TableIdentifier } from '../../catalog/catalog.ts';
import { metadataFileVersion } from '../../catalog/metadata-files.ts';
import { toDeltaSchema } from '../../format/delta/schema.ts';
import { indexById, nameMapping } from '../../format/iceberg/schema.ts';
import { currentSchema, currentSnapshot, parseTableMetadata, serializeTableMetadata } from '../../format/iceberg/table-metadata.ts';
import type { DataFile, IcebergType, StructType, TableMetadata } from '../../format/iceberg/types.ts';
import { quoteString } from '../../engine/duckdb-session.ts';
import { applyUpdates, checkRequirements, type TableUpdate } from '../../format/iceberg/updates.ts';
import { applicableDeletes } from '../../format/iceberg/scan.ts';
import { deleteFileKey } from '../../format/iceberg/manifest.ts';
import { liveFiles } from '../read/iceberg-scan.ts';
import { versionHintUri } from '../read/metadata-locator.ts';
import { engineFile, withEngineFiles } from '../read/read-cache.ts';
import { existingDeletes, writeRowDeletes, type WrittenDeletes } from '../merge/row-deletes.ts';
import type { RowDeletesBasis } from '../commit/snapshot-producer.ts';
import { partitionIdentity } from '../../format/iceberg/snapshot-summary.ts';
import { checkCanAddDelta } from './alter.ts';
import { CommitRetry, commitRetryPolicy } from '../commit/commit-retry.ts';
import { rawCommit, snapshotOf, updateProperties } from '../commit/table-actions.ts';
import { Transaction, type TableAction } from '../commit/transaction.ts';
import { DELTA_START_KEY, operationSummary } from '../../format/dual/summary-keys.ts';
import { commitDelta, finishDelta } from '../delta/delta-sync.ts';
import { assignPhysicalNames } from '../../format/dual/physical-names.ts';
import type { TableContext } from '../table-context.ts';
import { identString, warningLog } from '../table-context.ts';
import { parseFormats, Props, readPhysicalNames, tableFormats, writePhysicalNames, type TableFormat } from '../../format/dual/table-properties.ts';

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
  if ((await ctx.deltaRegistry?.location(ctx.ident)) !== undefined || (await ctx.catalog.tableExists(ctx.ident))) {
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
  // The table is registered by the commit that records Twinlake's properties, in one catalog
  // step: a register that dies before it leaves the table unregistered, never registered as
  // the other engine's Iceberg-only table with no Delta log to follow it.
  const adopting: TableContext = { ...ctx, catalog: adoptingCatalog(ctx, { metadataLocation: registered, metadata }) };
  let loaded: LoadTableResult = { metadataLocation: registered, metadata };
  const retry = new CommitRetry(commitRetryPolicy(loaded.metadata.properties), what);
  for (;;) {
    const base = loaded.metadata;
    const properties: Record<string, string> = {
      [Props.formats]: parseFormats(['iceberg', 'delta']).join(','),
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
    const snapshot = currentSnapshot(base);
    // No snapshot: Delta version 0 records the table as created, as for a new table; a snapshot
    // starts the Delta log with the table's live files, its deletes rewritten as Twinlake's.
    const summary = { ...operationSummary('alter', { properties: JSON.stringify({ [Props.formats]: properties[Props.formats] }) }), [DELTA_START_KEY]: 'true' };
    const deletes = snapshot ? await rewriteDeletes(adopting, applyUpdates(base, updates, { nowMs: ctx.clock.nowMs() })) : undefined;
    const actions: TableAction[] = snapshot
      ? [
          updateProperties(properties),
          snapshotOf(adopting, { operation: deletes ? 'delete' : 'append', added: [], replaceAll: false, summary, ...(deletes ? { addedDeletes: deletes.written.deletes, rowDeletes: deletes.basis } : {}) }),
        ]
      : [rawCommit({ requirements: [{ type: 'assert-table-uuid', uuid: base['table-uuid'] }, { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': null }], updates })];
    const outcome = await new Transaction(adopting, actions, { what, retry }).commit(loaded).catch(async (e: unknown) => {
      await ctx.io.deleteQuietly(deletes?.written.files ?? []);
      throw e;
    });
    if (outcome.status !== 'committed') {
      await ctx.io.deleteQuietly(deletes?.written.files ?? []);
      if (outcome.status === 'conflict' && snapshot) throw outcome.error;
      // Without a snapshot the commit requires there still is none: once one is committed, Delta starts from it.
      if (outcome.status === 'conflict') await retry.lost(outcome.error.message);
      loaded = outcome.status === 'conflict' ? await adopting.catalog.loadTable(ctx.ident) : outcome.base;
      continue;
    }
    if (!outcome.snapshot) {
      await commitDelta(ctx, outcome.metadata, log.warn);
      return done(outcome.metadata, outcome.metadataLocation, { deltaVersion: 0 });
    }
    const delta = await finishDelta(ctx, outcome.metadata, outcome.snapshot, log.warn);
    return done(outcome.metadata, outcome.metadataLocation, { snapshotId: outcome.snapshot['snapshot-id'], deltaVersion: delta.deltaVersion });
  }
}

/**
 * The catalog as register's commit sees it: until that commit the table is the other engine's
 * metadata file, unregistered; the commit writes the adopted metadata as the next metadata file
 * beside it (create-only, as a catalog writes one) and registers that file. Once registered,
 * every call is the catalog's own.
 */
function adoptingCatalog(ctx: TableContext, foreign: LoadTableResult): Catalog {
  const catalog = ctx.catalog;
  let registered: LoadTableResult | undefined;
  const commitTable: Catalog['commitTable'] = async (id, commit, options) => {
    if (registered) return catalog.commitTable(id, commit, options);
    let next: TableMetadata;
    try {
      checkRequirements(foreign.metadata, commit.requirements);
      next = applyUpdates(foreign.metadata, commit.updates, { nowMs: ctx.clock.nowMs(), previousMetadataLocation: foreign.metadataLocation });
    } catch (e) {
      if (isTwinlakeError(e, 'commit-conflict')) return { status: 'conflict', reason: e.message };
      throw e;
    }
    // As every catalog's commit: nothing is registered before the files the metadata names are
    // durable (CommitOptions.durable); a failed manifest write fails the register.
    await options?.durable;
    const dir = foreign.metadataLocation.slice(0, foreign.metadataLocation.lastIndexOf('/'));
    const body = serializeTableMetadata(next);
    let version = metadataFileVersion(foreign.metadataLocation) + 1;
    while (!(await ctx.io.writeIfAbsent(`${dir}/v${version}.metadata.json`, body))) version++;
    const uri = `${dir}/v${version}.metadata.json`;
    try {
      registered = await catalog.registerTable(id, uri);
    } catch (e) {
      await ctx.io.deleteQuietly([uri]);
      throw e;
    }
    // Path readers follow the hint; it is only an optimisation, so failing to write it fails nothing.
    await ctx.io.write(versionHintUri(uri), String(version)).catch(() => undefined);
    return { status: 'committed', metadataLocation: uri, metadata: registered.metadata };
  };
  return new Proxy(catalog, {
    get(target, prop) {
      if (prop === 'commitTable') return commitTable;
      if (prop === 'loadTable') return async (id: TableIdentifier) => (registered ? catalog.loadTable(id) : foreign);
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * Another engine's position deletes and deletion vectors, as Twinlake's: for each data file with
 * deletes, one delete file holding all its deleted positions (a Puffin deletion vector in v3, a
 * position delete file in v2) and the Delta DV file of the same UUID, replacing every delete file
 * that applied to it. Delta can then point at one vector per file, derived from Iceberg alone
 * (row-deletes.ts); Iceberg readers see the same rows deleted. Undefined without deletes.
 */
async function rewriteDeletes(ctx: TableContext, metadata: TableMetadata): Promise<{ written: WrittenDeletes; basis: RowDeletesBasis } | undefined> {
  const snapshot = currentSnapshot(metadata);
  if (!snapshot) return undefined;
  const live = await liveFiles(ctx.io, metadata, snapshot);
  if (live.deletes.length === 0) return undefined;
  const applicable = applicableDeletes(metadata, live.data, live.deletes, live.sequenceNumbers);
  const touched = live.data.filter((f) => {
    const d = applicable(f);
    return d !== undefined && (d.dv !== undefined || d.positionFiles.length > 0);
  });
  if (touched.length === 0) return undefined;
  const existing = await existingDeletes(ctx, metadata, live, touched);
  const replaced = new Map<string, string[]>();
  for (const f of touched) {
    const d = applicable(f)!;
    replaced.set(f['file-path'], [...(d.dv ? [d.dv] : []), ...d.positionFiles].map(deleteFileKey));
  }
  const targets = touched.map((file) => ({ file, bitmap: existing.get(file['file-path'])!.positions })).filter((t) => t.bitmap.cardinality > 0);
  const written = await writeRowDeletes(ctx, metadata, targets);
  return { written, basis: { replaced, partitions: new Set(touched.map(partitionIdentity)), plannedAt: metadata['last-sequence-number'] } };
}

/**
 * Every position in a delete file being replaced must name a live data file exactly as the
 * manifests do: a position for a file named otherwise (another URI form of the same file) or no
 * longer in the table would be dropped by the rewrite, and a deleted row could come back.
 */
async function checkPositionsNameLiveFiles(ctx: TableContext, what: string, deleteFiles: DataFile[], data: DataFile[]): Promise<void> {
  const files = [...new Map(deleteFiles.map((d) => [d['file-path'], d])).values()];
  if (files.length === 0) return;
  const session = await ctx.session();
  const livePaths = data.map((f) => quoteString(f['file-path']));
  const { rows, local } = await withEngineFiles(ctx, files.map((d) => d['file-path']), async (ctx) => {
    const local = new Map(files.map((d) => [engineFile(ctx, d['file-path']), d['file-path']]));
    const rows = await session.all(
      `SELECT filename AS d, count(*) AS total, count(*) FILTER (WHERE file_path IN (${livePaths.join(', ')})) AS matched FROM read_parquet([${[...local.keys()].map(quoteString).join(', ')}], filename = true) GROUP BY ALL`,
    );
    return { rows, local };
  });
  for (const r of rows) {
    if (Number(r.matched) === Number(r.total)) continue;
    const file = local.get(String(r.d)) ?? String(r.d);
    throw unsupported(
      `${what}: position delete file ${file} holds ${Number(r.total)} positions, of which ${Number(r.matched)} name a live data file as the manifests name it; the others (files removed since, or named another way) cannot be carried over safely`,
    );
  }
}

/** The names each field ID has in the data files' Parquet schemas (files without IDs add none). */
async function fileColumnNames(ctx: TableContext, data: DataFile[]): Promise<Map<number, Set<string>>> {
  const out = new Map<number, Set<string>>();
  if (data.length === 0) return out;
  const session = await ctx.session();
  const rows = await withEngineFiles(ctx, data.map((f) => f['file-path']), (ctx) => {
    const paths = data.map((f) => quoteString(engineFile(ctx, f['file-path'])));
    return session.all(`SELECT DISTINCT name, field_id FROM parquet_schema([${paths.join(', ')}]) WHERE field_id IS NOT NULL`);
  });
  for (const r of rows) {
    const id = Number(r.field_id);
    if (!out.has(id)) out.set(id, new Set());
    out.get(id)!.add(String(r.name));
  }
  return out;
}

/** Struct fields carry physical names; list elements and map keys and values do not. */
function isStructField(schema: StructType, id: number): boolean {
  const visit = (t: IcebergType): boolean => {
    if (typeof t === 'string') return false;
    if (t.type === 'struct') return t.fields.some((f) => f.id === id || visit(f.type));
    if (t.type === 'list') return visit(t.element);
    return visit(t.key) || visit(t.value);
  };
  return visit(schema);
}

/**
 * What adopting needs beyond what adding Delta needs (checkCanAddDelta): an absolute location,
 * the metadata file inside the table it describes (a copied table still names the folder it was
 * written in, and Twinlake would write there), every type with a Delta twin, one name per column
 * in every data file (Delta's column mapping reads a column by one physical name: a column renamed
 * since some live files were written cannot be projected), no initial defaults (rows of older
 * files would read null in Delta), no equality deletes, and position deletes that name live data
 * files as the manifests do. Returns the physical names: the columns' names in the data files.
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
  const now = indexById(schema);
  const snapshot = currentSnapshot(metadata);
  const live = snapshot ? await liveFiles(ctx.io, metadata, snapshot) : undefined;
  // A column's physical name is the name its data files give it (writers may sanitize names:
  // Iceberg Java writes `Breed Name` as `Breed_x20Name`); one name per column, or Delta cannot read it.
  const recorded = readPhysicalNames(metadata);
  const inFiles = live ? await fileColumnNames(ctx, live.data) : new Map<number, Set<string>>();
  const known = new Map(recorded);
  for (const [id, names] of inFiles) {
    const column = now.get(id);
    if (!column || recorded.has(id) || !isStructField(schema, id)) continue;
    if (names.size > 1) {
      throw unsupported(
        `${what}: column ${column.path.join('.')} is named ${[...names].sort().map((n) => JSON.stringify(n)).join(' and ')} in different data files (renamed since they were written); Delta's column mapping reads one physical name per column`,
      );
    }
    known.set(id, [...names][0]!);
  }
  const physicalNames = assignPhysicalNames(schema, known);
  try {
    toDeltaSchema(schema, physicalNames);
  } catch (e) {
    if (isTwinlakeError(e, 'unsupported')) throw unsupported(`${what}: ${errorMessage(e)}; the table cannot keep Delta`);
    throw e;
  }
  for (const [, { path, field }] of now) {
    if (field['initial-default'] !== undefined && field['initial-default'] !== null) {
      throw unsupported(`${what}: column ${path.join('.')} has an initial default (${JSON.stringify(field['initial-default'])}) for rows written before it existed, which Delta cannot hold`);
    }
  }
  // Position deletes and deletion vectors are rewritten as Twinlake's when the table is adopted.
  await checkCanAddDelta(ctx, metadata, what, { physicalNames, rowDeletes: true });
  if (live) {
    const applicable = applicableDeletes(metadata, live.data, live.deletes, live.sequenceNumbers);
    for (const f of live.data) {
      const eq = applicable(f)?.equality[0];
      if (eq) {
        throw unsupported(
          `${what}: data file ${f['file-path']} has equality deletes (${eq['file-path']}), which Delta cannot hold; apply them first (rewrite the data files, e.g. Spark's rewrite_data_files with delete-file-threshold=1)`,
        );
      }
    }
    await checkPositionsNameLiveFiles(ctx, what, live.data.flatMap((f) => applicable(f)?.positionFiles ?? []), live.data);
  }
  return physicalNames;
}
