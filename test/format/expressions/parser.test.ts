import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { formatFilter, parseFilter, type Expr } from '../../../src/format/expressions/parser.ts';

const pred = (op: string, column: string | string[], extra: object = {}): Expr =>
  ({ kind: 'pred', op, column: Array.isArray(column) ? column : [column], ...extra }) as Expr;
const num = (text: string) => ({ number: text });

function errorOf(text: string): { message: string; kind: string } {
  try {
    parseFilter(text);
  } catch (e) {
    if (!isTwinlakeError(e)) throw e;
    return { message: e.message, kind: e.kind };
  }
  throw new Error(`expected ${JSON.stringify(text)} to fail`);
}

describe('parseFilter', () => {
  it('parses comparisons with every operator', () => {
    const ops: [string, string][] = [['=', 'eq'], ['==', 'eq'], ['!=', 'not-eq'], ['<>', 'not-eq'], ['<', 'lt'], ['<=', 'lt-eq'], ['>', 'gt'], ['>=', 'gt-eq']];
    for (const [sym, op] of ops) expect(parseFilter(`x ${sym} 5`)).toEqual(pred(op, 'x', { value: num('5') }));
  });

  it('reads literal-first comparisons mirrored', () => {
    expect(parseFilter('5 < x')).toEqual(pred('gt', 'x', { value: num('5') }));
    expect(parseFilter("'2024-01-01' >= ts")).toEqual(pred('lt-eq', 'ts', { value: '2024-01-01' }));
    expect(parseFilter('TRUE = flag')).toEqual(pred('eq', 'flag', { value: true }));
  });

  it('gives AND precedence over OR and NOT over AND', () => {
    const a = pred('eq', 'a', { value: num('1') });
    const b = pred('eq', 'b', { value: num('2') });
    const c = pred('eq', 'c', { value: num('3') });
    expect(parseFilter('a = 1 OR b = 2 AND c = 3')).toEqual({ kind: 'or', left: a, right: { kind: 'and', left: b, right: c } });
    expect(parseFilter('a = 1 AND b = 2 OR c = 3')).toEqual({ kind: 'or', left: { kind: 'and', left: a, right: b }, right: c });
    expect(parseFilter('NOT a = 1 AND b = 2')).toEqual({ kind: 'and', left: { kind: 'not', child: a }, right: b });
    expect(parseFilter('(a = 1 OR b = 2) AND c = 3')).toEqual({ kind: 'and', left: { kind: 'or', left: a, right: b }, right: c });
    expect(parseFilter('NOT NOT a = 1')).toEqual({ kind: 'not', child: { kind: 'not', child: a } });
    // Left-associative chains.
    expect(parseFilter('a = 1 OR b = 2 OR c = 3')).toEqual({ kind: 'or', left: { kind: 'or', left: a, right: b }, right: c });
  });

  it('parses IN, NOT IN, IS [NOT] NULL, IS [NOT] NAN and BETWEEN', () => {
    expect(parseFilter('id IN (1, 2, 3)')).toEqual(pred('in', 'id', { values: [num('1'), num('2'), num('3')] }));
    expect(parseFilter("r NOT IN ('a')")).toEqual(pred('not-in', 'r', { values: ['a'] }));
    expect(parseFilter('name IS NULL')).toEqual(pred('is-null', 'name'));
    expect(parseFilter('name is not null')).toEqual(pred('not-null', 'name'));
    expect(parseFilter('d IS NaN')).toEqual(pred('is-nan', 'd'));
    expect(parseFilter('d IS NOT NAN')).toEqual(pred('not-nan', 'd'));
    const between = { kind: 'and', left: pred('gt-eq', 'x', { value: num('1') }), right: pred('lt-eq', 'x', { value: num('5') }) };
    expect(parseFilter('x BETWEEN 1 AND 5')).toEqual(between);
    expect(parseFilter('x NOT BETWEEN 1 AND 5')).toEqual({ kind: 'not', child: between });
  });

  it('reads identifiers: plain, quoted, backticked, dotted, unicode', () => {
    expect(parseFilter('a.b.c = 1')).toEqual(pred('eq', ['a', 'b', 'c'], { value: num('1') }));
    expect(parseFilter('"a.b" = 1')).toEqual(pred('eq', ['a.b'], { value: num('1') }));
    expect(parseFilter('"we""ird".`back``tick` = 1')).toEqual(pred('eq', ['we"ird', 'back`tick'], { value: num('1') }));
    expect(parseFilter('"select" = 1')).toEqual(pred('eq', 'select', { value: num('1') }));
    expect(parseFilter('"AND" = 1')).toEqual(pred('eq', 'AND', { value: num('1') }));
    expect(parseFilter('größe > 1')).toEqual(pred('gt', 'größe', { value: num('1') }));
    expect(parseFilter('nan = 1')).toEqual(pred('eq', 'nan', { value: num('1') }));
    expect(parseFilter('date = 1')).toEqual(pred('eq', 'date', { value: num('1') }));
  });

  it('reads literals: strings with escapes, numbers as written, booleans, bytes, typed strings', () => {
    expect(parseFilter("s = 'it''s ☃ 😀'")).toEqual(pred('eq', 's', { value: "it's ☃ 😀" }));
    expect(parseFilter("s = ''")).toEqual(pred('eq', 's', { value: '' }));
    for (const n of ['0', '-7', '+7', '12345678901234567890', '1.50', '-.5', '2.', '6.02e23', '1E-7', '-1.5e+3']) {
      expect(parseFilter(`x = ${n}`)).toEqual(pred('eq', 'x', { value: num(n) }));
    }
    expect(parseFilter('x>-5')).toEqual(pred('gt', 'x', { value: num('-5') }));
    expect(parseFilter('b = true AND c = FALSE')).toEqual({ kind: 'and', left: pred('eq', 'b', { value: true }), right: pred('eq', 'c', { value: false }) });
    expect(parseFilter("b = X'00fF'")).toEqual(pred('eq', 'b', { value: Uint8Array.of(0, 255) }));
    expect(parseFilter("d = DATE '2024-02-29'")).toEqual(pred('eq', 'd', { value: '2024-02-29' }));
    expect(parseFilter("t < TIMESTAMPTZ '2024-01-01 00:00:00+02'")).toEqual(pred('lt', 't', { value: '2024-01-01 00:00:00+02' }));
  });

  it('reads constants and bare boolean columns', () => {
    expect(parseFilter('TRUE')).toEqual({ kind: 'true' });
    expect(parseFilter('false OR x = 1')).toEqual({ kind: 'or', left: { kind: 'false' }, right: pred('eq', 'x', { value: num('1') }) });
    expect(parseFilter('active AND NOT deleted')).toEqual({
      kind: 'and',
      left: pred('eq', 'active', { value: true }),
      right: { kind: 'not', child: pred('eq', 'deleted', { value: true }) },
    });
  });

  it('reports each error with what was expected and the column', () => {
    const cases: [string, string][] = [
      ['region =', "filter: expected a value after '=' at column 9, found end of input"],
      ["ts >= '2024' AND", "filter: expected a condition after 'AND' at column 17, found end of input"],
      ['(a = 1', "filter: expected ')' at column 7 to close '(' at column 1, found end of input"],
      ['a = 1)', "filter: expected AND, OR or end of input after '1' at column 6, found ')'"],
      ["a = 'x", 'filter: unterminated string starting at column 5'],
      ['"a = 1', 'filter: unterminated quoted name starting at column 1'],
      ['a = NULL', 'filter: NULL can only follow IS (write IS NULL or IS NOT NULL) at column 5'],
      ['a IN ()', "filter: expected a value after '(' at column 7, found ')'"],
      ['a IN 1', "filter: expected '(' to start the IN list after 'IN' at column 6, found '1'"],
      ['a IN (1 2)', "filter: expected ',' or ')' in the IN list after '1' at column 9, found '2'"],
      ['a IN (1, NULL)', 'filter: NULL can only follow IS (write IS NULL or IS NOT NULL) at column 10'],
      ["a 'x'", "filter: expected an operator (=, !=, <>, <, <=, >, >=, IN, NOT IN, BETWEEN, IS) after 'a' at column 3, found 'x'"],
      ['a IS 5', "filter: expected NULL, NOT NULL, NAN or NOT NAN after 'IS' at column 6, found '5'"],
      ['a IS NOT 5', "filter: expected NULL or NAN after 'NOT' at column 10, found '5'"],
      ['a NOT LIKE 1', "filter: expected an operator (=, !=, <>, <, <=, >, >=, IN, NOT IN, BETWEEN, IS) after 'a' at column 3, found 'NOT'"],
      ['a BETWEEN 1 5', "filter: expected AND in BETWEEN ... AND ... after '1' at column 13, found '5'"],
      ['a = 1.2.3', "filter: malformed number '1.2.3' at column 5"],
      ['a = 12abc', "filter: malformed number '12abc' at column 5"],
      ['a # 1', 'filter: unexpected character "#" at column 3'],
      ['a.', "filter: expected a name after '.' at column 3, found end of input"],
      ['a.AND = 1', "filter: expected a name after '.' at column 3, found 'AND'"],
      ['"" = 1', 'filter: expected a non-empty quoted name at column 1'],
      ["x = X'abc'", "filter: expected an even number of hex digits in X'...' at column 5"],
      ['AND = 1', "filter: expected a column name at column 1, found 'AND'"],
      ['5 x', "filter: expected a comparison operator after '5' at column 3, found 'x'"],
      ['x = y', "filter: expected a value after '=' at column 5, found 'y'"],
      ['', 'filter: the filter is empty; expected a condition such as "id = 1"'],
      [' \t ', 'filter: the filter is empty; expected a condition such as "id = 1"'],
    ];
    for (const [text, message] of cases) expect(errorOf(text), text).toEqual({ message, kind: 'invalid-input' });
  });

  it('formats back to text that parses to the same expression', () => {
    const texts = [
      "region = 'us' AND ts >= '2024-01-01'",
      "NOT (a < 5 OR b <> 'it''s')",
      'a = 1 OR b = 2 AND (c = 3 OR d IS NULL)',
      '"odd name".x IN (1, 2.5, -3e4) AND y NOT IN (TRUE)',
      "b = X'00ff' OR NOT NOT f IS NOT NAN",
      '(a = 1 OR b = 2) AND NOT (c = 3 AND d = 4)',
    ];
    for (const t of texts) {
      const e = parseFilter(t);
      expect(parseFilter(formatFilter(e)), t).toEqual(e);
    }
  });
});
