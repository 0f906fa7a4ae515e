import { readFileSync } from 'node:fs';
import { type SchemaTree, parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { localPath } from '../../src/core/uri.ts';
import type { IcebergType, StructType } from '../../src/format/iceberg/types.ts';
import type { ColumnResolution, ScanTask } from '../../src/format/scan-task.ts';

/**
 * A reader of scan tasks that shares no code with the engine: hyparquet decodes each file, and the
 * logical schema is projected through the task's column resolution by hand. Values keep hyparquet's
 * shapes except dates (days) and timestamps (microseconds, bigint), so partition constants and file
 * values compare directly.
 */

export const PARSERS = {
  dateFromDays: (days: number) => days,
  timestampFromMilliseconds: (ms: bigint) => BigInt(ms) * 1000n,
  timestampFromMicroseconds: (us: bigint) => BigInt(us),
  timestampFromNanoseconds: (ns: bigint) => floorDiv(BigInt(ns), 1000n),
};

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

export function arrayBufferOf(path: string): ArrayBuffer {
  const b = readFileSync(path);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

export function parquetRowCount(path: string): number {
  return Number(parquetMetadata(arrayBufferOf(path)).num_rows);
}

export async function readParquetRows(path: string): Promise<{ rows: Record<string, unknown>[]; tree: SchemaTree }> {
  const file = arrayBufferOf(path);
  const tree = parquetSchema(parquetMetadata(file));
  const rows = await parquetReadObjects({ file, compressors, utf8: false, parsers: PARSERS });
  return { rows, tree };
}

export interface FileRows {
  path: string;
  rows: Record<string, unknown>[];
}

/** Every file of the task, each row projected to the task's logical schema (by logical name). */
export async function readTaskRows(task: ScanTask): Promise<FileRows[]> {
  const out: FileRows[] = [];
  for (const f of task.files) {
    const { rows, tree } = await readParquetRows(localPath(f.path));
    const projected = rows.map((r) => {
      const row = projectStruct(task.schema, r, tree, task.resolution, task.physicalNames);
      for (const field of task.schema.fields) {
        if (f.constants?.has(field.id)) row[field.name] = f.constants.get(field.id);
      }
      return row;
    });
    out.push({ path: f.path, rows: projected });
  }
  return out;
}

function findChild(node: SchemaTree, id: number, resolution: ColumnResolution, names: Map<number, string>): SchemaTree | undefined {
  if (resolution === 'field-id') {
    const byId = node.children.find((c) => c.element.field_id === id);
    if (byId || node.children.some((c) => c.element.field_id !== undefined)) return byId;
  }
  const name = names.get(id);
  return node.children.find((c) => c.element.name === name);
}

function projectStruct(
  struct: StructType,
  value: Record<string, unknown> | null | undefined,
  node: SchemaTree,
  resolution: ColumnResolution,
  names: Map<number, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of struct.fields) {
    const child = findChild(node, field.id, resolution, names);
    const raw = child && value ? value[child.element.name] : null;
    out[field.name] = child ? project(field.type, raw, child, resolution, names) : null;
  }
  return out;
}

function project(type: IcebergType, value: unknown, node: SchemaTree, resolution: ColumnResolution, names: Map<number, string>): unknown {
  if (value === null || value === undefined) return null;
  if (typeof type === 'string') return value;
  switch (type.type) {
    case 'struct':
      return projectStruct(type, value as Record<string, unknown>, node, resolution, names);
    case 'list': {
      const element = listElement(node);
      return (value as unknown[]).map((x) => project(type.element, x, element, resolution, names));
    }
    case 'map': {
      const kv = node.children[0]!;
      const valueNode = kv.children[1]!;
      const entries = value instanceof Map ? [...value.entries()] : Object.entries(value as Record<string, unknown>);
      return new Map(entries.map(([k, v]) => [k, project(type.value, v, valueNode, resolution, names)]));
    }
  }
}

/** The element node of a 3-level (group → repeated group → element) or 2-level list. */
function listElement(node: SchemaTree): SchemaTree {
  const repeated = node.children[0]!;
  return repeated.children.length === 1 && repeated.element.repetition_type === 'REPEATED' ? repeated.children[0]! : repeated;
}

/** A canonical text form of a value of `type`, identical for equal values whatever their JS shape. */
export function canon(type: IcebergType, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof type !== 'string') {
    switch (type.type) {
      case 'struct': {
        const o = v as Record<string, unknown>;
        return type.fields.map((f) => canon(f.type, o[f.name]));
      }
      case 'list':
        return (v as unknown[]).map((x) => canon(type.element, x));
      case 'map': {
        const entries = v instanceof Map ? [...v.entries()] : Object.entries(v as Record<string, unknown>);
        return entries.map(([k, x]) => [String(k), canon(type.value, x)]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
      }
    }
  }
  if (v instanceof Uint8Array) return 'hex:' + Buffer.from(v).toString('hex');
  if (type === 'float') return String(Math.fround(Number(v)));
  if (type === 'double' || type.startsWith('decimal')) return String(Number(v));
  if (type === 'binary' && typeof v === 'string') return 'hex:' + Buffer.from(v, 'utf8').toString('hex');
  return String(v);
}

export function canonRow(schema: StructType, row: Record<string, unknown>): string {
  return JSON.stringify(canon(schema, row));
}
