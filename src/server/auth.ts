import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorMessage, invalidInput, notFound, TwinlakeError } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import type { RouteAuthConfig, Scope, TokenService } from './auth-types.ts';

/**
 * Bearer tokens for the server, kept in a tokens file beside the warehouse.
 *
 * Why a file and not the catalog database: the catalog may be SQLite, PostgreSQL or Glue (or a
 * REST catalog), and tokens are the server's, not the catalog's; a file works with every catalog,
 * is written only by `twinlake token`, and can be given owner-only permissions (0600). Only a
 * SHA-256 hash of each token is stored. A token is 32 random bytes, so nothing short of the token
 * itself finds a hash's preimage: a slow password hash would add per-request cost and no safety.
 * The server reads the file again when it changes, so a revoked token stops working on the next
 * request without a restart.
 */

export const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

/** admin ⊇ write ⊇ read. */
export function scopeCovers(has: Scope, needs: Scope): boolean {
  return SCOPES.indexOf(has) >= SCOPES.indexOf(needs);
}

export function parseScope(raw: string): Scope {
  if (!(SCOPES as readonly string[]).includes(raw)) throw invalidInput(`token: --scope must be read, write or admin, found ${JSON.stringify(raw)}`);
  return raw as Scope;
}

/** A token as the file holds it: never the token, only its hash. */
export interface StoredToken {
  id: string;
  name: string;
  scope: Scope;
  /** `sha256:<hex>` of the token. */
  hash: string;
  createdAt: string;
  revokedAt?: string;
}

/** What `token list` shows. */
export type TokenInfo = Omit<StoredToken, 'hash'>;

interface TokensFile {
  version: 1;
  tokens: StoredToken[];
}

const TOKEN_PREFIX = 'tlk_';
const ACCESS_PREFIX = 'tla_';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The default tokens file of a warehouse: `<warehouse>/.twinlake/tokens.json` (local warehouses). */
export function defaultTokensFile(warehouseUri: string): string {
  if (!warehouseUri.startsWith('file:')) {
    throw invalidInput(`token: the warehouse ${warehouseUri} is not a local folder; give the tokens file with --tokens-file FILE (or TWINLAKE_TOKENS_FILE)`);
  }
  return join(localPath(warehouseUri), '.twinlake', 'tokens.json');
}

function hashToken(token: string): string {
  return 'sha256:' + createHash('sha256').update(token, 'utf8').digest('hex');
}

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class TokenStore {
  private cache?: { key: string; file: TokensFile };

  constructor(readonly path: string) {}

  private async load(): Promise<TokensFile> {
    const info = await stat(this.path).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw new TwinlakeError('io', `tokens file: cannot read ${this.path} (${errorMessage(e)})`);
    });
    if (!info) return { version: 1, tokens: [] };
    const key = `${info.mtimeMs}:${info.size}:${info.ino}`;
    if (this.cache?.key === key) return this.cache.file;
    const text = await readFile(this.path, 'utf8');
    let file: TokensFile;
    try {
      file = JSON.parse(text) as TokensFile;
    } catch (e) {
      throw new TwinlakeError('data-invalid', `tokens file ${this.path}: expected JSON, found ${errorMessage(e)}`);
    }
    if (file?.version !== 1 || !Array.isArray(file.tokens)) throw new TwinlakeError('data-invalid', `tokens file ${this.path}: expected {"version": 1, "tokens": [...]}`);
    this.cache = { key, file };
    return file;
  }

  private async save(file: TokensFile): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    // Written whole beside the file, then renamed over it: a reader sees the old or the new file.
    const tmp = `${this.path}.${randomUUID()}.tmp`;
    await writeFile(tmp, JSON.stringify(file, null, 2) + '\n', { mode: 0o600 });
    await chmod(tmp, 0o600);
    await rename(tmp, this.path);
    this.cache = undefined;
  }

  /** Creates a token; the token itself is returned here once and never stored. */
  async create(name: string, scope: Scope, now = new Date()): Promise<{ token: string; info: TokenInfo }> {
    if (!NAME.test(name)) throw invalidInput(`token: --name expects letters, digits, '.', '_' or '-' (at most 64), found ${JSON.stringify(name)}`);
    const file = await this.load();
    if (file.tokens.some((t) => t.name === name && !t.revokedAt)) throw new TwinlakeError('already-exists', `token: a token named ${name} exists; revoke it first or choose another name`);
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const stored: StoredToken = { id: randomUUID(), name, scope, hash: hashToken(token), createdAt: now.toISOString() };
    await this.save({ version: 1, tokens: [...file.tokens, stored] });
    const { hash: _hash, ...info } = stored;
    return { token, info };
  }

  async list(): Promise<TokenInfo[]> {
    return (await this.load()).tokens.map(({ hash: _hash, ...info }) => info);
  }

  /** Revokes the active token of that name (or id). */
  async revoke(nameOrId: string, now = new Date()): Promise<TokenInfo> {
    const file = await this.load();
    const target = file.tokens.find((t) => !t.revokedAt && (t.name === nameOrId || t.id === nameOrId));
    if (!target) throw notFound(`token: no active token named ${JSON.stringify(nameOrId)}`);
    const tokens = file.tokens.map((t) => (t === target ? { ...t, revokedAt: now.toISOString() } : t));
    await this.save({ version: 1, tokens });
    const { hash: _hash, ...info } = { ...target, revokedAt: now.toISOString() };
    return info;
  }

  /** The active token a secret is, if any. */
  async find(token: string): Promise<StoredToken | undefined> {
    if (!token.startsWith(TOKEN_PREFIX)) return undefined;
    const hash = hashToken(token);
    return (await this.load()).tokens.find((t) => !t.revokedAt && sameHash(t.hash, hash));
  }

  async active(id: string): Promise<StoredToken | undefined> {
    return (await this.load()).tokens.find((t) => t.id === id && !t.revokedAt);
  }
}

/** How long an access token from `exchange` lives. */
export const ACCESS_TOKEN_SECONDS = 3600;

/**
 * The server's TokenService: long-lived tokens from the tokens file, and the short-lived access
 * tokens OAuth2 client credentials exchange them for. Access tokens live in this process only
 * (a restart asks clients to exchange again, which OAuth2 clients do) and die with the token they
 * came from: revoking a token revokes its access tokens.
 */
export class TokenAuth implements TokenService {
  private readonly access = new Map<string, { parentId: string; scope: Scope; expiresAt: number }>();

  constructor(
    readonly store: TokenStore,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(token: string): Promise<Scope | undefined> {
    if (token.startsWith(ACCESS_PREFIX)) {
      const entry = this.access.get(hashToken(token));
      if (!entry) return undefined;
      if (entry.expiresAt <= this.now()) {
        this.access.delete(hashToken(token));
        return undefined;
      }
      return (await this.store.active(entry.parentId)) ? entry.scope : undefined;
    }
    return (await this.store.find(token))?.scope;
  }

  async exchange(clientId: string, clientSecret: string): Promise<{ accessToken: string; expiresIn: number; scope: Scope } | undefined> {
    const found = await this.store.find(clientSecret);
    if (!found || found.name !== clientId) return undefined;
    const now = this.now();
    for (const [k, v] of this.access) if (v.expiresAt <= now) this.access.delete(k);
    const accessToken = ACCESS_PREFIX + randomBytes(32).toString('base64url');
    this.access.set(hashToken(accessToken), { parentId: found.id, scope: found.scope, expiresAt: now + ACCESS_TOKEN_SECONDS * 1000 });
    return { accessToken, expiresIn: ACCESS_TOKEN_SECONDS, scope: found.scope };
  }
}

/** What the auth hook decides for one request. */
export type AuthDecision = { ok: true; scope?: Scope } | { ok: false; status: 401 | 403; message: string };

/**
 * The one rule every route passes: public routes pass; any other needs a valid bearer token whose
 * scope covers the route's. A route that declares neither fails closed (no token is enough).
 */
export async function authorize(config: RouteAuthConfig | undefined, authorization: string | undefined, tokens: TokenService): Promise<AuthDecision> {
  if (config?.public === true) return { ok: true };
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  if (!m) return { ok: false, status: 401, message: 'auth: expected an Authorization: Bearer <token> header, found none' };
  const scope = await tokens.verify(m[1]!);
  if (!scope) return { ok: false, status: 401, message: 'auth: the bearer token is unknown, revoked or expired' };
  const needs = config?.scope;
  if (needs === undefined) return { ok: false, status: 403, message: 'auth: this route declares no scope, so no token may call it' };
  if (!scopeCovers(scope, needs)) return { ok: false, status: 403, message: `auth: this route needs a ${needs} token, found a ${scope} token` };
  return { ok: true, scope };
}
