import { dataInvalid, isTwinlakeError } from '../../core/errors.ts';
import { joinUri } from '../../core/uri.ts';
import type { FileIO } from '../../io/file-io.ts';
import { peekTopLevel, type PeekedValue } from '../../format/iceberg/table-metadata.ts';

/**
 * Finds the current Iceberg metadata file of a table known only by its location (DESIGN.md §1:
 * a table stays readable by path with no catalog). Only committed metadata may be found: a
 * metadata file is written before the catalog commit that makes it current, so a crash can leave
 * one that nothing committed (a `v1.metadata.json` of a table whose creation never reached the
 * catalog, a `vN` whose compare-and-swap lost). What makes a file committed for a path reader is
 * `metadata/version-hint.text`, which the catalog writes after its commit:
 * - a hint names the file, as a number N (`vN.metadata.json`, or `0000N-<uuid>.metadata.json` as
 *   catalogs name them) or as a file name; files numbered beyond it are never looked at;
 * - a hint naming a missing file falls back to the newest file numbered at or below it;
 * - without a hint, `v<N>.metadata.json` files (the file-system table names of the Iceberg spec,
 *   which Twinlake's catalog uses too, always with a hint) are not committed for a path reader;
 *   only metastore names (`<N>-<uuid>.metadata.json`, written by catalogs that keep no hint) are
 *   taken, the newest winning, as every engine's path reader does.
 */
export async function locateMetadataFile(io: FileIO, location: string): Promise<string | undefined> {
  const dir = joinUri(location, 'metadata');
  const hintUri = joinUri(dir, 'version-hint.text');
  const hint = (await io.exists(hintUri)) ? (await io.readText(hintUri)).trim() : undefined;
  // A damaged hint is said as such: guessing past it could show an older state, or none at all.
  if (hint !== undefined && !/^[^\s\u0000-\u001f\u007f\ufffd]+$/.test(hint)) {
    throw dataInvalid(`iceberg metadata: ${hintUri}: expected a metadata version number or file name, found ${hint === '' ? 'an empty file' : JSON.stringify(hint.slice(0, 100))}`, { file: hintUri });
  }
  // The file the hint names, when it exists, is the answer without listing the folder: a table
  // with many snapshots keeps thousands of metadata files and manifest lists there.
  const named = hint === undefined || hint === '' ? undefined : /^\d+$/.test(hint) ? `v${Number(hint)}.metadata.json` : hintedName(hint);
  if (named !== undefined && (await io.exists(joinUri(dir, named)))) return joinUri(dir, named);

  const files: string[] = [];
  for await (const o of io.list(dir + '/')) {
    const name = o.uri.slice(dir.length + 1);
    if (!name.includes('/') && /\.metadata\.json(\.gz)?$/.test(name)) files.push(name);
  }
  const newest = (names: string[]) =>
    names.length === 0 ? undefined : joinUri(dir, names.reduce((a, b) => ((versionOf(b) ?? -1) > (versionOf(a) ?? -1) ? b : a)));
  if (hint) {
    let limit: number | undefined;
    if (/^\d+$/.test(hint)) {
      const n = Number(hint);
      const match = files.find((f) => versionOf(f) === n);
      if (match) return joinUri(dir, match);
      limit = n;
    } else limit = versionOf(named!);
    if (limit !== undefined) return newest(files.filter((f) => (versionOf(f) ?? Infinity) <= limit));
  }
  return newest(files.filter((f) => !/^v\d+\.metadata\.json/.test(f)));
}

/** The metadata file a hint that is not a bare number names: `v3`, `00003-<uuid>.metadata.json`, or a path ending in one. */
function hintedName(hint: string): string {
  const name = hint.endsWith('.metadata.json') ? hint : `${hint}.metadata.json`;
  return name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : name;
}

/** The version number in `v12.metadata.json` or `00012-<uuid>.metadata.json`. */
export function versionOf(name: string): number | undefined {
  const m = /^v(\d+)\.metadata\.json/.exec(name) ?? /^(\d+)-.*\.metadata\.json/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** `version-hint.text` sits next to the metadata files it names. */
export function versionHintUri(metadataLocation: string): string {
  return metadataLocation.slice(0, metadataLocation.lastIndexOf('/')) + '/version-hint.text';
}

/**
 * What `version-hint.text` should say for the current metadata file: the N of our own
 * `vN.metadata.json`, the form path readers (and Java's HadoopTables) resolve. Undefined for
 * other names, whose catalogs keep no hint.
 */
export function expectedVersionHint(metadataLocation: string): number | undefined {
  const m = /\/v(\d+)\.metadata\.json$/.exec(metadataLocation);
  return m ? Number(m[1]) : undefined;
}

/** How much of a metadata file is read to find its location and properties: they come before the snapshots. */
const PEEK_BYTES = 64 * 1024;

/**
 * Where a Delta read of a catalog table finds its log, from the catalog's metadata file without
 * parsing it: at 10,000 snapshots the file is megabytes, and a Delta read needs none of them. The
 * file's first bytes give the table's `location` and its `properties` (peekTopLevel): a table that
 * dropped Delta keeps its old log, which a Delta read must refuse (`formats` without `delta`).
 * When those bytes are not metadata JSON (a damaged file), the location is that of the standard
 * layout, `<location>/metadata/<file>`, and the Delta log, which describes itself, decides.
 * Undefined: the caller parses the metadata (properties beyond the first bytes, a compressed
 * file, another layout).
 */
export async function deltaReadTarget(io: FileIO, metadataLocation: string): Promise<{ location: string; properties?: Record<string, string> } | undefined> {
  const { store, key } = io.storeAt(metadataLocation);
  // A missing file is damage too (the catalog points at it): the layout and the log decide.
  const bytes = await store.get(key, { offset: 0, length: PEEK_BYTES }).catch((e: unknown) => {
    if (isTwinlakeError(e, 'not-found')) return new Uint8Array(0);
    throw e;
  });
  const prefix = bytes.length === 0 ? 'missing' : new TextDecoder().decode(bytes);
  const location = peekTopLevel(prefix, 'location');
  const properties = peekTopLevel(prefix, 'properties');
  if (location.status === 'found' && properties.status === 'found') {
    if (typeof location.value !== 'string' || typeof properties.value !== 'object' || properties.value === null) return undefined;
    return { location: location.value.replace(/\/+$/, ''), properties: properties.value as Record<string, string> };
  }
  // A whole file (shorter than the bytes asked for) that ends before its values do is damaged too.
  const damaged = (p: PeekedValue) => p.status === 'invalid' || (p.status === 'truncated' && bytes.length < PEEK_BYTES);
  if (!damaged(location) && !damaged(properties)) return undefined;
  const standard = /^(.+)\/metadata\/[^/]+\.metadata\.json$/.exec(metadataLocation);
  return standard ? { location: standard[1]! } : undefined;
}
