import { dataInvalid } from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';

/**
 * Per-file statistics (PROTOCOL.md §Per-file Statistics), as stored in `add.stats`. Column values
 * are keyed by physical name and nested like the schema; leaves are JSON values (numbers, strings
 * for dates/timestamps/strings, bigint where a long exceeds 2^53).
 */
export type StatsValue = null | boolean | number | bigint | string | StatsValues;
export interface StatsValues {
  [physicalName: string]: StatsValue;
}

export interface DeltaStats {
  /** Physical rows in the data file (deleted rows included). Absent when the writer kept none. */
  numRecords?: number;
  minValues: StatsValues;
  maxValues: StatsValues;
  nullCount: StatsValues;
  /** false means bounds may be wider than the live data; treat absent as true. */
  tightBounds?: boolean;
}

export function parseStats(json: string, source = 'add.stats'): DeltaStats {
  let obj: any;
  try {
    obj = parseJson(json, source);
  } catch (e) {
    throw dataInvalid(`delta stats: ${(e as Error).message}`);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw dataInvalid(`delta stats ${source}: expected a JSON object, found ${JSON.stringify(json.slice(0, 40))}`);
  }
  const out: DeltaStats = {
    minValues: nested(obj.minValues, 'minValues', source),
    maxValues: nested(obj.maxValues, 'maxValues', source),
    nullCount: nested(obj.nullCount, 'nullCount', source),
  };
  if (obj.numRecords !== undefined && obj.numRecords !== null) {
    const n = typeof obj.numRecords === 'bigint' ? Number(obj.numRecords) : obj.numRecords;
    if (!Number.isSafeInteger(n) || n < 0) {
      throw dataInvalid(`delta stats ${source}: numRecords: expected a non-negative integer, found ${String(obj.numRecords)}`);
    }
    out.numRecords = n;
  }
  if (obj.tightBounds !== undefined && obj.tightBounds !== null) {
    if (typeof obj.tightBounds !== 'boolean') {
      throw dataInvalid(`delta stats ${source}: tightBounds: expected a boolean, found ${JSON.stringify(obj.tightBounds)}`);
    }
    out.tightBounds = obj.tightBounds;
  }
  return out;
}

function nested(x: unknown, field: string, source: string): StatsValues {
  if (x === undefined || x === null) return {};
  if (typeof x !== 'object' || Array.isArray(x)) {
    throw dataInvalid(`delta stats ${source}: ${field}: expected an object, found ${JSON.stringify(x)}`);
  }
  return x as StatsValues;
}

/** The stats value at a physical field path (`['a', 'b']` for `a.b`), if any. */
export function statsValueAt(values: StatsValues, path: readonly string[]): StatsValue | undefined {
  let cur: StatsValue | undefined = values;
  for (const p of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as StatsValues)[p];
  }
  return cur;
}
