import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join, relative, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { invalidInput, notFound } from '../../core/errors.ts';
import { stringifyJson } from '../../core/json.ts';

import type { InputFile, InputFormat, InputLabel } from '../../engine/infer-schema.ts';
import { trackStaging } from './interrupt.ts';

export type { InputFormat };

/** One record: column name → value (JSON-like; Date and bigint are accepted). */
export type Row = Record<string, unknown>;

/**
 * What a write accepts: records (an array, any iterable or async iterable), a file, a folder or a
 * glob (`{ path }`), several of those (`{ paths }`), or a stream of bytes in a file format. All
 * the files of one write go into one commit; they must share one format. `.gz` and `.zst` files
 * are decompressed (`orders.ndjson.gz`, `x.csv.zst`).
 */
export type WriteInput =
  | Iterable<Row>
  | AsyncIterable<Row>
  | { path: string; format?: InputFormat }
  | { paths: readonly string[]; format?: InputFormat }
  | { stream: Readable; format: InputFormat; name?: string };

/** One local file of a prepared input. */
export interface PreparedFile extends InputLabel {
  path: string;
}

/** An input made ready for the engine: local files in one known format. */
export interface PreparedInput {
  files: PreparedFile[];
  format: InputFormat;
  /** How the whole input is named in error messages: `input <path>`, `records`, `standard input`. */
  displayName: string;
  /** The longest line the engine must hold, once a line longer than its default was measured. */
  maxLineBytes?: number;
  /** One CSV file's columns, once inference has read its header (see `InputFile.columns`). */
  columns?: readonly string[];
  dispose(): Promise<void>;
}

/** The input as the engine reads it. */
export function engineInput(input: PreparedInput): InputFile {
  const paths = input.files.map((f) => f.path);
  return {
    path: paths.length === 1 ? paths[0]! : paths,
    format: input.format,
    labels: new Map(input.files.map((f) => [f.path, { label: f.label, unit: f.unit }])),
    ...(input.maxLineBytes === undefined ? {} : { maxLineBytes: input.maxLineBytes }),
    ...(input.columns === undefined ? {} : { columns: input.columns }),
  };
}

const COMPRESSED = /\.(gz|zst)$/i;

/** The format a file name says, looking through a `.gz` / `.zst` ending. */
export function formatFromPath(path: string): InputFormat {
  const format = formatOfName(path);
  if (!format) {
    throw invalidInput(`input: cannot tell the format of ${path} from its extension; give --input-format ndjson|json|csv|parquet`);
  }
  if (format === 'parquet' && COMPRESSED.test(path)) throw invalidInput(`input ${path}: a Parquet file compresses its own pages; give it uncompressed`);
  return format;
}

function formatOfName(path: string): InputFormat | undefined {
  const compressed = COMPRESSED.exec(path);
  switch (extname(compressed ? path.slice(0, compressed.index) : path).toLowerCase()) {
    case '.ndjson':
    case '.jsonl':
      return 'ndjson';
    case '.json':
      return 'json';
    case '.csv':
      return 'csv';
    case '.parquet':
      return 'parquet';
    default:
      return undefined;
  }
}

export function parseInputFormat(raw: string): InputFormat {
  const f = raw.toLowerCase();
  if (f === 'ndjson' || f === 'json' || f === 'csv' || f === 'parquet' || f === 'jsonl') return f === 'jsonl' ? 'ndjson' : f;
  throw invalidInput(`input: format must be ndjson, json, csv or parquet, found ${JSON.stringify(raw)}`);
}

/**
 * Turns any WriteInput into local files. Records and streams are spooled to a temporary file as
 * they arrive (under `tempDir`, the engine's temp folder), so memory stays bounded whatever the
 * input size; files are used in place.
 */
export async function prepareInput(input: WriteInput, tempDir: string = tmpdir()): Promise<PreparedInput> {
  if (isPathsInput(input)) return preparePaths(input.paths, input.format);
  if (isFileInput(input)) return preparePaths([input.path], input.format);
  const dir = await mkdtemp(join(tempDir, 'twinlake-input-'));
  const untrack = trackStaging(dir);
  const dispose = async () => {
    await rm(dir, { recursive: true, force: true });
    untrack();
  };
  try {
    if (isStreamInput(input)) {
      const ext = input.format === 'json' ? 'json' : input.format;
      const path = join(dir, `input.${ext}`);
      const out = createWriteStream(path);
      input.stream.pipe(out);
      await finished(out);
      const label = input.name ?? 'standard input';
      return { files: [{ path, label, unit: 'line' }], format: input.format, displayName: label, dispose };
    }
    const path = join(dir, 'records.ndjson');
    const out = createWriteStream(path);
    let buffer = '';
    let n = 0;
    for await (const row of input as AsyncIterable<Row>) {
      n++;
      if (row === null || typeof row !== 'object' || Array.isArray(row)) {
        throw invalidInput(`records: record ${n}: expected an object, found ${row === null ? 'null' : Array.isArray(row) ? 'an array' : typeof row}`);
      }
      buffer += stringifyJson(row, undefined) + '\n';
      if (buffer.length > 1 << 20) {
        if (!out.write(buffer)) await new Promise<void>((r) => out.once('drain', () => r()));
        buffer = '';
      }
    }
    out.end(buffer);
    await finished(out);
    return { files: [{ path, label: 'records', unit: 'record' }], format: 'ndjson', displayName: 'records', dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

/** Files, folders and globs → the files they name, each once, in the order given (a folder's or glob's sorted). */
async function preparePaths(specs: readonly string[], format: InputFormat | undefined): Promise<PreparedInput> {
  if (specs.length === 0) throw invalidInput('input: no input files given');
  const seen = new Set<string>();
  const files: PreparedFile[] = [];
  for (const spec of specs) {
    for (const path of await expand(spec, format)) {
      const key = resolve(path);
      if (seen.has(key)) continue;
      seen.add(key);
      files.push({ path, label: `input ${path}`, unit: 'line' });
    }
  }
  const formats = files.map((f) => format ?? formatFromPath(f.path));
  const mixed = formats.findIndex((f) => f !== formats[0]);
  if (mixed > 0) {
    throw invalidInput(
      `input: the files of one write must share one format, found ${formats[0]} (${files[0]!.path}) and ${formats[mixed]} (${files[mixed]!.path}); write each format in its own write`,
    );
  }
  const displayName = files.length === 1 ? files[0]!.label : `input ${files.length} files (${files[0]!.path}, …)`;
  return { files, format: formats[0]!, displayName, dispose: async () => {} };
}

const GLOB = /[*?[]/;

async function expand(spec: string, format: InputFormat | undefined): Promise<string[]> {
  // A name that exists is taken as it is, even when it holds glob characters (`data[1].csv`).
  const info = await stat(spec).catch(() => undefined);
  if (!info && GLOB.test(spec)) {
    const matched = (await glob(spec)).filter((p) => format !== undefined || knownFormat(p));
    if (matched.length === 0) throw notFound(`input: no ndjson, json, csv or parquet files match ${spec}`);
    return matched;
  }
  if (!info) throw notFound(`input: no such file ${spec}`);
  if (info.isFile()) return [spec];
  if (!info.isDirectory()) throw notFound(`input: ${spec} is not a file or folder`);
  // A folder: its data files, as Spark and Hive read one (names starting with `.` or `_`, such as
  // `_SUCCESS` or `.crc` files, are not data).
  const found = (await walk(spec, Infinity)).filter((p) => format !== undefined || knownFormat(p));
  if (found.length === 0) throw notFound(`input: folder ${spec} holds no ndjson, json, csv or parquet files`);
  return found;
}

function knownFormat(path: string): boolean {
  return formatOfName(path) !== undefined;
}

function hidden(name: string): boolean {
  return name.startsWith('.') || name.startsWith('_');
}

/** Every file below `dir`, at most `depth` folders down, sorted; hidden names only when asked. */
async function walk(dir: string, depth: number, withHidden = false): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!withHidden && hidden(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (depth > 0) out.push(...(await walk(p, depth - 1, withHidden)));
    } else if (e.isFile() || (e.isSymbolicLink() && (await stat(p).catch(() => undefined))?.isFile())) {
      out.push(p);
    }
  }
  return out;
}

/**
 * The files a shell-style glob matches: `*` and `?` within one path segment, `[abc]` / `[!abc]`
 * classes, `**` any number of folders. Names starting with `.` or `_` are matched only when a
 * pattern segment starts with a dot.
 */
async function glob(pattern: string): Promise<string[]> {
  const segments = pattern.split(/[\\/]+/);
  const firstGlob = segments.findIndex((s) => GLOB.test(s));
  const base = segments.slice(0, firstGlob).join('/') || (pattern.startsWith('/') ? '/' : '.');
  const rest = segments.slice(firstGlob);
  const regex = new RegExp(
    `^${rest.map((s, i) => (s === '**' ? (i === rest.length - 1 ? '.*' : '(?:[^/]+/)*') : segmentRegex(s) + (i === rest.length - 1 ? '' : '/'))).join('')}$`,
  );
  const depth = rest.includes('**') ? Infinity : rest.length - 1;
  const candidates = await walk(base, depth, rest.some((s) => s.startsWith('.')));
  return candidates.filter((p) => regex.test(relative(base, p).split(sep).join('/')));
}

function segmentRegex(segment: string): string {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i]!;
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = segment.indexOf(']', i + 1);
      if (end < 0) out += '\\[';
      else {
        const body = segment.slice(i + 1, end);
        out += `[${body.startsWith('!') ? '^' + body.slice(1) : body}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return out;
}

function isPathsInput(input: WriteInput): input is { paths: readonly string[]; format?: InputFormat } {
  return Array.isArray((input as { paths?: unknown }).paths) && !(Symbol.iterator in (input as object)) && !(Symbol.asyncIterator in (input as object));
}

function isFileInput(input: WriteInput): input is { path: string; format?: InputFormat } {
  return typeof (input as { path?: unknown }).path === 'string' && !(Symbol.iterator in (input as object)) && !(Symbol.asyncIterator in (input as object));
}

function isStreamInput(input: WriteInput): input is { stream: Readable; format: InputFormat; name?: string } {
  return typeof (input as { stream?: unknown }).stream === 'object';
}
