import { readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { Lakehouse } from '../../src/index.ts';
import { SqlCatalog } from '../../src/catalog/sql-catalog.ts';
import { DeltaRegistry } from '../../src/catalog/delta-registry.ts';
import { SqliteDriver } from '../../src/catalog/sqlite-driver.ts';
import type { SqlDriver } from '../../src/catalog/sql-driver.ts';
import { FileIO } from '../../src/io/file-io.ts';
import type { ObjectStore } from '../../src/io/object-store.ts';
import { storeForLocation, type StorageOptions } from '../../src/io/store-for-uri.ts';
import { CrashDriver, CrashPoint, CrashStore } from './crash-point.ts';

/** Where a crash-tested warehouse lives: its root URI (local or cloud), its catalog file, how to reach its store. */
export interface CrashWarehouse {
  warehouse: string;
  dbPath: string;
  storage?: StorageOptions;
}

export interface OpenedLake {
  lake: Lakehouse;
  warnings: string[];
  close(): Promise<void>;
}

/**
 * A lakehouse over the warehouse's store and catalog database, every call of both through `point`
 * when given (the process that will crash), else over the raw ones (the process after a restart).
 * `wrapStore` puts more layers over each store (above the crash point): faults, retries.
 */
export async function openLake(w: CrashWarehouse, point?: CrashPoint, opts: { wrapStore?: (store: ObjectStore) => ObjectStore } = {}): Promise<OpenedLake> {
  const raw = SqliteDriver.open(w.dbPath);
  const driver: SqlDriver = point ? new CrashDriver(raw, point) : raw;
  const wrap = (store: ObjectStore): ObjectStore => {
    const crashing = point ? new CrashStore(store, point) : store;
    return opts.wrapStore ? opts.wrapStore(crashing) : crashing;
  };
  const catalog = new SqlCatalog({ name: 'twinlake', driver, warehouse: { store: wrap(storeForLocation(w.warehouse, w.storage).store), rootUri: w.warehouse } });
  const deltaRegistry = new DeltaRegistry(driver, 'twinlake');
  await catalog.opened();
  await deltaRegistry.opened();
  const io = new FileIO((uri) => {
    const { store, key } = storeForLocation(uri, w.storage);
    return { store: wrap(store), key };
  });
  const warnings: string[] = [];
  const lake = await Lakehouse.open({
    warehouse: w.warehouse,
    storage: w.storage,
    catalog,
    deltaRegistry,
    io,
    onWarning: (m) => void warnings.push(m),
    engine: { threads: 1, memoryLimit: '256MB' },
  });
  return {
    lake,
    warnings,
    async close() {
      await lake.close();
      await catalog.close();
      await deltaRegistry.close();
      await raw.close();
    },
  };
}

/** Every object of a warehouse and its catalog file, to put back before each crash point. */
export interface WarehouseImage {
  objects: Map<string, Uint8Array>;
  db: Buffer;
}

export async function saveImage(w: CrashWarehouse): Promise<WarehouseImage> {
  const store = storeForLocation(w.warehouse, w.storage).store;
  const { key } = storeForLocation(w.warehouse, w.storage);
  const objects = new Map<string, Uint8Array>();
  for await (const m of store.list(prefixOf(key))) objects.set(m.path, await store.get(m.path));
  return { objects, db: readFileSync(w.dbPath) };
}

/** Puts a warehouse back as it was saved (every connection to its catalog file closed). */
export async function restoreImage(w: CrashWarehouse, image: WarehouseImage): Promise<void> {
  const { store, key } = storeForLocation(w.warehouse, w.storage);
  const now: string[] = [];
  for await (const m of store.list(prefixOf(key))) now.push(m.path);
  await Promise.all(now.filter((p) => !image.objects.has(p)).map((p) => store.delete(p)));
  await Promise.all([...image.objects].map(([p, body]) => store.put(p, body)));
  for (const suffix of ['-wal', '-shm']) if (existsSync(w.dbPath + suffix)) rmSync(w.dbPath + suffix);
  writeFileSync(w.dbPath, image.db);
}

const prefixOf = (key: string) => (key === '' ? '' : `${key.replace(/\/+$/, '')}/`);
