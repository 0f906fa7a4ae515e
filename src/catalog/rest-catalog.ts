import { errorMessage, invalidInput, notFound, TwinlakeError, unsupported, type ErrorKind } from '../core/errors.ts';
import { isJsonObject, stringifyJson } from '../core/json.ts';
import { normalizeTableMetadata } from '../format/iceberg/table-metadata.ts';
import type { TableMetadata } from '../format/iceberg/types.ts';
import { requirementToJson, updateToJson, type TableUpdate } from '../format/iceberg/updates.ts';
import {
  checkNamespace,
  checkTableIdentifier,
  formatTableIdentifier,
  type Catalog,
  type CommitOptions,
  type CommitResult,
  type LoadTableResult,
  type TableCommit,
  type TableIdentifier,
} from './catalog.ts';
import { encodeNamespace, parseBody } from './rest-wire.ts';

export interface RestCatalogOptions {
  /** The catalog's base URI, before `/v1` (`http://127.0.0.1:8181/iceberg`). */
  uri: string;
  /** A bearer token sent as is. */
  token?: string;
  /** OAuth2 client credentials, exchanged at `/v1/oauth/tokens` for short-lived tokens. */
  credential?: { clientId: string; clientSecret: string };
  /** Sent to `/v1/config?warehouse=…`; the server answers with the prefix to use. */
  warehouse?: string;
  /** The catalog's name (default `rest`). */
  name?: string;
  fetch?: typeof fetch;
}

/** What a request expects: which statuses are the route's success, and what a 409 means. */
interface Call {
  method: 'GET' | 'POST' | 'DELETE' | 'HEAD';
  path: string;
  body?: unknown;
  query?: Record<string, string | undefined>;
  /** A 409 for this route means: */
  conflict?: ErrorKind;
  /** The route commits: a 5xx (and a lost connection) is commit-state-unknown, never a failure. */
  commit?: boolean;
}

/**
 * An Iceberg REST catalog client (the OpenAPI document in shared/reference): `/v1/config` first
 * (its `overrides.prefix` and `defaults`), bearer tokens, or OAuth2 client credentials refreshed
 * before they expire and once more on a 401. A commit's 409 is a `conflict` value (the commit
 * driver reloads and retries); a 5xx or a lost connection on a commit is `commit-state-unknown`,
 * never a failure, so the writer keeps the files the commit may have named.
 */
export class RestCatalog implements Catalog {
  readonly name: string;
  private readonly base: string;
  private readonly fetchFn: typeof fetch;
  private prefix: Promise<string> | undefined;
  private access: { token: string; expiresAtMs: number } | undefined;
  private fetchingToken: Promise<string> | undefined;

  constructor(private readonly opts: RestCatalogOptions) {
    if (!/^https?:\/\//.test(opts.uri)) throw invalidInput(`rest catalog: uri must be an http(s) URL, found ${JSON.stringify(opts.uri)}`);
    if (opts.token !== undefined && opts.credential !== undefined) throw invalidInput('rest catalog: give a token or a credential, not both');
    this.name = opts.name ?? 'rest';
    this.base = opts.uri.replace(/\/+$/, '');
    this.fetchFn = opts.fetch ?? fetch;
  }

  // ---- namespaces ---------------------------------------------------------------------------

  async listNamespaces(parent?: string[]): Promise<string[][]> {
    if (parent) checkNamespace(parent);
    const out: string[][] = [];
    let pageToken: string | undefined;
    do {
      const page = (await this.call({ method: 'GET', path: 'namespaces', query: { parent: parent && parent.join('\u001f'), pageToken } })) as { namespaces: string[][]; 'next-page-token'?: string | null };
      out.push(...page.namespaces);
      pageToken = page['next-page-token'] ?? undefined;
    } while (pageToken);
    return out;
  }

  async createNamespace(namespace: string[], properties: Record<string, string> = {}): Promise<void> {
    checkNamespace(namespace);
    await this.call({ method: 'POST', path: 'namespaces', body: { namespace, properties }, conflict: 'already-exists' });
  }

  async namespaceExists(namespace: string[]): Promise<boolean> {
    checkNamespace(namespace);
    return this.exists(`namespaces/${encodeNamespace(namespace)}`);
  }

  async loadNamespaceProperties(namespace: string[]): Promise<Record<string, string>> {
    checkNamespace(namespace);
    const r = (await this.call({ method: 'GET', path: `namespaces/${encodeNamespace(namespace)}` })) as { properties?: Record<string, string> };
    return r.properties ?? {};
  }

  async updateNamespaceProperties(namespace: string[], removals: string[], updates: Record<string, string>): Promise<{ updated: string[]; removed: string[]; missing: string[] }> {
    checkNamespace(namespace);
    const r = (await this.call({ method: 'POST', path: `namespaces/${encodeNamespace(namespace)}/properties`, body: { removals, updates } })) as { updated: string[]; removed: string[]; missing?: string[] | null };
    return { updated: r.updated, removed: r.removed, missing: r.missing ?? [] };
  }

  async dropNamespace(namespace: string[]): Promise<void> {
    checkNamespace(namespace);
    // A namespace that still holds tables or namespaces: the contract's invalid-input.
    await this.call({ method: 'DELETE', path: `namespaces/${encodeNamespace(namespace)}`, conflict: 'invalid-input' });
  }

  // ---- tables -------------------------------------------------------------------------------

  async listTables(namespace: string[]): Promise<TableIdentifier[]> {
    checkNamespace(namespace);
    const out: TableIdentifier[] = [];
    let pageToken: string | undefined;
    do {
      const page = (await this.call({ method: 'GET', path: `namespaces/${encodeNamespace(namespace)}/tables`, query: { pageToken } })) as { identifiers: TableIdentifier[]; 'next-page-token'?: string | null };
      out.push(...page.identifiers.map((i) => ({ namespace: i.namespace, name: i.name })));
      pageToken = page['next-page-token'] ?? undefined;
    } while (pageToken);
    return out;
  }

  async tableExists(id: TableIdentifier): Promise<boolean> {
    checkTableIdentifier(id);
    return this.exists(tablePath(id));
  }

  async loadTable(id: TableIdentifier): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    return this.loadResult(await this.call({ method: 'GET', path: tablePath(id) }), id);
  }

  /**
   * Creates the table with exactly this metadata (its UUID, schemas, snapshots): as Java's and
   * PyIceberg's create transactions do, a commit whose requirement is `assert-create` and whose
   * updates build the metadata. An empty location lets the server choose.
   */
  async createTable(id: TableIdentifier, metadata: TableMetadata): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    const body = { identifier: id, requirements: [{ type: 'assert-create' }], updates: creationUpdates(metadata).map(updateToJson) };
    // A 409 on a create: the table exists.
    return this.loadResult(await this.call({ method: 'POST', path: tablePath(id), body, conflict: 'already-exists', commit: true }), id);
  }

  async commitTable(id: TableIdentifier, commit: TableCommit, options: CommitOptions = {}): Promise<CommitResult> {
    checkTableIdentifier(id);
    // The server makes the commit visible: the files it names must be durable first.
    await options.durable;
    const body = { identifier: id, requirements: commit.requirements.map(requirementToJson), updates: commit.updates.map(updateToJson) };
    try {
      const r = this.loadResult(await this.call({ method: 'POST', path: tablePath(id), body, conflict: 'commit-conflict', commit: true }), id);
      return { status: 'committed', ...r };
    } catch (e) {
      if (e instanceof TwinlakeError && e.kind === 'commit-conflict') return { status: 'conflict', reason: e.message };
      throw e;
    }
  }

  /**
   * Several tables' changes in one request (`/transactions/commit`): the server commits all of
   * them or none. 409: none committed; 5xx: unknown.
   */
  async commitTransaction(changes: { id: TableIdentifier; commit: TableCommit }[]): Promise<{ status: 'committed' } | { status: 'conflict'; reason: string }> {
    for (const c of changes) checkTableIdentifier(c.id);
    const body = {
      'table-changes': changes.map((c) => ({ identifier: c.id, requirements: c.commit.requirements.map(requirementToJson), updates: c.commit.updates.map(updateToJson) })),
    };
    try {
      await this.call({ method: 'POST', path: 'transactions/commit', body, conflict: 'commit-conflict', commit: true });
      return { status: 'committed' };
    } catch (e) {
      if (e instanceof TwinlakeError && e.kind === 'commit-conflict') return { status: 'conflict', reason: e.message };
      throw e;
    }
  }

  async dropTable(id: TableIdentifier, options: { purge?: boolean } = {}): Promise<void> {
    checkTableIdentifier(id);
    await this.call({ method: 'DELETE', path: tablePath(id), query: { purgeRequested: options.purge ? 'true' : undefined } });
  }

  async registerTable(id: TableIdentifier, metadataLocation: string): Promise<LoadTableResult> {
    checkTableIdentifier(id);
    const r = await this.call({ method: 'POST', path: `namespaces/${encodeNamespace(id.namespace)}/register`, body: { name: id.name, 'metadata-location': metadataLocation }, conflict: 'already-exists' });
    return this.loadResult(r, id);
  }

  async renameTable(from: TableIdentifier, to: TableIdentifier): Promise<void> {
    checkTableIdentifier(from);
    checkTableIdentifier(to);
    await this.call({ method: 'POST', path: 'tables/rename', body: { source: from, destination: to }, conflict: 'already-exists' });
  }

  // ---- HTTP ---------------------------------------------------------------------------------

  private loadResult(r: unknown, id: TableIdentifier): LoadTableResult {
    const where = `rest catalog: table ${formatTableIdentifier(id)}`;
    if (!isJsonObject(r) || typeof r['metadata-location'] !== 'string' || !isJsonObject(r.metadata)) {
      throw new TwinlakeError('data-invalid', `${where}: expected a response with metadata-location and metadata`);
    }
    return { metadataLocation: r['metadata-location'], metadata: normalizeTableMetadata(r.metadata, `${where} metadata`) };
  }

  private async exists(path: string): Promise<boolean> {
    const res = await this.request('HEAD', await this.url(path), undefined);
    if (res.status === 204 || res.status === 200) return true;
    if (res.status === 404) return false;
    throw await this.failure(res, { method: 'HEAD', path });
  }

  private async call(c: Call): Promise<unknown> {
    let res: Response;
    try {
      res = await this.request(c.method, await this.url(c.path, c.query), c.body);
    } catch (e) {
      if (e instanceof TwinlakeError) throw e;
      // A request that never got an answer may still have been committed.
      const kind: ErrorKind = c.commit ? 'commit-state-unknown' : 'io';
      throw new TwinlakeError(kind, `rest catalog: ${c.method} ${c.path}: ${errorMessage(e)}`, {}, { cause: e });
    }
    if (res.status === 204) return undefined;
    if (res.ok) return parseBody(await res.text(), `rest catalog: ${c.method} ${c.path}`);
    throw await this.failure(res, c);
  }

  private async failure(res: Response, c: Pick<Call, 'method' | 'path' | 'conflict' | 'commit'>): Promise<TwinlakeError> {
    let message = `rest catalog: ${c.method} ${c.path} answered ${res.status}`;
    let type = '';
    try {
      const body = parseBody(await res.text(), 'rest catalog: error') as { error?: { message?: string; type?: string } } | undefined;
      if (body?.error?.message) message = body.error.message;
      type = body?.error?.type ?? '';
    } catch {
      // Not the spec's error body (a proxy's page): the status says enough.
    }
    const status = res.status;
    if (c.commit && status >= 500) return new TwinlakeError('commit-state-unknown', `rest catalog: the commit may or may not have happened (${status} ${type}: ${message})`, { status });
    if (status === 404) return notFound(message, { status, type });
    if (status === 409) return new TwinlakeError(c.conflict ?? 'already-exists', message, { status, type });
    if (status === 400 || status === 422) return invalidInput(message, { status, type });
    if (status === 406) return unsupported(message, { status, type });
    if (status === 401 || status === 403) return new TwinlakeError('invalid-input', `rest catalog: ${status === 401 ? 'not authorized' : 'forbidden'}: ${message}`, { status });
    return new TwinlakeError('io', `rest catalog: ${c.method} ${c.path} answered ${status}: ${message}`, { status, type });
  }

  /** One HTTP request with the current token; a 401 refreshes a credential's token once. */
  private async request(method: string, url: string, body: unknown): Promise<Response> {
    const send = async (token: string | undefined) =>
      this.fetchFn(url, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          accept: 'application/json',
        },
        ...(body !== undefined ? { body: stringifyJson(body) } : {}),
      });
    const res = await send(await this.bearer());
    if (res.status !== 401 || !this.opts.credential) return res;
    await res.body?.cancel();
    this.access = undefined;
    return send(await this.bearer());
  }

  private async bearer(): Promise<string | undefined> {
    if (this.opts.token !== undefined) return this.opts.token;
    if (!this.opts.credential) return undefined;
    // A token close to its end is replaced before it is refused.
    if (this.access && Date.now() < this.access.expiresAtMs - 5_000) return this.access.token;
    this.fetchingToken ??= this.exchange().finally(() => (this.fetchingToken = undefined));
    return this.fetchingToken;
  }

  private async exchange(): Promise<string> {
    const { clientId, clientSecret } = this.opts.credential!;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope: 'catalog' });
    let res: Response;
    try {
      res = await this.fetchFn(`${this.base}/v1/oauth/tokens`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
    } catch (e) {
      throw new TwinlakeError('io', `rest catalog: cannot reach ${this.base}/v1/oauth/tokens (${errorMessage(e)})`, {}, { cause: e });
    }
    const body = parseBody(await res.text(), 'rest catalog: token response') as { access_token?: string; expires_in?: number; error?: string; error_description?: string } | undefined;
    if (!res.ok || !body?.access_token) {
      throw new TwinlakeError('invalid-input', `rest catalog: the token exchange for client ${clientId} failed (${res.status} ${body?.error ?? ''}${body?.error_description ? `: ${body.error_description}` : ''})`);
    }
    const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    this.access = { token: body.access_token, expiresAtMs: Date.now() + expiresIn * 1000 };
    return body.access_token;
  }

  private async url(path: string, query: Record<string, string | undefined> = {}): Promise<string> {
    const prefix = await this.catalogPrefix();
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
    const q = params.toString();
    return `${this.base}/v1/${prefix ? `${encodeURIComponent(prefix)}/` : ''}${path}${q ? `?${q}` : ''}`;
  }

  /** `/v1/config` once: the server's overrides win over its defaults. */
  private catalogPrefix(): Promise<string> {
    this.prefix ??= (async () => {
      const q = this.opts.warehouse ? `?warehouse=${encodeURIComponent(this.opts.warehouse)}` : '';
      const url = `${this.base}/v1/config${q}`;
      let res: Response;
      try {
        res = await this.request('GET', url, undefined);
      } catch (e) {
        throw new TwinlakeError('io', `rest catalog: cannot reach ${url} (${errorMessage(e)})`, {}, { cause: e });
      }
      if (!res.ok) throw await this.failure(res, { method: 'GET', path: 'config' });
      const config = parseBody(await res.text(), 'rest catalog: config') as { defaults?: Record<string, string>; overrides?: Record<string, string> } | undefined;
      return config?.overrides?.prefix ?? config?.defaults?.prefix ?? '';
    })().catch((e: unknown) => {
      // A failed config call is tried again by the next request.
      this.prefix = undefined;
      throw e;
    });
    return this.prefix;
  }
}

function tablePath(id: TableIdentifier): string {
  return `namespaces/${encodeNamespace(id.namespace)}/tables/${encodeURIComponent(id.name)}`;
}

/** The updates that build `m` from nothing, in the order a server folds them. */
function creationUpdates(m: TableMetadata): TableUpdate[] {
  const updates: TableUpdate[] = [
    { action: 'assign-uuid', uuid: m['table-uuid'] },
    { action: 'upgrade-format-version', 'format-version': m['format-version'] },
  ];
  for (const schema of m.schemas) updates.push({ action: 'add-schema', schema, 'last-column-id': m['last-column-id'] });
  updates.push({ action: 'set-current-schema', 'schema-id': m['current-schema-id'] });
  for (const spec of m['partition-specs']) updates.push({ action: 'add-spec', spec });
  updates.push({ action: 'set-default-spec', 'spec-id': m['default-spec-id'] });
  for (const order of m['sort-orders']) updates.push({ action: 'add-sort-order', 'sort-order': order });
  updates.push({ action: 'set-default-sort-order', 'sort-order-id': m['default-sort-order-id'] });
  if (m.location) updates.push({ action: 'set-location', location: m.location });
  if (Object.keys(m.properties).length) updates.push({ action: 'set-properties', updates: m.properties });
  for (const snapshot of [...m.snapshots].sort((a, b) => a['sequence-number'] - b['sequence-number'])) updates.push({ action: 'add-snapshot', snapshot });
  for (const [name, ref] of Object.entries(m.refs)) updates.push({ action: 'set-snapshot-ref', 'ref-name': name, ...ref });
  return updates;
}
