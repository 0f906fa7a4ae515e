import { systemClock } from '../../core/clock.ts';
import { invalidInput, isTwinlakeError, notFound, TwinlakeError, unsupported } from '../../core/errors.ts';
import { newUuid } from '../../core/ids.ts';
import { joinUri } from '../../core/uri.ts';
import { formatTableIdentifier, type LoadTableResult, type TableCommit, type TableIdentifier } from '../../catalog/catalog.ts';
import { toDeltaSchema } from '../../format/delta/schema.ts';
import { checkDeltaPartitioning } from '../../format/dual/delta-partitioning.ts';
import { assignPhysicalNames } from '../../format/dual/physical-names.ts';
import { Props, readPhysicalNames, tableFormats, writePhysicalNames } from '../../format/dual/table-properties.ts';
import { nameMapping } from '../../format/iceberg/schema.ts';
import { PARTITION_DATA_ID_START } from '../../format/iceberg/partition-spec-parser.ts';
import { currentSchema, newTableMetadata, specById } from '../../format/iceberg/table-metadata.ts';
import type { PartitionSpec, Schema, SortOrder, TableMetadata } from '../../format/iceberg/types.ts';
import { applyUpdates, checkRequirements } from '../../format/iceberg/updates.ts';
import { rawCommit } from '../../table/commit/table-actions.ts';
import { Transaction } from '../../table/commit/transaction.ts';
import { tryLoad } from '../../table/commit/commit.ts';
import { checkPlacement } from '../../table/table-placement.ts';
import { checkpointIfDue, commitDelta } from '../../table/delta/delta-sync.ts';
import type { TableContext } from '../../table/table-context.ts';
import type { Lakehouse } from '../../table/lakehouse.ts';
import { KeyedLocks } from '../keyed-locks.ts';

/**
 * The REST catalog's writes, through the one commit path: a commit is a Transaction of one raw
 * `requirements + updates` action (checked again on every attempt's base, a failed requirement a
 * conflict, never rebased), and once Iceberg committed, Delta follows the table's new lineage as
 * it follows any other writer (catch-up from the Iceberg metadata; a failure there only warns).
 */

/** A table's context as the lakehouse would give it, with the server's warning sink. */
export function restTableContext(lake: Lakehouse, ident: TableIdentifier, warn: (m: string) => void): TableContext {
  return {
    catalog: lake.catalog,
    io: lake.io,
    ident,
    location: joinUri(lake.warehouse, ...ident.namespace, ident.name),
    session: () => lake.session(),
    clock: systemClock,
    warn,
  };
}

/**
 * Commits through this server are serialized per table, and a multi-table transaction holds the
 * locks of all its tables (KeyedLocks takes them in name order, so two transactions cannot deadlock).
 */
export class TableLocks extends KeyedLocks<TableIdentifier> {
  constructor() {
    super((i) => JSON.stringify([...i.namespace, i.name]));
  }
}

/** What a CreateTableRequest gives, parsed. */
export interface CreateRequest {
  name: string;
  location?: string;
  schema: Schema;
  spec?: PartitionSpec;
  order?: SortOrder;
  properties: Record<string, string>;
}

/**
 * A new table's metadata from a create request: the client's schema and field IDs, a partition
 * spec whose fields get IDs from 1000 when the client gave none, Twinlake's properties (both
 * formats, physical names, name mapping) unless the client chose the formats. A schema or
 * partitioning Delta cannot hold is refused for a dual-format table, naming what to change.
 */
export function newTableFromRequest(ctx: TableContext, req: CreateRequest): TableMetadata {
  const schema: Schema = { ...req.schema, type: 'struct', 'schema-id': req.schema['schema-id'] ?? 0 };
  let nextPartitionId = PARTITION_DATA_ID_START;
  const spec: PartitionSpec = {
    'spec-id': 0,
    fields: (req.spec?.fields ?? []).map((f) => ({ ...f, 'field-id': f['field-id'] ?? nextPartitionId++ })),
  };
  const { [Props.formatVersion]: version, ...properties } = req.properties;
  const formatVersion = version === undefined ? 2 : Number(version);
  if (formatVersion !== 1 && formatVersion !== 2 && formatVersion !== 3) {
    throw invalidInput(`iceberg rest: create ${formatTableIdentifier(ctx.ident)}: format-version must be 1, 2 or 3, found ${JSON.stringify(version)}`);
  }
  const metadata = newTableMetadata({
    location: req.location ?? ctx.location,
    schema,
    partitionSpec: spec,
    ...(req.order ? { sortOrder: { ...req.order, 'order-id': req.order['order-id'] ?? (req.order.fields.length ? 1 : 0) } } : {}),
    properties,
    formatVersion,
    tableUuid: newUuid(),
    nowMs: ctx.clock.nowMs(),
    lastColumnId: 0,
  });
  return withTwinlakeProperties(ctx, metadata);
}

/** Adds the properties the Delta projection reads, when the table keeps Delta and lacks them. */
function withTwinlakeProperties(ctx: TableContext, metadata: TableMetadata): TableMetadata {
  const props = { ...metadata.properties };
  props[Props.formats] ??= 'iceberg,delta';
  const formats = tableFormats(props);
  if (!formats.includes('delta')) return { ...metadata, properties: props };
  const schema = currentSchema(metadata);
  const physicalNames = assignPhysicalNames(schema, readPhysicalNames(metadata));
  const what = `iceberg rest: create ${formatTableIdentifier(ctx.ident)}`;
  try {
    toDeltaSchema(schema, physicalNames);
    checkDeltaPartitioning(specById(metadata, metadata['default-spec-id']), schema);
  } catch (e) {
    if (isTwinlakeError(e)) throw new TwinlakeError(e.kind, `${what}: ${e.message}; set the table property ${Props.formats}=iceberg to keep the Iceberg format only`);
    throw e;
  }
  props[Props.physicalNames] ??= writePhysicalNames(physicalNames);
  props[Props.nameMapping] ??= JSON.stringify(nameMapping(schema, physicalNames));
  return { ...metadata, properties: props };
}

/** Creates the table (exclusive), then Delta version 0 records it: as `twinlake create` does. */
export async function createRestTable(ctx: TableContext, metadata: TableMetadata): Promise<LoadTableResult> {
  await checkPlacement(ctx);
  const outcome = await new Transaction(ctx, [], { create: metadata, exclusive: true, what: `create ${formatTableIdentifier(ctx.ident)}` }).commit();
  if (outcome.status === 'conflict') throw outcome.error;
  if (outcome.status !== 'committed') throw new Error(`iceberg rest: a ${outcome.status} outcome of a create`);
  await followDelta(ctx, outcome.metadata);
  return { metadata: outcome.metadata, metadataLocation: outcome.metadataLocation };
}

/** Delta follows whatever the commit changed; never fails the commit (see commitDelta). */
async function followDelta(ctx: TableContext, metadata: TableMetadata): Promise<void> {
  if (!tableFormats(metadata.properties).includes('delta')) return;
  const written = await commitDelta(ctx, metadata, ctx.warn);
  if (written?.length) await checkpointIfDue(ctx, metadata, written, ctx.warn);
}

/**
 * The metadata an `assert-create` commit builds: its updates folded over an empty table (how a
 * staged create or Java's and PyIceberg's create transactions arrive).
 */
function createdByUpdates(ctx: TableContext, commit: TableCommit): TableMetadata {
  const empty: TableMetadata = {
    'format-version': 1,
    'table-uuid': '',
    location: ctx.location,
    'last-sequence-number': 0,
    'last-updated-ms': 0,
    'last-column-id': 0,
    schemas: [],
    'current-schema-id': -1,
    'partition-specs': [],
    'default-spec-id': -1,
    'last-partition-id': PARTITION_DATA_ID_START - 1,
    properties: {},
    'current-snapshot-id': null,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    'sort-orders': [],
    'default-sort-order-id': -1,
    refs: {},
  };
  const m = applyUpdates(empty, commit.updates, { nowMs: ctx.clock.nowMs() });
  const what = `iceberg rest: create ${formatTableIdentifier(ctx.ident)}`;
  if (m.schemas.length === 0 || m['current-schema-id'] < 0) throw invalidInput(`${what}: the updates add no current schema`);
  const withSpec = m['partition-specs'].length ? m : { ...m, 'partition-specs': [{ 'spec-id': 0, fields: [] }], 'default-spec-id': 0 };
  const withOrder = withSpec['sort-orders'].length ? withSpec : { ...withSpec, 'sort-orders': [{ 'order-id': 0, fields: [] }], 'default-sort-order-id': 0 };
  // Without upgrade-format-version the table is a v2 table, as for a create request.
  const chosen = commit.updates.some((u) => u.action === 'upgrade-format-version');
  const table = { ...withOrder, 'table-uuid': withOrder['table-uuid'] || newUuid(), 'format-version': chosen ? withOrder['format-version'] : 2 } as TableMetadata;
  if (table['format-version'] >= 3) table['next-row-id'] ??= 0;
  return withTwinlakeProperties(ctx, table);
}

/** One table's change, checked before anything is committed. */
interface Prepared {
  ctx: TableContext;
  commit: TableCommit;
  loaded: LoadTableResult | undefined;
}

async function prepare(ctx: TableContext, commit: TableCommit): Promise<Prepared> {
  const loaded = await tryLoad(ctx);
  const name = formatTableIdentifier(ctx.ident);
  const creates = commit.requirements.some((r) => r.type === 'assert-create');
  if (!loaded && !creates) throw notFound(`iceberg rest: table ${name} does not exist`, { table: name });
  // Creating never creates the namespace (the catalog contract's not-found).
  const ns = ctx.ident.namespace;
  if (!loaded && !(await ctx.catalog.namespaceExists(ns))) throw notFound(`iceberg rest: namespace ${ns.join('.')} does not exist`, { namespace: ns });
  if (loaded && creates) throw new TwinlakeError('commit-conflict', `iceberg commit: requirement assert-create failed: table ${name} already exists`);
  // A failed requirement is a conflict (409); an update that cannot apply is a bad request (400): both before anything is written.
  checkRequirements(loaded?.metadata, commit.requirements);
  if (loaded) applyUpdates(loaded.metadata, commit.updates, { nowMs: ctx.clock.nowMs() });
  else createdByUpdates(ctx, commit);
  return { ctx, commit, loaded };
}

async function commitPrepared(p: Prepared): Promise<LoadTableResult> {
  const { ctx, commit, loaded } = p;
  if (!loaded) {
    try {
      return await createRestTable(ctx, createdByUpdates(ctx, commit));
    } catch (e) {
      // Another creator won: the requirement "no table" failed.
      if (isTwinlakeError(e, 'already-exists')) throw new TwinlakeError('commit-conflict', `iceberg commit: requirement assert-create failed: ${e.message}`);
      throw e;
    }
  }
  const outcome = await new Transaction(ctx, [rawCommit(commit)], { what: `commit ${formatTableIdentifier(ctx.ident)}` }).commit(loaded);
  if (outcome.status === 'conflict') throw outcome.error;
  if (outcome.status !== 'committed') throw new Error(`iceberg rest: a ${outcome.status} outcome of a raw commit`);
  return { metadata: outcome.metadata, metadataLocation: outcome.metadataLocation };
}

/** One table's commit (POST …/tables/{table}); a missing table with `assert-create` is created. */
export async function commitRestTable(locks: TableLocks, ctx: TableContext, commit: TableCommit): Promise<LoadTableResult> {
  return locks.with([ctx.ident], async () => {
    const result = await commitPrepared(await prepare(ctx, commit));
    await followDelta(ctx, result.metadata);
    return result;
  });
}

/**
 * A multi-table transaction, all or nothing as far as this server can promise: it holds every
 * table's lock, checks every requirement and applies every update in memory first (any failure:
 * 409 or 400, nothing committed), then swaps the tables' pointers one by one. Another writer
 * that bypasses this server (a library write on the same catalog) can still win one table's
 * compare-and-swap between two of ours: when that happens to the first table nothing was
 * committed (409); after the first, the transaction is partly committed, which is reported as
 * `commit-state-unknown` (500) naming the tables that did commit, so the client keeps its files.
 */
export async function commitRestTransaction(locks: TableLocks, changes: { ctx: TableContext; commit: TableCommit }[]): Promise<void> {
  const names = changes.map((c) => formatTableIdentifier(c.ctx.ident));
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw invalidInput(`iceberg rest: transaction: table ${twice} appears more than once; send one change per table`);
  if (changes.length === 0) throw invalidInput('iceberg rest: transaction: expected at least one table change, found none');
  await locks.with(
    changes.map((c) => c.ctx.ident),
    async () => {
      const prepared: Prepared[] = [];
      for (const c of changes) prepared.push(await prepare(c.ctx, c.commit));
      if (prepared.some((p) => !p.loaded)) throw unsupported('iceberg rest: transaction: creating a table inside a multi-table transaction is not supported; create it first');
      const done: { p: Prepared; result: LoadTableResult }[] = [];
      for (const p of prepared) {
        try {
          done.push({ p, result: await commitPrepared(p) });
        } catch (e) {
          if (done.length === 0) throw e;
          const committed = done.map((d) => formatTableIdentifier(d.p.ctx.ident)).join(', ');
          throw new TwinlakeError(
            'commit-state-unknown',
            `iceberg rest: transaction partly committed: ${committed} committed, ${formatTableIdentifier(p.ctx.ident)} failed (${(e as Error).message}); the tables after it were not committed`,
          );
        } finally {
          // Delta follows each table that committed, whatever happened to the next.
          const last = done[done.length - 1];
          if (last && last.p === p) await followDelta(p.ctx, last.result.metadata);
        }
      }
    },
  );
}
