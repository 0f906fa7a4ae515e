import { stringifyJson } from '../core/json.ts';
import { ENGINE_ENV, formatBytes, type EngineSettings } from '../engine/engine-settings.ts';
import type { IcebergType, NestedField } from '../format/iceberg/types.ts';
import { localPathIfFile } from '../core/uri.ts';
import type { AlterResult } from '../table/manage/alter.ts';
import type { RegisterResult } from '../table/manage/register.ts';
import type { TableSummary } from '../table/lakehouse.ts';
import type { LiveFiles } from '../table/read/live-files.ts';
import type { MergeResult } from '../table/merge/merge.ts';
import type { HistoryEntry, TableDescription } from '../table/table.ts';
import type { VerifyResult } from '../table/manage/verify.ts';
import type { WriteResult } from '../table/write/writer.ts';
import { Props } from '../format/dual/table-properties.ts';
import type { MaintenanceResult } from '../maintenance/maintain.ts';
import type { DueReport } from '../maintenance/schedule.ts';

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'string') return escapeControls(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (v instanceof Uint8Array) return '0x' + Buffer.from(v).toString('hex');
  return escapeControls(stringifyJson(v));
}

/** Rows stay on one line: newlines, tabs and other control characters are shown escaped. */
function escapeControls(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
const ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/**
 * Terminal columns of one user-perceived character: 2 for East Asian wide and full-width
 * characters and for emoji, 0 for a lone combining or format character, else 1.
 */
function graphemeWidth(g: string): number {
  if (/\p{Emoji_Presentation}|\p{Extended_Pictographic}\uFE0F|\p{Regional_Indicator}/u.test(g)) return 2;
  const cp = g.codePointAt(0)!;
  if (/^[\p{Mn}\p{Me}\p{Cf}]+$/u.test(g)) return 0;
  return isWide(cp) ? 2 : 1;
}

/** The East Asian Wide (W) and Fullwidth (F) blocks of Unicode's EastAsianWidth.txt. */
function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xa960 && cp <= 0xa97f) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe10 && cp <= 0xfe19) ||
    (cp >= 0xfe30 && cp <= 0xfe6f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1b000 && cp <= 0x1b2ff) ||
    (cp >= 0x1f200 && cp <= 0x1f2ff) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/** Terminal columns a text takes. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const { segment } of graphemes.segment(s)) w += graphemeWidth(segment);
  return w;
}

const MAX_CELL = 48;

/** Cuts a cell to MAX_CELL columns, whole characters only. */
function clip(s: string): string {
  if (displayWidth(s) <= MAX_CELL) return s;
  let out = '';
  let w = 0;
  for (const { segment } of graphemes.segment(s)) {
    const g = graphemeWidth(segment);
    if (w + g > MAX_CELL - 3) break;
    out += segment;
    w += g;
  }
  return out + '...';
}

const padEnd = (s: string, width: number) => s + ' '.repeat(Math.max(0, width - displayWidth(s)));

export interface TableFormat {
  /** The read stopped at this default limit and more rows exist: say so. */
  stoppedAt?: number;
}

/** Rows as an aligned text table, one line per row; wide cells are cut so a row fits on a line. */
export function formatTable(rows: Record<string, unknown>[], format: TableFormat = {}): string {
  if (rows.length === 0) return '(no rows)';
  const cols = Object.keys(rows[0]!);
  const head = cols.map((c) => clip(escapeControls(c)));
  const cells = rows.map((r) => cols.map((c) => clip(cell(r[c]))));
  const widths = head.map((h, i) => Math.max(displayWidth(h), ...cells.map((r) => displayWidth(r[i]!))));
  const line = (vals: string[]) => vals.map((v, i) => padEnd(v, widths[i]!)).join('  ').trimEnd();
  const footer =
    format.stoppedAt !== undefined
      ? `(showing the first ${format.stoppedAt} rows; use --limit N to show more)`
      : `(${rows.length} row${rows.length === 1 ? '' : 's'})`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line), footer].join('\n');
}

export function printHistory(history: HistoryEntry[]): string {
  if (history.length === 0) return '(no snapshots)';
  return formatTable(
    history.map((h) => ({
      snapshot: h.snapshotId ?? '',
      time: h.timestamp,
      // What made the snapshot, when it says more than the operation (an overwrite by a merge; not a delete by a delete).
      operation: h.change && h.change !== h.operation ? `${h.operation} (${h.change})` : h.operation,
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
  const txn = result.txn;
  if (txn?.status === 'already-committed') {
    const lines = [
      `skipped ${result.table} (${result.mode}): batch ${txn.appId} version ${txn.version} is already committed (the table holds ${txn.appId} up to version ${txn.latestVersion}); nothing was written`,
    ];
    if (result.snapshotId !== undefined) lines.push(`  iceberg snapshot  ${result.snapshotId}`);
    if (result.deltaVersion !== undefined) lines.push(`  delta version     ${result.deltaVersion}`);
    return lines.join('\n');
  }
  const lines = [`${result.created ? 'created' : 'wrote'} ${result.table} (${result.mode})`];
  if (txn) lines.push(`  batch             ${txn.appId} version ${txn.version}`);
  if ('inserted' in result) {
    const how = result.strategy === 'merge-on-read' ? `${result.deleteFiles} delete files written` : `${result.rewrittenFiles} files rewritten`;
    lines.push(`  merged            ${result.inserted} inserted, ${result.updated} updated, ${result.deleted} deleted, ${how} (${result.strategy})`);
  }
  if (result.snapshotId !== undefined) lines.push(`  iceberg snapshot  ${result.snapshotId}`);
  if (result.deltaVersion !== undefined) lines.push(`  delta version     ${result.deltaVersion}${result.deltaCommitted ? '' : ' (pending: repaired by the next write)'}`);
  lines.push(`  files             ${result.files}`, `  rows              ${result.rows}`, `  bytes             ${result.bytes}`);
  const added = result.schemaChanges.flatMap((c) => (c.change === 'added' ? [`${c.column}: ${c.type}`] : []));
  const widened = result.schemaChanges.flatMap((c) => (c.change === 'widened' ? [`${c.column}: ${c.from} → ${c.to}`] : []));
  if (added.length) lines.push(`  columns added     ${added.join(', ')}`);
  if (widened.length) lines.push(`  types widened     ${widened.join(', ')}`);
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
  // "iceberg snapshot 7, delta version 4", or "delta version 4": each format named once.
  const iceberg = f.format === 'iceberg' ? `iceberg${f.snapshotId !== undefined ? ` snapshot ${f.snapshotId}` : ''}` : '';
  const delta = f.deltaVersion !== undefined ? `delta version ${f.deltaVersion}` : f.format === 'delta' ? 'delta' : '';
  const version = [iceberg, delta].filter(Boolean).join(', ');
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
  lines.push(`(${f.files.length} live data file${f.files.length === 1 ? '' : 's'}, ${rows} rows stored, ${withDeletes} with deletes; ${version})`);
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

export function printRegister(r: RegisterResult): string {
  const lines = [`registered ${r.table}: ${r.registeredMetadata}`];
  lines.push(`  location          ${localPathIfFile(r.location)}`);
  lines.push(`  formats           ${r.formats.join(', ')}`);
  if (r.snapshotId !== undefined) lines.push(`  iceberg snapshot  ${r.snapshotId}`);
  if (r.deltaVersion !== undefined) lines.push(`  delta version     ${r.deltaVersion}`);
  return lines.join('\n');
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

export function printVerify(r: VerifyResult): string {
  const checked = `${r.checked.snapshots} snapshot(s), ${r.checked.deltaVersions} delta version(s)`;
  if (r.findings.length === 0) return `${r.table}: no drift (checked ${checked})`;
  const repaired = r.findings.filter((f) => f.repaired !== undefined).length;
  const lines = [`${r.table}: ${r.findings.length} finding(s)${repaired ? `, ${repaired} repaired` : ''}, ${r.remaining.length} left (checked ${checked})`];
  for (const f of r.findings) {
    const where = [f.file, f.version !== undefined ? `version ${f.version}` : undefined, f.snapshotId !== undefined ? `snapshot ${f.snapshotId}` : undefined].filter(Boolean).join(', ');
    lines.push(`  ${f.kind}  ${where}`, `    expected ${f.expected}`, `    found    ${f.found}`);
    if (f.repaired) lines.push(`    repaired ${f.repaired}`);
    if (f.unrepairable) lines.push(`    cannot repair: ${f.unrepairable}`);
  }
  return lines.join('\n');
}

/** What a maintenance run did (or, with --dry-run, would do), one line per fact. */
export function printMaintenance(table: string, r: MaintenanceResult): string {
  const lines: string[] = [];
  if (r.operation === 'full_maintenance') {
    lines.push(`${table}: full_maintenance${r.dryRun ? ' (dry run)' : ''}`);
    for (const s of r.steps) {
      if (s.status === 'completed') lines.push(...printMaintenance(table, s.result).split('\n').map((l) => `  ${l}`));
      else lines.push(`  ${s.operation}: ${s.status} (${s.reason})`);
    }
  } else if (r.operation === 'orphan_cleanup' || r.operation === 'metadata_cleanup') {
    lines.push(`${table}: ${r.operation}${r.dryRun ? ' (dry run)' : ''}: ${r.dryRun ? 'would remove' : 'removed'} ${r.removed.files} file(s), ${formatBytes(r.removed.bytes)}`);
    for (const [kind, n] of Object.entries(r.byKind)) lines.push(`  ${kind}: ${n!.files} file(s), ${formatBytes(n!.bytes)}`);
    for (const f of r.files) lines.push(`  ${f.path}  ${f.reason}`);
    if (r.operation === 'orphan_cleanup' && r.keptRecent > 0) lines.push(`  kept ${r.keptRecent} unreferenced file(s) younger than ${Math.round(r.olderThan / 3600e3)} h (a write may still be using them)`);
  } else if (r.operation === 'compaction') {
    lines.push(`${table}: compaction${r.dryRun ? ' (dry run)' : ''}: ${r.filesBefore} → ${r.filesAfter} data files (target ${formatBytes(r.targetFileSize)}); ${r.groupsRewritten} of ${r.groups} group(s) rewritten${r.groupsSkipped ? `, ${r.groupsSkipped} skipped (a concurrent delete or merge changed their files)` : ''}`);
    lines.push(`  rewrote ${r.filesRewritten} file(s), ${formatBytes(r.bytesRewritten)} → ${r.filesAdded} file(s), ${formatBytes(r.bytesAdded)}; ${r.rows} rows`);
    if (r.deleteFilesRemoved || r.deletedRowsRemoved) lines.push(`  folded in ${r.deletedRowsRemoved} deleted row(s), removed ${r.deleteFilesRemoved} delete file(s)`);
    if (r.snapshotId !== undefined) lines.push(`  iceberg snapshot ${r.snapshotId} (replace)${r.deltaVersion !== undefined ? `, delta version ${r.deltaVersion} (OPTIMIZE, dataChange false)` : ''}`);
    if (r.pruning) lines.push(`  ${r.pruning.filter}: files scanned ${r.pruning.before.scanned}/${r.pruning.before.files} before, ${r.pruning.after.scanned}/${r.pruning.after.files} after`);
  } else if (r.operation === 'delta_checkpoint') {
    lines.push(`${table}: delta_checkpoint ${r.dryRun ? 'would write' : 'wrote'} ${r.checkpoint} (delta version ${r.deltaVersion}${r.existed ? ', which was there already' : ''})`);
  } else {
    const days = (ms: number) => (ms % 86400e3 === 0 ? `${ms / 86400e3}d` : `${ms} ms`);
    lines.push(`${table}: snapshot_expiry${r.dryRun ? ' (dry run)' : ''}: retention ${days(r.retentionMs)} (${r.retentionSource}), at least ${r.minSnapshotsToKeep} snapshot(s) kept, cutoff ${new Date(r.cutoffMs).toISOString()}`);
    lines.push(`  ${r.dryRun ? 'would expire' : 'expired'} ${r.expiredSnapshots.length} snapshot(s)${r.expiredSnapshots.length ? `: ${r.expiredSnapshots.join(', ')}` : ''}`);
    for (const k of r.kept) lines.push(`  kept ${k.snapshotId}  ${new Date(k.timestampMs).toISOString()}  ${k.reason}`);
    if (r.delta) {
      const cp = r.delta.checkpoint;
      if (cp) lines.push(`  delta: ${cp.written ? 'wrote' : r.dryRun ? 'needs' : 'kept'} checkpoint ${cp.file}`);
      lines.push(`  delta: ${r.dryRun ? 'would remove' : 'removed'} ${r.delta.removedLogFiles.length} log file(s) before version ${r.delta.keptFromVersion ?? '(none)'}, ${formatBytes(r.bytesFreed)}`);
    }
    lines.push(`  ${r.note}`);
  }
  return lines.join('\n');
}

/** `twinlake maintain --all --due`: per table, what ran (or would run) and how it went. */
export function printDueReport(report: DueReport[], dryRun: boolean): string[] {
  const lines: string[] = [];
  for (const t of report) {
    if (t.error) {
      lines.push(`${t.table}: failed: ${t.error.message}`);
      continue;
    }
    if (t.source === 'none') {
      lines.push(`${t.table}: no schedule`);
      continue;
    }
    if (!t.due?.length) {
      const next = (t.next ?? []).filter((n) => n.dueAt !== null).map((n) => `${n.operation} at ${n.dueAt}`);
      lines.push(`${t.table}: nothing due${next.length ? ` (next: ${next.join(', ')})` : ''}`);
      continue;
    }
    if (dryRun) {
      lines.push(`${t.table}: would run ${t.due.join(', ')} (schedule from ${t.source})`);
      continue;
    }
    lines.push(`${t.table}: ran ${t.runs.map((r) => r.operation).join(', ')} (schedule from ${t.source})`);
    for (const r of t.runs) {
      if (r.outcome === 'failed') {
        lines.push(`  ${r.operation}: failed: ${r.error?.message}`);
        continue;
      }
      const run = r.run!;
      const did = [
        run.rewritten.files ? `rewrote ${run.rewritten.files} file(s), ${formatBytes(run.rewritten.bytes)} → ${run.added.files} file(s)` : '',
        run.expiredSnapshots.length ? `expired ${run.expiredSnapshots.length} snapshot(s)` : '',
        run.removed.files ? `removed ${run.removed.files} file(s)` : '',
        run.bytesFreed ? `freed ${formatBytes(run.bytesFreed)}` : '',
        run.snapshotId !== undefined ? `committed snapshot ${run.snapshotId}` : '',
        run.deltaVersion !== undefined ? `delta version ${run.deltaVersion}` : '',
      ].filter(Boolean);
      lines.push(`  ${r.operation}: completed in ${run.durationMs} ms${did.length ? `; ${did.join(', ')}` : '; nothing to do'}`);
    }
    const skipped = t.due.filter((op) => !t.runs.some((r) => r.operation === op));
    if (skipped.length) lines.push(`  not run after the failure: ${skipped.join(', ')}`);
  }
  return lines;
}
