import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { bind, rewriteNot, referencedFieldIds, type BoundExpr } from '../../../src/format/expressions/bind.ts';
import { parseFilter } from '../../../src/format/expressions/parser.ts';
import { evaluateRow } from '../../../src/format/expressions/values.ts';
import type { Schema } from '../../../src/format/iceberg/types.ts';
import type { LiteralValue } from '../../../src/format/scan-task.ts';

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: true, type: 'long' },
    { id: 2, name: 'region', required: false, type: 'string' },
    { id: 3, name: 'ts', required: false, type: 'timestamptz' },
    { id: 4, name: 'amount', required: false, type: 'decimal(10, 2)' },
    { id: 5, name: 'score', required: false, type: 'double' },
    { id: 6, name: 'f', required: false, type: 'float' },
    { id: 7, name: 'd', required: false, type: 'date' },
    { id: 8, name: 'n', required: false, type: 'int' },
    { id: 9, name: 'flag', required: false, type: 'boolean' },
    { id: 10, name: 'b', required: false, type: 'binary' },
    {
      id: 11,
      name: 'info',
      required: false,
      type: { type: 'struct', fields: [{ id: 12, name: 'city', required: false, type: 'string' }, { id: 13, name: 'zip', required: false, type: 'int' }] },
    },
    { id: 14, name: 'tags', required: false, type: { type: 'list', 'element-id': 15, element: 'string', 'element-required': false } },
    { id: 16, name: 'props', required: false, type: { type: 'map', 'key-id': 17, key: 'string', 'value-id': 18, value: 'string', 'value-required': false } },
    { id: 19, name: 'local_ts', required: false, type: 'timestamp' },
    { id: 20, name: 'u', required: false, type: 'uuid' },
    { id: 21, name: 'Name', required: false, type: 'string' },
    { id: 22, name: 'NAME', required: false, type: 'string' },
    { id: 23, name: 't', required: false, type: 'time' },
    { id: 24, name: 'fx', required: false, type: 'fixed[2]' },
    { id: 25, name: 'dotted.name', required: false, type: 'int' },
    { id: 26, name: 'CamelCase', required: false, type: 'int' },
  ],
};

const b = (text: string) => bind(parseFilter(text), schema);
const value = (text: string) => (b(text) as { value?: LiteralValue }).value;

function errorOf(text: string): { kind: string; message: string } {
  try {
    b(text);
  } catch (e) {
    if (!isTwinlakeError(e)) throw e;
    return { kind: e.kind, message: e.message };
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}

describe('bind', () => {
  it('resolves columns to field IDs: exact, case-insensitive, nested, dotted names', () => {
    const ref = (text: string) => (b(text) as { ref: { id: number; name: string } }).ref;
    expect(ref('region = 1'.replace('1', "'x'"))).toEqual({ id: 2, name: 'region', type: 'string' });
    expect(ref("REGION = 'x'").id).toBe(2);
    expect(ref('camelcase = 1')).toMatchObject({ id: 26, name: 'CamelCase' });
    expect(ref("Name = 'x'").id).toBe(21);
    expect(ref("NAME = 'x'").id).toBe(22);
    expect(ref("info.city = 'x'")).toMatchObject({ id: 12, name: 'info.city' });
    expect(ref('INFO.ZIP = 1')).toMatchObject({ id: 13, name: 'info.zip' });
    expect(ref('"dotted.name" = 1').id).toBe(25);
    expect(ref('dotted.name = 1').id).toBe(25);
    expect(ref('tags IS NULL').id).toBe(14);
    expect(ref('info IS NOT NULL').id).toBe(11);
  });

  it('converts literals to each column type', () => {
    expect(value('id = 5')).toBe(5n);
    expect(value('id = 9223372036854775807')).toBe(9223372036854775807n);
    expect(value('id = -9223372036854775808')).toBe(-9223372036854775808n);
    expect(value('id = 1.5e3')).toBe(1500n);
    expect(value("id = '42'")).toBe(42n);
    expect(value('n = -2147483648')).toBe(-2147483648);
    expect(value('n = 7.0')).toBe(7);
    expect(value('score = 0.1')).toBe(0.1);
    expect(value('score = -1e-300')).toBe(-1e-300);
    expect(value("score < 'Infinity'")).toBe(Infinity);
    expect(value('score = 7')).toBe(7);
    expect(value('f = 0.1')).toBe(Math.fround(0.1));
    expect(value('amount = 12.3')).toBe('12.30');
    expect(value('amount = -0.5')).toBe('-0.50');
    expect(value('amount = 1.2300')).toBe('1.23');
    expect(value('amount = 5e2')).toBe('500.00');
    expect(value("amount = '99999999.99'")).toBe('99999999.99');
    expect(value("d = '2024-02-29'")).toBe(19782);
    expect(value("d = '1969-12-31'")).toBe(-1);
    expect(value("t = '10:00:01.5'")).toBe(36_001_500_000n);
    expect(value("ts = '1970-01-01'")).toBe(0n);
    expect(value("ts = '2024-01-01T10:00:00'")).toBe(1_704_103_200_000_000n);
    expect(value("ts = '2024-01-01 10:00:00.123456Z'")).toBe(1_704_103_200_123_456n);
    expect(value("ts = '2024-01-01T12:00:00+02:00'")).toBe(1_704_103_200_000_000n);
    expect(value("ts = '1969-12-31T23:59:59.999999Z'")).toBe(-1n);
    expect(value("local_ts = '2024-01-01T10:00:00'")).toBe(1_704_103_200_000_000n);
    expect(value("local_ts = '2024-01-01T10:00:00Z'")).toBe(1_704_103_200_000_000n);
    expect(value("region = 'us'")).toBe('us');
    expect(value('flag = true')).toBe(true);
    expect(value("flag = 'FALSE'")).toBe(false);
    expect(value("b = X'00ff'")).toEqual(Uint8Array.of(0, 255));
    expect(value("b = 'é'")).toEqual(Uint8Array.of(0xc3, 0xa9));
    expect(value("fx = X'0102'")).toEqual(Uint8Array.of(1, 2));
    expect(value("u = 'F79C3E09-677C-4BBD-A479-3F349CB785E7'")).toBe('f79c3e09-677c-4bbd-a479-3f349cb785e7');
  });

  it('dedupes IN lists and turns single-value lists into comparisons', () => {
    expect(b('n IN (1, 2, 1.0, 2)')).toMatchObject({ op: 'in', values: [1, 2] });
    expect(b('n IN (3, 3)')).toMatchObject({ op: 'eq', value: 3 });
    expect(b('n NOT IN (3)')).toMatchObject({ op: 'not-eq', value: 3 });
  });

  it('folds constants', () => {
    expect(b('TRUE AND n = 1')).toMatchObject({ kind: 'pred', op: 'eq' });
    expect(b('FALSE AND n = 1')).toEqual({ kind: 'false' });
    expect(b('TRUE OR n = 1')).toEqual({ kind: 'true' });
    expect(b('NOT TRUE')).toEqual({ kind: 'false' });
  });

  it('rejects unknown columns, listing those available', () => {
    const e = errorOf("regoin = 'us'");
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toMatch(/^filter: unknown column "regoin"; available columns: id, region, ts, amount/);
    expect(e.message).toContain('info.city');
    expect(errorOf('info.street = 1').message).toBe('filter: unknown column "info.street"; available columns: info.city, info.zip');
    expect(errorOf("name = 'x'").message).toMatch(/^filter: column name "name" is ambiguous; it matches "Name", "NAME"/);
    expect(errorOf('region.x = 1').message).toBe('filter: column region is string, not a struct, so it has no field "x"');
  });

  it('rejects predicates inside lists and maps, and comparisons on nested columns', () => {
    expect(errorOf("tags.element = 'x'")).toEqual({ kind: 'unsupported', message: 'filter: predicates on values inside list column tags are not supported' });
    expect(errorOf("props.key = 'x'")).toEqual({ kind: 'unsupported', message: 'filter: predicates on values inside map column props are not supported' });
    expect(errorOf('info = 1')).toEqual({ kind: 'unsupported', message: 'filter: column info is struct; only IS NULL and IS NOT NULL apply to it' });
    expect(errorOf("u < 'f79c3e09-677c-4bbd-a479-3f349cb785e7'").kind).toBe('unsupported');
  });

  it('rejects literals that cannot have the column type, naming column, type and literal', () => {
    const cases: [string, string][] = [
      ['n = 2147483648', 'filter: column n is int; literal 2147483648 does not fit in 32 bits'],
      ['id = 9223372036854775808', 'filter: column id is long; literal 9223372036854775808 does not fit in 64 bits'],
      ['n = 1.5', 'filter: column n is int; literal 1.5 is not an integer'],
      ["n = 'abc'", "filter: column n is int; literal 'abc' is not an integer"],
      ['n = TRUE', 'filter: column n is int; literal true is not an integer'],
      ["region = 5", 'filter: column region is string; literal 5 is not a string (quote it)'],
      ['amount = 1.234', 'filter: column amount is decimal(10, 2); literal 1.234 has more than 2 fractional digits'],
      ['amount = 123456789', 'filter: column amount is decimal(10, 2); literal 123456789 does not fit in 10 digits'],
      ["score = 'NaN'", "filter: column score is double; literal 'NaN' is NaN, which equals nothing; use IS NAN"],
      ['f = 1e39', 'filter: column f is float; literal 1e39 is out of range for float'],
      ["d = '2024-02-30'", `filter: column d is date; literal '2024-02-30' is not a valid date (date: "2024-02-30" is not a calendar date)`],
      ['d = 20240101', "filter: column d is date; literal 20240101 is not a date (expected a string such as '2024-01-31')"],
      ["ts = 'yesterday'", `filter: column ts is timestamptz; literal 'yesterday' is not a valid timestamptz (timestamp: expected an ISO-8601 timestamp, found "yesterday")`],
      ["local_ts = '2024-01-01T10:00:00+02:00'", "filter: column local_ts is timestamp; literal '2024-01-01T10:00:00+02:00' has a time zone offset, but the column is a timestamp without time zone"],
      ["flag = 'yes'", "filter: column flag is boolean; literal 'yes' is not a boolean"],
      ["fx = X'010203'", "filter: column fx is fixed[2]; literal X'010203' has 3 bytes, not 2"],
      ["u = 'nope'", `filter: column u is uuid; literal 'nope' is not a valid uuid (uuid: expected 32 hex digits, found "nope")`],
    ];
    for (const [text, message] of cases) expect(errorOf(text), text).toEqual({ kind: 'invalid-input', message });
    expect(errorOf("region IS NAN").message).toBe('filter: IS NAN needs a float or double column; region is string');
  });

  it('lists the field IDs a filter reads', () => {
    expect([...referencedFieldIds(b("region = 'x' AND (NOT n < 3 OR info.zip IS NULL)"))].sort((x, y) => x - y)).toEqual([2, 8, 13]);
  });
});

describe('rewriteNot', () => {
  const hasNot = (e: BoundExpr): boolean =>
    e.kind === 'not' || ((e.kind === 'and' || e.kind === 'or') && (hasNot(e.left) || hasNot(e.right)));

  it('pushes NOT into predicates, adding IS NAN where NaN fails both sides', () => {
    expect(rewriteNot(b('NOT n < 3'))).toMatchObject({ kind: 'pred', op: 'gt-eq', value: 3 });
    expect(rewriteNot(b("NOT (n IN (1, 2) AND region IS NULL)"))).toMatchObject({
      kind: 'or',
      left: { op: 'not-in', values: [1, 2] },
      right: { op: 'not-null' },
    });
    expect(rewriteNot(b('NOT score > 1'))).toMatchObject({ kind: 'or', left: { op: 'lt-eq', value: 1 }, right: { op: 'is-nan' } });
    expect(rewriteNot(b('NOT NOT score > 1'))).toMatchObject({ kind: 'pred', op: 'gt' });
    expect(rewriteNot(b('NOT score = 1'))).toMatchObject({ kind: 'pred', op: 'not-eq' });
  });

  it('keeps the truth of every row (three-valued, NaN included)', () => {
    const texts = [
      'NOT (n < 3 OR score >= 2.5)',
      'NOT (n IN (1, 2) AND NOT score <= 1)',
      'NOT (score = 1 OR f <> 2 OR score IS NAN)',
      "NOT (region > 'm' AND NOT (region IS NULL OR n = 4))",
      'NOT NOT NOT (f > 0 AND f < 1)',
      'NOT (score NOT IN (1, 2) OR score IS NOT NAN)',
    ];
    const values: LiteralValue[][] = [
      [null, 1, 3, 5],
      [null, NaN, 0.5, 1, 2.5, 3, -Infinity],
      [null, NaN, 0, 2, Math.fround(0.5)],
      [null, 'a', 'm', 'z'],
    ];
    for (const text of texts) {
      const e = b(text);
      const r = rewriteNot(e);
      expect(hasNot(r), text).toBe(false);
      for (const n of values[0]) for (const score of values[1]) for (const f of values[2]) for (const region of values[3]) {
        const row = new Map<number, LiteralValue>([[8, n], [5, score], [6, f], [2, region]]);
        const get = (id: number) => row.get(id);
        expect(evaluateRow(r, get) === true, `${text} at ${JSON.stringify([n, String(score), String(f), region])}`).toBe(evaluateRow(e, get) === true);
      }
    }
  });
});
