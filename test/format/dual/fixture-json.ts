import { parseJson, stringifyJson } from '../../../src/core/json.ts';

/**
 * The JSON of the projection fixtures: plain JSON for what is plain, and tagged values for the
 * rest of what manifests hold (`{"$map": [[k, v], …]}` for a Map, `{"$bytes": "hex"}` for bytes,
 * `{"$bigint": "…"}` for a bigint that is not part of the Iceberg metadata JSON).
 */
export function encodeFixture(value: unknown): unknown {
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString('hex') };
  if (value instanceof Map) return { $map: [...value].map(([k, v]) => [encodeFixture(k), encodeFixture(v)]) };
  if (Array.isArray(value)) return value.map(encodeFixture);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined).map(([k, v]) => [k, encodeFixture(v)]));
  return value;
}

export function decodeFixture(value: unknown): any {
  if (Array.isArray(value)) return value.map(decodeFixture);
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.$bigint === 'string') return BigInt(o.$bigint);
    if (typeof o.$bytes === 'string') return new Uint8Array(Buffer.from(o.$bytes, 'hex'));
    if (Array.isArray(o.$map)) return new Map((o.$map as unknown[][]).map(([k, v]) => [decodeFixture(k), decodeFixture(v)]));
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, decodeFixture(v)]));
  }
  return value;
}

export const fixtureText = (value: unknown) => stringifyJson(value, 1) + '\n';
export const parseFixture = (text: string, source: string) => parseJson(text, source);
