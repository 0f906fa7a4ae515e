import type { LiteralValue } from '../scan-task.ts';
import { civilFromDays, formatDate, formatTimestamp } from '../iceberg/single-value.ts';
import { quoteString, sqlLiteral } from '../parquet/duckdb-types.ts';
import type { BoundExpr, BoundPredicate } from './bind.ts';

/**
 * The filter as a DuckDB WHERE clause that selects exactly the rows `evaluateRow` selects. Literals
 * carry the column's type (`DATE '…'`, `TIMESTAMPTZ '…+00'`, `CAST('12.30' AS DECIMAL(9,2))`), so
 * DuckDB compares without casting the column and can push the comparison down to Parquet row
 * groups.
 *
 * DuckDB orders NaN above every number and equal to itself, where the filter semantics follow
 * IEEE 754; `>` and `>=` on float columns therefore exclude NaN explicitly (`<`, `<=`, `=`, `<>`,
 * IN and NOT IN already agree).
 */

const MICROS_PER_DAY = 86_400_000_000n;

/** Years DuckDB prints and parses in plain ISO form (it writes year 0 and before as "(BC)"). */
function plainYear(days: number): boolean {
  const { year } = civilFromDays(days);
  return year >= 1 && year <= 9999;
}

function floorDays(micros: bigint): number {
  const q = micros / MICROS_PER_DAY;
  return Number(micros % MICROS_PER_DAY !== 0n && micros < 0n ? q - 1n : q);
}

function literalSql(type: string, v: LiteralValue): string {
  switch (type) {
    case 'boolean':
      return v ? 'TRUE' : 'FALSE';
    case 'string': {
      // The SQL text travels as a C string, which ends at NUL; DuckDB folds the concatenation.
      const parts = (v as string).split('\u0000');
      return parts.length === 1 ? quoteString(parts[0]) : `(${parts.map(quoteString).join(' || chr(0) || ')})`;
    }
    case 'date':
      if (plainYear(v as number)) return `DATE '${formatDate(v as number)}'`;
      break;
    case 'timestamp':
    case 'timestamptz': {
      const micros = BigInt(v as bigint);
      if (!plainYear(floorDays(micros))) {
        // A cast from TIMESTAMP to TIMESTAMPTZ would read the wall time in the session's zone.
        const wall = `make_timestamp(CAST(${micros} AS BIGINT))`;
        return type === 'timestamp' ? wall : `timezone('UTC', ${wall})`;
      }
      const text = formatTimestamp(micros).replace('T', ' ');
      return type === 'timestamp' ? `TIMESTAMP '${text}'` : `TIMESTAMPTZ '${text}+00'`;
    }
  }
  return sqlLiteral(type, v);
}

function predicateSql(p: BoundPredicate, column: string): string {
  const type = p.ref.type as string;
  switch (p.op) {
    case 'is-null': return `(${column} IS NULL)`;
    case 'not-null': return `(${column} IS NOT NULL)`;
    case 'is-nan': return `isnan(${column})`;
    case 'not-nan': return `(NOT isnan(${column}))`;
    case 'in':
    case 'not-in':
      return `(${column} ${p.op === 'in' ? 'IN' : 'NOT IN'} (${p.values!.map((v) => literalSql(type, v)).join(', ')}))`;
  }
  const ops = { eq: '=', 'not-eq': '<>', lt: '<', 'lt-eq': '<=', gt: '>', 'gt-eq': '>=' } as const;
  const sql = `${column} ${ops[p.op]} ${literalSql(type, p.value!)}`;
  if ((p.op === 'gt' || p.op === 'gt-eq') && (type === 'float' || type === 'double')) return `(${sql} AND NOT isnan(${column}))`;
  return `(${sql})`;
}

/** `columnSql(fieldId)` is the SQL expression of a column (e.g. a quoted name) in the query. */
export function toDuckDBSql(e: BoundExpr, columnSql: (fieldId: number) => string): string {
  switch (e.kind) {
    case 'true': return 'TRUE';
    case 'false': return 'FALSE';
    case 'not': return `(NOT ${toDuckDBSql(e.child, columnSql)})`;
    case 'and': return `(${toDuckDBSql(e.left, columnSql)} AND ${toDuckDBSql(e.right, columnSql)})`;
    case 'or': return `(${toDuckDBSql(e.left, columnSql)} OR ${toDuckDBSql(e.right, columnSql)})`;
    case 'pred': return predicateSql(e, columnSql(e.ref.id));
  }
}
