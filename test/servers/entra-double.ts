import { readFileSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * A TEST DOUBLE of a Microsoft Entra ID token endpoint, not Entra: a loopback HTTPS server that
 * answers what `@azure/identity`'s ClientSecretCredential asks (the tenant's OpenID configuration,
 * then a client-credentials token request) and issues a token Azurite's `--oauth basic` mode
 * accepts (right issuer, audience and lifetime; Azurite checks no signature, so none is made).
 *
 * What it cannot prove: that Entra accepts the request (real tenants, secrets, certificates,
 * conditional access, token caching across expiry), or that the storage service accepts the
 * token's roles. It proves that a service principal in the settings becomes a client-credentials
 * token request for Azure Storage with that tenant, client and secret, and that the token is sent.
 */
export interface EntraDouble {
  /** The `authorityHost` to give the credential. */
  authorityHost: string;
  /** The form fields of every token request received. */
  tokenRequests: URLSearchParams[];
  stop(): Promise<void>;
}

/**
 * A self-signed certificate for 127.0.0.1 (valid until 2126), for loopback HTTPS test servers;
 * clients trust it through NODE_EXTRA_CA_CERTS. Its key protects nothing: it is checked in so the
 * tests need no certificate tool.
 */
export const LOOPBACK_TLS = { certFile: join(HERE, 'loopback-tls', 'cert.pem'), keyFile: join(HERE, 'loopback-tls', 'key.pem') };

export async function startEntraDouble(tls: { certFile: string; keyFile: string }, accept: { clientId: string; clientSecret: string }): Promise<EntraDouble> {
  const tokenRequests: URLSearchParams[] = [];
  let base = '';
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const path = new URL(req.url ?? '/', base).pathname;
    const config = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(path);
    if (config) {
      const t = `${base}/${config[1]}`;
      return json(res, 200, {
        token_endpoint: `${t}/oauth2/v2.0/token`,
        authorization_endpoint: `${t}/oauth2/v2.0/authorize`,
        end_session_endpoint: `${t}/oauth2/v2.0/logout`,
        jwks_uri: `${t}/discovery/v2.0/keys`,
        issuer: `${t}/v2.0`,
      });
    }
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (token && req.method === 'POST') {
      const form = new URLSearchParams(body);
      tokenRequests.push(form);
      if (form.get('client_id') !== accept.clientId || form.get('client_secret') !== accept.clientSecret) {
        // Entra's answer to a wrong secret: AADSTS7000215, naming the client, not the secret.
        return json(res, 401, {
          error: 'invalid_client',
          error_description: `AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID, for a secret added to app '${form.get('client_id')}'.`,
          error_codes: [7000215],
        });
      }
      const now = Math.floor(Date.now() / 1000);
      const claims = { aud: 'https://storage.azure.com', iss: `https://sts.windows.net/${token[1]}/`, iat: now, nbf: now - 60, exp: now + 3600, appid: accept.clientId, tid: token[1] };
      const jwt = [{ alg: 'none', typ: 'JWT' }, claims].map((p) => Buffer.from(JSON.stringify(p)).toString('base64url')).join('.') + '.';
      return json(res, 200, { token_type: 'Bearer', expires_in: 3600, ext_expires_in: 3600, access_token: jwt });
    }
    json(res, 404, { error: 'not_found', error_description: `The test double does not implement ${req.method} ${path}` });
  };
  const server = createServer({ cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => handle(req, res, body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    authorityHost: base,
    tokenRequests,
    stop() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
