import { randomUUID } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { TokenCredential } from '@azure/core-auth';
import type { BlobServiceClient, ContainerClient } from '@azure/storage-blob';
import { TwinlakeError, invalidInput, notFound } from '../core/errors.ts';
import { loadSdk } from './cloud-sdk.ts';
import type { ObjectMeta, ObjectStore } from './object-store.ts';
import { checkKey, checkPrefix, checkRange, compareKeys } from './keys.ts';

/** How to reach an Azure storage account (or Azurite). One options object shares its clients. */
export interface AzureOptions {
  /** The storage account; `abfss://container@account.dfs.core.windows.net/` locations name their own. */
  account?: string;
  /** The Blob service URL; default `https://<account>.blob.core.windows.net`. Azurite: `http://127.0.0.1:10000/devstoreaccount1`. */
  endpoint?: string;
  /**
   * At most one credential: a connection string (it carries its own endpoint), an account key, a
   * SAS token, or a service principal (tenantId, clientId, clientSecret). None: the default chain
   * of `@azure/identity` (environment, workload identity, managed identity, Azure CLI, ...).
   */
  connectionString?: string;
  accountKey?: string;
  /** A shared access signature (`sv=...&sig=...`), for access limited to some containers or permissions. */
  sasToken?: string;
  /** A Microsoft Entra service principal: the directory (tenant) id, the application (client) id and a client secret. */
  tenantId?: string;
  clientId?: string;
  clientSecret?: string;
  /** The Entra authority for service principals and the default chain (default `https://login.microsoftonline.com`; sovereign clouds differ). */
  authorityHost?: string;
  /**
   * Attempts per request, first one included (default 4), with exponential backoff from 100 ms
   * to 2 s. The SDK repeats 5xx answers (503 ServerBusy) and reset connections; a create-only
   * Put Blob it repeats is recognised by its writer token.
   */
  maxAttempts?: number;
  /** Blobs per List Blobs page; the service's maximum and default is 5000. */
  listPageSize?: number;
  /** putFile sends files at least this large as blocks (default 16 MiB). */
  blockThreshold?: number;
  /** Block size for block uploads (default 8 MiB). */
  blockSize?: number;
}

const MiB = 1024 * 1024;
/** Blob metadata key holding the id of the putIfAbsent call that created a blob (metadata names are C# identifiers). */
const WRITER_TOKEN = 'twinlakewriter';
/** Blocks of one file read and in flight at once: memory stays under 4 blocks. */
const BLOCKS_IN_FLIGHT = 4;

const services = new WeakMap<AzureOptions, Map<string, Promise<BlobServiceClient>>>();

/** The SDKs are loaded on first use, so users of local tables never load them. */
function serviceFor(options: AzureOptions, account: string): Promise<BlobServiceClient> {
  let byAccount = services.get(options);
  if (!byAccount) services.set(options, (byAccount = new Map()));
  let service = byAccount.get(account);
  if (!service) {
    service = (async () => {
      const sdk = await loadSdk('azure store', '@azure/storage-blob', () => import('@azure/storage-blob'));
      const pipeline = {
        retryOptions: {
          maxTries: options.maxAttempts ?? 4,
          retryPolicyType: sdk.StorageRetryPolicyType.EXPONENTIAL,
          retryDelayInMs: 100,
          maxRetryDelayInMs: 2000,
        },
      };
      const url = options.endpoint ?? `https://${account}.blob.core.windows.net`;
      const credential = azureCredential(options, account);
      if (credential.kind === 'connection-string') {
        try {
          return sdk.BlobServiceClient.fromConnectionString(credential.connectionString, pipeline);
        } catch (e) {
          // The SDK's reason names the part it could not use; the string itself holds the key.
          const why = e instanceof Error ? e.message : String(e);
          throw invalidInput(`azure store: expected a connection string of the form AccountName=…;AccountKey=…;BlobEndpoint=… (or with SharedAccessSignature=…) for account ${JSON.stringify(account)}, found one the SDK cannot use (${why})`);
        }
      }
      if (credential.kind === 'account-key') return new sdk.BlobServiceClient(url, new sdk.StorageSharedKeyCredential(account, credential.accountKey), pipeline);
      if (credential.kind === 'sas') return new sdk.BlobServiceClient(`${url}?${credential.sasToken.replace(/^\?/, '')}`, undefined, pipeline);
      return new sdk.BlobServiceClient(url, await tokenCredential(credential, options.authorityHost), pipeline);
    })();
    service.catch(() => byAccount.delete(account));
    byAccount.set(account, service);
  }
  return service;
}

/** Which credential the settings give: exactly one, or none for the default chain. */
export type AzureCredential =
  | { kind: 'connection-string'; connectionString: string }
  | { kind: 'account-key'; accountKey: string }
  | { kind: 'sas'; sasToken: string }
  | { kind: 'service-principal'; tenantId: string; clientId: string; clientSecret: string }
  | { kind: 'default-chain' };

/** The credential of a settings object; two credentials, or part of a service principal, is a mistake said as such. */
export function azureCredential(options: AzureOptions, account: string): AzureCredential {
  const principal = [options.tenantId, options.clientId, options.clientSecret];
  const given = [
    options.connectionString !== undefined && 'connectionString',
    options.accountKey !== undefined && 'accountKey',
    options.sasToken !== undefined && 'sasToken',
    principal.some((v) => v !== undefined) && 'a service principal (tenantId, clientId, clientSecret)',
  ].filter((g): g is string => g !== false);
  if (given.length > 1) {
    throw invalidInput(`azure store: expected one credential for account ${JSON.stringify(account)}, found ${given.join(' and ')}`);
  }
  if (options.connectionString !== undefined) return { kind: 'connection-string', connectionString: options.connectionString };
  if (options.accountKey !== undefined) return { kind: 'account-key', accountKey: options.accountKey };
  if (options.sasToken !== undefined) return { kind: 'sas', sasToken: options.sasToken };
  if (given.length === 1) {
    const missing = (['tenantId', 'clientId', 'clientSecret'] as const).filter((k) => options[k] === undefined || options[k] === '');
    if (missing.length > 0) {
      throw invalidInput(`azure store: expected a service principal's tenantId, clientId and clientSecret for account ${JSON.stringify(account)}, found no ${missing.join(' or ')}`);
    }
    return { kind: 'service-principal', tenantId: options.tenantId!, clientId: options.clientId!, clientSecret: options.clientSecret! };
  }
  return { kind: 'default-chain' };
}

/** A Microsoft Entra token credential from `@azure/identity`, loaded only when one is needed. */
export async function tokenCredential(credential: AzureCredential, authorityHost: string | undefined): Promise<TokenCredential> {
  const identity = await loadSdk('azure store', '@azure/identity', () => import('@azure/identity'));
  if (credential.kind === 'service-principal') {
    // An authority the settings name is used as given: instance discovery asks the public cloud's
    // authority about it, which fails for Azure Stack, ADFS and private authorities.
    return new identity.ClientSecretCredential(credential.tenantId, credential.clientId, credential.clientSecret, { authorityHost, disableInstanceDiscovery: authorityHost !== undefined });
  }
  return new identity.DefaultAzureCredential({ authorityHost });
}

/**
 * An ObjectStore over an Azure Blob container, rooted at `az://container/prefix` or
 * `abfss://container@account.dfs.core.windows.net/prefix` (the same blobs through the Blob API,
 * which hierarchical-namespace accounts also serve). Put Blob and Put Block List replace a blob
 * whole, so readers never see part of one; `If-None-Match: *` makes a Put Blob create-only.
 */
export class AzureBlobStore implements ObjectStore {
  readonly root: string;
  readonly createRetry = 'token';
  readonly account: string;
  readonly container: string;
  /** Blob name prefix, without a trailing '/'; '' for the container root. */
  readonly prefix: string;

  constructor(
    where: { root: string; account: string; container: string; prefix: string },
    private readonly options: AzureOptions,
  ) {
    this.root = where.root;
    this.account = where.account;
    this.container = where.container;
    this.prefix = where.prefix;
  }

  async get(path: string, range?: { offset: number; length: number }): Promise<Uint8Array> {
    const name = this.name(path);
    if (range) checkRange('azure store', range, path);
    if (range?.length === 0) {
      if (!(await this.head(path))) throw this.missing(name);
      return new Uint8Array(0);
    }
    const blob = (await this.containerClient()).getBlobClient(name);
    try {
      // download(0) without a count reads the whole blob; a count of 0 would mean the same.
      const res = await blob.download(range?.offset ?? 0, range?.length);
      return await readAll(res.readableStreamBody);
    } catch (e) {
      // 416 for a range that starts at or after the end of an existing blob.
      if (range && (e as { statusCode?: number }).statusCode === 416) return new Uint8Array(0);
      throw this.error(e, 'read', name);
    }
  }

  async head(path: string): Promise<{ size: number; modified: number } | undefined> {
    const name = this.name(path);
    const blob = (await this.containerClient()).getBlobClient(name);
    try {
      const p = await blob.getProperties();
      return { size: p.contentLength ?? 0, modified: p.lastModified?.getTime() ?? 0 };
    } catch (e) {
      // A HEAD answer has no body, but the service still names the error in x-ms-error-code.
      if (statusOf(e) === 404 && codeOf(e) !== 'ContainerNotFound') return undefined;
      throw this.error(e, 'read', name);
    }
  }

  async put(path: string, body: Uint8Array | string): Promise<void> {
    const name = this.name(path);
    const data = bytes(body);
    const blob = (await this.containerClient()).getBlockBlobClient(name);
    try {
      await blob.upload(data, data.byteLength);
    } catch (e) {
      throw this.error(e, 'write', name);
    }
  }

  async putIfAbsent(path: string, body: Uint8Array | string, token: string = randomUUID()): Promise<boolean> {
    const name = this.name(path);
    const data = bytes(body);
    const blob = (await this.containerClient()).getBlockBlobClient(name);
    // The SDK retries a Put Blob whose answer was lost (a reset connection, a 5xx after the write);
    // the retry then finds the blob this call created. A token in the blob's metadata tells that
    // apart from another writer's blob (and a caller repeating the call passes the same).
    try {
      await blob.upload(data, data.byteLength, { conditions: { ifNoneMatch: '*' }, metadata: { [WRITER_TOKEN]: token } });
      return true;
    } catch (e) {
      // Azure answers a Put Blob with If-None-Match: * on an existing blob with 409
      // BlobAlreadyExists; 412 ConditionNotMet is the generic failed-precondition answer. Both
      // mean a blob holds the name.
      if (statusOf(e) !== 412 && codeOf(e) !== 'BlobAlreadyExists') throw this.error(e, 'write', name);
    }
    try {
      return (await blob.getProperties()).metadata?.[WRITER_TOKEN] === token;
    } catch (e) {
      // Deleted since: it existed when this call tried, so this call lost.
      if (statusOf(e) === 404 && codeOf(e) !== 'ContainerNotFound') return false;
      throw this.error(e, 'read', name);
    }
  }

  async *list(prefix: string): AsyncIterable<ObjectMeta> {
    checkPrefix('azure store', prefix);
    const base = this.prefix === '' ? '' : `${this.prefix}/`;
    const container = await this.containerClient();
    const out: ObjectMeta[] = [];
    try {
      for await (const page of container.listBlobsFlat({ prefix: base + prefix }).byPage({ maxPageSize: this.options.listPageSize })) {
        for (const b of page.segment.blobItems) {
          if (!b.name.startsWith(base)) continue;
          out.push({ path: b.name.slice(base.length), size: b.properties.contentLength ?? 0, modified: b.properties.lastModified.getTime() });
        }
      }
    } catch (e) {
      throw this.error(e, 'list', base + prefix);
    }
    // The service lists in its own collation; sort by UTF-8 bytes, as every store does.
    out.sort((a, b) => compareKeys(a.path, b.path));
    yield* out;
  }

  async delete(path: string): Promise<void> {
    const name = this.name(path);
    const blob = (await this.containerClient()).getBlobClient(name);
    try {
      // A missing blob answers 404 BlobNotFound, which deleteIfExists takes as success.
      await blob.deleteIfExists();
    } catch (e) {
      throw this.error(e, 'delete', name);
    }
  }

  /**
   * One Put Blob below the block threshold; above it the SDK stages blocks read from the file as
   * they are sent (BLOCKS_IN_FLIGHT at a time, so memory stays bounded) and commits them with Put
   * Block List, which makes the blob appear whole. Uncommitted blocks of a failed upload are
   * discarded by the service after a week.
   */
  async putFile(path: string, localFile: string): Promise<void> {
    const name = this.name(path);
    const threshold = this.options.blockThreshold ?? 16 * MiB;
    const { size } = await stat(localFile);
    if (size < threshold) {
      await this.put(path, new Uint8Array(await readFile(localFile)));
      return;
    }
    const blob = (await this.containerClient()).getBlockBlobClient(name);
    try {
      await blob.uploadFile(localFile, { blockSize: this.options.blockSize ?? 8 * MiB, concurrency: BLOCKS_IN_FLIGHT, maxSingleShotSize: threshold - 1 });
    } catch (e) {
      throw this.error(e, 'write', name);
    }
  }

  private async containerClient(): Promise<ContainerClient> {
    return (await serviceFor(this.options, this.account)).getContainerClient(this.container);
  }

  /** The blob name of a store key. */
  private name(path: string): string {
    checkKey('azure store', path);
    return this.prefix === '' ? path : `${this.prefix}/${path}`;
  }

  private where(name: string): string {
    return `blob ${JSON.stringify(name)} in container ${JSON.stringify(this.container)} of account ${this.account}`;
  }

  private missing(name: string): TwinlakeError {
    return notFound(`azure store: no ${this.where(name)}`, { account: this.account, container: this.container, name });
  }

  /** An SDK error as a TwinlakeError naming the container, the blob, the Azure error code and the fix. */
  private error(e: unknown, op: 'read' | 'write' | 'list' | 'delete', name: string): TwinlakeError {
    if (e instanceof TwinlakeError) return e;
    const code = codeOf(e);
    const status = statusOf(e);
    const context = { account: this.account, container: this.container, name, code, status };
    const what = op === 'list' ? `blobs named ${JSON.stringify(name)}* in container ${JSON.stringify(this.container)} of account ${this.account}` : this.where(name);
    const detail = `${code}${status !== undefined ? `, HTTP ${status}` : ''}`;
    const io = (message: string, retryable: boolean) => new TwinlakeError('io', `azure store: ${message}`, context, { cause: e, retryable });
    if (code === 'BlobNotFound' || (status === 404 && op === 'read' && code !== 'ContainerNotFound')) return this.missing(name);
    if (code === 'ContainerNotFound') {
      return notFound(`azure store: container ${JSON.stringify(this.container)} does not exist in account ${this.account} (${op} ${what}: ContainerNotFound)`, context);
    }
    if (code === 'AuthorizationPermissionMismatch' || code === 'AuthorizationResourceTypeMismatch' || code === 'AuthorizationServiceMismatch') {
      return io(`access denied to ${op} ${what}: the credential needs the ${DATA_ACTION[op]} permission, e.g. the Storage Blob Data Contributor role (${detail})`, false);
    }
    if (status === 403) return io(`the account ${this.account} rejected the credential for ${op} ${what} (${detail})`, false);
    const errorName = String((e as { name?: unknown } | null)?.name);
    if (IDENTITY_ERRORS.has(errorName)) {
      if (azureCredential(this.options, this.account).kind === 'default-chain' && (errorName === 'CredentialUnavailableError' || allUnavailable(e))) {
        return io(
          `no credentials for ${op} ${what}: set connectionString, accountKey, sasToken or a service principal (tenantId, clientId, clientSecret) in the storage settings, or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or sign in with \`az login\` (the default chain of @azure/identity looked in the environment, workload and managed identity, Visual Studio Code, the Azure CLI, Azure PowerShell and the Azure Developer CLI)`,
          false,
        );
      }
      // Entra's answer names the tenant, the client and an AADSTS code, never the secret.
      const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
      const who = this.options.clientId !== undefined ? ` for client ${this.options.clientId} in tenant ${this.options.tenantId}` : '';
      return io(`cannot get a Microsoft Entra token${who} to ${op} ${what}: check the service principal's tenantId, clientId and clientSecret, and authorityHost (${why})`, false);
    }
    if (NETWORK_CODES.has(code)) {
      return io(`cannot reach the endpoint ${this.options.endpoint ?? `of account ${this.account}`} to ${op} ${what} (${code})`, true);
    }
    const message = e instanceof Error ? e.message.split('\n')[0] : String(e);
    return io(`cannot ${op} ${what} (${detail}: ${message})`, status === undefined || status >= 500 || status === 429);
  }
}

const IDENTITY_ERRORS = new Set(['CredentialUnavailableError', 'AuthenticationError', 'AggregateAuthenticationError', 'AuthenticationRequiredError']);

/** The default chain found nothing at all (as opposed to a credential that was tried and refused). */
function allUnavailable(e: unknown): boolean {
  const errors = (e as { errors?: unknown[] }).errors;
  return Array.isArray(errors) && errors.length > 0 && errors.every((x) => (x as { name?: unknown } | null)?.name === 'CredentialUnavailableError');
}

/** The Azure RBAC data action each operation needs. */
const DATA_ACTION = {
  read: 'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read',
  write: 'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write',
  list: 'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read',
  delete: 'Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete',
};

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'REQUEST_SEND_ERROR']);

/** The service's error code (x-ms-error-code: `BlobNotFound`, `ContainerNotFound`), or the socket's. */
function codeOf(e: unknown): string {
  const err = e as { code?: unknown; details?: { errorCode?: unknown } } | null;
  const code = err?.details?.errorCode ?? err?.code;
  return typeof code === 'string' ? code : 'unknown error';
}

function statusOf(e: unknown): number | undefined {
  const status = (e as { statusCode?: unknown } | null)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  const all = Buffer.concat(chunks);
  return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
}

function bytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : body;
}
