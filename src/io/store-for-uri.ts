import * as nodePath from 'node:path';
import { invalidInput, unsupported } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import { LocalStore } from './local-store.ts';
import type { ObjectStore } from './object-store.ts';

/**
 * The store holding a location and the location's key in it. The key is always the location's
 * last path segment (with its trailing `/`, if any) and the store is rooted at the folder above,
 * so `uri === join(store.root-form-of-uri, key)` textually: callers such as FileIO rebuild URIs
 * from listed keys by cutting the key off the end of the URI they asked for.
 */
export function storeForLocation(uri: string): { store: ObjectStore; key: string } {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1];
  if (scheme !== undefined && scheme.toLowerCase() !== 'file') {
    // TODO(cloud storage issues): s3, s3a, gs, abfs(s), az.
    throw unsupported(`storage: ${scheme}:// locations are not supported yet (location ${JSON.stringify(uri)})`, { uri, scheme });
  }
  if (uri === '') throw invalidInput('storage: expected a location, found an empty string');
  const asPath = scheme === undefined ? nodePath.resolve(uri) + (uri.endsWith('/') ? '/' : '') : uri;
  const trimmed = asPath.endsWith('/') ? asPath.slice(0, -1) : asPath;
  const cut = trimmed.lastIndexOf('/');
  const key = asPath.slice(cut + 1);
  const parent = trimmed.slice(0, cut);
  if (cut < 0 || key === '' || key === '/' || key === '..' || key === '../' || key === '.' || key === './') {
    throw invalidInput(`storage: expected a location naming a file or folder, found ${JSON.stringify(uri)}`);
  }
  const dir = scheme === undefined ? parent : localPath(parent);
  if (dir === '' || dir === '/' || /^file:\/*$/.test(parent)) {
    throw invalidInput(`storage: expected a location below a folder of the filesystem root, found ${JSON.stringify(uri)}`);
  }
  return { store: new LocalStore(dir), key };
}
