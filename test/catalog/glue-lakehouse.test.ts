import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GlueCatalog } from '../../src/catalog/glue-catalog.ts';
import { fileUri, localPath } from '../../src/core/uri.ts';
import { parseTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import type { FileIO } from '../../src/io/file-io.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { Lakehouse } from '../../src/index.ts';
import { expectBothEqual, ids } from '../both-formats.ts';
import { deltaFailingIO } from '../faults.ts';
import { GlueDouble } from '../servers/glue-double.ts';
import { errorOf, tempDir } from '../helpers.ts';

// A Twinlake table written through the library with a Glue catalog, where Glue is the loopback
// TEST DOUBLE of test/servers/glue-double.ts (no Glue service runs here).

const REGION = 'eu-west-1';
const credentials = { accessKeyId: 'AKIDLAKE', secretAccessKey: 'lake-secret-never-shown' };

describe('a Lakehouse on a local warehouse with a Glue catalog (Glue test double)', () => {
  let double: GlueDouble;
  let tmp: { path: string; cleanup: () => void };
  const catalogs: GlueCatalog[] = [];
  const lakes: Lakehouse[] = [];

  const open = async (warnings: string[] = [], io?: FileIO) => {
    const store = new LocalStore(tmp.path);
    const catalog = new GlueCatalog({ region: REGION, endpoint: double.endpoint, credentials, warehouse: { store, rootUri: fileUri(tmp.path) } });
    catalogs.push(catalog);
    const lake = await Lakehouse.open({ warehouse: tmp.path, catalog, onWarning: (m) => warnings.push(m), ...(io ? { io } : {}) });
    lakes.push(lake);
    return lake;
  };

  beforeEach(async () => {
    double = await GlueDouble.start({ accessKeyId: credentials.accessKeyId });
    tmp = tempDir('twinlake-glue-lake-');
  });
  afterEach(async () => {
    for (const l of lakes.splice(0)) await l.close();
    for (const c of catalogs.splice(0)) await c.close();
    await double.stop();
    tmp.cleanup();
  });

  it('writes a table that reads back in both formats, registered in Glue as Iceberg readers expect', async () => {
    double.createDatabase(REGION, 'analytics');
    const lake = await open();
    const events = lake.table('analytics.events');
    const r1 = await events.append([
      { id: 1, user: 'ada', ts: '2026-01-01T10:00:00Z' },
      { id: 2, user: 'bob', ts: '2026-01-01T11:00:00Z' },
    ]);
    const first = double.table(REGION, 'analytics', 'events')!.Parameters!.metadata_location!;
    const r = await events.append([{ id: 3, user: 'cy', ts: '2026-01-02T09:00:00Z', score: 1.5 }]);
    expect(r.deltaVersion).toBe(r1.deltaVersion! + 1);
    await expectBothEqual(events, [1, 2, 3]);

    const glue = double.table(REGION, 'analytics', 'events')!;
    const location = fileUri(path.join(tmp.path, 'analytics', 'events'));
    expect(glue.TableType).toBe('EXTERNAL_TABLE');
    expect(glue.Parameters?.table_type).toBe('ICEBERG');
    expect(glue.Parameters?.previous_metadata_location).toBe(first);
    expect(glue.StorageDescriptor?.Location).toBe(location);
    // metadata_location names the current metadata file, which an Iceberg reader opens on its own.
    const metadataFile = glue.Parameters!.metadata_location!;
    expect(metadataFile.startsWith(`${location}/metadata/`)).toBe(true);
    const metadata = parseTableMetadata(readFileSync(metadataFile.replace(/^file:\/\//, ''), 'utf8'));
    expect(metadata.location).toBe(location);
    expect(metadata['current-snapshot-id']).toBe((await events.metadata())['current-snapshot-id']);
    expect(metadata['metadata-log'].map((e) => e['metadata-file'])).toContain(first);
    // The evolved schema (score added by the second write) is what Glue's columns show.
    expect(glue.StorageDescriptor?.Columns?.map((c) => [c.Name, c.Type, c.Parameters?.['iceberg.field.current']])).toEqual([
      ['id', 'bigint', 'true'],
      ['user', 'string', 'true'],
      ['ts', 'timestamp', 'true'],
      ['score', 'double', 'true'],
    ]);
    // Readers by path need no catalog: the version hint names the same file.
    expect(existsSync(path.join(tmp.path, 'analytics/events/_delta_log/00000000000000000001.json'))).toBe(true);
    expect(ids(await lake.readPath(path.join(tmp.path, 'analytics', 'events')))).toEqual([1, 2, 3]);
    expect(await lake.listTables()).toEqual(['analytics.events']);
  });

  it('lets two lakehouses append to one Glue table at once: both commit, Delta stays gap-free', async () => {
    double.createDatabase(REGION, 'analytics');
    const a = await open();
    const b = await open();
    const first = await a.table('analytics.t').append([{ id: 0 }]);
    const version = Number(double.table(REGION, 'analytics', 't')!.VersionId);
    const results = await Promise.all([a.table('analytics.t').append([{ id: 1 }]), b.table('analytics.t').append([{ id: 2 }])]);
    expect(results.map((r) => r.deltaVersion).sort()).toEqual([first.deltaVersion! + 1, first.deltaVersion! + 2]);
    await expectBothEqual(a.table('analytics.t'), [0, 1, 2]);
    // Each append moved the Glue table once.
    expect(double.table(REGION, 'analytics', 't')!.VersionId).toBe(String(version + 2));
  });

  it('fails the first write with "Iceberg catalog not found" when the Glue database is missing, creating nothing', async () => {
    const lake = await open();
    const e = await errorOf(lake.table('analytics.events').append([{ id: 1 }]));
    expect(e.kind).toBe('not-found');
    expect(e.message).toMatch(/^glue catalog: Iceberg catalog not found: Glue database analytics does not exist in region eu-west-1; create the Glue database analytics in region eu-west-1/);
    expect(double.databases(REGION)).toEqual([]);
    // No file of the failed write is left (the engine's empty folders may be).
    const files = readdirSync(tmp.path, { recursive: true, withFileTypes: true }).filter((d) => d.isFile());
    expect(files.map((d) => d.name)).toEqual([]);
  });

  it('refuses a Delta-only table: Glue holds it as Iceberg or not at all', async () => {
    double.createDatabase(REGION, 'analytics');
    const lake = await open();
    const e = await errorOf(lake.table('analytics.d').append([{ id: 1 }], { formats: ['delta'] }));
    expect(e.kind).toBe('unsupported');
    expect(e.message).toBe('table analytics.d: this catalog cannot hold Delta-only tables');
    expect(double.table(REGION, 'analytics', 'd')).toBeUndefined();
  });

  it('a Delta commit that fails after the Glue commit: the write warns, retried once, and the next write catches Delta up', async () => {
    double.createDatabase(REGION, 'analytics');
    let failDelta = false;
    const { io, stores } = deltaFailingIO(() => failDelta);
    const warnings: string[] = [];
    const lake = await open(warnings, io);
    const t = lake.table('analytics.events');
    await t.append([{ id: 1 }, { id: 2 }]);
    const glueBefore = double.table(REGION, 'analytics', 'events')!.Parameters!.metadata_location;

    failDelta = true;
    const broken = await t.append([{ id: 3 }]);
    failDelta = false;
    const version = String(broken.deltaVersion).padStart(20, '0');
    const logFile = `${tmp.path}/analytics/events/_delta_log/${version}.json`;
    // The Iceberg commit through Glue stands; Delta is one version behind.
    expect(broken.deltaCommitted).toBe(false);
    expect(double.table(REGION, 'analytics', 'events')!.Parameters!.metadata_location).not.toBe(glueBefore);
    expect(double.table(REGION, 'analytics', 'events')!.Parameters!.previous_metadata_location).toBe(glueBefore);
    // The Delta commit and its one retry, both of the same version file.
    const failures = [...stores.values()].flatMap((s) => s.failures.map((f) => ({ ...f, file: localPath(`${s.root}/${f.path}`) })));
    expect(failures.map((f) => [f.call, f.file])).toEqual([
      ['putIfAbsent', logFile],
      ['putIfAbsent', logFile],
    ]);
    const expected = `delta: commit for analytics.events failed after the iceberg commit (injected failure: putIfAbsent ${failures[0]!.path}); the next write will repair it`;
    expect(warnings).toEqual([expected]);
    expect(broken.warnings).toEqual([expected]);
    expect(ids(await t.read())).toEqual([1, 2, 3]);
    expect(ids(await t.read({ format: 'delta' }))).toEqual([1, 2]);

    // The next write writes the missing version first, then its own.
    const next = await t.append([{ id: 4 }]);
    expect(next.deltaCommitted).toBe(true);
    expect(next.deltaVersion).toBe(broken.deltaVersion! + 1);
    expect(existsSync(logFile)).toBe(true);
    expect(ids(await t.read({ format: 'delta', version: broken.deltaVersion }))).toEqual([1, 2, 3]);
    await expectBothEqual(t, [1, 2, 3, 4]);
    expect(warnings).toEqual([expected]);
  });
});
