import { DuckDBInstance } from '@duckdb/node-api';
import { expect } from 'vitest';
import type { Catalog, TableIdentifier } from '../src/catalog/catalog.ts';
import { localPath } from '../src/core/uri.ts';
import type { Table } from '../src/index.ts';
import type { LiveFiles } from '../src/table/read/live-files.ts';

/** `ns.table` as a catalog identifier. */
export function identOf(name: string): TableIdentifier {
  const [ns, table] = name.split('.');
  return { namespace: [ns!], name: table! };
}

/** The `id` column of rows, as numbers, sorted. */
export const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

/** The ids DuckDB reads from exactly the listed live files (for tables without row deletes). */
export async function duckdbIds(files: LiveFiles): Promise<number[]> {
  if (files.files.length === 0) return [];
  expect(files.files.every((f) => f.deletes.length === 0)).toBe(true);
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    const list = files.files.map((f) => `'${localPath(f.path)}'`).join(', ');
    const reader = await conn.runAndReadAll(`SELECT id FROM read_parquet([${list}]) ORDER BY id`);
    return reader.getRowObjects().map((r) => Number(r.id));
  } finally {
    conn.closeSync();
  }
}

/** Both formats expose the same rows and live files, by our readers and by DuckDB over the files. */
export async function expectBothEqual(t: Table, expected: number[]): Promise<void> {
  expect(ids(await t.read())).toEqual(expected);
  expect(ids(await t.read({ format: 'delta' }))).toEqual(expected);
  const iceberg = await t.files();
  const delta = await t.files({ format: 'delta' });
  expect(delta.files.map((f) => f.path).sort()).toEqual(iceberg.files.map((f) => f.path).sort());
  expect(await duckdbIds(iceberg)).toEqual(expected);
  expect(await duckdbIds(delta)).toEqual(expected);
}

/** `inner`, counting commits, with `rival` run before each of the first `times` of them (a real concurrent commit ahead of ours). */
export function contended(inner: Catalog, rival: (n: number) => Promise<void>, times: number): Catalog & { commits: number } {
  let n = 0;
  const counter = { commits: 0 };
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'commits') return counter.commits;
      if (prop === 'commitTable') {
        return async (...args: Parameters<Catalog['commitTable']>) => {
          counter.commits++;
          if (n < times) await rival(n++);
          return target.commitTable(...args);
        };
      }
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Catalog & { commits: number };
}
