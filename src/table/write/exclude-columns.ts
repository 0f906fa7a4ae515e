import { invalidInput } from '../../core/errors.ts';
import type { NestedField, StructType } from '../../format/iceberg/types.ts';

/**
 * Columns of the input that steer a write but are not stored (`excludeColumns`: a CDC feed's
 * `op` and `seq`, used by a merge's `deleteWhen` and `orderBy`). They must be top-level columns of
 * the input, so a typo is an error rather than a column silently stored.
 */
export function splitExcluded(incoming: StructType, exclude: string[] | undefined, what: string): { kept: StructType; excluded: NestedField[] } {
  if (!exclude || exclude.length === 0) return { kept: incoming, excluded: [] };
  const names = new Set(incoming.fields.map((f) => f.name));
  for (const name of exclude) {
    if (!names.has(name)) {
      throw invalidInput(`${what}: excluded column ${name} is not in the input (columns: ${incoming.fields.map((f) => f.name).join(', ')})`);
    }
  }
  const kept = incoming.fields.filter((f) => !exclude.includes(f.name));
  if (kept.length === 0) throw invalidInput(`${what}: every column of the input is excluded; nothing would be stored`);
  return { kept: { ...incoming, fields: kept }, excluded: incoming.fields.filter((f) => exclude.includes(f.name)) };
}
