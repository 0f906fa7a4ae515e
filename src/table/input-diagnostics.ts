import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { invalidInput, type TwinlakeError } from '../core/errors.ts';
import { parseJson } from '../core/json.ts';
import type { PreparedInput } from './input.ts';

/**
 * When the engine refuses an input, these passes find the first bad record and say where it is
 * (line, column, what was expected and found). They run only after a failure, so the fast path
 * pays nothing for them.
 */
export async function diagnoseInput(input: PreparedInput): Promise<TwinlakeError | undefined> {
  switch (input.format) {
    case 'ndjson':
      return diagnoseNdjson(input);
    case 'json':
      return diagnoseJson(input);
    case 'csv':
      return diagnoseCsv(input);
    default:
      return undefined;
  }
}

/** True when a text input holds nothing but whitespace (a Parquet file is never "empty" here). */
export async function isBlank(input: PreparedInput): Promise<boolean> {
  if (input.format === 'parquet') return false;
  const info = await stat(input.path);
  if (info.size === 0) return true;
  if (info.size > 4096) return false;
  return (await readFile(input.path, 'utf8')).trim() === '';
}

async function diagnoseNdjson(input: PreparedInput): Promise<TwinlakeError | undefined> {
  const lines = createInterface({ input: createReadStream(input.path, 'utf8'), crlfDelay: Infinity });
  let n = 0;
  for await (const line of lines) {
    n++;
    if (line.trim() === '') continue;
    try {
      const value = parseJson(line, 'json');
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        lines.close();
        return invalidInput(`input ${input.displayName}: line ${n}: expected a JSON object, found ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`);
      }
    } catch (e) {
      lines.close();
      const detail = (e as Error).message.replace(/^json: /, '').replace(/ at line 1, column (\d+)$/, ' at column $1');
      return invalidInput(`input ${input.displayName}: line ${n}: malformed JSON (${detail})`);
    }
  }
  return undefined;
}

const MAX_JSON_DIAGNOSE_BYTES = 256 * 1024 * 1024;

async function diagnoseJson(input: PreparedInput): Promise<TwinlakeError | undefined> {
  if ((await stat(input.path)).size > MAX_JSON_DIAGNOSE_BYTES) return undefined;
  const text = await readFile(input.path, 'utf8');
  try {
    const value = parseJson(text, 'json');
    const records = Array.isArray(value) ? value : [value];
    const bad = records.findIndex((r) => r === null || typeof r !== 'object' || Array.isArray(r));
    if (bad >= 0) return invalidInput(`input ${input.displayName}: element ${bad + 1}: expected a JSON object`);
    return undefined;
  } catch {
    // Not one JSON document: perhaps JSON lines in a .json file.
    return diagnoseNdjson(input);
  }
}

/**
 * RFC 4180 fields per record (quotes may span lines); the first record whose field count differs
 * from the header's is the error.
 */
async function diagnoseCsv(input: PreparedInput): Promise<TwinlakeError | undefined> {
  const lines = createInterface({ input: createReadStream(input.path, 'utf8'), crlfDelay: Infinity });
  let lineNo = 0;
  let expected: number | undefined;
  let header = '';
  let fields = 1;
  let inQuotes = false;
  let recordStart = 1;
  for await (const line of lines) {
    lineNo++;
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
      lines.close();
      return invalidInput(
        `input ${input.displayName}: line ${recordStart}: expected ${expected} columns (${header.slice(0, 80)}), found ${fields}`,
      );
    }
  }
  if (inQuotes) return invalidInput(`input ${input.displayName}: line ${recordStart}: a quoted field is never closed`);
  return undefined;
}
