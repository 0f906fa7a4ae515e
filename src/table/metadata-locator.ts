import { joinUri } from '../core/uri.ts';
import type { FileIO } from '../io/file-io.ts';

/**
 * Finds the current Iceberg metadata file of a table known only by its location (DESIGN.md §1:
 * a table stays readable by path with no catalog). `metadata/version-hint.text` names it — as a
 * number N (`vN.metadata.json`, or `0000N-<uuid>.metadata.json` as catalogs name them) or as a
 * file name; without a hint the newest numbered metadata file wins.
 */
export async function locateMetadataFile(io: FileIO, location: string): Promise<string | undefined> {
  const dir = joinUri(location, 'metadata');
  const files: string[] = [];
  for await (const o of io.list(dir + '/')) {
    const name = o.uri.slice(dir.length + 1);
    if (!name.includes('/') && /\.metadata\.json(\.gz)?$/.test(name)) files.push(name);
  }
  const hintUri = joinUri(dir, 'version-hint.text');
  if (await io.exists(hintUri)) {
    const hint = (await io.readText(hintUri)).trim();
    if (/^\d+$/.test(hint)) {
      const n = Number(hint);
      const match = files.find((f) => f === `v${n}.metadata.json`) ?? files.find((f) => versionOf(f) === n);
      if (match) return joinUri(dir, match);
    } else if (hint) {
      const name = hint.endsWith('.metadata.json') ? hint : `${hint}.metadata.json`;
      const base = name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : name;
      if (files.includes(base)) return joinUri(dir, base);
    }
  }
  if (files.length === 0) return undefined;
  const newest = files.reduce((a, b) => ((versionOf(b) ?? -1) > (versionOf(a) ?? -1) ? b : a));
  return joinUri(dir, newest);
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
