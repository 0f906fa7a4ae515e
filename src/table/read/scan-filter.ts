import { bind, rewriteNot, type BoundExpr } from '../../format/expressions/bind.ts';
import { dataFileMetrics, decodeFieldSummaries } from '../../format/expressions/decode.ts';
import { deltaStatsMightMatch, manifestMightMatch, partitionMightMatch, rowsMightMatch, toDuckDBSql } from '../../format/expressions/evaluate.ts';
import { parseFilter } from '../../format/expressions/parser.ts';
import { parseStats } from '../../format/delta/stats.ts';
import type { DeltaSnapshot } from '../../format/delta/replay.ts';
import type { DataFile, ManifestFile, PartitionSpec, Schema, StructType } from '../../format/iceberg/types.ts';
import { quoteIdent } from '../../format/parquet/duckdb-types.ts';
import type { ScanExplain, ScanTask } from '../../format/scan-task.ts';

/**
 * Filters and pruning (spec §Scan Planning): a `where` text is parsed and bound to the schema
 * being read; manifests are skipped by their partition summaries, files by their partition tuple
 * (through each transform's inclusive projection) and then by column bounds; rows are filtered in
 * the engine, which also skips Parquet row groups by their statistics.
 */
export interface Filter {
  bound: BoundExpr;
  sql: string;
}

export function bindFilter(where: string | undefined, schema: StructType): Filter | undefined {
  if (where === undefined) return undefined;
  const bound = rewriteNot(bind(parseFilter(where), schema));
  const names = new Map<number, string>(schema.fields.map((f) => [f.id, quoteIdent(f.name)]));
  // Nested fields are addressed through their parents: a.b → "a"."b".
  const pathOf = (id: number): string => names.get(id) ?? nestedPath(schema, id);
  return { bound, sql: toDuckDBSql(bound, pathOf) };
}

function nestedPath(schema: StructType, id: number): string {
  const walk = (fields: StructType['fields'], prefix: string[]): string[] | undefined => {
    for (const f of fields) {
      const here = [...prefix, quoteIdent(f.name)];
      if (f.id === id) return here;
      if (typeof f.type !== 'string' && f.type.type === 'struct') {
        const found = walk(f.type.fields, here);
        if (found) return found;
      }
    }
    return undefined;
  };
  return (walk(schema.fields, []) ?? [`"#${id}"`]).join('.');
}

export function emptyExplain(): ScanExplain {
  return { manifests: 0, manifestsSkipped: 0, files: 0, filesSkipped: 0 };
}

export function manifestMatches(filter: Filter | undefined, manifest: ManifestFile, spec: PartitionSpec, schema: Schema): boolean {
  if (!filter || manifest.content !== 0) return true;
  return manifestMightMatch(filter.bound, spec, decodeFieldSummaries(spec.fields, schema, manifest.partitions));
}

export function dataFileMatches(filter: Filter | undefined, file: DataFile, spec: PartitionSpec, schema: Schema): boolean {
  if (!filter) return true;
  return partitionMightMatch(filter.bound, spec, file.partition) && rowsMightMatch(filter.bound, dataFileMetrics(schema, file));
}

/** Drops the files of a Delta scan whose partition values or stats rule the filter out. */
export function pruneDeltaTask(task: ScanTask, snapshot: DeltaSnapshot, filter: Filter | undefined): ScanTask {
  const explain = { manifests: 0, manifestsSkipped: 0, files: task.files.length, filesSkipped: 0 };
  if (!filter) return { ...task, explain };
  const paths = new Map<number, string[]>();
  const walk = (fields: StructType['fields'], prefix: string[]) => {
    for (const f of fields) {
      const here = [...prefix, task.physicalNames.get(f.id) ?? f.name];
      paths.set(f.id, here);
      if (typeof f.type !== 'string' && f.type.type === 'struct') walk(f.type.fields, here);
    }
  };
  walk(task.schema.fields, []);
  const files = task.files.filter((file, i) => {
    const add = snapshot.files[i]!;
    const stats = add.stats ? parseStats(add.stats, `${add.path} stats`) : undefined;
    return deltaStatsMightMatch(filter.bound, stats, (id) => paths.get(id), file.constants);
  });
  explain.filesSkipped = task.files.length - files.length;
  return { ...task, files, filterSql: filter.sql, explain };
}
