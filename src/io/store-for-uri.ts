import * as nodePath from 'node:path';
import { invalidInput, unsupported } from '../core/errors.ts';
import { localPath } from '../core/uri.ts';
import { AzureBlobStore, type AzureOptions } from './azure-store.ts';
import { GcsStore, type GcsOptions } from './gcs-store.ts';
import { LocalStore } from './local-store.ts';
import type { ObjectStore } from './object-store.ts';
import { S3Store, type S3Options } from './s3-store.ts';
import { checkKey } from './keys.ts';

/**
 * How to reach the cloud stores a location may name. Pass one object for the life of a table or
 * command: stores made from the same object share their SDK clients.
 */
export interface StorageOptions {
  s3?: S3Options;
  azure?: AzureOptions;
  gcs?: GcsOptions;
}

/**
 * The store holding a location and the location's key in it. The key is always the location's
 * last path segment (with its trailing `/`, if any) and the store is rooted at the folder above,
 * so `uri === join(store.root-form-of-uri, key)` textually: callers such as FileIO rebuild URIs
 * from listed keys by cutting the key off the end of the URI they asked for.
 *
 * Locations: local paths and `file:` URIs; `s3://bucket/prefix` (and Hadoop's `s3a://`) with
 * `storage.s3`; `az://container/prefix` and `abfss://container@account.dfs.core.windows.net/prefix`
 * (and `abfs://`) with `storage.azure`; `gs://bucket/prefix` with `storage.gcs`.
 */
export function storeForLocation(uri: string, storage: StorageOptions = {}): { store: ObjectStore; key: string } {
  if (uri === '') throw invalidInput('storage: expected a location, found an empty string');
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  if (scheme === undefined || scheme === 'file') return localStoreFor(uri, scheme);
  const { parent, key } = splitLast(uri);
  const cloud = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/]+)(?:\/(.*))?$/.exec(parent);
  if (scheme === 's3' || scheme === 's3a') {
    if (!cloud) throw invalidInput(`storage: expected s3://bucket/key, found ${JSON.stringify(uri)}`);
    const bucket = cloud[2];
    const prefix = checkedPrefix(cloud[3], uri);
    if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
      throw invalidInput(`storage: expected an S3 bucket name (3 to 63 lower-case letters, digits, '.' or '-'), found ${JSON.stringify(bucket)} in ${JSON.stringify(uri)}`);
    }
    if (!storage.s3) {
      throw invalidInput(`storage: ${JSON.stringify(uri)} is an S3 location but no S3 settings were given (region, and endpoint and forcePathStyle for S3-compatible servers)`, { uri });
    }
    return { store: new S3Store({ root: parent, bucket, prefix }, storage.s3), key };
  }
  if (scheme === 'az' || scheme === 'abfs' || scheme === 'abfss') {
    if (!cloud) throw invalidInput(`storage: expected ${scheme}://container/key, found ${JSON.stringify(uri)}`);
    const prefix = checkedPrefix(cloud[3], uri);
    let container = cloud[2];
    let account = storage.azure?.account;
    if (scheme !== 'az') {
      // abfss://container@account.dfs.core.windows.net: the authority names the account.
      const m = /^([^@]+)@([a-z0-9]+)\.(?:dfs|blob)\.[^/]+$/.exec(cloud[2]);
      if (!m) throw invalidInput(`storage: expected ${scheme}://container@account.dfs.core.windows.net/key, found ${JSON.stringify(uri)}`);
      container = m[1];
      if (account !== undefined && account !== m[2]) {
        throw invalidInput(`storage: ${JSON.stringify(uri)} names storage account ${m[2]}, but the Azure settings are for account ${account}`, { uri });
      }
      account = m[2];
    }
    if (!/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/.test(container)) {
      throw invalidInput(`storage: expected an Azure container name (3 to 63 lower-case letters, digits or single '-'), found ${JSON.stringify(container)} in ${JSON.stringify(uri)}`);
    }
    if (!storage.azure) {
      throw invalidInput(`storage: ${JSON.stringify(uri)} is an Azure Blob location but no Azure settings were given (the account, and a connection string, account key, SAS token or service principal, or none for the default chain of @azure/identity)`, { uri });
    }
    if (account === undefined) {
      throw invalidInput(`storage: ${JSON.stringify(uri)} names no storage account and the Azure settings give none`, { uri });
    }
    return { store: new AzureBlobStore({ root: parent, account, container, prefix }, storage.azure), key };
  }
  if (scheme === 'gs') {
    if (!cloud) throw invalidInput(`storage: expected gs://bucket/key, found ${JSON.stringify(uri)}`);
    const bucket = cloud[2];
    const prefix = checkedPrefix(cloud[3], uri);
    // GCS bucket names: 3 to 63 characters (up to 222 with dots, 63 per dot-separated part).
    if (!/^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/.test(bucket) || bucket.split('.').some((part) => part.length > 63) || !bucket.includes('.') && bucket.length > 63) {
      throw invalidInput(`storage: expected a GCS bucket name (3 to 63 lower-case letters, digits, '-', '_' or '.'), found ${JSON.stringify(bucket)} in ${JSON.stringify(uri)}`);
    }
    // Unlike S3 (a region) and Azure (an account), GCS needs no setting: the SDK's default chain
    // finds the credentials and the project. An empty object means exactly that.
    return { store: new GcsStore({ root: parent, bucket, prefix }, storage.gcs ?? defaultGcs), key };
  }
  throw unsupported(`storage: ${scheme}:// locations are not supported (location ${JSON.stringify(uri)})`, { uri, scheme });
}

/** One shared options object for gs:// locations given no GCS settings, so they share one client. */
const defaultGcs: GcsOptions = {};

function localStoreFor(uri: string, scheme: string | undefined): { store: ObjectStore; key: string } {
  const asPath = scheme === undefined ? nodePath.resolve(uri) + (uri.endsWith('/') ? '/' : '') : uri;
  const { parent, key } = splitLast(asPath);
  const dir = scheme === undefined ? parent : localPath(parent);
  if (dir === '' || dir === '/' || /^file:\/*$/.test(parent)) {
    throw invalidInput(`storage: expected a location below a folder of the filesystem root, found ${JSON.stringify(uri)}`);
  }
  return { store: new LocalStore(dir), key };
}

/** The last path segment (keeping a trailing '/') and everything before it. */
function splitLast(location: string): { parent: string; key: string } {
  const trimmed = location.endsWith('/') ? location.slice(0, -1) : location;
  const cut = trimmed.lastIndexOf('/');
  const key = location.slice(cut + 1);
  if (cut < 0 || key === '' || key === '/' || key === '..' || key === '../' || key === '.' || key === './') {
    throw invalidInput(`storage: expected a location naming a file or folder, found ${JSON.stringify(location)}`);
  }
  return { parent: trimmed.slice(0, cut), key };
}

/** A key prefix inside a bucket or container: none, or a key under the store's rules. */
function checkedPrefix(prefix: string | undefined, uri: string): string {
  if (prefix === undefined) return '';
  try {
    checkKey('storage', prefix);
  } catch {
    throw invalidInput(`storage: expected a location without empty, '.' or '..' segments, found ${JSON.stringify(uri)}`);
  }
  return prefix;
}
