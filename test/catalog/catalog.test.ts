import { describe, expect, it } from 'vitest';
import { checkTableIdentifier, formatTableIdentifier, parseTableIdentifier } from '../../src/catalog/catalog.ts';
import { TwinlakeError } from '../../src/core/errors.ts';

function failure(f: () => unknown): TwinlakeError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(TwinlakeError);
    return e as TwinlakeError;
  }
  throw new Error('expected a failure');
}

describe('parseTableIdentifier', () => {
  it('splits the namespace levels from the table name', () => {
    expect(parseTableIdentifier('ns.table')).toEqual({ namespace: ['ns'], name: 'table' });
    expect(parseTableIdentifier('a.b.t')).toEqual({ namespace: ['a', 'b'], name: 't' });
    expect(parseTableIdentifier('sales.order items')).toEqual({ namespace: ['sales'], name: 'order items' });
  });

  it('round-trips with formatTableIdentifier', () => {
    for (const text of ['ns.t', 'a.b.c.d', 'Été.données']) expect(formatTableIdentifier(parseTableIdentifier(text))).toBe(text);
  });

  it('needs a namespace', () => {
    const e = failure(() => parseTableIdentifier('lonely'));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toContain('lonely');
  });

  it('rejects parts that could act as paths, naming the bad part', () => {
    const cases: [string, string, RegExp][] = [
      ['ns/x.t', 'ns/x', /path separator/],
      ['ns.a\\b', 'a\\b', /path separator/],
      ['ns..t', '', /empty/],
      ['.ns.t', '', /empty/],
      ['ns.t.', '', /empty/],
      ['ns.t\u0001', 't\u0001', /control character/],
      ['ns.t\n', 't\n', /control character/],
    ];
    for (const [text, part, why] of cases) {
      const e = failure(() => parseTableIdentifier(text));
      expect(e.kind, text).toBe('invalid-input');
      expect(e.message, text).toContain(JSON.stringify(part));
      expect(e.message, text).toMatch(why);
    }
  });
});

describe('checkTableIdentifier', () => {
  it('rejects what parsing cannot produce: dots, dot-dot and leading dots inside parts', () => {
    expect(failure(() => checkTableIdentifier({ namespace: ['a.b'], name: 't' })).message).toMatch(/contains '\.'/);
    expect(failure(() => checkTableIdentifier({ namespace: ['ns'], name: '..' })).message).toMatch(/'\.\.'/);
    expect(failure(() => checkTableIdentifier({ namespace: ['ns'], name: '.hidden' })).message).toMatch(/starts with '\.'/);
    expect(failure(() => checkTableIdentifier({ namespace: [], name: 't' })).message).toMatch(/at least one level/);
    expect(failure(() => checkTableIdentifier({ namespace: ['ns'], name: 'x'.repeat(256) })).message).toMatch(/longer than 255/);
  });

  it('accepts ordinary names', () => {
    expect(() => checkTableIdentifier({ namespace: ['bronze', 'crm'], name: 'customers_2024' })).not.toThrow();
  });
});
