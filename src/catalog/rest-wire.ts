import { invalidInput } from '../core/errors.ts';
import { parseJson } from '../core/json.ts';

/**
 * What the Iceberg REST catalog's server (src/server/iceberg-rest/) and client (rest-catalog.ts)
 * agree on beyond the OpenAPI document's shapes: how a namespace travels in a path or query, and
 * how JSON bodies keep 64-bit snapshot IDs exact.
 */

/** The spec's default namespace separator: the unit separator 0x1F (`%1F` in a URL). */
export const NAMESPACE_SEPARATOR = '\u001f';

/** A namespace as one path segment or query value (URL-encoded). */
export function encodeNamespace(namespace: readonly string[]): string {
  return encodeURIComponent(namespace.join(NAMESPACE_SEPARATOR));
}

/** A decoded path segment or query value back into levels. */
export function decodeNamespace(text: string): string[] {
  return text.split(NAMESPACE_SEPARATOR);
}

/** A request or response body: JSON with exact 64-bit integers; empty is undefined. */
export function parseBody(text: string, source: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return parseJson(text, source);
  } catch (e) {
    throw invalidInput(`${source}: the body is not JSON (${(e as Error).message})`);
  }
}
