import { existsSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import { localPath } from '../../src/core/uri.ts';
import { loadDeletionVectors } from '../../src/engine/read-scan.ts';
import type { ScanTask } from '../../src/format/scan-task.ts';
import type { Table } from '../../src/index.ts';
import { reachableFiles } from '../../src/maintenance/reachable.ts';

/**
 * Checks of a table's files that share no code with our readers, for the tests that hold a table
 * to a model (the maintenance workload, the crash matrix, the multi-process workload). No test
 * framework here: the multi-process workload also runs from a plain script.
 */

/**
 * DuckDB's rows of a plan's live files, `columns` only, deletes applied in SQL: position delete
 * files read by DuckDB, deletion vectors decoded to positions. Equality deletes are not expected.
 */
export async function duckdbRows(conn: DuckDBConnection, task: ScanTask, columns: readonly string[]): Promise<Record<string, unknown>[]> {
  if (task.files.length === 0) return [];
  const loaded = await loadDeletionVectors(task);
  const q = (p: string) => `'${localPath(p).replaceAll("'", "''")}'`;
  const deleted: string[] = [];
  for (const f of loaded.files) {
    for (const p of f.deletes?.positions ?? []) {
      if (p.kind === 'position-file') deleted.push(`SELECT ${q(f.path)} AS f, pos FROM read_parquet(${q(p.path)}) WHERE file_path = '${p.dataFile.replaceAll("'", "''")}'`);
      else if (p.kind === 'bitmap') deleted.push(`SELECT ${q(f.path)} AS f, unnest([${[...p.bitmap.values()].join(', ')}]::BIGINT[]) AS pos`);
      else throw new Error(`unexpected deletes ${p.kind} of ${f.path}`);
    }
    if ((f.deletes?.equality ?? []).length > 0) throw new Error(`unexpected equality deletes of ${f.path}`);
  }
  const cols = columns.join(', ');
  const scan = `SELECT * FROM read_parquet([${loaded.files.map((f) => q(f.path)).join(', ')}], union_by_name = true, filename = true, file_row_number = true)`;
  const sql = deleted.length
    ? `SELECT ${cols} FROM (${scan}) AS t ANTI JOIN (${deleted.join(' UNION ALL ')}) AS d ON t.filename = d.f AND t.file_row_number = d.pos`
    : `SELECT ${cols} FROM (${scan})`;
  return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
}

/** The files a plan reads (data files and their delete files) that do not exist. */
export function missingFiles(task: ScanTask): string[] {
  const out: string[] = [];
  for (const f of task.files) {
    if (!existsSync(localPath(f.path))) out.push(f.path);
    for (const p of f.deletes?.positions ?? []) if (p.kind !== 'bitmap' && !existsSync(localPath(p.path))) out.push(p.path);
  }
  return out;
}

/** Files below the table that nothing references: not a Delta log file, not named by any retained metadata. */
export async function leftovers(t: Table, location: string): Promise<string[]> {
  const reachable = await reachableFiles(t);
  const out: string[] = [];
  const prefix = location.replace(/\/+$/, '') + '/';
  for await (const o of t.context.io.list(prefix)) {
    const rel = o.uri.slice(prefix.length);
    if (rel.startsWith('_delta_log/') || reachable.files.has(o.uri)) continue;
    out.push(rel);
  }
  return out;
}
