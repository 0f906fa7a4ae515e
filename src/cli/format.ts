import { stringifyJson } from '../core/json.ts';
import { ENGINE_ENV, formatBytes, type EngineSettings } from '../engine/engine-settings.ts';
import type { IcebergType, NestedField } from '../spec/iceberg/types.ts';
import type { HistoryEntry, TableDescription } from '../table/table.ts';
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
      operation: h.operation,
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

/** `twinlake engine`: each setting, and whether it was set, came from the environment or the machine. */
export function printEngine(s: EngineSettings): string {
  const origin = (key: keyof typeof ENGINE_ENV, fallback: string) =>
    ({ option: 'set by option or config', environment: `from ${ENGINE_ENV[key]}`, default: `default: ${fallback}` })[s.sources[key]];
  return [
    `memory limit  ${formatBytes(s.memoryLimitBytes)}  (${origin('memoryLimit', `half of ${formatBytes(s.machineMemoryBytes)}`)})`,
    `threads       ${s.threads}  (${origin('threads', 'every core')})`,
    `temp folder   ${s.tempDir}  (${origin('tempDir', 'the system temp folder')})`,
  ].join('\n');
}
