import { BIGINT, BLOB, DuckDBBlobValue, DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';
import { invalidInput } from '../core/errors.ts';
import type { DuckDBSession } from '../engine/duckdb-session.ts';
import { quoteIdent } from '../engine/duckdb-session.ts';
import type { Schema } from '../format/iceberg/types.ts';
import { zorderKey, zorderKindOf, type ZOrderKind } from '../format/zorder.ts';

/**
 * The engine's side of Z-order (src/format/zorder.ts): a scalar function of the row's columns,
 * registered once per column-kind signature, that returns the key as a BLOB; the engine orders
 * BLOBs by unsigned bytes, the order the key is built for. Each column is handed over as what it
 * encodes: integers, dates (days) and timestamps (microseconds) as BIGINT, strings as VARCHAR.
 */
export function zorderSql(session: DuckDBSession, schema: Schema, columns: readonly string[]): string {
  const { kinds, args } = zorderColumns(schema, columns);
  const signature = kinds.map((k) => (k === 'string' ? 's' : 'i')).join('');
  const fn = `tl_zorder_${signature}`;
  session.registerOnce(`zorder-${signature}`, (connection) => {
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: fn,
        returnType: BLOB,
        // Nulls reach the function (and encode as zeros, first) instead of making the key null.
        specialHandling: true,
        parameterTypes: kinds.map((k) => (k === 'string' ? VARCHAR : BIGINT)),
        mainFunction: (_info, input, output) => {
          const vectors = kinds.map((_, i) => input.getColumnVector(i));
          for (let row = 0; row < input.rowCount; row++) {
            const values = vectors.map((v) => v.getItem(row) as bigint | string | null);
            output.setItem(row, new DuckDBBlobValue(zorderKey(kinds, values)) as never);
          }
          output.flush();
        },
      }),
    );
  });
  return `${fn}(${args.join(', ')})`;
}

/** Each column's Z-order kind and the SQL that hands its value to the key function; refuses what Z-order cannot encode. */
export function zorderColumns(schema: Schema, columns: readonly string[]): { kinds: ZOrderKind[]; args: string[] } {
  if (columns.length === 0) throw invalidInput('compact: zorder needs at least one column');
  const kinds: ZOrderKind[] = [];
  const args: string[] = [];
  for (const name of columns) {
    const field = schema.fields.find((f) => f.name === name);
    if (!field) throw invalidInput(`compact: zorder column ${name} is not in the table (columns: ${schema.fields.map((f) => f.name).join(', ')})`);
    const type = typeof field.type === 'string' ? field.type : field.type.type;
    const kind = zorderKindOf(type);
    if (!kind) throw invalidInput(`compact: zorder column ${name} has the type ${type}; Z-order encodes int, long, date, timestamp, timestamptz and string columns`);
    kinds.push(kind);
    const col = quoteIdent(name);
    args.push(kind === 'string' ? col : type === 'date' ? `CAST(date_diff('day', DATE '1970-01-01', ${col}) AS BIGINT)` : type.startsWith('timestamp') ? `epoch_us(${col})` : `CAST(${col} AS BIGINT)`);
  }
  return { kinds, args };
}
