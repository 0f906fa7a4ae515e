import { invalidInput } from '../core/errors.ts';

/**
 * The key rules every ObjectStore enforces, so a key that works in memory also works on disk and
 * in a bucket: `/`-separated, no empty, `.` or `..` segments, no leading `/`, no NUL. `store`
 * names the backend in messages.
 */
export function checkKey(store: string, key: string): void {
  if (typeof key !== 'string' || key === '') throw invalidInput(`${store}: expected a non-empty object key, found ${JSON.stringify(key)}`);
  if (key.includes('\0')) throw invalidInput(`${store}: object key ${JSON.stringify(key)} contains a NUL character`);
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw invalidInput(`${store}: expected a relative key without empty, '.' or '..' segments, found ${JSON.stringify(key)}`);
    }
  }
}

export function checkPrefix(store: string, prefix: string): void {
  if (prefix === '') return;
  const segments = prefix.split('/');
  // A trailing '/' leaves an empty last segment, which is fine for a prefix.
  if (segments.slice(0, -1).some((s) => s === '' || s === '.' || s === '..') || segments.at(-1) === '..' || prefix.includes('\0')) {
    throw invalidInput(`${store}: expected a relative key prefix without empty, '.' or '..' segments, found ${JSON.stringify(prefix)}`);
  }
}

export function checkRange(store: string, range: { offset: number; length: number }, key: string): void {
  if (!Number.isSafeInteger(range.offset) || !Number.isSafeInteger(range.length) || range.offset < 0 || range.length < 0) {
    throw invalidInput(`${store}: expected a range of non-negative integers for ${JSON.stringify(key)}, found ${JSON.stringify(range)}`);
  }
}

/** Byte order of the UTF-8 forms, the order cloud object stores list in. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}
