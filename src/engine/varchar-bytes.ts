import { createRequire } from 'node:module';
import type bindingsModule from '@duckdb/node-bindings';
import type { DuckDBDataChunk } from '@duckdb/node-api';
import { internal } from '../core/errors.ts';

// The low-level bindings that @duckdb/node-api itself runs on, loaded from where node-api finds
// them: a chunk belongs to that copy, so no other copy may read it.
const bindings = createRequire(import.meta.resolve('@duckdb/node-api'))('@duckdb/node-bindings') as typeof bindingsModule;

/** A `duckdb_string_t` (duckdb.h): 4 bytes of length, then the text itself when it fits in 12 bytes, else a 4-byte prefix and an 8-byte pointer. */
const STRING_T = 16;
const INLINE_MAX = 12;
const TWO_32 = 2 ** 32;

/**
 * The bytes of a VARCHAR column of one chunk, every row's text one after the other, with no
 * separator (the query puts a newline at the end of each row's text when it wants lines).
 *
 * Why not the column's values: node-api copies each long string out of the engine by a call of
 * its own and decodes it to a JavaScript string (about a microsecond a row, most of a million-row
 * export). The engine writes a chunk's strings one after another into its string heap, so the
 * texts of consecutive rows mostly form runs of adjacent memory; each run is copied by one call.
 * A run only ever joins rows whose pointers show them adjacent (the next text starts where the
 * last one ends), so it covers exactly their bytes. The column must hold no NULL.
 */
export function varcharColumnBytes(chunk: DuckDBDataChunk, column: number): Buffer {
  const rows = chunk.rowCount;
  const vector = bindings.data_chunk_get_vector(chunk.chunk, column);
  const validity = bindings.vector_get_validity(vector, Math.ceil(rows / 64) * 8);
  if (validity) {
    for (let i = 0; i < rows; i++) {
      if ((validity[i >> 3]! & (1 << (i & 7))) === 0) throw internal(`engine: expected text in every row of column ${column}, found NULL at row ${i}`);
    }
  }
  const data = bindings.vector_get_data(vector, rows * STRING_T);
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const parts: Uint8Array[] = [];
  let total = 0;
  // The pending run: where it starts (a pointer, exact as a double below 2^53) and its length.
  let runStart = 0;
  let runLength = 0;
  const pointer = new DataView(new ArrayBuffer(8));
  const flush = () => {
    if (runLength === 0) return;
    pointer.setUint32(0, runStart % TWO_32, true);
    pointer.setUint32(4, Math.floor(runStart / TWO_32), true);
    parts.push(bindings.get_data_from_pointer(pointer.buffer as ArrayBuffer, 0, runLength));
    runLength = 0;
  };
  for (let i = 0; i < rows; i++) {
    const at = i * STRING_T;
    const length = view.getUint32(at, true);
    total += length;
    if (length <= INLINE_MAX) {
      flush();
      parts.push(new Uint8Array(data.buffer, data.byteOffset + at + 4, length));
      continue;
    }
    const high = view.getUint32(at + 12, true);
    if (high >= 0x200000) {
      // A pointer beyond 2^53 (no platform DuckDB runs on hands these out) is not exact as a double: copy this text alone.
      flush();
      parts.push(bindings.get_data_from_pointer(data.buffer as ArrayBuffer, data.byteOffset + at + 8, length));
      continue;
    }
    const start = view.getUint32(at + 8, true) + high * TWO_32;
    if (runLength > 0 && start === runStart + runLength) runLength += length;
    else {
      flush();
      runStart = start;
      runLength = length;
    }
  }
  flush();
  return Buffer.concat(parts, total);
}
