import { describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from '../../src/core/json.ts';

describe('bigint-safe JSON', () => {
  it('keeps 64-bit integers exact and leaves everything else as JSON.parse would', () => {
    const text = '{"id": 6588442163335216722, "small": 9007199254740991, "neg": -9223372036854775808, "f": 12345678901234567.5, "e": 1.5e300, "s": "12345678901234567890", "arr": [1234567890123456, 0, -0.5]}';
    const v = parseJson(text);
    expect(v.id).toBe(6588442163335216722n);
    expect(v.small).toBe(9007199254740991);
    expect(v.neg).toBe(-9223372036854775808n);
    expect(v.f).toBe(12345678901234567.5);
    expect(v.e).toBe(1.5e300);
    expect(v.s).toBe('12345678901234567890');
    expect(v.arr).toEqual([1234567890123456, 0, -0.5]);
    expect(stringifyJson(v)).toBe('{"id":6588442163335216722,"small":9007199254740991,"neg":-9223372036854775808,"f":12345678901234568,"e":1.5e+300,"s":"12345678901234567890","arr":[1234567890123456,0,-0.5]}');
  });

  it('never mistakes a string for a marked integer', () => {
    const v = parseJson('{"a": "\\u0001big:5", "b": 12345678901234567890}');
    expect(v.a).toBe('\u0001big:5');
    expect(v.b).toBe(12345678901234567890n);
  });

  it('leaves integers inside strings alone wherever they stand, and reads a lone long integer', () => {
    const v = parseJson('{"a": "x:12345678901234567890,", "b": [ "[12345678901234567890]" ,\n 12345678901234567890 ], "c": {"d":-12345678901234567890}}');
    expect(v).toEqual({ a: 'x:12345678901234567890,', b: ['[12345678901234567890]', 12345678901234567890n], c: { d: -12345678901234567890n } });
    expect(parseJson(' 12345678901234567890 ')).toBe(12345678901234567890n);
    expect(parseJson('[12345678901234567890e2]')).toEqual([12345678901234567890e2]);
  });

  it('names the line and column of malformed input', () => {
    expect(() => parseJson('{\n  "a": 1,\n  "b": \n}', 'meta.json')).toThrow(/meta\.json: .*line 4, column 1/);
    expect(() => parseJson('[1, 2', 'x')).toThrow(/x: expected ',' or ']'/);
  });

  it('agrees with JSON.parse on documents without big integers', () => {
    let seed = 1;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const gen = (depth: number): unknown => {
      const r = rand();
      if (depth > 3 || r < 0.3) return [null, true, false, rand() * 1e6 - 5e5, Math.floor(rand() * 1e9), `s${rand()}"\\\n`][Math.floor(rand() * 6)];
      if (r < 0.65) return Array.from({ length: Math.floor(rand() * 4) }, () => gen(depth + 1));
      return Object.fromEntries(Array.from({ length: Math.floor(rand() * 4) }, (_, i) => [`k${i}`, gen(depth + 1)]));
    };
    for (let i = 0; i < 200; i++) {
      const text = JSON.stringify(gen(0), null, i % 2 ? 2 : undefined);
      expect(parseJson(text)).toEqual(JSON.parse(text));
    }
  });
});

describe('compact stringify', () => {
  it('writes what JSON.stringify writes for JSON values, and bigints as numbers', () => {
    const values: unknown[] = [
      { a: 1, b: 'x"y\n', c: [1, null, undefined, () => 1], d: undefined, e: { f: true, g: -0.5e-7 }, h: NaN, i: new Date(0) },
      [],
      {},
      'é🙂',
      [[[]]],
    ];
    for (const v of values) expect(stringifyJson(v)).toBe(JSON.stringify(v));
    expect(stringifyJson({ id: 12345678901234567890n, l: [1n, -2n] })).toBe('{"id":12345678901234567890,"l":[1,-2]}');
    expect(stringifyJson({ id: 9n }, 2)).toBe('{\n  "id": 9\n}');
  });
});
