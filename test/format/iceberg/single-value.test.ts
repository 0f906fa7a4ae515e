import { describe, expect, it } from 'vitest';
import {
  bytesToHex,
  compareUtf8,
  formatDate,
  fromBinary,
  fromJsonValue,
  parseDate,
  parseTime,
  parseTimestamp,
  toBinary,
  toJsonValue,
  truncateBinaryLowerBound,
  truncateBinaryUpperBound,
  truncateLowerBound,
  truncateUpperBound,
} from '../../../src/format/iceberg/single-value.ts';

/** Murmur3 x86 32-bit, seed 0, written from the algorithm's description for these checks. */
function murmur3(bytes: Uint8Array): number {
  const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));
  const mixK = (k: number) => Math.imul(rotl(Math.imul(k, 0xcc9e2d51), 15), 0x1b873593);
  let h = 0;
  const blocks = bytes.length >> 2;
  for (let i = 0; i < blocks; i++) {
    const k = bytes[4 * i] | (bytes[4 * i + 1] << 8) | (bytes[4 * i + 2] << 16) | (bytes[4 * i + 3] << 24);
    h ^= mixK(k);
    h = (Math.imul(rotl(h, 13), 5) + 0xe6546b64) | 0;
  }
  let k = 0;
  const tail = blocks * 4;
  switch (bytes.length & 3) {
    case 3: k ^= bytes[tail + 2] << 16; // falls through
    case 2: k ^= bytes[tail + 1] << 8; // falls through
    case 1: k ^= bytes[tail]; h ^= mixK(k);
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h | 0;
}

const hex = (b: Uint8Array) => bytesToHex(b);
const utf8 = (s: string) => Buffer.from(s, 'utf8');

describe('binary single values against the spec vectors (Appendix B hashes the Appendix D bytes)', () => {
  it('long, int, date, time and timestamps hash as 8-byte little-endian longs', () => {
    expect(murmur3(toBinary('long', 34n))).toBe(2017239379);
    // int hashes as a long (Appendix B note 1); its own serialization is 4 bytes.
    expect(hex(toBinary('int', 34))).toBe('22000000');
    expect(murmur3(toBinary('long', BigInt(fromBinary('int', toBinary('int', 34)) as number)))).toBe(2017239379);
    const days = parseDate('2017-11-16');
    expect(days).toBe(Date.UTC(2017, 10, 16) / 86_400_000);
    expect(hex(toBinary('date', days))).toBe(Buffer.from(Int32Array.of(days).buffer).toString('hex'));
    expect(murmur3(toBinary('long', BigInt(days)))).toBe(-653330422);
    expect(murmur3(toBinary('time', parseTime('22:31:08')))).toBe(-662762989);
    expect(murmur3(toBinary('timestamp', parseTimestamp('2017-11-16T22:31:08').value))).toBe(-2047944441);
    expect(murmur3(toBinary('timestamp', parseTimestamp('2017-11-16T22:31:08.000001').value))).toBe(-1207196810);
    expect(murmur3(toBinary('timestamptz', parseTimestamp('2017-11-16T14:31:08-08:00').value))).toBe(-2047944441);
    expect(murmur3(toBinary('timestamptz', parseTimestamp('2017-11-16T14:31:08.000001-08:00').value))).toBe(-1207196810);
  });

  it('decimal is the minimal two’s-complement big-endian unscaled value', () => {
    expect(hex(toBinary('decimal(4, 2)', '14.20'))).toBe('058c');
    expect(murmur3(toBinary('decimal(4, 2)', '14.20'))).toBe(-500754589);
    expect(hex(toBinary('decimal(9, 2)', '0.00'))).toBe('00');
    expect(hex(toBinary('decimal(9, 2)', '1.27'))).toBe('7f');
    expect(hex(toBinary('decimal(9, 2)', '1.28'))).toBe('0080');
    expect(hex(toBinary('decimal(9, 2)', '-1.28'))).toBe('80');
    expect(hex(toBinary('decimal(9, 2)', '-1.29'))).toBe('ff7f');
    expect(fromBinary('decimal(9, 2)', Uint8Array.of(0xff, 0x7f))).toBe('-1.29');
    const big = '-99999999999999999999999999999999999.999';
    expect(fromBinary('decimal(38, 3)', toBinary('decimal(38, 3)', big))).toBe(big);
    expect(() => toBinary('decimal(9, 2)', '1.234')).toThrow(/at most 2 fractional digits/);
  });

  it('string, uuid, fixed and binary', () => {
    expect(murmur3(toBinary('string', 'iceberg'))).toBe(1210000089);
    expect(hex(toBinary('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'))).toBe('f79c3e09677c4bbda4793f349cb785e7');
    expect(murmur3(toBinary('uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'))).toBe(1488055340);
    expect(murmur3(toBinary('fixed[4]', Uint8Array.of(0, 1, 2, 3)))).toBe(-188683207);
    expect(murmur3(toBinary('binary', Uint8Array.of(0, 1, 2, 3)))).toBe(-188683207);
    expect(() => toBinary('fixed[4]', Uint8Array.of(0, 1))).toThrow(/4 bytes/);
  });

  it('booleans, floats and doubles', () => {
    expect(hex(toBinary('boolean', true))).toBe('01');
    expect(fromBinary('boolean', Uint8Array.of(7))).toBe(true);
    expect(hex(toBinary('float', 1))).toBe('0000803f');
    expect(hex(toBinary('double', 1))).toBe('000000000000f03f');
    expect(Object.is(fromBinary('double', toBinary('double', -0)), -0)).toBe(true);
    expect(fromBinary('float', toBinary('float', 1.1))).toBe(Math.fround(1.1));
  });

  it('round-trips every primitive', () => {
    const cases: [string, unknown][] = [
      ['long', -(2n ** 63n)], ['long', 2n ** 63n - 1n], ['int', -(2 ** 31)], ['date', -719528], ['time', 86_399_999_999n],
      ['timestamptz', -62135596800000000n], ['timestamp_ns', 1510871468123456789n], ['string', 'a\u0000é𝄞'], ['binary', Uint8Array.of(0, 255)],
    ];
    for (const [type, value] of cases) expect(fromBinary(type, toBinary(type, value as never))).toEqual(value);
    expect(() => toBinary('int', 2 ** 31)).toThrow(/32 bits/);
    expect(() => toBinary('long', 2n ** 63n)).toThrow(/64 bits/);
  });
});

describe('JSON single values (Appendix D examples)', () => {
  it('parses and prints the spec examples', () => {
    const examples: [string, unknown][] = [
      ['boolean', true], ['int', 34], ['long', 34], ['float', 1], ['double', 1], ['decimal(4, 2)', '14.20'],
      ['date', '2017-11-16'], ['time', '22:31:08.123456'], ['timestamp', '2017-11-16T22:31:08.123456'],
      ['timestamptz', '2017-11-16T22:31:08.123456+00:00'], ['timestamp_ns', '2017-11-16T22:31:08.123456789'],
      ['timestamptz_ns', '2017-11-16T22:31:08.123456789+00:00'], ['string', 'iceberg'],
      ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'], ['fixed[4]', '000102ff'], ['binary', '000102ff'],
    ];
    for (const [type, json] of examples) expect(toJsonValue(type, fromJsonValue(type, json))).toEqual(json);
    expect(fromJsonValue('timestamptz', '2017-11-16T22:31:08.123456+00:00')).toBe(BigInt(Date.UTC(2017, 10, 16, 22, 31, 8)) * 1000n + 123456n);
    expect(fromJsonValue('timestamptz', '2017-11-16T14:31:08-08:00')).toBe(BigInt(Date.UTC(2017, 10, 16, 22, 31, 8)) * 1000n);
    expect(() => fromJsonValue('timestamp', '2017-11-16T22:31:08+00:00')).toThrow(/without zone/);
    expect(() => fromJsonValue('timestamptz', '2017-11-16T22:31:08')).toThrow(/zone offset/);
    expect(toJsonValue('long', 2n ** 62n)).toBe(2n ** 62n);
  });

  it('serializes nested values by field ID, arrays and key/value arrays', () => {
    const type = {
      type: 'struct' as const,
      fields: [
        { id: 1, name: 'a', required: false, type: 'int' },
        { id: 2, name: 'b', required: false, type: { type: 'map' as const, 'key-id': 3, key: 'string', 'value-id': 4, value: 'date', 'value-required': false } },
        { id: 5, name: 'c', required: false, type: { type: 'list' as const, 'element-id': 6, element: 'long', 'element-required': false } },
      ],
    };
    const json = { '1': 1, '2': { keys: ['a', 'b'], values: ['2017-11-16', null] }, '5': [1, 2, 3] };
    expect(toJsonValue(type, fromJsonValue(type, json))).toEqual(json);
  });

  it('prints dates outside years 0–9999 as java.time does', () => {
    expect(formatDate(parseDate('+10000-01-01'))).toBe('+10000-01-01');
    expect(formatDate(parseDate('-0001-12-31'))).toBe('-0001-12-31');
    expect(formatDate(0)).toBe('1970-01-01');
    expect(() => parseDate('2017-02-30')).toThrow(/not a calendar date/);
  });
});

describe('bound truncation', () => {
  it('cuts strings at 16 code points, not UTF-16 units', () => {
    const clefs = '𝄞'.repeat(20);
    expect(Array.from(truncateLowerBound(clefs)).length).toBe(16);
    expect(truncateLowerBound(clefs)).toBe('𝄞'.repeat(16));
    expect(truncateLowerBound('short')).toBe('short');
    expect(truncateUpperBound('short')).toBe('short');
    expect(truncateUpperBound('a'.repeat(20))).toBe('a'.repeat(15) + 'b');
    expect(truncateUpperBound('𝄞'.repeat(20))).toBe('𝄞'.repeat(15) + String.fromCodePoint(0x1d11f));
  });

  it('skips code points that cannot be incremented', () => {
    const max = String.fromCodePoint(0x10ffff);
    expect(truncateUpperBound('a'.repeat(15) + max + 'zz')).toBe('a'.repeat(14) + 'b');
    expect(truncateUpperBound(max.repeat(17))).toBeUndefined();
    // U+D7FF + 1 would be a surrogate, which UTF-8 cannot hold: the next code point is U+E000.
    expect(truncateUpperBound('a'.repeat(15) + '\ud7ff' + 'x')).toBe('a'.repeat(15) + '\ue000');
  });

  it('upper bounds sort after every string with the same prefix, in UTF-8 byte order', () => {
    const alphabet = ['a', 'z', '\u007f', 'é', '\uffff', '\ud7ff', '𝄞', String.fromCodePoint(0x10ffff), '\u0000'];
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let n = 0; n < 500; n++) {
      const len = 10 + Math.floor(rand() * 15);
      let s = '';
      for (let i = 0; i < len; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
      const lower = truncateLowerBound(s);
      const upper = truncateUpperBound(s);
      expect(Buffer.compare(utf8(lower), utf8(s))).toBeLessThanOrEqual(0);
      expect(compareUtf8(lower, s)).toBeLessThanOrEqual(0);
      if (upper !== undefined) {
        expect(Buffer.compare(utf8(upper), utf8(s))).toBeGreaterThanOrEqual(0);
        expect(Array.from(upper).length).toBeLessThanOrEqual(16);
        expect(utf8(upper).toString('utf8')).toBe(upper); // valid UTF-8, no lone surrogates
        // Any longer string with the same 16-code-point prefix also stays below the bound.
        if (Array.from(s).length > 16) expect(Buffer.compare(utf8(upper), utf8(lower + String.fromCodePoint(0x10ffff).repeat(3)))).toBeGreaterThan(0);
      } else {
        expect(Array.from(s).slice(0, 16).every((c) => c === String.fromCodePoint(0x10ffff))).toBe(true);
      }
    }
  });

  it('binary bounds', () => {
    const bytes = Uint8Array.from({ length: 20 }, (_, i) => i);
    expect(hex(truncateBinaryLowerBound(bytes))).toBe(hex(bytes.slice(0, 16)));
    expect(hex(truncateBinaryUpperBound(bytes)!)).toBe(hex(Uint8Array.from({ length: 16 }, (_, i) => (i === 15 ? 16 : i))));
    const ff = new Uint8Array(20).fill(0xff);
    ff[3] = 0x10;
    expect(hex(truncateBinaryUpperBound(ff)!)).toBe('ffffff11');
    expect(truncateBinaryUpperBound(new Uint8Array(17).fill(0xff))).toBeUndefined();
    expect(truncateBinaryUpperBound(Uint8Array.of(1, 2))).toEqual(Uint8Array.of(1, 2));
  });

  it('compares strings by code point like UTF-8 bytes, unlike JavaScript', () => {
    expect('𝄞' < '\uffff').toBe(true);
    expect(compareUtf8('𝄞', '\uffff')).toBeGreaterThan(0);
    expect(compareUtf8('ab', 'abc')).toBeLessThan(0);
  });
});
