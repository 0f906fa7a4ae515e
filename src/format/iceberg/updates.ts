import { invalidInput, TwinlakeError, unsupported } from '../../core/errors.ts';
import { stringifyJson } from '../../core/json.ts';
import { maxFieldId } from './schema.ts';
import { parseSnapshot, snapshotToJson, SUPPORTED_FORMAT_VERSIONS } from './table-metadata.ts';
import type { PartitionSpec, Schema, Snapshot, SnapshotRef, SortOrder, TableMetadata } from './types.ts';

/**
 * Commits as data, in the REST catalog spec's shapes (`TableUpdate`, `TableRequirement`):
 * requirements say what must still hold in the table a commit is based on; updates are folded
 * over that metadata to produce the next version. The same shapes serve the SQL catalog, a REST
 * client and a REST server.
 */

export interface StatisticsFile {
  'snapshot-id': bigint;
  'statistics-path': string;
  'file-size-in-bytes': number;
  'file-footer-size-in-bytes': number;
  'key-metadata'?: string;
  'blob-metadata': unknown[];
}

export interface PartitionStatisticsFile {
  'snapshot-id': bigint;
  'statistics-path': string;
  'file-size-in-bytes': number;
}

export type TableUpdate =
  | { action: 'assign-uuid'; uuid: string }
  | { action: 'upgrade-format-version'; 'format-version': number }
  | { action: 'add-schema'; schema: Schema; 'last-column-id'?: number }
  /** `schema-id` -1 selects the schema added last in the same commit. */
  | { action: 'set-current-schema'; 'schema-id': number }
  | { action: 'add-spec'; spec: PartitionSpec }
  | { action: 'set-default-spec'; 'spec-id': number }
  | { action: 'add-sort-order'; 'sort-order': SortOrder }
  | { action: 'set-default-sort-order'; 'sort-order-id': number }
  | { action: 'add-snapshot'; snapshot: Snapshot }
  | ({ action: 'set-snapshot-ref'; 'ref-name': string } & SnapshotRef)
  | { action: 'remove-snapshots'; 'snapshot-ids': bigint[] }
  | { action: 'remove-snapshot-ref'; 'ref-name': string }
  | { action: 'set-location'; location: string }
  | { action: 'set-properties'; updates: Record<string, string> }
  | { action: 'remove-properties'; removals: string[] }
  | { action: 'set-statistics'; statistics: StatisticsFile }
  | { action: 'remove-statistics'; 'snapshot-id': bigint }
  | { action: 'set-partition-statistics'; 'partition-statistics': PartitionStatisticsFile }
  | { action: 'remove-partition-statistics'; 'snapshot-id': bigint }
  | { action: 'remove-partition-specs'; 'spec-ids': number[] }
  | { action: 'remove-schemas'; 'schema-ids': number[] };

export type TableRequirement =
  | { type: 'assert-create' }
  | { type: 'assert-table-uuid'; uuid: string }
  /** `snapshot-id` null: the ref must not exist. */
  | { type: 'assert-ref-snapshot-id'; ref: string; 'snapshot-id': bigint | null }
  | { type: 'assert-last-assigned-field-id'; 'last-assigned-field-id': number }
  | { type: 'assert-current-schema-id'; 'current-schema-id': number }
  | { type: 'assert-last-assigned-partition-id'; 'last-assigned-partition-id': number }
  | { type: 'assert-default-spec-id'; 'default-spec-id': number }
  | { type: 'assert-default-sort-order-id'; 'default-sort-order-id': number };

export const METADATA_PREVIOUS_VERSIONS_MAX = 'write.metadata.previous-versions-max';
const DEFAULT_PREVIOUS_VERSIONS_MAX = 100;

// ---------------------------------------------------------------------------------------------
// Requirements.

/** Throws `commit-conflict` naming the first requirement that `base` (undefined: no table) fails. */
export function checkRequirements(base: TableMetadata | undefined, reqs: readonly TableRequirement[]): void {
  const conflict = (req: TableRequirement, expected: unknown, found: unknown): never => {
    throw new TwinlakeError(
      'commit-conflict',
      `iceberg commit: requirement ${req.type} failed: expected ${show(expected)}, found ${show(found)}`,
      { requirement: req.type },
    );
  };
  for (const req of reqs) {
    if (req.type === 'assert-create') {
      if (base) conflict(req, 'no table', `table ${base['table-uuid']}`);
      continue;
    }
    if (!base) return conflict(req, 'an existing table', 'no table');
    switch (req.type) {
      case 'assert-table-uuid':
        // Java compares table UUIDs case-insensitively.
        if (req.uuid.toLowerCase() !== base['table-uuid'].toLowerCase()) conflict(req, req.uuid, base['table-uuid']);
        break;
      case 'assert-ref-snapshot-id': {
        const ref = base.refs[req.ref];
        if (req['snapshot-id'] === null) {
          if (ref) conflict(req, `no ref ${req.ref}`, `${ref.type} ${req.ref} at snapshot ${ref['snapshot-id']}`);
        } else if (!ref) {
          conflict(req, `ref ${req.ref} at snapshot ${req['snapshot-id']}`, `no ref ${req.ref}`);
        } else if (ref['snapshot-id'] !== req['snapshot-id']) {
          conflict(req, `ref ${req.ref} at snapshot ${req['snapshot-id']}`, `snapshot ${ref['snapshot-id']}`);
        }
        break;
      }
      case 'assert-last-assigned-field-id':
        if (base['last-column-id'] !== req['last-assigned-field-id']) conflict(req, req['last-assigned-field-id'], base['last-column-id']);
        break;
      case 'assert-current-schema-id':
        if (base['current-schema-id'] !== req['current-schema-id']) conflict(req, req['current-schema-id'], base['current-schema-id']);
        break;
      case 'assert-last-assigned-partition-id':
        if (base['last-partition-id'] !== req['last-assigned-partition-id']) conflict(req, req['last-assigned-partition-id'], base['last-partition-id']);
        break;
      case 'assert-default-spec-id':
        if (base['default-spec-id'] !== req['default-spec-id']) conflict(req, req['default-spec-id'], base['default-spec-id']);
        break;
      case 'assert-default-sort-order-id':
        if (base['default-sort-order-id'] !== req['default-sort-order-id']) conflict(req, req['default-sort-order-id'], base['default-sort-order-id']);
        break;
      default:
        throw unsupported(`iceberg commit: unknown requirement ${JSON.stringify((req as { type: unknown }).type)}`);
    }
  }
}

const show = (v: unknown) => (typeof v === 'string' ? v : stringifyJson(v));

// ---------------------------------------------------------------------------------------------
// Updates.

/**
 * Fold `updates` over `base` into the next metadata version. Pure: `base` is never mutated and
 * unchanged parts are shared. Time comes from `ctx.nowMs`; when `previousMetadataLocation` is
 * given, it is appended to the metadata log, which is trimmed to
 * `write.metadata.previous-versions-max` entries. No updates: `base` is returned as is.
 */
export function applyUpdates(
  base: TableMetadata,
  updates: readonly TableUpdate[],
  ctx: { nowMs: number; previousMetadataLocation?: string },
): TableMetadata {
  if (updates.length === 0) return base;
  const m: TableMetadata = { ...base };
  let lastAddedSchemaId: number | undefined;
  let lastAddedSpecId: number | undefined;
  let lastAddedOrderId: number | undefined;
  let lastUpdatedMs: number | undefined;
  const addedSnapshots = new Map<bigint, Snapshot>();

  for (const u of updates) {
    switch (u.action) {
      case 'assign-uuid':
        if (m['table-uuid'] && m['table-uuid'].toLowerCase() !== u.uuid.toLowerCase()) {
          throw invalidInput(`iceberg update assign-uuid: table already has uuid ${m['table-uuid']}, cannot assign ${u.uuid}`);
        }
        m['table-uuid'] = u.uuid;
        break;

      case 'upgrade-format-version': {
        const v = u['format-version'];
        if (!SUPPORTED_FORMAT_VERSIONS.includes(v as 1 | 2 | 3)) {
          throw unsupported(`iceberg update upgrade-format-version: format-version ${v} is not supported; expected one of ${SUPPORTED_FORMAT_VERSIONS.join(', ')}`);
        }
        if (v < m['format-version']) throw invalidInput(`iceberg update upgrade-format-version: cannot downgrade from ${m['format-version']} to ${v}`);
        m['format-version'] = v as 1 | 2 | 3;
        // spec Appendix E §Version 3: next-row-id starts at 0 when a table is upgraded.
        if (v >= 3 && m['next-row-id'] === undefined) m['next-row-id'] = 0;
        break;
      }

      case 'add-schema': {
        const id = u.schema['schema-id'];
        const existing = m.schemas.find((s) => s['schema-id'] === id);
        if (existing) {
          if (stringifyJson(existing.fields) !== stringifyJson(u.schema.fields)) {
            throw invalidInput(`iceberg update add-schema: schema-id ${id} already exists with different fields; schema ids must be unique`);
          }
        } else {
          m.schemas = [...m.schemas, u.schema];
        }
        const maxId = maxFieldId(u.schema);
        m['last-column-id'] = Math.max(m['last-column-id'], u['last-column-id'] ?? 0, maxId);
        lastAddedSchemaId = id;
        break;
      }

      case 'set-current-schema': {
        const id = resolveLast(u['schema-id'], lastAddedSchemaId, 'set-current-schema', 'schema');
        if (!m.schemas.some((s) => s['schema-id'] === id)) {
          throw invalidInput(`iceberg update set-current-schema: schema-id ${id} not in schemas [${m.schemas.map((s) => s['schema-id']).join(', ')}]`);
        }
        m['current-schema-id'] = id;
        break;
      }

      case 'add-spec': {
        const id = u.spec['spec-id'];
        const existing = m['partition-specs'].find((s) => s['spec-id'] === id);
        if (existing) {
          if (stringifyJson(existing.fields) !== stringifyJson(u.spec.fields)) {
            throw invalidInput(`iceberg update add-spec: spec-id ${id} already exists with different fields; spec ids must be unique`);
          }
        } else {
          m['partition-specs'] = [...m['partition-specs'], u.spec];
        }
        m['last-partition-id'] = Math.max(m['last-partition-id'], ...u.spec.fields.map((f) => f['field-id']));
        lastAddedSpecId = id;
        break;
      }

      case 'set-default-spec': {
        const id = resolveLast(u['spec-id'], lastAddedSpecId, 'set-default-spec', 'partition spec');
        if (!m['partition-specs'].some((s) => s['spec-id'] === id)) {
          throw invalidInput(`iceberg update set-default-spec: spec-id ${id} not in partition-specs [${m['partition-specs'].map((s) => s['spec-id']).join(', ')}]`);
        }
        m['default-spec-id'] = id;
        break;
      }

      case 'add-sort-order': {
        const id = u['sort-order']['order-id'];
        const existing = m['sort-orders'].find((o) => o['order-id'] === id);
        if (existing) {
          if (stringifyJson(existing.fields) !== stringifyJson(u['sort-order'].fields)) {
            throw invalidInput(`iceberg update add-sort-order: order-id ${id} already exists with different fields; sort order ids must be unique`);
          }
        } else {
          m['sort-orders'] = [...m['sort-orders'], u['sort-order']];
        }
        lastAddedOrderId = id;
        break;
      }

      case 'set-default-sort-order': {
        const id = resolveLast(u['sort-order-id'], lastAddedOrderId, 'set-default-sort-order', 'sort order');
        if (!m['sort-orders'].some((o) => o['order-id'] === id)) {
          throw invalidInput(`iceberg update set-default-sort-order: order-id ${id} not in sort-orders [${m['sort-orders'].map((o) => o['order-id']).join(', ')}]`);
        }
        m['default-sort-order-id'] = id;
        break;
      }

      case 'add-snapshot': {
        const s = u.snapshot;
        const id = s['snapshot-id'];
        if (m.snapshots.some((x) => x['snapshot-id'] === id)) {
          throw invalidInput(`iceberg update add-snapshot: snapshot ${id} already exists`);
        }
        if (m['format-version'] >= 2 && s['sequence-number'] <= m['last-sequence-number']) {
          throw new TwinlakeError(
            'commit-conflict',
            `iceberg update add-snapshot: sequence-number must be greater than last-sequence-number ${m['last-sequence-number']}, found ${s['sequence-number']} (snapshot ${id})`,
          );
        }
        if (m['format-version'] >= 3) {
          const next = m['next-row-id'] ?? 0;
          if (s['first-row-id'] === undefined || s['added-rows'] === undefined) {
            throw invalidInput(`iceberg update add-snapshot: a v3 snapshot needs first-row-id and added-rows (snapshot ${id})`);
          }
          if (s['first-row-id'] < next) {
            throw new TwinlakeError('commit-conflict', `iceberg update add-snapshot: first-row-id must be at least next-row-id ${next}, found ${s['first-row-id']} (snapshot ${id})`);
          }
          m['next-row-id'] = next + s['added-rows'];
        }
        m.snapshots = [...m.snapshots, s];
        if (m['format-version'] >= 2) m['last-sequence-number'] = s['sequence-number'];
        lastUpdatedMs = s['timestamp-ms'];
        addedSnapshots.set(id, s);
        break;
      }

      case 'set-snapshot-ref': {
        const { action: _a, 'ref-name': name, ...fields } = u;
        const id = fields['snapshot-id'];
        if (!m.snapshots.some((s) => s['snapshot-id'] === id)) throw invalidInput(`iceberg update set-snapshot-ref: snapshot ${id} for ref ${name} does not exist`);
        if (name === 'main' && fields.type !== 'branch') throw invalidInput(`iceberg update set-snapshot-ref: main must be a branch, found ${fields.type}`);
        const ref: SnapshotRef = { ...fields };
        const old = m.refs[name];
        if (old && stringifyJson(old) === stringifyJson(ref)) break;
        m.refs = { ...m.refs, [name]: ref };
        if (name === 'main') {
          m['current-snapshot-id'] = id;
          // As Java: a snapshot committed in this update becomes current at its own timestamp.
          const at = addedSnapshots.get(id)?.['timestamp-ms'] ?? ctx.nowMs;
          lastUpdatedMs ??= at;
          m['snapshot-log'] = [...m['snapshot-log'], { 'timestamp-ms': at, 'snapshot-id': id }];
        }
        break;
      }

      case 'remove-snapshots': {
        const removed = new Set(u['snapshot-ids']);
        m.snapshots = m.snapshots.filter((s) => !removed.has(s['snapshot-id']));
        const refs: Record<string, SnapshotRef> = {};
        for (const [name, ref] of Object.entries(m.refs)) if (!removed.has(ref['snapshot-id'])) refs[name] = ref;
        m.refs = refs;
        if (m['current-snapshot-id'] !== undefined && m['current-snapshot-id'] !== null && removed.has(m['current-snapshot-id'])) {
          m['current-snapshot-id'] = null;
        }
        // spec §Table Metadata Fields: drop snapshot-log entries up to the last expired snapshot.
        const live = new Set(m.snapshots.map((s) => s['snapshot-id']));
        let cut = 0;
        m['snapshot-log'].forEach((e, i) => {
          if (!live.has(e['snapshot-id'])) cut = i + 1;
        });
        m['snapshot-log'] = m['snapshot-log'].slice(cut);
        if (m.statistics) m.statistics = (m.statistics as StatisticsFile[]).filter((s) => !removed.has(s['snapshot-id']));
        if (m['partition-statistics']) {
          m['partition-statistics'] = (m['partition-statistics'] as PartitionStatisticsFile[]).filter((s) => !removed.has(s['snapshot-id']));
        }
        break;
      }

      case 'remove-snapshot-ref': {
        if (!(u['ref-name'] in m.refs)) break;
        const { [u['ref-name']]: _gone, ...rest } = m.refs;
        m.refs = rest;
        if (u['ref-name'] === 'main') m['current-snapshot-id'] = null;
        break;
      }

      case 'set-location':
        m.location = u.location.replace(/\/+$/, '');
        break;

      case 'set-properties':
        m.properties = { ...m.properties, ...u.updates };
        break;

      case 'remove-properties': {
        const props = { ...m.properties };
        for (const k of u.removals) delete props[k];
        m.properties = props;
        break;
      }

      case 'set-statistics': {
        const id = u.statistics['snapshot-id'];
        m.statistics = [...((m.statistics ?? []) as StatisticsFile[]).filter((s) => s['snapshot-id'] !== id), u.statistics];
        break;
      }

      case 'remove-statistics':
        m.statistics = ((m.statistics ?? []) as StatisticsFile[]).filter((s) => s['snapshot-id'] !== u['snapshot-id']);
        break;

      case 'set-partition-statistics': {
        const id = u['partition-statistics']['snapshot-id'];
        m['partition-statistics'] = [
          ...((m['partition-statistics'] ?? []) as PartitionStatisticsFile[]).filter((s) => s['snapshot-id'] !== id),
          u['partition-statistics'],
        ];
        break;
      }

      case 'remove-partition-statistics':
        m['partition-statistics'] = ((m['partition-statistics'] ?? []) as PartitionStatisticsFile[]).filter((s) => s['snapshot-id'] !== u['snapshot-id']);
        break;

      case 'remove-partition-specs': {
        if (u['spec-ids'].includes(m['default-spec-id'])) {
          throw invalidInput(`iceberg update remove-partition-specs: cannot remove the default spec ${m['default-spec-id']}`);
        }
        m['partition-specs'] = m['partition-specs'].filter((s) => !u['spec-ids'].includes(s['spec-id']));
        break;
      }

      case 'remove-schemas': {
        if (u['schema-ids'].includes(m['current-schema-id'])) {
          throw invalidInput(`iceberg update remove-schemas: cannot remove the current schema ${m['current-schema-id']}`);
        }
        m.schemas = m.schemas.filter((s) => !u['schema-ids'].includes(s['schema-id']));
        break;
      }

      default:
        throw unsupported(`iceberg update: unknown action ${JSON.stringify((u as { action: unknown }).action)}`);
    }
  }

  m['last-updated-ms'] = lastUpdatedMs ?? ctx.nowMs;
  if (ctx.previousMetadataLocation !== undefined) {
    const log = [...m['metadata-log'], { 'timestamp-ms': base['last-updated-ms'], 'metadata-file': ctx.previousMetadataLocation }];
    const max = Math.max(1, previousVersionsMax(m.properties));
    m['metadata-log'] = log.slice(Math.max(0, log.length - max));
  }
  return m;
}

function resolveLast(id: number, lastAdded: number | undefined, action: string, what: string): number {
  if (id !== -1) return id;
  if (lastAdded === undefined) throw invalidInput(`iceberg update ${action}: -1 means the ${what} added last in this commit, but none was added`);
  return lastAdded;
}

function previousVersionsMax(props: Record<string, string>): number {
  const raw = props[METADATA_PREVIOUS_VERSIONS_MAX];
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(n) ? n : DEFAULT_PREVIOUS_VERSIONS_MAX;
}

// ---------------------------------------------------------------------------------------------
// JSON, as the REST catalog sends them. Objects keep bigints; write them with `stringifyJson`.

export function updateToJson(u: TableUpdate): Record<string, unknown> {
  if (u.action === 'add-snapshot') return { action: u.action, snapshot: snapshotToJson(u.snapshot, 3) };
  return { ...u };
}

export function updateFromJson(json: any): TableUpdate {
  if (json === null || typeof json !== 'object' || typeof json.action !== 'string') {
    throw invalidInput(`iceberg update: expected an object with a string action, found ${show(json)}`);
  }
  const need = (key: string) => {
    if (json[key] === undefined) throw invalidInput(`iceberg update ${json.action}: missing ${key}`);
    return json[key];
  };
  const id = (v: unknown, key: string): bigint => {
    if (typeof v === 'bigint') return v;
    if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
    throw invalidInput(`iceberg update ${json.action}: expected an integer ${key}, found ${show(v)}`);
  };
  switch (json.action as TableUpdate['action']) {
    case 'assign-uuid':
      return { action: 'assign-uuid', uuid: String(need('uuid')) };
    case 'upgrade-format-version':
      return { action: 'upgrade-format-version', 'format-version': Number(need('format-version')) };
    case 'add-schema': {
      const schema = need('schema');
      const out: TableUpdate = { action: 'add-schema', schema: { ...schema, 'schema-id': schema['schema-id'] ?? 0 } };
      if (json['last-column-id'] !== undefined) out['last-column-id'] = Number(json['last-column-id']);
      return out;
    }
    case 'set-current-schema':
      return { action: 'set-current-schema', 'schema-id': Number(need('schema-id')) };
    case 'add-spec':
      return { action: 'add-spec', spec: need('spec') };
    case 'set-default-spec':
      return { action: 'set-default-spec', 'spec-id': Number(need('spec-id')) };
    case 'add-sort-order':
      return { action: 'add-sort-order', 'sort-order': need('sort-order') };
    case 'set-default-sort-order':
      return { action: 'set-default-sort-order', 'sort-order-id': Number(need('sort-order-id')) };
    case 'add-snapshot':
      return {
        action: 'add-snapshot',
        snapshot: parseSnapshot(need('snapshot'), (what) => {
          throw invalidInput(`iceberg update add-snapshot: ${what}`);
        }),
      };
    case 'set-snapshot-ref': {
      const { action: _a, ...rest } = json;
      return { ...rest, action: 'set-snapshot-ref', 'ref-name': String(need('ref-name')), 'snapshot-id': id(need('snapshot-id'), 'snapshot-id'), type: need('type') };
    }
    case 'remove-snapshots':
      return { action: 'remove-snapshots', 'snapshot-ids': (need('snapshot-ids') as unknown[]).map((v) => id(v, 'snapshot-ids')) };
    case 'remove-snapshot-ref':
      return { action: 'remove-snapshot-ref', 'ref-name': String(need('ref-name')) };
    case 'set-location':
      return { action: 'set-location', location: String(need('location')) };
    case 'set-properties':
      return { action: 'set-properties', updates: need('updates') };
    case 'remove-properties':
      return { action: 'remove-properties', removals: need('removals') };
    case 'set-statistics': {
      const s = need('statistics');
      return { action: 'set-statistics', statistics: { ...s, 'snapshot-id': id(s['snapshot-id'], 'statistics.snapshot-id') } };
    }
    case 'remove-statistics':
      return { action: 'remove-statistics', 'snapshot-id': id(need('snapshot-id'), 'snapshot-id') };
    case 'set-partition-statistics': {
      const s = need('partition-statistics');
      return { action: 'set-partition-statistics', 'partition-statistics': { ...s, 'snapshot-id': id(s['snapshot-id'], 'partition-statistics.snapshot-id') } };
    }
    case 'remove-partition-statistics':
      return { action: 'remove-partition-statistics', 'snapshot-id': id(need('snapshot-id'), 'snapshot-id') };
    case 'remove-partition-specs':
      return { action: 'remove-partition-specs', 'spec-ids': (need('spec-ids') as unknown[]).map(Number) };
    case 'remove-schemas':
      return { action: 'remove-schemas', 'schema-ids': (need('schema-ids') as unknown[]).map(Number) };
    default:
      throw unsupported(`iceberg update: unknown action ${JSON.stringify(json.action)}`);
  }
}

export function requirementToJson(r: TableRequirement): Record<string, unknown> {
  return { ...r };
}

export function requirementFromJson(json: any): TableRequirement {
  if (json === null || typeof json !== 'object' || typeof json.type !== 'string') {
    throw invalidInput(`iceberg requirement: expected an object with a string type, found ${show(json)}`);
  }
  const num = (key: string): number => {
    const v = json[key];
    if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidInput(`iceberg requirement ${json.type}: expected an integer ${key}, found ${show(v)}`);
    return v;
  };
  switch (json.type as TableRequirement['type']) {
    case 'assert-create':
      return { type: 'assert-create' };
    case 'assert-table-uuid':
      if (typeof json.uuid !== 'string') throw invalidInput(`iceberg requirement assert-table-uuid: expected a string uuid, found ${show(json.uuid)}`);
      return { type: 'assert-table-uuid', uuid: json.uuid };
    case 'assert-ref-snapshot-id': {
      const v = json['snapshot-id'];
      let id: bigint | null;
      if (v === null || v === undefined) id = null;
      else if (typeof v === 'bigint') id = v;
      else if (typeof v === 'number' && Number.isInteger(v)) id = BigInt(v);
      else throw invalidInput(`iceberg requirement assert-ref-snapshot-id: expected an integer or null snapshot-id, found ${show(v)}`);
      if (typeof json.ref !== 'string') throw invalidInput(`iceberg requirement assert-ref-snapshot-id: expected a string ref, found ${show(json.ref)}`);
      return { type: 'assert-ref-snapshot-id', ref: json.ref, 'snapshot-id': id };
    }
    case 'assert-last-assigned-field-id':
      return { type: 'assert-last-assigned-field-id', 'last-assigned-field-id': num('last-assigned-field-id') };
    case 'assert-current-schema-id':
      return { type: 'assert-current-schema-id', 'current-schema-id': num('current-schema-id') };
    case 'assert-last-assigned-partition-id':
      return { type: 'assert-last-assigned-partition-id', 'last-assigned-partition-id': num('last-assigned-partition-id') };
    case 'assert-default-spec-id':
      return { type: 'assert-default-spec-id', 'default-spec-id': num('default-spec-id') };
    case 'assert-default-sort-order-id':
      return { type: 'assert-default-sort-order-id', 'default-sort-order-id': num('default-sort-order-id') };
    default:
      throw unsupported(`iceberg requirement: unknown type ${JSON.stringify(json.type)}`);
  }
}
