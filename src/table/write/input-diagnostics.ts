import { readFile, stat } from 'node:fs/promises';
import { invalidInput, type TwinlakeError } from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';
import type { DuckDBSession } from '../../engine/duckdb-session.ts';
import { firstBadJsonLine, linesReadable, MAX_TEXT_BYTES, megabytes as mb, scanLines } from '../../engine/text-lines.ts';
import type { PreparedFile, PreparedInput } from './input.ts';

/**
 * When the engine refuses an input, these passes find the first bad record and say where it is
 * (file, line, column, what was expected and found). They run only after a failure, so the fast
 * path pays nothing for them.
 */
export async function diagnoseInput(input: PreparedInput): Promise<TwinlakeError | undefined> {
  for (const file of input.files) {
    const found = await diagnoseFile(input, file);
    if (found) return found;
  }
  return undefined;
}

function diagnoseFile(input: PreparedInput, file: PreparedFile): Promise<TwinlakeError | undefined> {
  if (!linesReadable(file.path)) return Promise.resolve(undefined);
  switch (input.format) {
    case 'ndjson':
      return diagnoseNdjson(file);
    case 'json':
      return diagnoseJson(file);
    case 'csv':
      return diagnoseCsv(file);
    default:
      return Promise.resolve(undefined);
  }
}

/** True when a text input holds nothing but whitespace (a Parquet file is never "empty" here). */
export async function isBlank(input: PreparedInput): Promise<boolean> {
  if (input.format === 'parquet') return false;
  for (const file of input.files) {
    const info = await stat(file.path);
    if (info.size === 0) continue;
    if (info.size > 4096 || /\.(gz|zst)$/i.test(file.path)) return false;
    if ((await readFile(file.path, 'utf8')).trim() !== '') return false;
  }
  return true;
}

async function diagnoseNdjson(file: PreparedFile): Promise<TwinlakeError | undefined> {
  const bad = await firstBadJsonLine(file.path);
  return bad && invalidInput(`${file.label}: ${file.unit === 'record' ? 'record' : 'line'} ${bad.line}${bad.problem}`);
}

const MAX_JSON_DIAGNOSE_BYTES = 256 * 1024 * 1024;

async function diagnoseJson(file: PreparedFile): Promise<TwinlakeError | undefined> {
  if (/\.gz$/i.test(file.path) || (await stat(file.path)).size > MAX_JSON_DIAGNOSE_BYTES) return undefined;
  const text = await readFile(file.path, 'utf8');
  try {
    const value = parseJson(text, 'json');
    const records = Array.isArray(value) ? value : [value];
    const bad = records.findIndex((r) => r === null || typeof r !== 'object' || Array.isArray(r));
    if (bad >= 0) return invalidInput(`${file.label}: element ${bad + 1}: expected a JSON object`);
    return undefined;
  } catch {
    // Not one JSON document: perhaps JSON lines in a .json file.
    return diagnoseNdjson(file);
  }
}

/**
 * RFC 4180 fields per record (quotes may span lines); the first record whose field count differs
 * from the header's is the error.
 */
async function diagnoseCsv(file: PreparedFile): Promise<TwinlakeError | undefined> {
  let expected: number | undefined;
  let header = '';
  let fields = 1;
  let inQuotes = false;
  let recordStart = 1;
  for await (const { n: lineNo, text, bytes } of scanLines(file.path)) {
    if (text === undefined) return invalidInput(`${file.label}: line ${lineNo} is ${mb(bytes)}, too long to check`);
    const line = text;
    if (!inQuotes) {
      fields = 1;
      recordStart = lineNo;
      if (line === '') continue;
    }
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (c === '"') {
        if (inQuotes && line[i + 1] === '"') i++;
        else inQuotes = !inQuotes;
      } else if (c === ',' && !inQuotes) fields++;
    }
    if (inQuotes) continue;
    if (expected === undefined) {
      expected = fields;
      header = line;
    } else if (fields !== expected) {
      return invalidInput(`${file.label}: line ${recordStart}: expected ${expected} columns (${header.slice(0, 80)}), found ${fields}`);
    }
  }
  if (inQuotes) return invalidInput(`${file.label}: line ${recordStart}: a quoted field is never closed`);
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Long lines

/** DuckDB's refusal of a line longer than its reader's buffer (JSON `maximum_object_size`, CSV `max_line_size`). */
export function isLineTooLong(e: unknown): boolean {
  for (let c: unknown = e; c instanceof Error; c = c.cause) {
    if (/"maximum_object_size" of \d+ bytes exceeded|Maximum line size of \d+ bytes exceeded/.test(c.message)) return true;
  }
  return false;
}

/**
 * The longest line a reader may hold: its buffers take about four times the line, and parsing
 * it and encoding its values as much again, so an eighth of the engine's memory limit (128 MB
 * under a 1 GB limit, 256 MB under 2 GB). Never below DuckDB's own default of 16 MB.
 */
export async function lineLimitBytes(session: DuckDBSession): Promise<number> {
  const rows = await session.all("SELECT current_setting('memory_limit') AS v");
  const memory = parseSize(String(rows[0]?.v ?? ''));
  const limit = memory === undefined ? 128 * MiB : Math.floor(memory / 8);
  return Math.min(Math.max(limit, 16 * MiB), MAX_TEXT_BYTES);
}

const MiB = 1024 * 1024;

/** DuckDB size text (`953.6 MiB`, `2.0 GiB`, `1GB`) in bytes. */
function parseSize(text: string): number | undefined {
  const m = /^\s*([\d.]+)\s*([KMGT]?)(i?)B\s*$/i.exec(text);
  if (!m) return undefined;
  const power = ' KMGT'.indexOf(m[2]!.toUpperCase() || ' ');
  return Number(m[1]) * (m[3] ? 1024 : 1000) ** power;
}

/** The longest line of any file of the input. */
export async function longestLine(input: PreparedInput): Promise<{ file: PreparedFile; line: number; bytes: number } | undefined> {
  let best: { file: PreparedFile; line: number; bytes: number } | undefined;
  for (const file of input.files) {
    if (!linesReadable(file.path)) continue;
    for await (const { n, bytes } of scanLines(file.path, 0)) if (!best || bytes > best.bytes) best = { file, line: n, bytes };
  }
  return best;
}

/**
 * Runs an engine read of the input; when a line is longer than the reader's default buffer,
 * measures the longest line and runs it again with buffers that fit it, or refuses a line over
 * the limit (`line N is M MB; the limit is L MB`).
 */
export async function withLongLines<T>(session: DuckDBSession, input: PreparedInput, run: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await run();
    } catch (e) {
      if (!isLineTooLong(e)) throw e;
      const limit = await lineLimitBytes(session);
      const longest = await longestLine(input);
      if (!longest || input.files.some((f) => !linesReadable(f.path))) {
        // A file that cannot be measured here (zstd): allow the limit itself, once.
        if (input.maxLineBytes === undefined || input.maxLineBytes < limit) {
          input.maxLineBytes = limit;
          continue;
        }
        throw invalidInput(`${input.displayName}: a line is longer than ${mb(limit)}, the limit (an eighth of the engine's memory limit; raise the memory limit for longer lines)`, { limit });
      }
      const word = longest.file.unit === 'record' ? 'record' : 'line';
      if (longest.bytes > limit) {
        throw invalidInput(
          `${longest.file.label}: ${word} ${longest.line} is ${mb(longest.bytes)}; the limit is ${mb(limit)} (an eighth of the engine's memory limit; raise the memory limit for longer lines)`,
          { line: longest.line, bytes: longest.bytes, limit },
        );
      }
      const needed = longest.bytes + 1024;
      if (input.maxLineBytes !== undefined && input.maxLineBytes >= needed) throw e;
      input.maxLineBytes = needed;
    }
  }
}
