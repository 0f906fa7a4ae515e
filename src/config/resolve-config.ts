import { resolve } from 'node:path';
import { invalidInput, isTwinlakeError } from '../core/errors.ts';
import { fileUri, isUri } from '../core/uri.ts';
import { parseTableIdentifier } from '../catalog/catalog.ts';
import { DEFAULT_CATALOG, type CatalogConfig } from '../catalog/open-catalog.ts';
import type { EngineOptions } from '../engine/engine-settings.ts';
import { ENGINE_ENV } from '../engine/engine-settings.ts';
import type { TableFormat } from '../format/dual/table-properties.ts';
import type { StorageOptions } from '../io/store-for-uri.ts';
import type { S3Options } from '../io/s3-store.ts';
import type { AzureOptions } from '../io/azure-store.ts';
import type { GcsOptions } from '../io/gcs-store.ts';
import type { ConfigFile } from './config-file.ts';
import {
  checkConfigValue,
  CONFIG_KEYS,
  DEFAULT_COMPACTION_TARGET,
  DEFAULT_SNAPSHOT_RETENTION_MS,
  DEFAULT_WAREHOUSE,
  isLocation,
  TABLE_KEYS,
  type ConfigKey,
  type StorageProvider,
} from './config-keys.ts';
import { addEnvironmentSecrets, addSecret, redact, REDACTED } from './redact.ts';

/** What a write of a table uses when its options do not say otherwise (`tables` in the file). */
export interface TableDefaults {
  formats?: TableFormat[];
  writeMode?: 'append' | 'overwrite' | 'merge';
  keyColumns?: string[];
  partition?: string;
  schemaEvolution?: boolean;
  /**
   * Snapshot expiry keeps snapshots younger than this, when the table has no
   * history.expire.max-snapshot-age-ms (unset: the seed's 7 days).
   */
  snapshotRetentionMs?: number;
  /** Compaction aims for files of this size, when the table has no write.target-file-size-bytes (unset: 128 MiB). */
  compactionTargetBytes?: number;
  /** When the table's maintenance runs, unless its own maintenance.schedule property says (as given: one schedule or a mapping). */
  maintenanceSchedule?: string | Record<string, string>;
}

/** The maintenance settings of a warehouse (`maintenance.*`). */
export interface MaintenanceConfig {
  /** Every table's schedule when neither its properties nor its tables entry give one. */
  schedule?: string | Record<string, string>;
  /** `twinlake serve` runs due maintenance in the background (default true). */
  background: boolean;
}

/** One resolved key, for `twinlake config`: its value as it may be shown, and where it came from. */
export interface ConfigEntry {
  key: string;
  value: string;
  source: string;
}

/** The settings of a warehouse, every source applied: what `Lakehouse.open` and `openCatalog` take. */
export interface TwinlakeConfig {
  /** The config file read, if any. */
  file?: string;
  /** The warehouse as given (a path or URI), for `LakehouseOptions.warehouse`. */
  warehouse: string;
  /** The warehouse as an absolute URI (`file:///…`, `s3://…`). */
  warehouseUri: string;
  provider: StorageProvider;
  storage: StorageOptions;
  catalog: CatalogConfig;
  /** False when nothing configured the catalog: the Lakehouse's embedded default serves. */
  catalogConfigured: boolean;
  /** Given by an option or the file; engine variables in the environment are read by the engine itself. */
  engine: EngineOptions;
  /** `namespace.table` (a default namespace applied) → its defaults. */
  tables: Map<string, TableDefaults>;
  maintenance: MaintenanceConfig;
  /** Every key that has a value, secrets as `***`. */
  entries: ConfigEntry[];
}

/** The sources of a run's settings, lowest first: the file, the environment, the options. */
export interface ConfigSources {
  file?: ConfigFile;
  env?: Record<string, string | undefined>;
  /** Values given by the caller (command-line options), by key path: `{ warehouse: 'wh', threads: 4 }`. */
  options?: Record<string, unknown>;
  /** The names the options were given as, for reports: `{ warehouse: '--warehouse' }`. */
  optionNames?: Record<string, string>;
  cwd?: string;
}

interface Picked {
  value: unknown;
  source: string;
}

/**
 * Applies the sources of a run by their precedence, highest first: an option, the environment
 * (`TWINLAKE_*`), the config file, then the SDKs' own variables where a value is still missing
 * (`AWS_REGION`, `AZURE_STORAGE_ACCOUNT`, ...), then the default. The order of git, npm and the
 * AWS CLI: what is typed now beats what was set for the session, which beats what was written
 * down for every run. The SDKs' variables come last because a project's file names its own
 * store; a session's `AWS_REGION` must not send it elsewhere.
 */
export function resolveConfig(sources: ConfigSources = {}): TwinlakeConfig {
  const env = sources.env ?? process.env;
  const cwd = sources.cwd ?? process.cwd();
  const file = sources.file;
  addEnvironmentSecrets(env);
  const fromFile = file ? `config ${file.file}` : '';
  const picked = new Map<string, Picked>();
  for (const key of CONFIG_KEYS) {
    const p = pick(key, sources, env, cwd);
    if (p) picked.set(key.path, p);
  }
  const value = <T>(path: string): T | undefined => picked.get(path)?.value as T | undefined;
  const sdkDefault = (path: string, names: string[]) => {
    if (picked.has(path)) return;
    for (const name of names) {
      const v = env[name];
      if (v) return void picked.set(path, { value: v, source: `environment ${name}` });
    }
  };

  // The warehouse: given, or built from the provider's bucket or container and prefix.
  const place = storagePlace(value, picked, fromFile);
  if (place && !picked.has('warehouse')) picked.set('warehouse', { value: place, source: 'storage.provider, bucket/container and prefix' });
  if (place && picked.has('warehouse') && sameLocation(value<string>('warehouse')!, place) === false) {
    throw invalidInput(`config: warehouse ${value<string>('warehouse')} (${picked.get('warehouse')!.source}) is not the bucket or container and prefix of storage (${place}); give one of them, or make them agree`);
  }
  if (!picked.has('warehouse')) picked.set('warehouse', { value: DEFAULT_WAREHOUSE, source: 'default' });
  const warehouse = value<string>('warehouse')!;
  const warehouseUri = isUri(warehouse) ? warehouse.replace(/\/+$/, '') : fileUri(resolve(cwd, warehouse));

  const provider = storageProvider(warehouseUri, picked);
  if (provider === 's3') {
    sdkDefault('storage.region', ['AWS_REGION', 'AWS_DEFAULT_REGION']);
  }
  if (provider === 'azure') {
    sdkDefault('storage.account', ['AZURE_STORAGE_ACCOUNT']);
    if (!AZURE_CREDENTIAL_KEYS.some((k) => picked.has(k))) {
      sdkDefault('storage.credential.connectionString', ['AZURE_STORAGE_CONNECTION_STRING']);
      if (!picked.has('storage.credential.connectionString')) sdkDefault('storage.credential.accountKey', ['AZURE_STORAGE_KEY']);
      if (!picked.has('storage.credential.connectionString') && !picked.has('storage.credential.accountKey')) sdkDefault('storage.credential.sasToken', ['AZURE_STORAGE_SAS_TOKEN']);
    }
  }
  for (const key of CONFIG_KEYS) {
    const v = picked.get(key.path)?.value;
    if (key.secret && typeof v === 'string') addSecret(v);
  }
  checkCredentials(picked);

  const storage = storageOptions(provider, value, picked);

  const catalogSet = CONFIG_KEYS.some((k) => k.path.startsWith('catalog.') && k.path !== 'catalog.namespace' && picked.has(k.path));
  const catalog: CatalogConfig = { ...DEFAULT_CATALOG };
  for (const k of ['type', 'uri', 'name', 'namespace', 'region', 'warehouse', 'token'] as const) {
    const v = value<string>(`catalog.${k}`);
    if (v !== undefined) (catalog as unknown as Record<string, unknown>)[k] = v;
  }
  if (catalog.region === undefined && provider === 's3' && value('storage.region') !== undefined) catalog.region = value<string>('storage.region');
  const catalogCredential: NonNullable<CatalogConfig['credential']> = {};
  for (const k of ['accessKeyId', 'secretAccessKey', 'sessionToken', 'clientId', 'clientSecret'] as const) {
    const v = value<string>(`catalog.credential.${k}`);
    if (v !== undefined) catalogCredential[k] = v;
  }
  if (Object.keys(catalogCredential).length > 0) catalog.credential = catalogCredential;

  const engine: EngineOptions = {};
  if (value('memoryLimit') !== undefined) engine.memoryLimit = value<string>('memoryLimit');
  if (value('threads') !== undefined) engine.threads = value<number>('threads');
  if (value('tempDir') !== undefined) engine.tempDir = resolve(cwd, value<string>('tempDir')!);

  const tables = tableDefaults(file, catalog.namespace);
  const maintenance: MaintenanceConfig = { background: value<boolean>('maintenance.background') ?? true };
  if (value('maintenance.schedule') !== undefined) maintenance.schedule = value<MaintenanceConfig['schedule']>('maintenance.schedule');

  return {
    file: file?.file,
    warehouse,
    warehouseUri,
    provider,
    storage,
    catalog,
    catalogConfigured: catalogSet,
    engine,
    tables,
    maintenance,
    entries: entries(picked, provider, !/^file:/.test(warehouseUri), catalog, tables, fromFile),
  };
}

/**
 * One key's value from the highest source that has it. Engine variables are checked and read by
 * the engine (which reports them as its source), so here they only hide the file's value.
 */
function pick(key: ConfigKey, sources: ConfigSources, env: Record<string, string | undefined>, cwd: string): Picked | undefined {
  const given = sources.options?.[key.path];
  if (given !== undefined) {
    const flag = sources.optionNames?.[key.path] ?? key.flag ?? key.path;
    return { value: checkConfigValue(key, given, false, flag), source: `option ${flag}` };
  }
  const fromEnv = key.env ? env[key.env] : undefined;
  if (fromEnv !== undefined && fromEnv !== '') {
    const source = `environment ${key.env}`;
    if (ENGINE_KEYS.has(key.path)) return { value: undefined, source };
    let v = checkConfigValue(key, fromEnv, false, `environment: ${key.env}`);
    // A relative path in the environment is relative to the current folder (the warehouse is left
    // as given: the Lakehouse resolves it the same way).
    if (key.relative && key.path !== 'warehouse' && typeof v === 'string' && !isLocation(v)) v = resolve(cwd, v);
    return { value: v, source };
  }
  if (sources.file?.values.has(key.path)) return { value: sources.file.values.get(key.path), source: `config ${sources.file.file}` };
  return undefined;
}

const ENGINE_KEYS = new Set(Object.keys(ENGINE_ENV));

const S3_CREDENTIAL_KEYS = ['storage.credential.accessKeyId', 'storage.credential.secretAccessKey', 'storage.credential.sessionToken'];
const AZURE_CREDENTIAL_KEYS = ['storage.credential.connectionString', 'storage.credential.accountKey', 'storage.credential.sasToken', 'storage.credential.tenantId', 'storage.credential.clientId', 'storage.credential.clientSecret'];
const SERVICE_PRINCIPAL_KEYS = ['storage.credential.tenantId', 'storage.credential.clientId', 'storage.credential.clientSecret'];
const GCS_CREDENTIAL_KEYS = ['storage.credential.keyFile'];
const PROVIDER_ONLY: Record<string, StorageProvider> = {
  'storage.forcePathStyle': 's3',
  'storage.account': 'azure',
  'storage.project': 'gcs',
  'storage.container': 'azure',
  ...Object.fromEntries(S3_CREDENTIAL_KEYS.map((k) => [k, 's3'])),
  ...Object.fromEntries(AZURE_CREDENTIAL_KEYS.map((k) => [k, 'azure'])),
  ...Object.fromEntries(GCS_CREDENTIAL_KEYS.map((k) => [k, 'gcs'])),
};

const SCHEMES: Record<string, StorageProvider> = { s3: 's3', s3a: 's3', az: 'azure', abfs: 'azure', abfss: 'azure', gs: 'gcs', file: 'local' };
const PROVIDER_NAMES: Record<StorageProvider, string> = { s3: 'an S3', azure: 'an Azure Blob', gcs: 'a GCS', local: 'a local' };

/** The warehouse URI that `storage.bucket`/`container` and `prefix` name, if they are given. */
function storagePlace(value: <T>(p: string) => T | undefined, picked: Map<string, Picked>, fromFile: string): string | undefined {
  const bucket = value<string>('storage.bucket');
  const container = value<string>('storage.container');
  const prefix = value<string>('storage.prefix');
  if (bucket === undefined && container === undefined) {
    if (prefix !== undefined) throw invalidInput(`config: storage.prefix (${picked.get('storage.prefix')!.source}) needs storage.bucket or storage.container`);
    return undefined;
  }
  if (bucket !== undefined && container !== undefined) throw invalidInput('config: give storage.bucket (S3, GCS) or storage.container (Azure), not both');
  const provider = value<StorageProvider>('storage.provider') ?? (container !== undefined ? 'azure' : undefined);
  if (provider === undefined) throw invalidInput(`config: storage.bucket needs storage.provider (s3 or gcs)${fromFile ? ` in ${fromFile.slice(7)}` : ''}`);
  const scheme = { s3: 's3', gcs: 'gs', azure: 'az', local: undefined }[provider];
  if (scheme === undefined || (provider === 'azure') !== (container !== undefined)) {
    throw invalidInput(`config: storage.${container !== undefined ? 'container' : 'bucket'} does not go with storage.provider ${provider} (S3 and GCS have buckets, Azure containers)`);
  }
  return `${scheme}://${bucket ?? container}${prefix ? `/${prefix.replace(/^\/+|\/+$/g, '')}` : ''}`;
}

function sameLocation(a: string, b: string): boolean | undefined {
  if (!isUri(a)) return false;
  return a.replace(/\/+$/, '') === b.replace(/\/+$/, '');
}

/** The provider: given, else the warehouse URI's, else the one its settings belong to, else local. */
function storageProvider(warehouseUri: string, picked: Map<string, Picked>): StorageProvider {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(warehouseUri)?.[1]?.toLowerCase();
  const fromUri = scheme === undefined ? undefined : SCHEMES[scheme];
  const given = picked.get('storage.provider');
  if (given && fromUri && fromUri !== 'local' && given.value !== fromUri) {
    throw invalidInput(`config: storage.provider is ${given.value} (${given.source}), but the warehouse ${warehouseUri} is ${PROVIDER_NAMES[fromUri]} location`);
  }
  if (given) return given.value as StorageProvider;
  if (fromUri && fromUri !== 'local') return fromUri;
  const implied = [...new Set([...picked.keys()].map((k) => PROVIDER_ONLY[k]).filter((p): p is StorageProvider => p !== undefined))];
  return implied.length === 1 ? implied[0]! : 'local';
}

/** A credential comes whole (an access key with its secret), and Azure takes one kind at a time. */
function checkCredentials(picked: Map<string, Picked>): void {
  const has = (k: string) => picked.has(k);
  const name = (k: string) => k.slice('storage.credential.'.length);
  if (has('storage.credential.accessKeyId') !== has('storage.credential.secretAccessKey')) {
    throw invalidInput("config: storage.credential needs both accessKeyId and secretAccessKey (or neither, for the SDK's default chain)");
  }
  if (has('storage.credential.sessionToken') && !has('storage.credential.accessKeyId')) {
    throw invalidInput('config: storage.credential.sessionToken goes with accessKeyId and secretAccessKey');
  }
  const principal = SERVICE_PRINCIPAL_KEYS.filter(has);
  if (principal.length > 0 && principal.length < 3) {
    throw invalidInput(`config: an Azure service principal needs tenantId, clientId and clientSecret in storage.credential, found only ${principal.map(name).join(', ')}`);
  }
  const kinds = ['storage.credential.connectionString', 'storage.credential.accountKey', 'storage.credential.sasToken'].filter(has).map(name);
  if (principal.length) kinds.push('a service principal');
  if (kinds.length > 1) throw invalidInput(`config: storage.credential gives ${kinds.join(' and ')}; give one Azure credential`);
}

/**
 * The stores' options (src/io) from the storage settings. The provider's store gets its settings;
 * so does the other cloud store when keys only it takes are given (an Azure account beside an S3
 * warehouse serves az:// locations read by path). The endpoint belongs to the provider's store.
 */
function storageOptions(provider: StorageProvider, value: <T>(p: string) => T | undefined, picked: Map<string, Picked>): StorageOptions {
  const storage: StorageOptions = {};
  const implied = (p: StorageProvider) => provider === p || [...picked.keys()].some((k) => PROVIDER_ONLY[k] === p);
  const wantS3 = implied('s3');
  const wantAzure = implied('azure');
  const endpointFor = provider === 's3' || provider === 'azure' ? provider : wantS3 !== wantAzure ? (wantS3 ? 's3' : 'azure') : undefined;
  const endpoint = value<string>('storage.endpoint');
  if (wantS3) {
    const s3: S3Options = { region: value<string>('storage.region') ?? 'us-east-1' };
    if (endpoint !== undefined && endpointFor === 's3') s3.endpoint = endpoint;
    if (value('storage.forcePathStyle') !== undefined) s3.forcePathStyle = value<boolean>('storage.forcePathStyle');
    const accessKeyId = value<string>('storage.credential.accessKeyId');
    const secretAccessKey = value<string>('storage.credential.secretAccessKey');
    if (accessKeyId !== undefined && secretAccessKey !== undefined) {
      s3.credentials = { accessKeyId, secretAccessKey };
      const sessionToken = value<string>('storage.credential.sessionToken');
      if (sessionToken !== undefined) s3.credentials.sessionToken = sessionToken;
    }
    storage.s3 = s3;
  }
  if (wantAzure) {
    const azure: AzureOptions = {};
    if (endpoint !== undefined && endpointFor === 'azure') azure.endpoint = endpoint;
    for (const [k, to] of [
      ['storage.account', 'account'],
      ['storage.credential.connectionString', 'connectionString'],
      ['storage.credential.accountKey', 'accountKey'],
      ['storage.credential.sasToken', 'sasToken'],
      ['storage.credential.tenantId', 'tenantId'],
      ['storage.credential.clientId', 'clientId'],
      ['storage.credential.clientSecret', 'clientSecret'],
    ] as const) {
      const v = value<string>(k);
      if (v !== undefined) azure[to] = v;
    }
    storage.azure = azure;
  }
  if (implied('gcs')) {
    const gcs: GcsOptions = {};
    if (endpoint !== undefined && provider === 'gcs') gcs.apiEndpoint = endpoint;
    const project = value<string>('storage.project');
    if (project !== undefined) gcs.projectId = project;
    const keyFile = value<string>('storage.credential.keyFile');
    if (keyFile !== undefined) gcs.keyFilename = keyFile;
    storage.gcs = gcs;
  }
  return storage;
}

function tableDefaults(file: ConfigFile | undefined, namespace: string | undefined): Map<string, TableDefaults> {
  const out = new Map<string, TableDefaults>();
  for (const [name, settings] of file?.tables ?? []) {
    let qualified: string;
    try {
      const id = parseTableIdentifier(qualifyTableName(name, namespace));
      qualified = [...id.namespace, id.name].join('.');
    } catch (e) {
      if (!isTwinlakeError(e)) throw e;
      throw invalidInput(`config ${file!.file}: tables[${JSON.stringify(name)}] is not a table name: ${e.message}${namespace === undefined && !name.includes('.') ? ' (or set catalog.namespace)' : ''}`);
    }
    if (out.has(qualified)) throw invalidInput(`config ${file!.file}: tables names ${qualified} twice`);
    // Unset stays unset: a table property comes before these, and the seed's default after.
    const t: TableDefaults = {};
    if (settings.has('snapshotRetention')) t.snapshotRetentionMs = settings.get('snapshotRetention') as number;
    if (settings.has('compactionTarget')) t.compactionTargetBytes = settings.get('compactionTarget') as number;
    if (settings.has('maintenance.schedule')) t.maintenanceSchedule = settings.get('maintenance.schedule') as TableDefaults['maintenanceSchedule'];
    if (settings.has('formats')) t.formats = settings.get('formats') as TableFormat[];
    if (settings.has('writeMode')) t.writeMode = settings.get('writeMode') as TableDefaults['writeMode'];
    if (settings.has('keyColumns')) t.keyColumns = settings.get('keyColumns') as string[];
    if (settings.has('partition')) t.partition = settings.get('partition') as string;
    if (settings.has('schemaEvolution')) t.schemaEvolution = settings.get('schemaEvolution') as boolean;
    if (t.writeMode === 'merge' && !t.keyColumns) {
      throw invalidInput(`config ${file!.file}: tables[${JSON.stringify(name)}].writeMode is merge, which needs keyColumns`);
    }
    out.set(qualified, t);
  }
  return out;
}

/** A table name in the default namespace when it names none (`orders` → `analytics.orders`). */
export function qualifyTableName(name: string, namespace: string | undefined): string {
  return namespace !== undefined && !name.includes('.') ? `${namespace}.${name}` : name;
}

/** The defaults for a table's writes (the seed's when the file names the table not). */
export function tableDefaultsFor(config: TwinlakeConfig, name: string): TableDefaults {
  let key = qualifyTableName(name, config.catalog.namespace).normalize('NFC');
  try {
    const id = parseTableIdentifier(key);
    key = [...id.namespace, id.name].join('.');
  } catch {
    // not a table name: no defaults; the command says what is wrong with it
  }
  return config.tables.get(key) ?? {};
}

/**
 * What the config says of a table's maintenance, in the shape maintenance takes
 * (src/maintenance/schedule.ts `MaintenanceDefaults`): only what it sets, so that a table
 * property still wins over it and the seed's defaults apply after it.
 */
export function maintenanceDefaultsFor(config: TwinlakeConfig, name: string): { retention?: number; targetFileSize?: number; schedule?: string | Record<string, string>; warehouseSchedule?: string | Record<string, string> } {
  const t = tableDefaultsFor(config, name);
  return {
    ...(t.snapshotRetentionMs !== undefined ? { retention: t.snapshotRetentionMs } : {}),
    ...(t.compactionTargetBytes !== undefined ? { targetFileSize: t.compactionTargetBytes } : {}),
    ...(t.maintenanceSchedule !== undefined ? { schedule: t.maintenanceSchedule } : {}),
    ...(config.maintenance.schedule !== undefined ? { warehouseSchedule: config.maintenance.schedule } : {}),
  };
}

function entries(picked: Map<string, Picked>, provider: StorageProvider, providerFromUri: boolean, catalog: CatalogConfig, tables: Map<string, TableDefaults>, fromFile: string): ConfigEntry[] {
  const out: ConfigEntry[] = [];
  const show = (key: ConfigKey, v: unknown) => (key.secret ? REDACTED : redact(typeof v === 'string' ? v : JSON.stringify(v)));
  for (const key of CONFIG_KEYS) {
    const p = picked.get(key.path);
    if (p) out.push({ key: key.path, value: p.value === undefined ? '(read by the engine)' : show(key, p.value), source: p.source });
    else if (key.path === 'storage.provider') out.push({ key: key.path, value: provider, source: provider === 'local' ? 'default' : providerFromUri ? 'the warehouse URI' : 'the storage settings it alone takes' });
    else if (key.path === 'catalog.type' || key.path === 'catalog.name') out.push({ key: key.path, value: String(catalog[key.path.slice(8) as 'type' | 'name']), source: 'default' });
    else if (key.path === 'catalog.uri' && catalog.type === 'sql') out.push({ key: key.path, value: '<warehouse>/catalog.db', source: 'default' });
    else if (key.path === 'storage.region' && provider === 's3') out.push({ key: key.path, value: 'us-east-1', source: 'default' });
  }
  if ((provider === 's3' && !S3_CREDENTIAL_KEYS.some((k) => picked.has(k))) || (provider === 'gcs' && !picked.has('storage.credential.keyFile'))) {
    out.push({ key: 'storage.credential', value: '(none)', source: "the SDK's default chain" });
  }
  for (const [name, t] of tables) {
    const source = fromFile;
    const row = (k: string, v: unknown, s = source) => out.push({ key: `tables[${JSON.stringify(name)}].${k}`, value: typeof v === 'string' ? v : JSON.stringify(v), source: s });
    for (const key of TABLE_KEYS) {
      const v = ({ formats: t.formats?.join(','), writeMode: t.writeMode, keyColumns: t.keyColumns?.join(','), partition: t.partition, schemaEvolution: t.schemaEvolution } as Record<string, unknown>)[key.path];
      if (v !== undefined) row(key.path, v);
    }
    row('snapshotRetention', `${t.snapshotRetentionMs ?? DEFAULT_SNAPSHOT_RETENTION_MS} ms`, t.snapshotRetentionMs === undefined ? 'default 7d, unless the table sets history.expire.max-snapshot-age-ms' : source);
    row('compactionTarget', `${t.compactionTargetBytes ?? DEFAULT_COMPACTION_TARGET} bytes`, t.compactionTargetBytes === undefined ? 'default 128MiB, unless the table sets write.target-file-size-bytes' : source);
    if (t.maintenanceSchedule !== undefined) row('maintenance.schedule', t.maintenanceSchedule);
  }
  return out;
}
