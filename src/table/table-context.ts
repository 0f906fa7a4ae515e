import type { Clock } from '../core/clock.ts';
import type { Catalog, TableIdentifier } from '../catalog/catalog.ts';
import type { DeltaRegistry } from '../catalog/delta-registry.ts';
import type { DuckDBSession } from '../engine/duckdb-session.ts';
import type { FileIO } from '../io/file-io.ts';
import type { CacheLease, ReadCache } from './read/read-cache.ts';

/** What every table operation needs: where the table lives and the parts it works through. */
export interface TableContext {
  catalog: Catalog;
  io: FileIO;
  ident: TableIdentifier;
  /** The table's location URI (used when the table does not exist yet). */
  location: string;
  session: () => Promise<DuckDBSession>;
  clock: Clock;
  /** Non-fatal problems (a Delta commit that failed after Iceberg committed) go here. */
  warn: (message: string) => void;
  /** Where Delta-only tables are registered (absent: such tables cannot be created by name). */
  deltaRegistry?: DeltaRegistry;
  /** Where the engine's copies of remote files go (absent: a cache for the process; see readCacheOf). */
  readCache?: ReadCache;
  /** The table files one operation (a merge, a delete) has fetched for the engine; see engineFile. */
  engineFiles?: CacheLease;
}

/** The warnings of one operation: each goes to the context's sink and into the result. */
export interface WarningLog {
  warnings: string[];
  warn: (message: string) => void;
}

export function warningLog(ctx: Pick<TableContext, 'warn'>): WarningLog {
  const warnings: string[] = [];
  return { warnings, warn: (m) => (warnings.push(m), ctx.warn(m)) };
}

export function identString(ident: TableIdentifier): string {
  return [...ident.namespace, ident.name].join('.');
}
