/**
 * What the server's routes need from authentication, in one place so every route module and the
 * token store agree. A route declares the scope it needs in its Fastify route config
 * (`config: { scope: 'read' }`), or `config: { public: true }` for health and the console's static
 * files; one onRequest hook checks the bearer token against it (401 without a valid token, 403 for
 * a token whose scope is too small). Scopes are ordered: admin ⊇ write ⊇ read.
 */
export type Scope = 'read' | 'write' | 'admin';

export interface RouteAuthConfig {
  scope?: Scope;
  public?: boolean;
}

export interface TokenService {
  /** The scope of a bearer token, or undefined when it is unknown, revoked or expired. */
  verify(token: string): Promise<Scope | undefined>;
  /**
   * OAuth2 client credentials (the Iceberg REST catalog's `/v1/oauth/tokens`): `clientId` is a
   * token's name and `clientSecret` the token itself; the answer is a short-lived access token of
   * that token's scope, or undefined when the pair is not valid.
   */
  exchange(clientId: string, clientSecret: string): Promise<{ accessToken: string; expiresIn: number; scope: Scope } | undefined>;
}
