/**
 * The one place secrets are taken out of text. Every secret a config file or the environment gives
 * is registered here when it is read; everything a command prints (results, warnings, the failure
 * line) passes through `redact`, which replaces each registered secret and the secret parts of
 * the forms secrets travel in (a password inside a URI, an Azure connection string's AccountKey,
 * a SAS signature) with `***`. A message built from a secret-bearing value is therefore safe even
 * when an SDK or a server quoted the value back.
 */

export const REDACTED = '***';

const secrets = new Set<string>();

/** Shorter values are not replaced: `***` in place of every "ab" would garble output, and no real key is that short. */
const MIN_SECRET_LENGTH = 4;

/** Registers a secret value; it never appears in what `redact` returns. */
export function addSecret(value: string): void {
  if (value.length >= MIN_SECRET_LENGTH) secrets.add(value);
  // A connection string's key is a secret by itself too (an SDK may quote only it).
  for (const m of value.matchAll(/(?:AccountKey|SharedAccessSignature|SharedAccessKey)=([^;]+)/gi)) if (m[1]!.length >= MIN_SECRET_LENGTH) secrets.add(m[1]!);
}

/**
 * Secrets the SDKs read from their own variables: registered too, so an SDK error quoting one
 * is redacted like the rest.
 */
export const SDK_SECRET_VARIABLES = ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AZURE_STORAGE_CONNECTION_STRING', 'AZURE_STORAGE_KEY', 'AZURE_STORAGE_SAS_TOKEN', 'AZURE_CLIENT_SECRET', 'PGPASSWORD'] as const;

export function addEnvironmentSecrets(env: Record<string, string | undefined>): void {
  for (const name of SDK_SECRET_VARIABLES) {
    const v = env[name];
    if (v) addSecret(v);
  }
}

const PATTERNS: [RegExp, string][] = [
  // scheme://user:password@host (postgresql://, https://, ...)
  [/\b([a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*):[^@/?#\s]*@/gi, `$1:${REDACTED}@`],
  // password=..., sslpassword=..., token=... in URI query strings and key=value lists
  [/\b(password|sslpassword|passwd|token|secret|client_secret|sig)=([^&;\s"']+)/gi, `$1=${REDACTED}`],
  // Azure connection strings
  [/\b(AccountKey|SharedAccessSignature|SharedAccessKey)=([^;\s"']+)/gi, `$1=${REDACTED}`],
];

/** The text without any secret. */
export function redact(text: string): string {
  let out = text;
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement);
  // Longest first, so a secret that contains another is replaced whole.
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(s).join(REDACTED);
  return out;
}

/** A request URL as the log shows it: query values that may be secrets, and anything shaped like a token, as `***`. */
export function redactUrl(url: string): string {
  let decoded = url;
  try {
    // Decoded first: `postgresql%3A%2F%2Fu%3Apw%40host` hides a password from the patterns.
    decoded = decodeURIComponent(url);
  } catch {
    // A malformed escape: logged as it came.
  }
  return redact(decoded)
    .replace(/([?&][^=&]*(?:token|secret|password|key|sig)[^=&]*=)[^&]*/gi, `$1${REDACTED}`)
    .replace(/tl[ka]_[A-Za-z0-9_-]+/g, REDACTED);
}
