import { PassThrough } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { fileUri, isUri } from '../core/uri.ts';
import { resolve } from 'node:path';
import type { Lakehouse } from '../table/lakehouse.ts';
import type { ReadOptions, TableDescription } from '../table/table.ts';
import { deltaHistory, deltaVersionOfSnapshot, icebergSnapshotOf, latestDeltaVersion } from '../table/delta/delta-log.ts';
import { ancestors, currentSnapshot } from '../format/iceberg/table-metadata.ts';
import { deltaVersionOf, OPERATION_KEY } from '../format/dual/summary-keys.ts';
import { parseFormats } from '../format/dual/table-properties.ts';
import type { StructType } from '../format/iceberg/types.ts';
import { redact } from '../config/redact.ts';
import { HttpError } from './http-errors.ts';
import { MAINTENANCE_OPERATIONS, type MaintenanceOperation } from '../maintenance/maintain.ts';
import { parseDuration } from '../config/config-keys.ts';
import { TableIndex } from './table-index.ts';
import { MaintenanceLocks } from './maintenance-scheduler.ts';
import { listRuns, runAndLog, runsOfSnapshots } from '../maintenance/run-log.ts';
import { configuredOptions, type MaintenanceDefaults } from '../maintenance/schedule.ts';

export interface ManagementOptions {
  lake: Lakehouse;
  /** The catalog the server's tables are in (`sql`, `glue`, …): a create naming another is refused. */
  catalogType?: string;
  /** The warehouse as a URI, for the storage provider a create must name. */
  warehouseUri?: string;
  index?: TableIndex;
  /** One maintenance run at a time per table (shared with the background scheduler). */
  locks?: MaintenanceLocks;
  /** The config's maintenance settings of a table: retention and target below the table's own properties. */
  maintenanceDefaultsFor?: (name: string) => MaintenanceDefaults;
}

/** The management API's table settings, kept as table properties so every reader of the table sees them. */
export const API_PROPS = {
  connectionId: 'twinlake.api.connection-id',
  keyColumns: 'twinlake.api.key-columns',
  writeMode: 'twinlake.api.write-mode',
  retentionMs: 'history.expire.max-snapshot-age-ms',
  targetFileSize: 'write.target-file-size-bytes',
} as const;

/** A maintenance body's duration (`retention`, `olderThan`): "7d" or milliseconds. */
function durationMs(value: string | number, field = 'retention'): number {
  if (typeof value === 'number') {
    if (value < 0) throw new HttpError(400, `maintenance: ${field} expects a duration such as "7d" or milliseconds, found ${value}`);
    return value;
  }
  try {
    return parseDuration(value);
  } catch {
    throw new HttpError(400, `maintenance: ${field} expects a duration such as "7d", "36h" or "2w", found ${JSON.stringify(value)}`);
  }
}

const tableIdParams = { type: 'object', required: ['tableId'], properties: { tableId: { type: 'string', minLength: 1, description: "the table's UUID (Iceberg table-uuid; the Delta log's id for a Delta-only table)" } } } as const;

const travelQuery = {
  format: { type: 'string', enum: ['iceberg', 'delta'], description: 'read through this format (default iceberg when present)' },
  snapshot: { type: 'string', pattern: '^-?[0-9]+$', description: 'time travel: an Iceberg snapshot ID' },
  version: { type: 'integer', minimum: 0, description: 'time travel: a Delta version' },
  asOf: { type: 'string', minLength: 1, description: 'time travel: ISO-8601 time or epoch milliseconds' },
} as const;

const tableSummarySchema = {
  type: 'object',
  properties: {
    tableId: { type: 'string' },
    tableName: { type: 'string' },
    icebergNamespace: { type: 'string' },
    connectionId: { type: ['string', 'null'] },
    storageProvider: { type: 'string' },
    storagePath: { type: 'string' },
    icebergEnabled: { type: 'boolean' },
    deltaEnabled: { type: 'boolean' },
    icebergCatalogType: { type: 'string' },
    partitionSpec: { type: 'string' },
    keyColumns: { type: 'array', items: { type: 'string' } },
    writeMode: { type: 'string' },
    retentionDays: { type: ['number', 'null'] },
    compactionTargetFileSizeBytes: { type: ['integer', 'null'] },
    rows: { type: 'integer' },
    files: { type: 'integer' },
    bytes: { type: 'integer' },
    currentSnapshotId: { type: ['string', 'null'] },
    deltaVersion: { type: ['integer', 'null'] },
    deltaInStep: { type: ['boolean', 'null'] },
    lastCommitAt: { type: ['string', 'null'] },
  },
} as const;

export function storageProviderOf(uri: string): string {
  if (uri.startsWith('file:')) return 'local';
  if (/^s3a?:/.test(uri)) return 's3';
  if (/^(abfss?|az|wasbs?):/.test(uri)) return 'azure';
  if (/^gs:/.test(uri)) return 'gcs';
  return uri.split(':')[0]!;
}

/** The Iceberg snapshot the newest Delta version mirrors is the current one. */
async function deltaInStep(lake: Lakehouse, d: TableDescription): Promise<boolean | null> {
  if (!d.formats.includes('delta') || !d.formats.includes('iceberg')) return null;
  const { store, key } = lake.io.storeAt(d.location);
  const latest = await latestDeltaVersion(store, key);
  if (latest === undefined) return false;
  if (d.currentSnapshotId === undefined) return true;
  return (await icebergSnapshotOf(store, key, latest)) === d.currentSnapshotId;
}

function numberProp(props: Record<string, string>, key: string): number | null {
  const v = props[key];
  return v === undefined || !Number.isFinite(Number(v)) ? null : Number(v);
}

async function summarize(lake: Lakehouse, id: string, d: TableDescription, catalogType: string, lastCommitAt: string | null): Promise<Record<string, unknown>> {
  const p = d.properties;
  const dot = d.name.lastIndexOf('.');
  const retention = numberProp(p, API_PROPS.retentionMs);
  return {
    tableId: id,
    tableName: d.name.slice(dot + 1),
    icebergNamespace: d.name.slice(0, dot),
    connectionId: p[API_PROPS.connectionId] ?? null,
    storageProvider: storageProviderOf(d.location),
    storagePath: d.location,
    icebergEnabled: d.formats.includes('iceberg'),
    deltaEnabled: d.formats.includes('delta'),
    icebergCatalogType: catalogType,
    partitionSpec: d.partitionSpec,
    keyColumns: p[API_PROPS.keyColumns] ? p[API_PROPS.keyColumns]!.split(',') : [],
    writeMode: p[API_PROPS.writeMode] ?? 'append',
    retentionDays: retention === null ? null : retention / 86_400_000,
    compactionTargetFileSizeBytes: numberProp(p, API_PROPS.targetFileSize),
    rows: d.records - d.deletedRecords,
    files: d.files,
    bytes: d.bytes,
    currentSnapshotId: d.currentSnapshotId ?? null,
    deltaVersion: d.deltaVersion ?? null,
    deltaInStep: await deltaInStep(lake, d),
    lastCommitAt,
  };
}

export function travelOf(q: { snapshot?: string; version?: number; asOf?: string; format?: 'iceberg' | 'delta' }): ReadOptions {
  const o: ReadOptions = {};
  if (q.format !== undefined) o.format = q.format;
  if (q.snapshot !== undefined) o.snapshotId = BigInt(q.snapshot);
  if (q.version !== undefined) o.version = q.version;
  if (q.asOf !== undefined) o.asOf = q.asOf;
  return o;
}

/** The management API (`/api/managed-lakehouse/...`): tables, their commits, maintenance, and reads. */
export const managementRoutes: FastifyPluginAsync<ManagementOptions> = async (app, opts) => {
  const { lake } = opts;
  const index = opts.index ?? new TableIndex(lake);
  const locks = opts.locks ?? new MaintenanceLocks();
  const catalogType = opts.catalogType ?? 'sql';
  const base = '/api/managed-lakehouse/tables';

  const describeWithId = async (name: string) => {
    const table = lake.table(name);
    const d = await table.describe();
    const history = await table.history();
    index.remember(d.tableUuid, name);
    return summarize(lake, d.tableUuid, d, catalogType, history[0]?.timestamp ?? null);
  };

  app.get(base, {
    config: { scope: 'read' },
    schema: { summary: 'The tables, with their formats, size, last commit and whether Delta is in step', response: { 200: { type: 'object', properties: { tables: { type: 'array', items: tableSummarySchema } } } } },
  }, async () => {
    const tables = [];
    for (const name of await lake.listTables()) tables.push(await describeWithId(name));
    return { tables };
  });

  app.post<{ Body: { connectionId: string; tableName: string; storageProvider: string; storagePath?: string; icebergEnabled: boolean; deltaEnabled: boolean; icebergCatalogType: string; icebergNamespace: string; partitionSpec?: string; keyColumns?: string[]; writeMode?: string; retentionDays?: number; compactionTargetFileSizeBytes?: number; schema?: StructType } }>(base, {
    config: { scope: 'admin' },
    schema: {
      summary: 'Create (register) a managed table; its formats follow icebergEnabled and deltaEnabled',
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['connectionId', 'tableName', 'storageProvider', 'icebergEnabled', 'deltaEnabled', 'icebergCatalogType', 'icebergNamespace'],
        properties: {
          connectionId: { type: 'string', minLength: 1, description: 'the pipeline connection that writes the table' },
          tableName: { type: 'string', minLength: 1, pattern: '^[^.]+$' },
          storageProvider: { type: 'string', enum: ['local', 's3', 'azure', 'gcs'] },
          storagePath: { type: 'string', minLength: 1, description: "the table's location; must be where this warehouse keeps the table" },
          icebergEnabled: { type: 'boolean' },
          deltaEnabled: { type: 'boolean' },
          icebergCatalogType: { type: 'string', minLength: 1, description: "this server's catalog type (sql, glue, …)" },
          icebergNamespace: { type: 'string', minLength: 1 },
          partitionSpec: { type: 'string', description: 'e.g. "day(ts), bucket(16, user_id)"' },
          keyColumns: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'merge keys of record posts in merge mode' },
          writeMode: { type: 'string', enum: ['append', 'overwrite', 'merge'], description: 'the default mode of record posts' },
          retentionDays: { type: 'number', exclusiveMinimum: 0, description: 'snapshots older than this are for snapshot expiry to remove' },
          compactionTargetFileSizeBytes: { type: 'integer', minimum: 1, description: 'the target data file size of writes and compaction' },
          schema: { type: 'object', description: 'an Iceberg struct; without it the first record post infers the schema' },
        },
      },
      response: { 201: tableSummarySchema },
    },
  }, async (request, reply) => {
    const b = request.body;
    const name = `${b.icebergNamespace}.${b.tableName}`;
    if (!b.icebergEnabled && !b.deltaEnabled) throw new HttpError(400, 'request body: icebergEnabled and deltaEnabled are both false; enable at least one format');
    const known = catalogType === 'sql' ? ['sql', 'jdbc'] : [catalogType];
    if (!known.includes(b.icebergCatalogType.toLowerCase())) throw new HttpError(400, `request body: icebergCatalogType must be this server's catalog, ${catalogType}; found ${JSON.stringify(b.icebergCatalogType)}`);
    const provider = storageProviderOf(opts.warehouseUri ?? lake.warehouse);
    if (b.storageProvider !== provider) throw new HttpError(400, `request body: storageProvider must be this warehouse's, ${provider}; found ${JSON.stringify(b.storageProvider)}`);
    if (b.writeMode === 'merge' && !b.keyColumns?.length) throw new HttpError(400, 'request body: writeMode merge needs keyColumns');
    const table = lake.table(name);
    if (await table.exists()) throw new HttpError(409, `table: ${name} already exists`, 'AlreadyExistsException');
    const location = `${lake.warehouse}/${b.icebergNamespace.split('.').join('/')}/${b.tableName}`;
    if (b.storagePath !== undefined) {
      const given = (isUri(b.storagePath) ? b.storagePath : fileUri(resolve(b.storagePath))).replace(/\/+$/, '');
      if (given !== location) throw new HttpError(400, `request body: storagePath must be where this warehouse keeps ${name}, ${location}; found ${JSON.stringify(b.storagePath)}`);
    }
    const properties: Record<string, string> = { [API_PROPS.connectionId]: b.connectionId };
    if (b.keyColumns?.length) properties[API_PROPS.keyColumns] = b.keyColumns.join(',');
    if (b.writeMode) properties[API_PROPS.writeMode] = b.writeMode;
    if (b.retentionDays !== undefined) properties[API_PROPS.retentionMs] = String(Math.round(b.retentionDays * 86_400_000));
    if (b.compactionTargetFileSizeBytes !== undefined) properties[API_PROPS.targetFileSize] = String(b.compactionTargetFileSizeBytes);
    // A spec names columns, and Delta's partition columns are fixed at creation: both come together.
    if (b.partitionSpec && !b.schema) throw new HttpError(400, 'request body: partitionSpec needs schema (the columns it names); without a schema the first record post infers one, unpartitioned');
    const formats = parseFormats([...(b.icebergEnabled ? ['iceberg'] : []), ...(b.deltaEnabled ? ['delta'] : [])]);
    const schema = (b.schema as StructType | undefined) ?? { type: 'struct', fields: [] };
    await table.create(schema, { formats, properties, partition: b.partitionSpec });
    return reply.code(201).send(await describeWithId(name));
  });

  app.get<{ Params: { tableId: string }; Querystring: { limit: number; cursor?: string } }>(`${base}/:tableId/commits`, {
    config: { scope: 'read' },
    schema: {
      summary: "The table's commits, newest first: each Iceberg snapshot with the Delta version mirroring it",
      params: tableIdParams,
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
          cursor: { type: 'string', pattern: '^-?[0-9]+$', description: 'nextCursor of the previous page' },
        },
      },
    },
  }, async (request) => {
    const { limit, cursor } = request.query;
    const { table } = await index.resolve(request.params.tableId);
    const d = await table.describe();
    const { store, key } = lake.io.storeAt(d.location);
    if (!d.formats.includes('iceberg')) {
      const all = await deltaHistory(store, key);
      const start = cursor === undefined ? 0 : all.findIndex((c) => String(c.version) === cursor);
      if (start < 0) throw new HttpError(400, `query: cursor ${cursor} is not a commit of this table`);
      const page = all.slice(start, start + limit);
      return {
        tableId: request.params.tableId,
        commits: page.map((c) => ({ icebergSnapshotId: null, parentSnapshotId: null, deltaVersion: c.version, operation: (c.operation ?? 'unknown').toLowerCase(), rowsAdded: c.addedRecords, rowsRemoved: null, filesAdded: c.addedFiles, filesRemoved: c.removedFiles, timestamp: new Date(c.timestampMs ?? 0).toISOString(), deltaInStep: null })),
        nextCursor: all[start + limit] ? String(all[start + limit]!.version) : null,
      };
    }
    const metadata = await table.metadata();
    const head = currentSnapshot(metadata);
    const chain = head ? ancestors(metadata, head['snapshot-id']) : [];
    const start = cursor === undefined ? 0 : chain.findIndex((s) => String(s['snapshot-id']) === cursor);
    if (start < 0) throw new HttpError(400, `query: cursor ${cursor} is not a commit of this table`);
    const delta = d.formats.includes('delta');
    const page = chain.slice(start, start + limit);
    // Commits a maintenance run made (compaction's), by the run log: shown as that operation's.
    const compactions = page.filter((s) => s.summary[OPERATION_KEY] === 'compaction').map((s) => ({ id: String(s['snapshot-id']), timestampMs: s['timestamp-ms'] }));
    const byMaintenance = new Map<string, { operation: string; runId: string }>();
    for (const [id, r] of await runsOfSnapshots(table, compactions)) byMaintenance.set(id, { operation: r.operation, runId: r.id });
    const commits = [];
    for (const s of page) {
      const id = s['snapshot-id'];
      let deltaVersion: number | undefined;
      if (delta) {
        // Which version mirrors a snapshot is the log's to say: the summary's hint first, then the log.
        const hint = deltaVersionOf(s);
        deltaVersion = hint !== undefined && (await icebergSnapshotOf(store, key, hint)) === id ? hint : await deltaVersionOfSnapshot(store, key, id, hint);
      }
      const n = (k: string) => Number(s.summary[k] ?? 0);
      commits.push({
        icebergSnapshotId: id,
        parentSnapshotId: s['parent-snapshot-id'] ?? null,
        deltaVersion: deltaVersion ?? null,
        operation: s.summary.operation,
        ...(s.summary[OPERATION_KEY] ? { change: s.summary[OPERATION_KEY] } : {}),
        ...(byMaintenance.has(String(id)) ? { maintenance: byMaintenance.get(String(id)) } : {}),
        rowsAdded: n('added-records'),
        rowsRemoved: n('deleted-records') + n('added-position-deletes'),
        filesAdded: n('added-data-files'),
        filesRemoved: n('deleted-data-files'),
        timestamp: new Date(s['timestamp-ms']).toISOString(),
        deltaInStep: delta ? deltaVersion !== undefined : null,
      });
    }
    return { tableId: request.params.tableId, commits, nextCursor: chain[start + limit] ? String(chain[start + limit]!['snapshot-id']) : null };
  });

  app.post<{ Params: { tableId: string }; Body: { operation: MaintenanceOperation; retention?: string | number; olderThan?: string | number; sort?: string[]; zorder?: string[]; targetFileSizeBytes?: number; dryRun?: boolean } }>(`${base}/:tableId/maintenance`, {
    config: { scope: 'admin' },
    schema: {
      summary: 'Run a maintenance operation; the answer is what it did',
      params: tableIdParams,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['operation'],
        properties: {
          operation: { type: 'string', enum: [...MAINTENANCE_OPERATIONS] },
          retention: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'integer', minimum: 0 }], description: 'snapshot_expiry: keep snapshots younger than this ("7d", "36h", or milliseconds); default the table\'s history.expire.max-snapshot-age-ms, else 7 days' },
          olderThan: { anyOf: [{ type: 'string', minLength: 1 }, { type: 'integer', minimum: 0 }], description: 'orphan_cleanup, metadata_cleanup: only files older than this (default 3 days for orphans, 1 hour for metadata; at least 1 hour)' },
          sort: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'compaction: write each group sorted by these columns' },
          zorder: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'compaction: write each group in Z-order of these columns' },
          targetFileSizeBytes: { type: 'integer', minimum: 1, description: "compaction: the file size to aim for; default the table's write.target-file-size-bytes, else 128 MiB" },
          dryRun: { type: 'boolean', description: 'list what would be done, changing nothing' },
        },
      },
    },
  }, async (request) => {
    const { operation, retention, olderThan, sort, zorder, targetFileSizeBytes, dryRun } = request.body;
    const { name, table } = await index.resolve(request.params.tableId);
    // A run in progress on the table (a scheduled one too) is waited for: one at a time per table.
    const { result, run } = await locks.run(name, () => runAndLog(table, operation, {
      ...configuredOptions(opts.maintenanceDefaultsFor?.(name) ?? {}),
      ...(retention !== undefined ? { retention: durationMs(retention) } : {}),
      ...(olderThan !== undefined ? { olderThan: durationMs(olderThan, 'olderThan') } : {}),
      ...(sort !== undefined ? { sort } : {}),
      ...(zorder !== undefined ? { zorder } : {}),
      ...(targetFileSizeBytes !== undefined ? { targetFileSize: targetFileSizeBytes } : {}),
      ...(dryRun !== undefined ? { dryRun } : {}),
    }, 'manual'));
    // Snapshot IDs are 64-bit: strings, as the other routes give them.
    return JSON.parse(JSON.stringify({ tableId: request.params.tableId, status: 'completed', ...result, ...(run ? { runId: run.id } : {}) }, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
  });

  app.get<{ Params: { tableId: string }; Querystring: { limit: number } }>(`${base}/:tableId/maintenance/runs`, {
    config: { scope: 'admin' },
    schema: {
      summary: "The table's maintenance runs, newest first (scheduled and by hand): what each removed, rewrote and freed, and what it committed",
      params: tableIdParams,
      querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } } },
    },
  }, async (request) => {
    const { table } = await index.resolve(request.params.tableId);
    return { tableId: request.params.tableId, runs: await listRuns(table, { limit: request.query.limit }) };
  });

  app.get<{ Params: { tableId: string } }>(`${base}/:tableId/schema`, {
    config: { scope: 'read' },
    schema: { summary: "The table's current schema (field IDs, types) and partition spec", params: tableIdParams },
  }, async (request) => {
    const { table } = await index.resolve(request.params.tableId);
    const d = await table.describe();
    return { tableId: request.params.tableId, formats: d.formats, schema: d.schema, partitionSpec: d.partitionSpec };
  });

  app.get<{ Params: { tableId: string } }>(`${base}/:tableId/snapshots`, {
    config: { scope: 'read' },
    schema: { summary: 'Snapshots of the main branch with their Delta versions, newest first', params: tableIdParams },
  }, async (request) => {
    const { table } = await index.resolve(request.params.tableId);
    return { tableId: request.params.tableId, snapshots: await table.history() };
  });

  app.get<{ Params: { tableId: string }; Querystring: { format?: 'iceberg' | 'delta'; snapshot?: string; version?: number; asOf?: string } }>(`${base}/:tableId/files`, {
    config: { scope: 'read' },
    schema: { summary: 'The live data files (and their delete files) of the current or a past version', params: tableIdParams, querystring: { type: 'object', additionalProperties: false, properties: travelQuery } },
  }, async (request) => {
    const { table } = await index.resolve(request.params.tableId);
    return table.files(travelOf(request.query));
  });

  app.get<{ Params: { tableId: string }; Querystring: { format?: 'iceberg' | 'delta'; snapshot?: string; version?: number; asOf?: string; limit?: number; where?: string } }>(`${base}/:tableId/rows`, {
    config: { scope: 'read' },
    schema: {
      summary: 'Rows as NDJSON, streamed as the engine reads them',
      params: tableIdParams,
      querystring: { type: 'object', additionalProperties: false, properties: { ...travelQuery, limit: { type: 'integer', minimum: 0 }, where: { type: 'string', minLength: 1, description: "a filter, e.g. region = 'us'" } } },
    },
  }, async (request, reply) => {
    const { table } = await index.resolve(request.params.tableId);
    const opts: ReadOptions = { ...travelOf(request.query), limit: request.query.limit, where: request.query.where };
    // Planning first: a bad filter or an unknown snapshot answers 400/404, not a broken stream.
    const plan = await table.plan(opts);
    // A table created without a schema has no columns and no rows until its first post.
    if (plan.task.schema.fields.length === 0 && plan.task.files.length === 0) return reply.type('application/x-ndjson').send('');
    const body = new PassThrough();
    table.export(body, { ...opts, output: 'json' }, plan).then(
      () => body.end(),
      (e: unknown) => {
        request.log.error({ error: { message: redact((e as Error).message) } }, 'rows: the stream failed after it started');
        body.destroy(e as Error);
      },
    );
    return reply.type('application/x-ndjson').send(body);
  });
};
