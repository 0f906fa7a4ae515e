import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { testdata } from '../../helpers.ts';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { parseJson } from '../../../src/core/json.ts';
import { decodeManifest, inheritFirstRowIds, inheritSequenceNumbers, partitionType } from '../../../src/format/iceberg/manifest.ts';
import { decodeManifestList, partitionSummaries } from '../../../src/format/iceberg/manifest-list.ts';
import { liveDataFiles, liveDeleteFiles } from '../../../src/format/iceberg/scan.ts';
import { parseTableMetadata, schemaById, serializeTableMetadata, snapshotById, specById } from '../../../src/format/iceberg/table-metadata.ts';
import type { ManifestEntry, PartitionSpec, Snapshot, TableMetadata } from '../../../src/format/iceberg/types.ts';

/**
 * Conformance: every Iceberg table in ../shared/testdata/iceberg (written by Spark, Trino,
 * PyIceberg, Impala, Flink, Athena, Java) is read with our metadata, manifest-list and manifest
 * decoders. Row counts come from manifests alone, so they are asserted only for snapshots without
 * delete files (applying deletes is a later step).
 */

const fixturesRoot = path.join(testdata, 'iceberg');
const available = existsSync(path.join(fixturesRoot, 'fixtures.json'));

interface Fixture {
  dir: string;
  format_version: number;
  current_metadata: string;
  location_prefixes: string[];
  expected_rows: number | null;
  computed_rows_per_snapshot: [bigint | number, number | null][];
  current_snapshot_id: bigint | number | null;
}

/**
 * Tables whose metadata we cannot read, with the reason. Empty today; a table listed here that
 * does read makes the test fail, so the list stays honest.
 */
const UNREADABLE: Record<string, string> = {};

/** Tables whose manifest-list file counts disagree with their manifests, with the reason. */
const COUNTS_DISAGREE: Record<string, string> = {
  'impala-iceberg_v2_null_delete_record':
    'hand-made by Impala test tooling: the manifest list says 1 added file per manifest, the manifests hold 2 data and 5 delete files',
};

const fixtures: Fixture[] = available ? parseJson(readFileSync(path.join(fixturesRoot, 'fixtures.json'), 'utf8'), 'fixtures.json') : [];

/** Paths in these tables are as written on the producing machine: map them into the fixture folder. */
function localPath(f: Fixture, uri: string): string {
  const prefixes = [...f.location_prefixes].sort((a, b) => b.length - a.length);
  for (const p of prefixes) {
    if (uri.startsWith(p + '/')) return path.join(fixturesRoot, f.dir, uri.slice(p.length + 1));
  }
  throw new Error(`${f.dir}: path ${uri} is under none of the location prefixes ${prefixes.join(', ')}`);
}

interface SnapshotRead {
  entries: ManifestEntry[];
}

function readSnapshot(f: Fixture, m: TableMetadata, s: Snapshot): SnapshotRead | undefined {
  const listPath = localPath(f, s['manifest-list']);
  if (!existsSync(listPath)) return undefined;
  const specsById = new Map<number, PartitionSpec>(m['partition-specs'].map((p) => [p['spec-id'], p]));
  const entries: ManifestEntry[] = [];
  for (const mf of decodeManifestList(readFileSync(listPath), listPath)) {
    const decoded = decodeManifest(readFileSync(localPath(f, mf['manifest-path'])), { specsById, manifestFile: mf });
    expect(decoded.specId).toBe(mf['partition-spec-id']);
    expect(decoded.content).toBe(mf.content);
    if (COUNTS_DISAGREE[f.dir] === undefined) {
      expect(decoded.entries.filter((e) => e.status === 1).length).toBe(mf['added-files-count']);
      expect(decoded.entries.filter((e) => e.status === 0).length).toBe(mf['existing-files-count']);
    }
    entries.push(...inheritFirstRowIds(inheritSequenceNumbers(decoded.entries, mf), mf));

    // Our partition summaries must equal the writer's (uuid bounds are left out on purpose).
    if (mf.partitions && mf.partitions.length > 0) {
      const ptype = partitionType(specById(m, mf['partition-spec-id']), schemaById(m, s['schema-id'] ?? m['current-schema-id']));
      const ours = partitionSummaries(ptype, decoded.entries.map((e) => e['data-file'].partition));
      ptype.fields.forEach((pf, k) => {
        const theirs = mf.partitions![k]!;
        expect(ours[k]!['contains-null'], `contains-null of ${pf.name}`).toBe(theirs['contains-null']);
        if (pf.type === 'uuid') return;
        expect(ours[k]!['lower-bound'], `lower bound of ${pf.name}`).toEqual(theirs['lower-bound']);
        expect(ours[k]!['upper-bound'], `upper bound of ${pf.name}`).toEqual(theirs['upper-bound']);
        report.summariesChecked++;
      });
    }
  }
  for (const e of entries) {
    expect(e['snapshot-id']).toBeTypeOf('bigint');
    expect(e['sequence-number']).toBeTypeOf('number');
  }
  return { entries };
}

const report = { summariesChecked: 0, tables: 0, rowChecked: 0, withDeletes: [] as string[], snapshotsChecked: 0, snapshotsWithDeletes: 0, snapshotsMissingList: 0 };

describe.skipIf(!available)('iceberg fixtures (../shared/testdata/iceberg)', () => {
  if (!available) test.skip(`fixtures not found at ${fixturesRoot}`, () => {});

  test('the fixture index lists 93 tables', () => {
    expect(fixtures.length).toBe(93);
  });

  for (const f of fixtures) {
    test(f.dir, () => {
      const reason = UNREADABLE[f.dir];
      const metaPath = path.join(fixturesRoot, f.dir, f.current_metadata);
      if (reason !== undefined) {
        expect(() => parseTableMetadata(readFileSync(metaPath, 'utf8'), metaPath), `${f.dir} is listed as unreadable (${reason}) but reads`).toThrow();
        return;
      }
      const m = parseTableMetadata(readFileSync(metaPath, 'utf8'), metaPath);
      report.tables++;
      expect(m['format-version']).toBe(f.format_version);
      const expectedCurrent = f.current_snapshot_id === null ? null : BigInt(f.current_snapshot_id);
      expect(m['current-snapshot-id'] ?? null).toBe(expectedCurrent);

      // Our writer's output parses back to the same model.
      expect(parseTableMetadata(serializeTableMetadata(m))).toEqual(m);

      let tableHasDeletes = false;
      for (const [rawId, computed] of f.computed_rows_per_snapshot) {
        const s = snapshotById(m, BigInt(rawId));
        expect(s, `snapshot ${rawId} of ${f.dir}`).toBeDefined();
        const read = readSnapshot(f, m, s!);
        if (!read) {
          expect(computed).toBeNull();
          report.snapshotsMissingList++;
          continue;
        }
        const deletes = liveDeleteFiles(read.entries);
        if (deletes.length > 0) {
          tableHasDeletes = true;
          report.snapshotsWithDeletes++;
          continue;
        }
        const rows = liveDataFiles(read.entries).reduce((n, d) => n + d['record-count'], 0);
        expect(rows, `rows of snapshot ${rawId}`).toBe(computed);
        report.snapshotsChecked++;
      }

      const current = m['current-snapshot-id'] == null ? undefined : snapshotById(m, m['current-snapshot-id']);
      const read = current ? readSnapshot(f, m, current) : { entries: [] };
      expect(read, `manifest list of the current snapshot of ${f.dir}`).toBeDefined();
      if (liveDeleteFiles(read!.entries).length > 0 || tableHasDeletes) {
        report.withDeletes.push(f.dir);
        return;
      }
      const rows = liveDataFiles(read!.entries).reduce((n, d) => n + d['record-count'], 0);
      expect(rows).toBe(f.expected_rows ?? f.computed_rows_per_snapshot.at(-1)![1]);
      report.rowChecked++;
    });
  }

  test('every metadata.json version of every table parses', () => {
    let count = 0;
    for (const f of fixtures) {
      if (UNREADABLE[f.dir] !== undefined) continue;
      const dirs = [path.join(fixturesRoot, f.dir, 'metadata'), path.join(fixturesRoot, f.dir, path.dirname(f.current_metadata))];
      const files = new Set<string>();
      for (const d of dirs) if (existsSync(d)) for (const n of readdirSync(d)) if (n.endsWith('.metadata.json') && !n.startsWith('.')) files.add(path.join(d, n));
      for (const file of files) {
        const m = parseTableMetadata(readFileSync(file, 'utf8'), file);
        expect(m.schemas.length).toBeGreaterThan(0);
        count++;
      }
    }
    expect(count).toBeGreaterThanOrEqual(300);
  });

  afterAll(() => {
    if (!available) return;
    console.info(
      `iceberg fixtures: ${report.tables}/${fixtures.length} tables parsed; row count asserted for ${report.rowChecked} tables ` +
        `and ${report.snapshotsChecked} snapshots; ${report.withDeletes.length} tables with delete files skipped for row counts ` +
        `(${report.snapshotsWithDeletes} snapshots); ${report.snapshotsMissingList} snapshots without manifest list; ` +
        `${report.summariesChecked} partition summaries equal the writers'; unreadable: ${Object.keys(UNREADABLE).length}`,
    );
  });
});
