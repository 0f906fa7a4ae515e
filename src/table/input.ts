import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { extname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { invalidInput, notFound } from '../core/errors.ts';
import { stringifyJson } from '../core/json.ts';

import type { InputFormat } from '../engine/infer-schema.ts';

export type { InputFormat };

/** One record: column name → value (JSON-like; Date and bigint are accepted). */
export type Row = Record<string, unknown>;

/**
 * What a write accepts: records (an array, any iterable or async iterable), a file, or a stream of
 * bytes in a file format.
 */
export type WriteInput =
  | Iterable<Row>
  | AsyncIterable<Row>
  | { path: string; format?: InputFormat }
  | { stream: Readable; format: InputFormat; name?: string };

/** An input made ready for the engine: a local file in a known format. */
export interface PreparedInput {
  path: string;
  format: InputFormat;
  /** How the input is named in error messages. */
  displayName: string;
  dispose(): Promise<void>;
}

export function formatFromPath(path: string): InputFormat {
  switch (extname(path).toLowerCase()) {
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
      throw invalidInput(`input: cannot tell the format of ${path} from its extension; give --input-format ndjson|json|csv|parquet`);
  }
}

export function parseInputFormat(raw: string): InputFormat {
  const f = raw.toLowerCase();
  if (f === 'ndjson' || f === 'json' || f === 'csv' || f === 'parquet' || f === 'jsonl') return f === 'jsonl' ? 'ndjson' : f;
  throw invalidInput(`input: format must be ndjson, json, csv or parquet, found ${JSON.stringify(raw)}`);
}

/**
 * Turns any WriteInput into a local file. Records and streams are spooled to a temporary file as
 * they arrive, so memory stays bounded whatever the input size; files are used in place.
 */
export async function prepareInput(input: WriteInput): Promise<PreparedInput> {
  if (isFileInput(input)) {
    const info = await stat(input.path).catch(() => undefined);
    if (!info || !info.isFile()) throw notFound(`input: no such file ${input.path}`);
    return { path: input.path, format: input.format ?? formatFromPath(input.path), displayName: input.path, dispose: async () => {} };
  }
  const dir = await mkdtemp(join(tmpdir(), 'twinlake-input-'));
  const dispose = () => rm(dir, { recursive: true, force: true });
  try {
    if (isStreamInput(input)) {
      const ext = input.format === 'json' ? 'json' : input.format;
      const path = join(dir, `input.${ext}`);
      const out = createWriteStream(path);
      input.stream.pipe(out);
      await finished(out);
      return { path, format: input.format, displayName: input.name ?? 'standard input', dispose };
    }
    const path = join(dir, 'records.ndjson');
    const out = createWriteStream(path);
    let buffer = '';
    for await (const row of input as AsyncIterable<Row>) {
      if (row === null || typeof row !== 'object' || Array.isArray(row)) {
        throw invalidInput(`input: every record must be an object, found ${Array.isArray(row) ? 'an array' : typeof row}`);
      }
      buffer += stringifyJson(row, undefined) + '\n';
      if (buffer.length > 1 << 20) {
        if (!out.write(buffer)) await new Promise<void>((r) => out.once('drain', () => r()));
        buffer = '';
      }
    }
    out.end(buffer);
    await finished(out);
    return { path, format: 'ndjson', displayName: 'records', dispose };
  } catch (e) {
    await dispose();
    throw e;
  }
}

function isFileInput(input: WriteInput): input is { path: string; format?: InputFormat } {
  return typeof (input as { path?: unknown }).path === 'string' && !(Symbol.iterator in (input as object)) && !(Symbol.asyncIterator in (input as object));
}

function isStreamInput(input: WriteInput): input is { stream: Readable; format: InputFormat; name?: string } {
  return typeof (input as { stream?: unknown }).stream === 'object';
}
