import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { MemoryStore } from '../../src/io/memory-store.ts';
import { sampleMetadata } from '../catalog/catalog-contract.ts';
import { HookedStore } from '../faults.ts';
import type { Catalog, TableIdentifier } from '../../src/catalog/catalog.ts';
import { GlueCatalog } from '../../src/catalog/glue-catalog.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { GlueDouble } from '../servers/glue-double.ts';

/**
 * Found by the server load (32 clients posting to one table): a commit whose every metadata file
 * name was taken by concurrent writers failed the whole write with a 409, with its retry budget
 * unspent. Concurrent writers taking the names is a lost race like a lost compare-and-swap, so
 * the catalog reports it as a conflict value, which the one retry loop retries.
 */
/** Before each name `ours` tries, `rival` commits and takes it; then ours loses cleanly and its retry commits. */
async function loseEveryName(ours: Catalog, rival: Catalog, hooked: HookedStore, id: TableIdentifier): Promise<void> {
  await ours.createNamespace(['ns']);
  await ours.createTable(id, sampleMetadata());
  // The hook clears itself before it runs, so it re-arms.
  let rivals = 0;
  const arm = () => {
    hooked.beforeCreate = async () => {
      const r = await rival.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { by: `rival ${rivals}` } }] });
      expect(r.status).toBe('committed');
      if (++rivals < 20) arm();
    };
  };
  arm();
  const lost = await ours.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'ours' } }] });
  hooked.beforeCreate = undefined;
  expect(lost.status).toBe('conflict');
  if (lost.status === 'conflict') expect(lost.reason).toMatch(/every metadata file name tried .* was taken by concurrent writers/);
  // Nothing of ours landed; the next attempt on the fresh base commits.
  expect((await ours.loadTable(id)).metadata.properties.by).toMatch(/^rival /);
  const retried = await ours.commitTable(id, { requirements: [], updates: [{ action: 'set-properties', updates: { by: 'ours' } }] });
  expect(retried.status).toBe('committed');
  expect((await rival.loadTable(id)).metadata.properties.by).toBe('ours');
}

describe('sql catalog under many concurrent committers', () => {
  it('reports every metadata file name taken by concurrent commits as a lost race, not a failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'twinlake-load-names-'));
    const shared = new MemoryStore('names');
    const hooked = new HookedStore(shared);
    const dbPath = join(dir, 'catalog.db');
    const ours = new SqlCatalog({ warehouse: { store: hooked, rootUri: shared.root }, dbPath });
    const rival = new SqlCatalog({ warehouse: { store: shared, rootUri: shared.root }, dbPath });
    const id = { namespace: ['ns'], name: 't' };
    try {
      await loseEveryName(ours, rival, hooked, id);
    } finally {
      ours.close();
      rival.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Glue writes its metadata files the same way; against the Glue TEST DOUBLE (test/servers/glue-double.ts).
  it('the Glue catalog reports it as a lost race too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'twinlake-load-names-glue-'));
    const double = await GlueDouble.start({ accessKeyId: 'AKIDGLUEDOUBLE' });
    const shared = new LocalStore(dir);
    const hooked = new HookedStore(shared);
    const credentials = { accessKeyId: 'AKIDGLUEDOUBLE', secretAccessKey: 'glue-double-secret' };
    const opts = { region: 'us-east-1', endpoint: double.endpoint, credentials, createDatabases: true };
    const ours = new GlueCatalog({ ...opts, warehouse: { store: hooked, rootUri: shared.root } });
    const rival = new GlueCatalog({ ...opts, warehouse: { store: shared, rootUri: shared.root } });
    const id = { namespace: ['ns'], name: 't' };
    try {
      await loseEveryName(ours, rival, hooked, id);
    } finally {
      await ours.close();
      await rival.close();
      await double.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
