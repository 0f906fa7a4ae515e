import { DataFileContent, EntryStatus, type DataFile, type ManifestEntry } from './types.ts';

/**
 * Pure scan planning over manifest entries that already went through inheritance
 * (spec §Scan Planning): DELETED entries are history, not part of the snapshot.
 */

export function liveEntries(entries: readonly ManifestEntry[]): ManifestEntry[] {
  return entries.filter((e) => e.status !== EntryStatus.Deleted);
}

/** The data files of a snapshot: live entries with content DATA. */
export function liveDataFiles(entries: readonly ManifestEntry[]): DataFile[] {
  return liveEntries(entries)
    .map((e) => e['data-file'])
    .filter((f) => f.content === DataFileContent.Data);
}

/** The position/equality delete files and deletion vectors of a snapshot. */
export function liveDeleteFiles(entries: readonly ManifestEntry[]): DataFile[] {
  return liveEntries(entries)
    .map((e) => e['data-file'])
    .filter((f) => f.content !== DataFileContent.Data);
}
