import { BLOB, DuckDBBlobValue, DuckDBScalarFunction, INTEGER, VARCHAR, type DuckDBVector } from '@duckdb/node-api';
import { unsupported } from '../core/errors.ts';
import { bucketHasher } from '../format/iceberg/murmur3.ts';
import { indexById, normalizePrimitive } from '../format/iceberg/schema.ts';
import { bindTransform, parseTransform, truncateCodePoints } from '../format/iceberg/transforms.ts';
import type { PartitionField, PartitionSpec, Schema } from '../format/iceberg/types.ts';
import { quoteIdent, quoteString } from '../format/parquet/duckdb-types.ts';
import { physicalName } from '../format/parquet/field-ids.ts';
import type { LiteralValue } from '../format/scan-task.ts';
import type { DuckDBSession } from './duckdb-session.ts';

/**
 * Partition transforms as DuckDB expressions, so rows are split by partition inside the COPY that
 * encodes them. Each key is computed in a form that is exact and safe as a directory name (integers,
 * URL-encoded text, hex bytes) and decoded back into the partition value afterwards. Bucket hashing
 * (murmur3, spec Appendix B) and code-point truncation have no DuckDB built-in: integers, dates
 * and times are hashed in SQL arithmetic (`bucketLongSql`); text, bytes and decimals, and
 * truncation of text, run as scalar functions written in TypeScript over the spec code.
 */
export interface PartitionKey {
  field: PartitionField;
  alias: string;
  sql: string;
  /**
   * The key is text of unbounded length (identity or truncate of a string or bytes): the encoder
   * shortens such keys before they become directory names (see `encodeParquet`).
   */
  unbounded?: boolean;
  /** The most distinct values the key can take besides null, when the transform bounds it (bucket[N]: N). */
  distinct?: number;
  decode(text: string | null): LiteralValue;
}

const MICROS_PER_DAY = 86_400_000_000n;
const MICROS_PER_HOUR = 3_600_000_000n;

/** floor(x / d) for BIGINT x with SQL's truncating operators. */
function floorDiv(x: string, d: bigint): string {
  return `((${x} - (((${x} % ${d}) + ${d}) % ${d})) // ${d})`;
}

export function partitionKeys(spec: PartitionSpec, schema: Schema, physicalNames: Map<number, string>): PartitionKey[] {
  const index = indexById(schema);
  const keys: PartitionKey[] = [];
  spec.fields.forEach((field, i) => {
    const t = parseTransform(field.transform);
    if (t.kind === 'void') return;
    const source = index.get(field['source-id']);
    if (!source || typeof source.field.type !== 'string') {
      throw unsupported(`partition ${field.name}: source field ${field['source-id']} is not a primitive column of the schema`);
    }
    const type = normalizePrimitive(source.field.type);
    const column = columnSql(schema, field['source-id'], physicalNames);
    const alias = `__tl_p${i}`;
    const int = (sql: string): PartitionKey => ({ field, alias, sql, decode: (x) => (x === null ? null : Number(x)) });
    const micros = type === 'date' ? null : `epoch_us(${column})`;
    switch (t.kind) {
      case 'identity':
        keys.push({ field, alias, sql: encodeValue(type, column), unbounded: unboundedText(type), ...(type === 'boolean' ? { distinct: 2 } : {}), decode: (x) => decodeValue(type, x) });
        break;
      case 'year':
        keys.push(int(`(year(${column}) - 1970)`));
        break;
      case 'month':
        keys.push(int(`((year(${column}) - 1970) * 12 + month(${column}) - 1)`));
        break;
      case 'day':
        keys.push(int(type === 'date' ? `(${column} - DATE '1970-01-01')` : floorDiv(micros!, MICROS_PER_DAY)));
        break;
      case 'hour':
        keys.push(int(floorDiv(micros!, MICROS_PER_HOUR)));
        break;
      case 'bucket':
        keys.push({ ...int(bucketSql(type, column, t.param!)), distinct: t.param! });
        break;
      case 'truncate':
        keys.push({ field, alias, sql: truncateSql(type, column, t.param!, `partition ${field.name}: column ${source.path.join('.')}`), unbounded: unboundedText(type), decode: (x) => decodeValue(type, x) });
        break;
    }
  });
  return keys;
}

function unboundedText(type: string): boolean {
  return type === 'string' || type === 'binary' || type.startsWith('fixed');
}

/** The SQL of a (possibly nested) column in the encoded relation, by physical names. */
function columnSql(schema: Schema, id: number, physicalNames: Map<number, string>): string {
  const path: string[] = [];
  const visit = (fields: Schema['fields'], prefix: string[]): boolean => {
    for (const f of fields) {
      const here = [...prefix, physicalName(f, physicalNames)];
      if (f.id === id) return path.push(...here), true;
      if (typeof f.type !== 'string' && f.type.type === 'struct' && visit(f.type.fields, here)) return true;
    }
    return false;
  };
  visit(schema.fields, []);
  return path.map(quoteIdent).join('.');
}

function encodeValue(type: string, column: string): string {
  switch (type) {
    case 'int':
    case 'long':
    case 'boolean':
    case 'float':
    case 'double':
    case 'uuid':
      return `CAST(${column} AS VARCHAR)`;
    case 'date':
      return `(${column} - DATE '1970-01-01')`;
    case 'time':
      return `(epoch_us(TIMESTAMP '1970-01-01' + ${column}))`;
    case 'timestamp':
    case 'timestamptz':
      return `epoch_us(${column})`;
    case 'string':
      // URL-encoding keeps a key a safe, short directory name (hex would double long values).
      return `url_encode(${column})`;
    case 'binary':
      return `to_hex(${column})`;
  }
  if (type.startsWith('decimal') || type.startsWith('fixed')) return type.startsWith('fixed') ? `to_hex(${column})` : `CAST(${column} AS VARCHAR)`;
  throw unsupported(`partition: identity of ${type} is not supported`);
}

function decodeValue(type: string, text: string | null): LiteralValue {
  if (text === null) return null;
  switch (type) {
    case 'int':
    case 'date':
      return Number(text);
    case 'long':
    case 'time':
    case 'timestamp':
    case 'timestamptz':
      return BigInt(text);
    case 'boolean':
      return text === 'true';
    case 'float':
    case 'double':
      return text === 'nan' || text === 'NaN' ? NaN : text === 'inf' || text === 'Infinity' ? Infinity : text === '-inf' || text === '-Infinity' ? -Infinity : Number(text);
    case 'string':
      return decodeURIComponent(text);
    case 'binary':
      return new Uint8Array(Buffer.from(text, 'hex'));
    case 'uuid':
      return text;
  }
  if (type.startsWith('fixed')) return new Uint8Array(Buffer.from(text, 'hex'));
  return text; // decimal, as DuckDB prints it with the type's scale
}

function bucketSql(type: string, column: string, n: number): string {
  switch (type) {
    case 'int':
    case 'long':
      return bucketLongSql(`CAST(${column} AS BIGINT)`, n);
    case 'date':
      return bucketLongSql(`CAST(${column} - DATE '1970-01-01' AS BIGINT)`, n);
    case 'time':
      return bucketLongSql(`epoch_us(TIMESTAMP '1970-01-01' + ${column})`, n);
    case 'timestamp':
    case 'timestamptz':
      return bucketLongSql(`epoch_us(${column})`, n);
    case 'string':
    case 'uuid':
      return `tl_bucket_text(CAST(${column} AS VARCHAR), ${quoteString(type)}, ${n})`;
    case 'binary':
      return `tl_bucket_blob(${column}, ${n})`;
  }
  if (type.startsWith('fixed')) return `tl_bucket_blob(${column}, ${n})`;
  if (type.startsWith('decimal')) return `tl_bucket_text(CAST(${column} AS VARCHAR), ${quoteString(type)}, ${n})`;
  throw unsupported(`partition: bucket of ${type} is not supported`);
}

const M32 = '4294967295';

/**
 * bucket[N] of a BIGINT in SQL: `(murmur3_x86_32(8 little-endian bytes) & Integer.MAX_VALUE) % N`,
 * spec Appendix B (the same hash as `hashLong` in murmur3.ts, which the tests check it against).
 * Plain integer arithmetic runs in DuckDB's own threads, where a scalar function written in
 * TypeScript takes every row to the one JavaScript thread and back: several times the write.
 * 32-bit words live in UBIGINT so each product of two of them fits without overflow.
 */
export function bucketLongSql(column: string, n: number): string {
  // Terms repeat (a rotation names its operand twice); DuckDB evaluates a repeated term once.
  const u = (x: string) => `CAST(${x} AS UBIGINT)`;
  const mul = (x: string, c: number) => `((${x} * ${c}) & ${M32})`;
  const rotl = (x: string, r: number) => `(((${x} << ${r}) | (${x} >> ${32 - r})) & ${M32})`;
  // One 4-byte block: k = rotl(k * c1, 15) * c2; h = rotl(h ^ k, 13) * 5 + 0xe6546b64.
  const mixK = (k: string) => mul(rotl(mul(k, 0xcc9e2d51), 15), 0x1b873593);
  const mixH = (h: string, k: string) => `((${rotl(`xor(${h}, ${mixK(k)})`, 13)} * 5 + ${0xe6546b64}) & ${M32})`;
  const shiftXor = (h: string, r: number) => `xor(${h}, ${h} >> ${r})`;
  const x = `(${column})`;
  let h = mixH(mixH(u('0'), u(`${x} & ${M32}`)), u(`(${x} >> 32) & ${M32}`));
  h = `xor(${h}, ${u('8')})`;
  h = mul(shiftXor(h, 16), 0x85ebca6b);
  h = mul(shiftXor(h, 13), 0xc2b2ae35);
  h = shiftXor(h, 16);
  return `CAST((${h} & 2147483647) % ${n} AS INTEGER)`;
}

/**
 * truncate[W] in SQL. Ints and longs are computed one size wider, so the values whose truncation
 * overflows the column's type (see `truncateInteger`) fail the write with their column and value
 * named instead of failing inside DuckDB's arithmetic.
 */
function truncateSql(type: string, column: string, width: number, where: string): string {
  switch (type) {
    case 'int':
    case 'long': {
      const wide = type === 'int' ? 'BIGINT' : 'HUGEINT';
      const [min, max] = type === 'int' ? ['-2147483648', '2147483647'] : ['-9223372036854775808', '9223372036854775807'];
      const x = `CAST(${column} AS ${wide})`;
      const step = `((${x} % ${width}) + ${width})`;
      const out = `(${x} - (${step} % ${width}))`;
      // Worded as truncateOverflow in transforms.ts words it.
      const message = `${where}: truncate[${width}] of ${type} `;
      const below = `${quoteString(': its truncation, ')} || CAST(${out} AS VARCHAR) || ${quoteString(`, would be below the smallest ${type} (${min}); Iceberg Java would wrap it into the largest partition, where range filters never find it`)}`;
      const past = quoteString(`: Iceberg's formula (v % ${width}) + ${width} would pass the largest ${type} (${max}); Iceberg Java would put it in a partition that is not its truncation, where filters never find it`);
      return `CASE WHEN ${out} < ${min} OR ${step} > ${max} THEN error(${quoteString(message)} || CAST(${column} AS VARCHAR) || CASE WHEN ${out} < ${min} THEN ${below} ELSE ${past} END) ELSE CAST(${out} AS VARCHAR) END`;
    }
    case 'string':
      return `url_encode(tl_truncate_text(${column}, ${width}))`;
    case 'binary':
      return `to_hex(${column}[1:${width}])`;
  }
  if (type.startsWith('decimal')) return `tl_truncate_decimal(CAST(${column} AS VARCHAR), ${quoteString(type)}, ${width})`;
  throw unsupported(`partition: truncate of ${type} is not supported`);
}

/** Registers the scalar functions the key expressions use, once per session. */
export function registerPartitionFunctions(session: DuckDBSession): void {
  session.registerOnce('partition-functions', (connection) => {
    const mod = (hash: number, n: number) => (hash & 0x7fffffff) % n;
    const each = (input: { rowCount: number }, output: DuckDBVector, fn: (row: number) => unknown) => {
      for (let row = 0; row < input.rowCount; row++) output.setItem(row, fn(row) as never);
      output.flush();
    };
    const textHashers = new Map<string, (value: LiteralValue) => number>();
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: 'tl_bucket_text',
        returnType: INTEGER,
        parameterTypes: [VARCHAR, VARCHAR, INTEGER],
        mainFunction: (_info, input, output) => {
          const v = input.getColumnVector(0);
          const t = input.getColumnVector(1);
          const n = input.getColumnVector(2);
          each(input, output, (r) => {
            const x = v.getItem(r) as string | null;
            if (x === null) return null;
            const type = t.getItem(r) as string;
            let hash = textHashers.get(type);
            if (!hash) textHashers.set(type, (hash = bucketHasher(type)));
            return mod(hash(x), n.getItem(r) as number);
          });
        },
      }),
    );
    const bytesHash = bucketHasher('binary');
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: 'tl_bucket_blob',
        returnType: INTEGER,
        parameterTypes: [BLOB, INTEGER],
        mainFunction: (_info, input, output) => {
          const v = input.getColumnVector(0);
          const n = input.getColumnVector(1);
          each(input, output, (r) => {
            const x = v.getItem(r) as DuckDBBlobValue | null;
            return x === null ? null : mod(bytesHash(x.bytes), n.getItem(r) as number);
          });
        },
      }),
    );
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: 'tl_truncate_text',
        returnType: VARCHAR,
        parameterTypes: [VARCHAR, INTEGER],
        mainFunction: (_info, input, output) => {
          const v = input.getColumnVector(0);
          const w = input.getColumnVector(1);
          each(input, output, (r) => {
            const x = v.getItem(r) as string | null;
            return x === null ? null : truncateCodePoints(x, w.getItem(r) as number);
          });
        },
      }),
    );
    connection.registerScalarFunction(
      DuckDBScalarFunction.create({
        name: 'tl_truncate_decimal',
        returnType: VARCHAR,
        parameterTypes: [VARCHAR, VARCHAR, INTEGER],
        mainFunction: (_info, input, output) => {
          const v = input.getColumnVector(0);
          const t = input.getColumnVector(1);
          const w = input.getColumnVector(2);
          each(input, output, (r) => {
            const x = v.getItem(r) as string | null;
            if (x === null) return null;
            return bindTransform(`truncate[${w.getItem(r)}]`, t.getItem(r) as string)(x) as string;
          });
        },
      }),
    );
  });
}
