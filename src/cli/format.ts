import { stringifyJson } from '../core/json.ts';
import type { IcebergType, NestedField } from '../spec/iceberg/types.ts';
import { localPathIfFile } from '../core/uri.ts';
import type { AlterResult } from '../table/alter.ts';
import type { TableSummary } from '../table/lakehouse.ts';
import type { LiveFiles } from '../table/live-files.ts';
import type { MergeResult } from '../table/merge.ts';
import type { HistoryEntry, TableDescription } from '../table/table.ts';
import type { WriteResult } from '../table/writer.ts';
import { Props } from '../table/table-properties.ts';

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v instanceof Uint8Array) return '0x' + Buffer.from(v).toString('hex');
  return stringifyJson(v);
}

/** Rows as an aligned text table; wide cells are cut so a row fits on a line. */
export function formatTable(rows: Record<string, unknown>[]): string {
  if (rows.length === 0) return '(no rows)';
  const cols = Object.keys(rows[0]!);
  const cells = rows.map((r) => cols.map((c) => clip(cell(r[c]))));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cols), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line), `(${rows.length} row${rows.length === 1 ? '' : 's'})`].join('\n');
}

function clip(s: string): string {
  return s.length > 48 ? s.slice(0, 45) + '...' : s;
}

export function printHistory(history: HistoryEntry[]): string {
  if (history.length === 0) return '(no snapshots)';
  return formatTable(
    history.map((h) => ({
      snapshot: h.snapshotId ?? '',
      time: h.timestamp,
      operation: h.change ? `${h.operation} (${h.change})` : h.operation,
      'delta version': h.deltaVersion ?? '',
      'added files': h.addedFiles,
      'added rows': h.addedRecords,
      'total rows': h.totalRecords,
    })),
  ).replace(/\n\(\d+ rows?\)$/, '');
}

function typeText(t: IcebergType): string {
  if (typeof t === 'string') return t;
  if (t.type === 'struct') return `struct<${t.fields.map((f) => `${f.name}: ${typeText(f.type)}`).join(', ')}>`;
  if (t.type === 'list') return `list<${typeText(t.element)}>`;
  return `map<${typeText(t.key)}, ${typeText(t.value)}>`;
}

function schemaLines(fields: NestedField[], indent: string): string[] {
  const lines: string[] = [];
  for (const f of fields) {
    const t = f.type;
    const nested = typeof t !== 'string' && t.type === 'struct';
    lines.push(`${indent}${String(f.id).padStart(3)}  ${f.name}: ${nested ? 'struct' : typeText(t)}${f.required ? ' (required)' : ''}`);
    if (nested) lines.push(...schemaLines((t as { fields: NestedField[] }).fields, indent + '     '));
  }
  return lines;
}

export function printDescription(d: TableDescription): string {
  const props = Object.entries(d.properties)
    .filter(([k]) => !k.startsWith(Props.physicalNames) && k !== Props.nameMapping)
    .map(([k, v]) => `  ${k} = ${v}`);
  return [
    `table         ${d.name}`,
    `location      ${d.location}`,
    `formats       ${d.formats.join(', ')}${d.formatVersion !== undefined ? ` (iceberg format v${d.formatVersion})` : ''}`,
    `partitioned   ${d.partitionSpec || '(no)'}`,
    `snapshot      ${d.currentSnapshotId ?? '(none)'}`,
    `delta version ${d.deltaVersion ?? '(none)'}`,
    `files         ${d.files}`,
    `rows          ${d.deletedRecords > 0 ? `${d.records - d.deletedRecords} (${d.records} stored, ${d.deletedRecords} deleted by row-level deletes)` : d.records}`,
    `bytes         ${d.bytes}`,
    `snapshots     ${d.snapshots}`,
    `schema (field id, name: type)`,
    ...schemaLines(d.schema.fields, '  '),
    `properties`,
    ...props,
  ].join('\n');
}

/** A write's result; only the formats the table keeps are named (a Delta-only write has no snapshot). */
export function printWriteResult(result: WriteResult | MergeResult): string {
  const lines = [`${result.created ? 'created' : 'wrote'} ${result.table} (${result.mode})`];
  if ('inserted' in result) {
    const how = result.strategy === 'merge-on-read' ? `${result.deleteFiles} delete files written` : `${result.rewrittenFiles} files rewritten`;
    lines.push(`  merged            ${result.inserted} inserted, ${result.updated} updated, ${result.deleted} deleted, ${how} (${result.strategy})`);
  }
  if (result.snapshotId !== undefined) lines.push(`  iceberg snapshot  ${result.snapshotId}`);
  if (result.deltaVersion !== undefined) lines.push(`  delta version     ${result.deltaVersion}${result.deltaCommitted ? '' : ' (pending: repaired by the next write)'}`);
  lines.push(`  files             ${result.files}`, `  rows              ${result.rows}`, `  bytes             ${result.bytes}`);
  return lines.join('\n');
}

/** `tables --long`: one row per table. */
export function printTableSummaries(tables: TableSummary[]): string {
  if (tables.length === 0) return '(no tables)';
  return formatTable(
    tables.map((t) => ({
      table: t.name,
      formats: t.formats?.join(',') ?? '',
      rows: t.rows ?? '',
      files: t.files ?? '',
      bytes: t.bytes ?? '',
      ...(tables.some((x) => x.error) ? { error: t.error ?? '' } : {}),
    })),
  ).replace(/\n\(\d+ rows?\)$/, '');
}

/**
 * The live files, one data file per line (local files as paths), each followed by the delete
 * files a reader must apply to it, indented: `grep -v '^ '` leaves the data files alone.
 */
export function printFiles(f: LiveFiles): string {
  const version = [f.snapshotId !== undefined ? `snapshot ${f.snapshotId}` : '', f.deltaVersion !== undefined ? `delta version ${f.deltaVersion}` : ''].filter(Boolean).join(', ');
  const withDeletes = f.files.filter((x) => x.deletes.length > 0).length;
  const lines: string[] = [];
  for (const file of f.files) {
    lines.push(localPathIfFile(file.path));
    for (const d of file.deletes) {
      const where = d.inline ? 'inline in the Delta log' : `${localPathIfFile(d.path!)}${d.offset !== undefined ? ` offset ${d.offset} length ${d.length}` : ''}`;
      lines.push(`  ${d.kind} ${where} (${d.records} row${d.records === 1 ? '' : 's'})`);
    }
  }
  const rows = f.files.reduce((a, x) => a + x.records, 0);
  lines.push(`(${f.files.length} live data file${f.files.length === 1 ? '' : 's'}, ${rows} rows stored, ${withDeletes} with deletes; ${f.format}${version ? ` ${version}` : ''})`);
  return lines.join('\n');
}

export function printAlter(r: AlterResult): string {
  if (r.changed.length === 0) return `${r.table}: nothing to change`;
  const lines = [`altered ${r.table}: ${r.changed.map((k) => (k in r.properties ? `${k}=${r.properties[k]}` : `${k} removed`)).join(', ')}`];
  lines.push(`  formats           ${r.formats.join(', ')}`);
  if (r.snapshotId !== undefined) lines.push(`  iceberg snapshot  ${r.snapshotId}`);
  if (r.deltaVersion !== undefined) lines.push(`  delta version     ${r.deltaVersion}`);
  return lines.join('\n');
}
