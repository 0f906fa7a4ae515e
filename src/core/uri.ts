import { invalidInput } from './errors.ts';

/**
 * Locations. Iceberg metadata holds absolute URIs (`file:///abs/path`, `s3://bucket/key`); the
 * ObjectStore works with store-relative keys. A location is always a URI string without a
 * trailing slash.
 */

export function isUri(s: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//.test(s) || s.startsWith('file:/');
}

/**
 * An absolute local path to a `file://` URI (no trailing slash). The path is kept as is, not
 * percent-encoded: Iceberg and Delta engines write `file:` locations raw, and a location must read
 * back as the same string it was written as.
 */
export function fileUri(localPath: string): string {
  if (!localPath.startsWith('/')) throw invalidInput(`uri: expected an absolute path, found ${JSON.stringify(localPath)}`);
  return ('file://' + localPath).replace(/\/+$/, '');
}

/** A `file:` URI (or a plain absolute path) to a local path. */
export function localPath(uri: string): string {
  if (uri.startsWith('file:')) {
    // Accept the forms other engines write: file:/a/b, file:///a/b.
    return uri.replace(/^file:\/*/, '/');
  }
  if (uri.startsWith('/')) return uri;
  throw invalidInput(`uri: expected a file: URI or an absolute path, found ${JSON.stringify(uri)}`);
}

/** A `file:` URI as a local path; any other location as it is. */
export function localPathIfFile(uri: string): string {
  return uri.startsWith('file:') ? localPath(uri) : uri;
}

/** The scheme and authority a URI starts with (`s3://bucket`, `file://`); no match for a plain path. */
export const SCHEME_AND_AUTHORITY = /^[A-Za-z][A-Za-z0-9+.-]*:(\/\/[^/]*)?/;

export function schemeAndAuthority(uri: string): string {
  return SCHEME_AND_AUTHORITY.exec(uri)?.[0] ?? '';
}

/** Join a location and a relative path with exactly one slash. */
export function joinUri(base: string, ...parts: string[]): string {
  let out = base.replace(/\/+$/, '');
  for (const p of parts) {
    if (p === '') continue;
    out += '/' + p.replace(/^\/+/, '');
  }
  return out;
}

/** The part of `uri` below `root`, or undefined when `uri` is not inside `root`. */
export function relativeTo(root: string, uri: string): string | undefined {
  const r = root.replace(/\/+$/, '') + '/';
  if (uri.startsWith(r)) return uri.slice(r.length);
  // file:/x, file:///x and the absolute path /x name the same place.
  if (root.startsWith('file:') && (uri.startsWith('file:') || uri.startsWith('/'))) {
    const a = localPath(root).replace(/\/+$/, '') + '/';
    const b = localPath(uri);
    if (b.startsWith(a)) return b.slice(a.length);
  }
  return undefined;
}
