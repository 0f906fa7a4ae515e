import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { fileUri, isUri } from '../../src/core/uri.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { DuckDBSession, quoteString } from '../../src/engine/duckdb-session.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import type { ObjectStore } from '../../src/io/object-store.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import { errorOf, hasTestdata, listFiles, tempDir, testdata } from '../helpers.ts';
import { FaultyStore } from '../faults.ts';

/**
 * Adopting tables other engines wrote (Spark, Trino, Flink, PyIceberg; ../shared/testdata/iceberg):
 * each is registered from a copy, projected to Delta, read through both formats and appended to.
 *
 * The fixtures' metadata names the places they were written (`s3a://warehouse/...`,
 * `hdfs://localhost:20500/...`, `file:///Users/...`), and their manifests name data files there.
 * Registering keeps those locations, as Iceberg's registerTable does, so the test gives the copy
 * the place it names: the catalog's store and the FileIO map the recorded location to the copied
 * folder (nothing is rewritten, and the originals are never written). Tables recorded with a
 * relative location are refused: a location must be absolute.
 */
interface Fixture {
  dir: string;
  writer: string;
  current_metadata: string;
  location_prefixes: string[];
  expected_rows: number | null;
  computed_rows_per_snapshot: [bigint | number, number | null][];
  current_snapshot_id: bigint | number | null;
}

const root = join(testdata, 'iceberg');
const all: Fixture[] = hasTestdata ? parseJson(readFileSync(join(root, 'fixtures.json'), 'utf8'), 'fixtures.json') : [];
const fixtures = all.filter((f) => /Spark|Trino|Flink|PyIceberg/.test(f.writer));

/** Tables Delta cannot hold, each refused with a message naming why (and the column, for types). */
const noDeltaType = (column: string, type: string) => new RegExp(`^register adopted\\.t: delta schema: column ${column} has type ${type}, which has no Delta equivalent; the table cannot keep Delta$`);
const equality = /^register adopted\.t: data file .+ has equality deletes \(.+\), which Delta cannot hold; apply them first/;
const initialDefault = (column: string) => new RegExp(`^register adopted\\.t: column ${column} has an initial default \\(.+\\) for rows written before it existed, which Delta cannot hold$`);
const REFUSED: Record<string, RegExp> = {
  'icebergcxx-all_trino_types': noDeltaType('time_col', 'time'),
  'icebergcxx-bucket_partitioning': noDeltaType('col_time', 'time'),
  'icebergcxx-identity_partitioning': noDeltaType('col_time', 'time'),
  'impala-trino_variant': noDeltaType('v', 'variant'),
  'impala-trino_nested_variant': noDeltaType('top_v', 'variant'),
  'impala-iceberg_v3_all_types': initialDefault('col_boolean'),
  'impala-iceberg_v3_default_value': initialDefault('j'),
  'impala-test_complex_default': initialDefault('j\\.f1'),
  'impala-test_default_part': initialDefault('j'),
  'impala-iceberg_v2_delete_both_eq_and_pos': equality,
  // Its delete file names the data file as hdfs://localhost:20500/..., its manifests as /test-warehouse/...
  'impala-iceberg_v2_delete_positional': /^register adopted\.t: position delete file \S+ holds 1 positions, of which 0 name a live data file as the manifests name it/,
  'impala-iceberg_v2_delete_equality': equality,
  'impala-iceberg_v2_delete_equality_partitioned': equality,
  'impala-iceberg_v2_delete_pos_and_multi_eq_ids': equality,
  'impala-iceberg_v2_delete_equality_partition_evolution': /^register adopted\.t: adding Delta to a table whose files were written with an older partition spec is not supported yet$/,
  'icebergcxx-partition_evolution': /^register adopted\.t: adding Delta to a table whose files were written with an older partition spec is not supported yet$/,
};

/** A store whose root is the location a fixture records, holding the files of its copy. */
function storeAt(rootUri: string, dir: string): ObjectStore {
  const local = new LocalStore(dir);
  return {
    root: rootUri,
    get: (p, r) => local.get(p, r),
    head: (p) => local.head(p),
    put: (p, b) => local.put(p, b),
    putIfAbsent: (p, b) => local.putIfAbsent(p, b),
    list: (p) => local.list(p),
    delete: (p) => local.delete(p),
    localPath: (p) => local.localPath(p),
  };
}

function remap(prefixes: string[], dir: string): (uri: string) => string {
  const sorted = [...prefixes].sort((a, b) => b.length - a.length);
  return (uri) => {
    for (const p of sorted) if (uri.startsWith(p)) return fileUri(dir + uri.slice(p.length));
    return uri;
  };
}

function canonical(rows: Record<string, unknown>[]): string[] {
  const key = (row: Record<string, unknown>) =>
    JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'number' && !Number.isFinite(v) ? String(v) : v));
  return rows.map(key).sort();
}

describe('register: a failed adoption leaves the table unregistered and its files as they were', () => {
  it('a storage failure during the adopting commit', async () => {
    const tmp = tempDir('twinlake-register-');
    let failing = false;
    const io = new FileIO((uri) => {
      const { store, key } = storeForLocation(uri);
      const faulty = new FaultyStore(store);
      faulty.failWhen = (call, path) => failing && (call === 'put' || call === 'putIfAbsent') && path.endsWith('.avro');
      return { store: faulty, key };
    });
    const lake = await Lakehouse.open({ warehouse: tmp.path, io, onWarning: () => undefined });
    try {
      const other = { namespace: ['spark'], name: 'orders' };
      await lake.table(other).append([{ id: 1 }, { id: 2 }], { formats: ['iceberg'] });
      const stripped = await lake.catalog.commitTable(other, { requirements: [], updates: [{ action: 'remove-properties', removals: ['twinlake.formats', 'twinlake.column-physical-names', 'schema.name-mapping.default'] }] });
      if (stripped.status !== 'committed') throw new Error(stripped.reason);
      await lake.catalog.dropTable(other);
      const folder = join(tmp.path, 'spark', 'orders');
      const before = listFiles(folder);

      failing = true;
      const e = await errorOf(lake.table('adopted.orders').register(stripped.metadataLocation));
      expect(e.message).toMatch(/injected failure: (put|putIfAbsent) .*\.avro/);
      expect(await lake.catalog.tableExists({ namespace: ['adopted'], name: 'orders' })).toBe(false);
      expect(listFiles(folder)).toEqual(before);

      failing = false;
      const r = await lake.table('adopted.orders').register(stripped.metadataLocation);
      expect(r.deltaVersion).toBe(0);
      expect(await lake.table('adopted.orders').count({ format: 'delta' })).toBe(2);
    } finally {
      await lake.close();
      tmp.cleanup();
    }
  });
});

describe.skipIf(!hasTestdata)('register: adopting tables other engines wrote', () => {
  let session: DuckDBSession;
  beforeAll(async () => {
    session = await DuckDBSession.open({});
  });
  afterAll(() => session?.close());
  const outcomes: Record<string, string> = {};
  const withDeletionVectors = new Set<string>();

  for (const fx of fixtures) {
    it(fx.dir, async () => {
      const tmp = tempDir('twinlake-register-');
      try {
        const copy = join(tmp.path, 'copy');
        cpSync(join(root, fx.dir), copy, { recursive: true });
        const metadataText = readFileSync(join(copy, fx.current_metadata), 'utf8');
        const location = (JSON.parse(metadataText) as { location: string }).location.replace(/\/+$/, '');
        const absolute = isUri(location) || location.startsWith('/');
        const rootUri = isUri(location) ? location : absolute ? fileUri(location) : location;
        const prefixes = [...new Set([location, rootUri, ...fx.location_prefixes])];
        const toLocal = remap(prefixes, copy);
        const io = new FileIO((uri) => storeForLocation(toLocal(uri)));
        const catalog = new SqlCatalog({ dbPath: join(tmp.path, 'catalog.db'), warehouse: absolute ? { store: storeAt(rootUri, copy), rootUri } : { store: new LocalStore(copy), rootUri: fileUri(copy) } });
        const lake = await Lakehouse.open({ warehouse: join(tmp.path, 'wh'), catalog, io, onWarning: () => undefined });
        try {
          const table = lake.table('adopted.t');
          const metadataFile = absolute ? `${rootUri}/${fx.current_metadata}` : join(copy, fx.current_metadata);
          if (!absolute) {
            const e = await errorOf(table.register(metadataFile));
            expect(e.message).toMatch(/^register adopted\.t: the table location ".*" is relative; expected an absolute location/);
            expect(await catalog.tableExists({ namespace: ['adopted'], name: 't' })).toBe(false);
            outcomes[fx.dir] = 'refused: relative location';
            return;
          }
          if (REFUSED[fx.dir]) {
            const e = await errorOf(table.register(metadataFile));
            expect(e.message).toMatch(REFUSED[fx.dir]!);
            expect(await catalog.tableExists({ namespace: ['adopted'], name: 't' })).toBe(false);
            outcomes[fx.dir] = `refused: ${e.message}`;
            return;
          }
          let registered;
          try {
            registered = await table.register(metadataFile);
          } catch (e) {
            outcomes[fx.dir] = `failed: ${(e as Error).message}`;
            throw e;
          }
          outcomes[fx.dir] = 'registered';
          // The other engine's metadata file is the table's history; ours comes after it, beside it.
          expect(readFileSync(join(copy, fx.current_metadata), 'utf8')).toBe(metadataText);
          expect(registered.registeredMetadata).toBe(metadataFile);
          expect(registered.formats).toEqual(['delta', 'iceberg']);
          expect(registered.deltaVersion).toBe(0);
          const computed = fx.computed_rows_per_snapshot.find(([id]) => fx.current_snapshot_id !== null && BigInt(id) === BigInt(fx.current_snapshot_id))?.[1];
          const expected = fx.expected_rows ?? computed ?? 0;

          const check = async (rows: number) => {
            const iceberg = await table.read({ format: 'iceberg' });
            const delta = await table.read({ format: 'delta' });
            expect(iceberg.length).toBe(rows);
            expect(canonical(delta)).toEqual(canonical(iceberg));
            const live = await table.files({ format: 'delta' });
            const withDvs = live.files.filter((f) => f.deletes.length > 0);
            if (withDvs.length > 0) withDeletionVectors.add(fx.dir);
            const paths = live.files.map((f) => quoteString(new URL(toLocal(f.path)).pathname));
            const counted = paths.length === 0 ? 0 : Number((await session.all(`SELECT count(*) AS n FROM read_parquet([${paths.join(', ')}])`))[0]!.n);
            // Each deletion vector removes its cardinality from the rows its file holds.
            const deleted = withDvs.reduce((n, f) => n + f.deletes.reduce((m, d) => m + d.records, 0), 0);
            expect(withDvs.every((f) => f.deletes.length === 1 && f.deletes[0]!.kind === 'deletion-vector')).toBe(true);
            expect(counted - deleted).toBe(rows);
          };
          await check(expected);

          // A later write keeps both formats: rows like the table's own appended (their scalar
          // columns; the values of the others, as reads return them, are no input for a write).
          const scalar = (v: unknown): boolean =>
            v === null || ['string', 'number', 'bigint', 'boolean'].includes(typeof v) || (v?.constructor === Object && Object.values(v as object).every(scalar));
          const sample = (await table.read({ format: 'iceberg', limit: 2 })).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => scalar(v))));
          expect(sample.every((r) => Object.keys(r).length > 0)).toBe(true);
          if (sample.length > 0) {
            const appended = await table.append(sample);
            expect(appended.deltaVersion).toBe(1);
            await check(expected + sample.length);
            expect((await table.verify()).ok).toBe(true);
          }
        } finally {
          await lake.close();
          catalog.close();
        }
      } finally {
        tmp.cleanup();
      }
    });
  }

  it.skipIf(fixtures.length === 0)('every table with an absolute location and nothing Delta cannot hold is adopted', () => {
    const adopted = Object.keys(outcomes).filter((d) => outcomes[d] === 'registered');
    // Spark, Trino and PyIceberg tables among them (the Flink tables all carry equality deletes).
    for (const dir of ['icebergcxx-all_spark_types', 'pglake-spark_generated_iceberg_ddl_test', 'icebergcxx-partitioning_with_null_value', 'icebergcxx-w_clean_expired_metadata', 'pyiceberg-test_ns_target', 'glaredb-cities', 'impala-iceberg_v3_row_lineage', 'icebird-spark_rename_column']) {
      expect(adopted).toContain(dir);
    }
    expect(adopted).toHaveLength(32);
    // Their position deletes and deletion vectors, as Delta deletion vectors.
    for (const dir of ['icebergcxx-deletion_vectors', 'impala-iceberg_v3_deletion_vectors', 'icebergcxx-granular_deletes', 'icebergcxx-refdeletes3', 'icebergcxx-gperov_test', 'pglake-spark_generated_iceberg_test']) {
      expect(withDeletionVectors).toContain(dir);
    }
  });
});
