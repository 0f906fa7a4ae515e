import { describe, expect, it } from 'vitest';
import { bucketHash, hashBytes, hashLong, murmur3Hash32 } from '../../../src/format/iceberg/murmur3.ts';
import { parseDate, parseTime, parseTimestamp } from '../../../src/format/iceberg/single-value.ts';

const micros = (text: string) => parseTimestamp(text, 'micros').value;
const nanos = (text: string) => parseTimestamp(text, 'nanos').value;

describe('Appendix B: 32-bit hash test vectors', () => {
  it.each([
    ['int', 34, 2017239379],
    ['long', 34n, 2017239379],
    ['decimal(9, 2)', '14.20', -500754589],
    ['date', parseDate('2017-11-16'), -653330422],
    ['time', parseTime('22:31:08'), -662762989],
    ['timestamp', micros('2017-11-16T22:31:08'), -2047944441],
    ['timestamp', micros('2017-11-16T22:31:08.000001'), -1207196810],
    ['timestamptz', micros('2017-11-16T14:31:08-08:00'), -2047944441],
    ['timestamptz', micros('2017-11-16T14:31:08.000001-08:00'), -1207196810],
    ['timestamp_ns', nanos('2017-11-16T22:31:08'), -2047944441],
    ['timestamp_ns', nanos('2017-11-16T22:31:08.000001001'), -1207196810],
    ['timestamptz_ns', nanos('2017-11-16T14:31:08-08:00'), -2047944441],
    ['timestamptz_ns', nanos('2017-11-16T14:31:08.000001001-08:00'), -1207196810],
    ['string', 'iceberg', 1210000089],
    ['uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7', 1488055340],
    ['fixed[4]', Uint8Array.of(0, 1, 2, 3), -188683207],
    ['binary', Uint8Array.of(0, 1, 2, 3), -188683207],
    // the appendix's second table: not bucketable types, hashes still defined
    ['boolean', true, 1392991556],
    ['float', 1.0, -142385009],
    ['float', 0.0, 1669671676],
    ['float', -0.0, 1669671676],
    ['double', 1.0, -142385009],
    ['double', 0.0, 1669671676],
    ['double', -0.0, 1669671676],
  ] as const)('%s %s → %d', (type, value, expected) => {
    expect(bucketHash(type, value)).toBe(expected);
  });

  it('hashes the uuid as its 16 big-endian bytes (Appendix B note 4)', () => {
    const bytes = Uint8Array.from([0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7]);
    expect(hashBytes(bytes)).toBe(1488055340);
    expect(bucketHash('uuid', bytes)).toBe(1488055340);
  });
});

describe('murmur3_x86_32', () => {
  it('matches the published reference values of the algorithm (seed 0 and others)', () => {
    const enc = (s: string) => new TextEncoder().encode(s);
    expect(murmur3Hash32(new Uint8Array(0))).toBe(0);
    expect(murmur3Hash32(new Uint8Array(0), 1)).toBe(0x514e28b7);
    expect(murmur3Hash32(new Uint8Array(0), 0xffffffff) >>> 0).toBe(0x81f16f39);
    expect(murmur3Hash32(Uint8Array.of(0, 0, 0, 0)) >>> 0).toBe(0x2362f9de);
    expect(murmur3Hash32(enc('Hello, world!'), 1234) >>> 0).toBe(0xfaf6cdb3);
    expect(murmur3Hash32(enc('The quick brown fox jumps over the lazy dog'), 0x9747b28c) >>> 0).toBe(0x2fa826cd);
  });

  it('covers every tail length', () => {
    const seen = new Set<number>();
    for (let n = 0; n <= 9; n++) seen.add(murmur3Hash32(Uint8Array.from({ length: n }, (_, i) => i + 1)));
    expect(seen.size).toBe(10);
  });
});

describe('integer hashing', () => {
  it('int and long hash alike for every value (Appendix B note 1)', () => {
    for (const v of [0, 1, -1, 34, -34, 2147483647, -2147483648, 1234567, -987654321]) {
      expect(bucketHash('int', v)).toBe(bucketHash('long', BigInt(v)));
    }
  });

  it('hashes a long from its 8 little-endian bytes, whether given as number or bigint', () => {
    for (const v of [0n, -1n, 2n ** 40n + 5n, -(2n ** 62n), 2n ** 63n - 1n, -(2n ** 63n)]) {
      const bytes = new Uint8Array(8);
      new DataView(bytes.buffer).setBigInt64(0, v, true);
      expect(hashLong(v)).toBe(murmur3Hash32(bytes));
      if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) expect(hashLong(Number(v))).toBe(hashLong(v));
    }
  });

  it('hashes a date as the long of its day count, time and timestamps as longs of micros', () => {
    expect(bucketHash('date', -1)).toBe(hashLong(-1n));
    expect(bucketHash('time', 0n)).toBe(hashLong(0));
    expect(bucketHash('timestamptz', -1n)).toBe(hashLong(-1n));
  });

  it('converts nanoseconds to microseconds by flooring before hashing (Appendix B note 3)', () => {
    expect(bucketHash('timestamp_ns', -1n)).toBe(hashLong(-1n));
    expect(bucketHash('timestamp_ns', -1000n)).toBe(hashLong(-1n));
    expect(bucketHash('timestamp_ns', -1001n)).toBe(hashLong(-2n));
    expect(bucketHash('timestamp_ns', 999n)).toBe(hashLong(0n));
  });
});

describe('decimal hashing', () => {
  it('uses the minimal two’s-complement bytes of the unscaled value, independent of scale', () => {
    expect(bucketHash('decimal(9, 2)', '14.20')).toBe(hashBytes(Uint8Array.of(0x05, 0x8c))); // 1420
    expect(bucketHash('decimal(9, 4)', '0.1420')).toBe(bucketHash('decimal(9, 2)', '14.20'));
    expect(bucketHash('decimal(9, 2)', '-0.01')).toBe(hashBytes(Uint8Array.of(0xff)));
    expect(bucketHash('decimal(9, 2)', '1.28')).toBe(hashBytes(Uint8Array.of(0x00, 0x80))); // 128 needs a sign byte
    expect(bucketHash('decimal(9, 2)', '0')).toBe(hashBytes(Uint8Array.of(0)));
    expect(bucketHash('decimal(9, 2)', 1420n)).toBe(bucketHash('decimal(9, 2)', '14.2'));
  });
});

describe('string hashing', () => {
  it('hashes UTF-8 bytes, including characters outside the BMP', () => {
    const s = 'zürich 😀';
    expect(bucketHash('string', s)).toBe(hashBytes(new TextEncoder().encode(s)));
    expect(bucketHash('string', '😀')).toBe(hashBytes(Uint8Array.of(0xf0, 0x9f, 0x98, 0x80)));
  });

  it('hashes long strings whole, and short ones after them without leftovers', () => {
    const enc = (x: string) => new TextEncoder().encode(x);
    for (const s of ['€'.repeat(5000), '😀x'.repeat(3000), 'ab', '', 'é'.repeat(300), 'c']) {
      expect(bucketHash('string', s)).toBe(hashBytes(enc(s)));
    }
  });
});

describe('floating point hashing', () => {
  it('canonicalizes NaN and widens float to double', () => {
    expect(bucketHash('double', NaN)).toBe(hashLong(0x7ff8000000000000n));
    expect(bucketHash('float', NaN)).toBe(bucketHash('double', NaN));
    expect(bucketHash('float', 0.1)).toBe(bucketHash('double', Math.fround(0.1)));
    expect(bucketHash('float', 0.1)).not.toBe(bucketHash('double', 0.1));
  });
});

describe('bad input', () => {
  it('refuses null, wrong value kinds and nested types', () => {
    expect(() => bucketHash('int', null)).toThrow(/null/);
    expect(() => bucketHash('int', 1.5)).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
    expect(() => bucketHash('string', 3)).toThrow(/expected a string/);
    expect(() => bucketHash('uuid', 'not-a-uuid')).toThrow(/uuid/);
    expect(() => bucketHash({ type: 'struct', fields: [] }, 1)).toThrow(expect.objectContaining({ kind: 'unsupported' }));
    expect(() => bucketHash('variant', 1)).toThrow(expect.objectContaining({ kind: 'unsupported' }));
  });
});
