import { createReadStream, existsSync } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { parseJson } from '../core/json.ts';
import { localPathIfFile } from '../core/uri.ts';

/**
 * Reading a text input line by line, as DuckDB numbers its lines, for the passes that say where a
 * bad record is. One scanner and one bad-line finder serve the engine's and the table's messages.
 */

/** A line's text is kept up to this size: anything longer is past every line limit anyway. */
export const MAX_TEXT_BYTES = 512 * 1024 * 1024 - 1024;

/**
 * A file that can be read line by line here: one file (not a glob), plain text or gzip (Node 20
 * has no zstd; DuckDB's own messages serve those).
 */
export function linesReadable(path: string): boolean {
  if (/\.(zst|zstd)$/i.test(path)) return false;
  return !/[*?[]/.test(path) || existsSync(localPathIfFile(path));
}

export interface ScannedLine {
  /** 1-based. */
  n: number;
  /** Length in bytes, without the line break. */
  bytes: number;
  /** The text (without a trailing `\r`), when the line is at most `maxTextBytes` long. */
  text?: string;
}

/**
 * The lines of a file (split at `\n`, as DuckDB counts them); a line's text only when it is at
 * most `maxTextBytes` long, so a line too long for a string is still counted.
 */
export async function* scanLines(path: string, maxTextBytes = MAX_TEXT_BYTES): AsyncIterable<ScannedLine> {
  const raw = createReadStream(localPathIfFile(path));
  const stream = /\.gz$/i.test(path) ? raw.pipe(createGunzip()) : raw;
  let n = 0;
  let parts: Buffer[] = [];
  let bytes = 0;
  const line = (): ScannedLine => {
    let text: string | undefined;
    if (bytes <= maxTextBytes) {
      text = Buffer.concat(parts).toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
    }
    const out = { n: ++n, bytes, ...(text === undefined ? {} : { text }) };
    parts = [];
    bytes = 0;
    return out;
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
        bytes += nl - start;
        if (bytes <= maxTextBytes) parts.push(chunk.subarray(start, nl));
        yield line();
        start = nl + 1;
      }
      bytes += chunk.length - start;
      if (bytes <= maxTextBytes && start < chunk.length) parts.push(chunk.subarray(start));
    }
    if (bytes > 0 || parts.length > 0) yield line();
  } finally {
    raw.destroy();
  }
}

/**
 * The first line of an NDJSON file that is not one JSON object: its number and what is wrong,
 * worded to follow "line N" (`: malformed JSON (…)`, `: expected a JSON object, found 5`, or
 * ` is 600 MB, too long to check`).
 */
export async function firstBadJsonLine(path: string): Promise<{ line: number; problem: string } | undefined> {
  for await (const { n, text, bytes } of scanLines(path)) {
    if (text === undefined) return { line: n, problem: ` is ${megabytes(bytes)}, too long to check` };
    if (text.trim() === '') continue;
    try {
      const value = parseJson(text, 'json');
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        return { line: n, problem: `: expected a JSON object, found ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}` };
      }
    } catch (e) {
      const detail = (e as Error).message.replace(/^json: /, '').replace(/ at line 1, column (\d+)$/, ' at column $1');
      return { line: n, problem: `: malformed JSON (${detail})` };
    }
  }
  return undefined;
}

const MiB = 1024 * 1024;

/** Bytes as messages say them: `600 MB`, `1.5 MB` (MB meaning MiB, as DuckDB's limits do). */
export function megabytes(bytes: number): string {
  const v = bytes / MiB;
  return `${v >= 10 ? Math.round(v) : v.toFixed(1)} MB`;
}
