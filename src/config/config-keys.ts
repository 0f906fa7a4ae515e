import { invalidInput, isTwinlakeError } from '../core/errors.ts';
import { isUri } from '../core/uri.ts';
import { machineMemoryBytes, parseMemoryLimit } from '../engine/engine-settings.ts';
import { parseFormats, DEFAULT_TARGET_FILE_SIZE } from '../format/dual/table-properties.ts';
import { SCHEDULE_EXPECTS, SCHEDULED_OPERATIONS, scheduleProblem } from '../format/dual/maintenance-schedule.ts';

/**
 * Every key of a Twinlake config file, in one table: its type, the environment variable that
 * overrides it, the command-line option that overrides both, whether it is a secret, and what it
 * means. Validation, the environment, `twinlake config`, `--help` and redaction all read this table,
 * so a key is declared once.
 */
export interface ConfigKey {
  /** The key's path in the file: `storage.credential.secretAccessKey`. */
  path: string;
  /** What a value must be, for messages: `a folder path (string)`. */
  expects: string;
  /** Checks and normalises one value; `typed` is true for values from a file (a number must be a number). */
  check: (value: unknown, typed: boolean) => unknown;
  env?: string;
  flag?: string;
  /** Never printed: output, errors and `twinlake config` show `***`. */
  secret?: boolean;
  /** A relative path, resolved against the config file's folder (or the current folder). */
  relative?: boolean;
  /** The default as documented (the resolver supplies the value). */
  default?: string;
  doc: string;
}

/** Thrown by a check; the caller adds the key's path and where the value came from. */
class BadValue extends Error {
  constructor(readonly detail?: string) {
    super(detail ?? 'bad value');
  }
}

const text = (value: unknown): string => {
  if (typeof value !== 'string' || value.trim() === '') throw new BadValue();
  return value.trim();
};

/** A secret keeps its spaces (a token may be anything); only its presence is checked. */
const secretText = (value: unknown): string => {
  if (typeof value !== 'string' || value === '') throw new BadValue();
  return value;
};

const oneOf =
  <T extends string>(choices: readonly T[]) =>
  (value: unknown): T => {
    const v = text(value).toLowerCase();
    if (!(choices as readonly string[]).includes(v)) throw new BadValue();
    return v as T;
  };

const bool = (value: unknown, typed: boolean): boolean => {
  if (typeof value === 'boolean') return value;
  if (!typed && typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  throw new BadValue();
};

const positiveInteger = (value: unknown, typed: boolean): number => {
  // A command-line parser may have made it a number already; in a file it must be one.
  const n = typeof value === 'number' ? value : !typed && typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) throw new BadValue();
  return n;
};

const memoryLimit = (value: unknown): string => {
  const v = text(value);
  try {
    parseMemoryLimit(v, machineMemoryBytes(), 'memoryLimit'); // the engine's own rule, our message
  } catch (e) {
    // A size below the engine's minimum is not a malformed size: say the minimum.
    const minimum = isTwinlakeError(e) ? e.context.minimum : undefined;
    throw new BadValue(typeof minimum === 'string' ? `must be at least ${minimum}` : undefined);
  }
  return v;
};

/** Sizes as DuckDB spells them (the engine's rule): `128MB` = 128·10⁶ bytes, `128MiB` = 128·2²⁰. */
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 };

/** A size in bytes: a positive whole number, or text such as `128MiB`. */
export function parseSize(value: unknown, typed: boolean): number {
  if (typeof value === 'number') return positiveInteger(value, typed);
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text(value));
  const factor = m ? SIZE_UNITS[(m[2] || 'b').toLowerCase()] : undefined;
  if (!m || factor === undefined) throw new BadValue();
  const bytes = Math.floor(Number(m[1]) * factor);
  if (bytes < 1) throw new BadValue();
  return bytes;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** A duration in milliseconds: `7d`, `36h`, `90m`, `2w`. */
export function parseDuration(value: unknown): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/i.exec(text(value));
  if (!m) throw new BadValue();
  const ms = Math.round(Number(m[1]) * DURATION_UNITS[m[2]!.toLowerCase()]!);
  if (ms < 1) throw new BadValue();
  return ms;
}

/** A list of names: a YAML/JSON list of strings, or one comma-separated string. */
const nameList = (value: unknown): string[] => {
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!items || !items.every((i) => typeof i === 'string')) throw new BadValue();
  const out = (items as string[]).map((i) => i.trim()).filter(Boolean);
  if (out.length === 0) throw new BadValue();
  return out;
};

const formats = (value: unknown): string[] => {
  const list = nameList(value);
  try {
    return parseFormats(list);
  } catch {
    throw new BadValue();
  }
};

/**
 * A maintenance schedule (`every 6h`, `0 3 * * *`: full_maintenance), or a mapping of operations
 * to schedules; kept as given (the scheduler parses it with maintenance-schedule.ts).
 */
const schedule = (value: unknown): string | Record<string, string> => {
  if (typeof value === 'string') {
    const problem = scheduleProblem(value);
    if (problem !== undefined) throw new BadValue(`must be ${SCHEDULE_EXPECTS} (${problem})`);
    return value.trim();
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new BadValue();
  const out: Record<string, string> = {};
  for (const [operation, text] of Object.entries(value as Record<string, unknown>)) {
    if (!(SCHEDULED_OPERATIONS as readonly string[]).includes(operation)) throw new BadValue(`names ${JSON.stringify(operation)}, which is no operation (expected ${SCHEDULED_OPERATIONS.join(', ')})`);
    const problem = typeof text === 'string' ? scheduleProblem(text) : 'not a string';
    if (problem !== undefined) throw new BadValue(`entry ${operation} must be ${SCHEDULE_EXPECTS} (${problem})`);
    out[operation] = (text as string).trim();
  }
  return out;
};

const SCHEDULE_KEY_EXPECTS = `${SCHEDULE_EXPECTS}; or a mapping of operations (${SCHEDULED_OPERATIONS.join(', ')}) to schedules`;

/** A URL of a server (`http://127.0.0.1:7480`). */
const url = (value: unknown): string => {
  const v = text(value);
  if (!/^https?:\/\/[^/\s]+/i.test(v)) throw new BadValue();
  return v;
};

const path = (value: unknown): string => text(value);

export const STORAGE_PROVIDERS = ['s3', 'azure', 'gcs', 'local'] as const;
export type StorageProvider = (typeof STORAGE_PROVIDERS)[number];
export const CATALOG_TYPES = ['sql', 'glue', 'rest'] as const;
export const WRITE_MODES = ['append', 'overwrite', 'merge'] as const;

export const DEFAULT_WAREHOUSE = './warehouse';
/** The seed's defaults for per-table maintenance. */
export const DEFAULT_SNAPSHOT_RETENTION_MS = 7 * 86400e3;
export const DEFAULT_COMPACTION_TARGET = DEFAULT_TARGET_FILE_SIZE;

const FOLDER = 'a folder path (string)';
const STRING = 'a string';
const SECRET = 'a string (a secret)';

/** The keys outside `tables`, in the order they are documented. */
export const CONFIG_KEYS: readonly ConfigKey[] = [
  { path: 'warehouse', expects: FOLDER, check: path, env: 'TWINLAKE_WAREHOUSE', flag: '--warehouse', relative: true, default: DEFAULT_WAREHOUSE, doc: 'where tables live: a local folder, s3://bucket/prefix, az://container/prefix (or abfss://container@account.dfs.core.windows.net/prefix), gs://bucket/prefix' },
  { path: 'storage.provider', expects: `one of ${STORAGE_PROVIDERS.join(', ')}`, check: oneOf(STORAGE_PROVIDERS), env: 'TWINLAKE_STORAGE_PROVIDER', default: 'from the warehouse URI', doc: 'the object store; must agree with the warehouse URI' },
  { path: 'storage.bucket', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_BUCKET', doc: 'S3 or GCS bucket: with provider, builds the warehouse URI when warehouse is not given' },
  { path: 'storage.container', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_CONTAINER', doc: 'Azure container: as bucket' },
  { path: 'storage.prefix', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_PREFIX', doc: 'the folder inside the bucket or container, with bucket or container' },
  { path: 'storage.region', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_REGION', default: 'AWS_REGION, else us-east-1', doc: 'S3 region' },
  { path: 'storage.endpoint', expects: 'a URL such as "http://127.0.0.1:7480"', check: url, env: 'TWINLAKE_STORAGE_ENDPOINT', doc: 'S3-compatible server or Azure Blob service URL (Azurite)' },
  { path: 'storage.forcePathStyle', expects: 'true or false', check: bool, env: 'TWINLAKE_STORAGE_FORCE_PATH_STYLE', default: 'false', doc: 'S3 only: bucket in the path, as most S3-compatible servers need' },
  { path: 'storage.account', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_ACCOUNT', default: 'AZURE_STORAGE_ACCOUNT', doc: 'Azure storage account (abfss:// warehouses name their own)' },
  { path: 'storage.project', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_PROJECT', doc: 'GCS project of the bucket (default the credentials\' project)' },
  { path: 'storage.credential.accessKeyId', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_ACCESS_KEY_ID', doc: 'S3 access key ID (with secretAccessKey)' },
  { path: 'storage.credential.secretAccessKey', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_SECRET_ACCESS_KEY', secret: true, doc: 'S3 secret access key' },
  { path: 'storage.credential.sessionToken', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_SESSION_TOKEN', secret: true, doc: 'S3 session token of temporary credentials' },
  { path: 'storage.credential.connectionString', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_CONNECTION_STRING', secret: true, default: 'AZURE_STORAGE_CONNECTION_STRING', doc: 'Azure connection string (carries its own endpoint)' },
  { path: 'storage.credential.accountKey', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_ACCOUNT_KEY', secret: true, default: 'AZURE_STORAGE_KEY', doc: 'Azure storage account key' },
  { path: 'storage.credential.sasToken', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_SAS_TOKEN', secret: true, default: 'AZURE_STORAGE_SAS_TOKEN', doc: 'Azure shared access signature (the query string of a SAS URL)' },
  { path: 'storage.credential.tenantId', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_TENANT_ID', doc: 'Azure service principal: tenant (with clientId, clientSecret)' },
  { path: 'storage.credential.clientId', expects: STRING, check: text, env: 'TWINLAKE_STORAGE_CLIENT_ID', doc: 'Azure service principal: application (client) ID' },
  { path: 'storage.credential.clientSecret', expects: SECRET, check: secretText, env: 'TWINLAKE_STORAGE_CLIENT_SECRET', secret: true, doc: 'Azure service principal: client secret' },
  { path: 'storage.credential.keyFile', expects: 'a file path (string)', check: path, env: 'TWINLAKE_STORAGE_KEY_FILE', relative: true, default: 'GOOGLE_APPLICATION_CREDENTIALS', doc: 'GCS service account key file (JSON)' },
  { path: 'catalog.type', expects: `one of ${CATALOG_TYPES.join(', ')}`, check: oneOf(CATALOG_TYPES), env: 'TWINLAKE_CATALOG_TYPE', default: 'sql', doc: 'the Iceberg catalog' },
  { path: 'catalog.uri', expects: 'a SQLite file path, a postgresql:// URI or a URL (string)', check: text, env: 'TWINLAKE_CATALOG_URI', relative: true, default: '<warehouse>/catalog.db for a local warehouse', doc: 'sql: a SQLite file (relative to the config file) or postgresql://user@host/db; rest: the server URL' },
  { path: 'catalog.name', expects: STRING, check: text, env: 'TWINLAKE_CATALOG_NAME', default: 'twinlake', doc: 'sql: the catalog_name of its rows (Spark and Trino name the catalog the same)' },
  { path: 'catalog.namespace', expects: 'a namespace such as "analytics" (string)', check: text, env: 'TWINLAKE_CATALOG_NAMESPACE', doc: 'default namespace for table names without one' },
  { path: 'catalog.region', expects: STRING, check: text, env: 'TWINLAKE_CATALOG_REGION', default: 'storage.region', doc: 'glue: the AWS region of the Glue catalog' },
  { path: 'catalog.warehouse', expects: STRING, check: text, env: 'TWINLAKE_CATALOG_WAREHOUSE', doc: 'rest: the warehouse to ask the server for; glue: the catalog ID (the AWS account)' },
  { path: 'catalog.token', expects: SECRET, check: secretText, env: 'TWINLAKE_CATALOG_TOKEN', secret: true, doc: 'rest: bearer token' },
  { path: 'catalog.credential.accessKeyId', expects: STRING, check: text, env: 'TWINLAKE_CATALOG_ACCESS_KEY_ID', doc: "glue: access key ID (omit for the SDK's default chain)" },
  { path: 'catalog.credential.secretAccessKey', expects: SECRET, check: secretText, env: 'TWINLAKE_CATALOG_SECRET_ACCESS_KEY', secret: true, doc: 'glue: secret access key' },
  { path: 'catalog.credential.sessionToken', expects: SECRET, check: secretText, env: 'TWINLAKE_CATALOG_SESSION_TOKEN', secret: true, doc: 'glue: session token' },
  { path: 'catalog.credential.clientId', expects: STRING, check: text, env: 'TWINLAKE_CATALOG_CLIENT_ID', doc: 'rest: OAuth2 client ID (client credentials)' },
  { path: 'catalog.credential.clientSecret', expects: SECRET, check: secretText, env: 'TWINLAKE_CATALOG_CLIENT_SECRET', secret: true, doc: 'rest: OAuth2 client secret' },
  { path: 'maintenance.schedule', expects: SCHEDULE_KEY_EXPECTS, check: schedule, env: 'TWINLAKE_MAINTENANCE_SCHEDULE', default: 'none', doc: 'when maintenance runs for every table without a schedule of its own (a table\'s maintenance.schedule property or tables entry wins): "every 6h", "0 3 * * *" (UTC) for full_maintenance, or { compaction: "every 6h", snapshot_expiry: "1d" }' },
  { path: 'maintenance.background', expects: 'true or false', check: bool, env: 'TWINLAKE_MAINTENANCE_BACKGROUND', default: 'true', doc: 'twinlake serve runs the due maintenance of every table in the background (--no-maintenance turns it off for one run)' },
  { path: 'memoryLimit', expects: 'a size such as "512MB", "2GiB" or "50%" (string)', check: memoryLimit, env: 'TWINLAKE_MEMORY_LIMIT', flag: '--memory-limit', default: "half the machine's memory", doc: "the engine's memory limit" },
  { path: 'threads', expects: 'a positive whole number', check: positiveInteger, env: 'TWINLAKE_THREADS', flag: '--threads', default: 'every core', doc: "the engine's threads" },
  { path: 'tempDir', expects: FOLDER, check: path, env: 'TWINLAKE_TEMP_DIR', flag: '--temp-dir', relative: true, default: 'the system temp folder', doc: 'where the engine spills and writes stage their files' },
];

/** The keys of one entry of `tables`, by table name (`tables: { "sales.orders": { ... } }`). */
export const TABLE_KEYS: readonly ConfigKey[] = [
  { path: 'formats', expects: 'iceberg and/or delta (a list or "iceberg,delta")', check: formats, default: 'iceberg, delta', doc: 'the formats of a new table (--formats)' },
  { path: 'writeMode', expects: `one of ${WRITE_MODES.join(', ')}`, check: oneOf(WRITE_MODES), default: 'append', doc: 'the mode of `twinlake write` (--mode)' },
  { path: 'keyColumns', expects: 'column names (a list or "a,b")', check: nameList, doc: 'merge keys (--key)' },
  { path: 'partition', expects: 'a partition spec such as "day(ts), region" (string)', check: text, doc: 'the partition spec (--partition)' },
  { path: 'schemaEvolution', expects: 'true or false', check: bool, default: 'true', doc: 'twinlake.schema-evolution.enabled of a new table' },
  { path: 'snapshotRetention', expects: 'a duration such as "7d", "36h" or "2w"', check: parseDuration, default: '7d', doc: 'snapshots younger than this are kept by expiry, unless the table sets history.expire.max-snapshot-age-ms' },
  { path: 'compactionTarget', expects: 'a size such as "128MiB" or "512MB"', check: parseSize, default: '128MiB', doc: 'the file size compaction aims for, unless the table sets write.target-file-size-bytes' },
  { path: 'maintenance.schedule', expects: SCHEDULE_KEY_EXPECTS, check: schedule, doc: 'when this table\'s maintenance runs, unless its maintenance.schedule property says (as the top-level maintenance.schedule)' },
];

/** The key's rule, or undefined. */
export function configKey(path: string): ConfigKey | undefined {
  return CONFIG_KEYS.find((k) => k.path === path);
}

/**
 * Checks one value of `key`; `where` names the key and its source for the message. A secret's
 * value is never quoted back: only its type is.
 */
export function checkConfigValue(key: ConfigKey, value: unknown, typed: boolean, where: string, context: Record<string, unknown> = {}): unknown {
  try {
    return key.check(value, typed);
  } catch (e) {
    if (!(e instanceof BadValue)) throw e;
    const found = key.secret ? describeType(value) : (JSON.stringify(value) ?? String(value));
    throw invalidInput(`${where} ${e.detail ?? `must be ${key.expects}`}, found ${found}`, { ...context, key: key.path });
  }
}

function describeType(value: unknown): string {
  if (value === '') return 'an empty string';
  if (typeof value === 'string') return 'a string of the wrong form';
  if (Array.isArray(value)) return 'a list';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Whether a value is a location (URI or absolute path) that a relative-path rule leaves alone. */
export function isLocation(value: string): boolean {
  return isUri(value) || value.startsWith('/');
}
