import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Catalog, TableIdentifier } from '../../src/catalog/catalog.ts';
import { newUuid } from '../../src/core/ids.ts';
import { newTableMetadata } from '../../src/format/iceberg/table-metadata.ts';
import type { Snapshot, TableMetadata } from '../../src/format/iceberg/types.ts';
import type { TableUpdate } from '../../src/format/iceberg/updates.ts';
import { errorOf } from '../helpers.ts';

export interface CatalogUnderTest {
  catalog: Catalog;
  cleanup(): Promise<void>;
}

/** A small v2 table with an empty location, so the catalog picks its default. */
export function sampleMetadata(props: Record<string, string> = {}): TableMetadata {
  return newTableMetadata({
    location: '',
    schema: {
      type: 'struct',
      fields: [
        { id: 1, name: 'id', required: true, type: 'long' },
        { id: 2, name: 'name', required: false, type: 'string' },
      ],
    },
    properties: props,
    tableUuid: newUuid(),
    nowMs: 1_700_000_000_000,
    lastColumnId: 2,
  });
}

/** add-snapshot + set main: the updates of an append, with a made-up manifest list. */
export function appendUpdates(base: TableMetadata, snapshotId: bigint): TableUpdate[] {
  const snapshot: Snapshot = {
    'snapshot-id': snapshotId,
    'sequence-number': base['last-sequence-number'] + 1,
    'timestamp-ms': base['last-updated-ms'] + 1000,
    'manifest-list': `${base.location}/metadata/snap-${snapshotId}.avro`,
    summary: { operation: 'append' },
    'schema-id': base['current-schema-id'],
  };
  if (base['current-snapshot-id'] !== undefined && base['current-snapshot-id'] !== null) snapshot['parent-snapshot-id'] = base['current-snapshot-id'];
  return [
    { action: 'add-snapshot', snapshot },
    { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': snapshotId },
  ];
}

const id = (ns: string[], name: string): TableIdentifier => ({ namespace: ns, name });

/** What a catalog can hold; the contract checks the rest of its MUSTs either way. */
export interface CatalogFeatures {
  /**
   * Namespaces of several levels. A catalog without them (AWS Glue: a database is one name) MUST
   * refuse to create one with `unsupported`, and MUST report that none exists.
   */
  nestedNamespaces: boolean;
}

/** Every MUST of the Catalog interface (src/catalog/catalog.ts), for one implementation. */
export function catalogContract(name: string, make: () => Promise<CatalogUnderTest>, features: CatalogFeatures = { nestedNamespaces: true }): void {
  const nested = features.nestedNamespaces;
  describe(`Catalog contract: ${name}`, () => {
    let subject: CatalogUnderTest;
    let catalog: Catalog;

    beforeEach(async () => {
      subject = await make();
      catalog = subject.catalog;
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    describe('namespaces', () => {
      it('creates, finds and lists namespaces, nested ones under their parent', async () => {
        expect(await catalog.namespaceExists(['sales'])).toBe(false);
        await catalog.createNamespace(['sales']);
        await catalog.createNamespace(['hr']);
        if (nested) {
          await catalog.createNamespace(['sales', 'eu']);
          await catalog.createNamespace(['sales', 'us']);
        } else {
          const e = await errorOf(catalog.createNamespace(['sales', 'eu']));
          expect(e.kind).toBe('unsupported');
          expect(e.message).toContain('sales.eu');
        }
        expect(await catalog.namespaceExists(['sales'])).toBe(true);
        expect(await catalog.namespaceExists(['sales', 'eu'])).toBe(nested);
        expect(await catalog.namespaceExists(['sales', 'asia'])).toBe(false);
        expect(await catalog.listNamespaces()).toEqual([['hr'], ['sales']]);
        expect(await catalog.listNamespaces(['sales'])).toEqual(
          nested
            ? [
                ['sales', 'eu'],
                ['sales', 'us'],
              ]
            : [],
        );
        expect(await catalog.listNamespaces(['hr'])).toEqual([]);
      });

      it('does not confuse namespaces that share a prefix or differ in case', async () => {
        await catalog.createNamespace(nested ? ['db', 'x'] : ['db']);
        await catalog.createNamespace(['dbx']);
        expect(await catalog.namespaceExists(['db'])).toBe(true);
        expect(await catalog.namespaceExists(['DB'])).toBe(false);
        expect(await catalog.namespaceExists(['d'])).toBe(false);
        expect(await catalog.listNamespaces(['db'])).toEqual(nested ? [['db', 'x']] : []);
      });

      it('keeps namespace properties', async () => {
        await catalog.createNamespace(['p'], { owner: 'data-team', comment: 'héllo' });
        expect(await catalog.loadNamespaceProperties(['p'])).toMatchObject({ owner: 'data-team', comment: 'héllo' });
      });

      it('refuses to create a namespace twice', async () => {
        await catalog.createNamespace(['dup']);
        const e = await errorOf(catalog.createNamespace(['dup']));
        expect(e.kind).toBe('already-exists');
        expect(e.message).toContain('dup');
      });

      it('names the missing namespace in not-found errors', async () => {
        // Each call starts when awaited: a catalog over the network rejects the others meanwhile.
        for (const call of [() => catalog.loadNamespaceProperties(['ghost']), () => catalog.listTables(['ghost']), () => catalog.listNamespaces(['ghost']), () => catalog.dropNamespace(['ghost'])]) {
          const e = await errorOf(call);
          expect(e.kind).toBe('not-found');
          expect(e.message).toContain('ghost');
        }
      });

      it('drops empty namespaces and refuses non-empty ones', async () => {
        await catalog.createNamespace(['gone']);
        await catalog.dropNamespace(['gone']);
        expect(await catalog.namespaceExists(['gone'])).toBe(false);

        await catalog.createNamespace(['full']);
        await catalog.createTable(id(['full'], 't'), sampleMetadata());
        expect((await errorOf(catalog.dropNamespace(['full']))).kind).toBe('invalid-input');
        expect(await catalog.tableExists(id(['full'], 't'))).toBe(true);

        if (!nested) return;
        await catalog.createNamespace(['parent']);
        await catalog.createNamespace(['parent', 'child']);
        expect((await errorOf(catalog.dropNamespace(['parent']))).kind).toBe('invalid-input');
        expect(await catalog.namespaceExists(['parent', 'child'])).toBe(true);
      });

      it('rejects namespace levels that could become paths', async () => {
        for (const bad of [[], [''], ['a/b'], ['..'], ['.hidden'], ['a.b'], ['tab\there']]) {
          expect((await errorOf(catalog.createNamespace(bad))).kind, JSON.stringify(bad)).toBe('invalid-input');
        }
      });
    });

    describe('tables', () => {
      beforeEach(async () => {
        await catalog.createNamespace(['ns']);
      });

      it('creates a table and loads back the same metadata', async () => {
        const metadata = sampleMetadata({ 'write.format.default': 'parquet' });
        const created = await catalog.createTable(id(['ns'], 'events'), metadata);
        expect(created.metadataLocation).toMatch(/\.metadata\.json$/);
        expect(created.metadata['table-uuid']).toBe(metadata['table-uuid']);
        expect(created.metadata.location).not.toBe('');
        expect(created.metadataLocation.startsWith(created.metadata.location + '/')).toBe(true);

        const loaded = await catalog.loadTable(id(['ns'], 'events'));
        expect(loaded.metadataLocation).toBe(created.metadataLocation);
        expect(loaded.metadata).toEqual(created.metadata);
        expect(loaded.metadata.schemas[0]!.fields.map((f) => f.name)).toEqual(['id', 'name']);
        expect(loaded.metadata.properties['write.format.default']).toBe('parquet');
      });

      it('gives different tables different locations', async () => {
        const inner = nested ? ['ns', 'inner'] : ['inner'];
        await catalog.createNamespace(inner);
        const a = await catalog.createTable(id(['ns'], 'a'), sampleMetadata());
        const b = await catalog.createTable(id(['ns'], 'b'), sampleMetadata());
        const c = await catalog.createTable(id(inner, 'a'), sampleMetadata());
        const locations = new Set([a.metadata.location, b.metadata.location, c.metadata.location]);
        expect(locations.size).toBe(3);
      });

      it('lists the tables of a namespace, sorted, and only those', async () => {
        const deeper = nested ? ['ns', 'deeper'] : ['deeper'];
        await catalog.createNamespace(['other']);
        await catalog.createNamespace(deeper);
        for (const n of ['zeta', 'alpha', 'mid']) await catalog.createTable(id(['ns'], n), sampleMetadata());
        await catalog.createTable(id(['other'], 'x'), sampleMetadata());
        await catalog.createTable(id(deeper, 'y'), sampleMetadata());
        expect(await catalog.listTables(['ns'])).toEqual([id(['ns'], 'alpha'), id(['ns'], 'mid'), id(['ns'], 'zeta')]);
        expect(await catalog.listTables(deeper)).toEqual([id(deeper, 'y')]);
      });

      it('knows which tables exist', async () => {
        expect(await catalog.tableExists(id(['ns'], 't'))).toBe(false);
        await catalog.createTable(id(['ns'], 't'), sampleMetadata());
        expect(await catalog.tableExists(id(['ns'], 't'))).toBe(true);
        expect(await catalog.tableExists(id(['ns'], 'T'))).toBe(false);
        expect(await catalog.tableExists(id(['nope'], 't'))).toBe(false);
      });

      it('refuses to create a table twice, keeping the first', async () => {
        const first = await catalog.createTable(id(['ns'], 't'), sampleMetadata());
        const e = await errorOf(catalog.createTable(id(['ns'], 't'), sampleMetadata()));
        expect(e.kind).toBe('already-exists');
        expect(e.message).toContain('ns.t');
        expect((await catalog.loadTable(id(['ns'], 't'))).metadata['table-uuid']).toBe(first.metadata['table-uuid']);
      });

      it('refuses to create a table in a missing namespace', async () => {
        const e = await errorOf(catalog.createTable(id(['missing'], 't'), sampleMetadata()));
        expect(e.kind).toBe('not-found');
        expect(e.message).toContain('missing');
      });

      it('names the missing table in not-found errors', async () => {
        for (const call of [
          () => catalog.loadTable(id(['ns'], 'ghost')),
          () => catalog.dropTable(id(['ns'], 'ghost')),
          () => catalog.commitTable(id(['ns'], 'ghost'), { requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }),
        ]) {
          const e = await errorOf(call);
          expect(e.kind).toBe('not-found');
          expect(e.message).toContain('ns.ghost');
        }
      });

      it('rejects table names that could become paths', async () => {
        for (const bad of ['', 'a/b', 'a\\b', '..', '.t', 'x..y', 'nul\u0000']) {
          expect((await errorOf(catalog.createTable(id(['ns'], bad), sampleMetadata()))).kind, JSON.stringify(bad)).toBe('invalid-input');
          expect((await errorOf(catalog.loadTable(id(['ns'], bad)))).kind, JSON.stringify(bad)).toBe('invalid-input');
        }
      });

      it('drops a table', async () => {
        await catalog.createTable(id(['ns'], 't'), sampleMetadata());
        await catalog.dropTable(id(['ns'], 't'));
        expect(await catalog.tableExists(id(['ns'], 't'))).toBe(false);
        expect(await catalog.listTables(['ns'])).toEqual([]);
        expect((await errorOf(catalog.loadTable(id(['ns'], 't')))).kind).toBe('not-found');
        // The name is free again.
        const again = await catalog.createTable(id(['ns'], 't'), sampleMetadata());
        expect((await catalog.loadTable(id(['ns'], 't'))).metadata['table-uuid']).toBe(again.metadata['table-uuid']);
      });

      it('registers an existing metadata file under a new name', async () => {
        const source = await catalog.createTable(id(['ns'], 'source'), sampleMetadata());
        const registered = await catalog.registerTable(id(['ns'], 'copy'), source.metadataLocation);
        expect(registered.metadataLocation).toBe(source.metadataLocation);
        const loaded = await catalog.loadTable(id(['ns'], 'copy'));
        expect(loaded.metadata['table-uuid']).toBe(source.metadata['table-uuid']);
        expect((await errorOf(catalog.registerTable(id(['ns'], 'copy'), source.metadataLocation))).kind).toBe('already-exists');
        expect((await errorOf(catalog.registerTable(id(['nowhere'], 'copy2'), source.metadataLocation))).kind).toBe('not-found');
      });
    });

    describe('commits', () => {
      const t = id(['ns'], 't');
      beforeEach(async () => {
        await catalog.createNamespace(['ns']);
        await catalog.createTable(t, sampleMetadata({ keep: 'me' }));
      });

      it('applies updates and moves the table to a new metadata file', async () => {
        const before = await catalog.loadTable(t);
        const result = await catalog.commitTable(t, {
          requirements: [{ type: 'assert-table-uuid', uuid: before.metadata['table-uuid'] }],
          updates: [{ action: 'set-properties', updates: { owner: 'alice' } }, ...appendUpdates(before.metadata, 42n)],
        });
        expect(result.status).toBe('committed');
        if (result.status !== 'committed') return;
        expect(result.metadataLocation).not.toBe(before.metadataLocation);
        const after = await catalog.loadTable(t);
        expect(after.metadataLocation).toBe(result.metadataLocation);
        expect(after.metadata).toEqual(result.metadata);
        expect(after.metadata.properties).toMatchObject({ owner: 'alice', keep: 'me' });
        expect(after.metadata['current-snapshot-id']).toBe(42n);
        expect(after.metadata['metadata-log'].map((e) => e['metadata-file'])).toEqual([before.metadataLocation]);
        // The previous metadata file stays readable for time travel.
        expect((await catalog.registerTable(id(['ns'], 'old'), before.metadataLocation)).metadata.properties.owner).toBeUndefined();
      });

      it('returns a conflict value for a failed requirement and leaves the table unchanged', async () => {
        const before = await catalog.loadTable(t);
        const result = await catalog.commitTable(t, {
          requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 7n }],
          updates: [{ action: 'set-properties', updates: { owner: 'mallory' } }],
        });
        expect(result.status).toBe('conflict');
        if (result.status === 'conflict') expect(result.reason).toMatch(/assert-ref-snapshot-id/);
        const after = await catalog.loadTable(t);
        expect(after.metadataLocation).toBe(before.metadataLocation);
        expect(after.metadata.properties.owner).toBeUndefined();
      });

      it('commits exactly one of two concurrent commits from the same base', async () => {
        const base = (await catalog.loadTable(t)).metadata;
        const requirements = [{ type: 'assert-ref-snapshot-id' as const, ref: 'main', 'snapshot-id': null }];
        const results = await Promise.all([
          catalog.commitTable(t, { requirements, updates: appendUpdates(base, 1001n) }),
          catalog.commitTable(t, { requirements, updates: appendUpdates(base, 1002n) }),
        ]);
        const committed = results.filter((r) => r.status === 'committed');
        expect(committed).toHaveLength(1);
        expect(results.filter((r) => r.status === 'conflict')).toHaveLength(1);
        const winner = results.findIndex((r) => r.status === 'committed');
        const after = await catalog.loadTable(t);
        expect(after.metadata['current-snapshot-id']).toBe(winner === 0 ? 1001n : 1002n);
        expect(after.metadata.snapshots).toHaveLength(1);
      });

      it('commits a chain of changes, each on top of the last', async () => {
        let current = (await catalog.loadTable(t)).metadata;
        const locations = [(await catalog.loadTable(t)).metadataLocation];
        for (const snap of [1n, 2n, 3n]) {
          const r = await catalog.commitTable(t, {
            requirements: [{ type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': current['current-snapshot-id'] ?? null }],
            updates: appendUpdates(current, snap),
          });
          expect(r.status).toBe('committed');
          if (r.status !== 'committed') return;
          current = r.metadata;
          locations.push(r.metadataLocation);
        }
        expect(new Set(locations).size).toBe(4);
        const after = await catalog.loadTable(t);
        expect(after.metadata.snapshots.map((s) => s['snapshot-id'])).toEqual([1n, 2n, 3n]);
        expect(after.metadata.snapshots[2]!['parent-snapshot-id']).toBe(2n);
        expect(after.metadata['metadata-log'].map((e) => e['metadata-file'])).toEqual(locations.slice(0, 3));
      });
    });
  });
}
