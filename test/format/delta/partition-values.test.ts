import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { civilDate, epochDay, formatDate, parsePartitionValue, serializePartitionValue } from '../../../src/format/delta/partition-values.ts';
import type { LiteralValue } from '../../../src/format/scan-task.ts';
import { thrown } from '../../helpers.ts';

describe('parsePartitionValue', () => {
  it('reads null, missing and the empty string as null for every type (PROTOCOL.md)', () => {
    for (const t of ['string', 'int', 'long', 'date', 'timestamp', 'timestamptz', 'boolean', 'binary', 'decimal(5, 2)']) {
      expect(parsePartitionValue(null, t)).toBeNull();
      expect(parsePartitionValue(undefined, t)).toBeNull();
      expect(parsePartitionValue('', t)).toBeNull();
    }
    // A string partition holding the word null is not null.
    expect(parsePartitionValue('null', 'string')).toBe('null');
  });

  it('reads dates as days since the epoch', () => {
    expect(parsePartitionValue('1970-01-01', 'date')).toBe(0);
    expect(parsePartitionValue('1969-12-31', 'date')).toBe(-1);
    expect(parsePartitionValue('2021-09-08', 'date')).toBe(Date.UTC(2021, 8, 8) / 86_400_000);
    expect(parsePartitionValue('0001-01-01', 'date')).toBe(-719162);
    expect(parsePartitionValue('9999-12-31', 'date')).toBe(2932896);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('2021-02-30', 'date')), 'data-invalid')).toBe(true);
  });

  it('reads the Spark timestamp form as UTC and the ISO form with its zone', () => {
    expect(parsePartitionValue('1970-01-01 00:00:00', 'timestamptz')).toBe(0n);
    expect(parsePartitionValue('2021-09-08 11:11:11', 'timestamptz')).toBe(BigInt(Date.UTC(2021, 8, 8, 11, 11, 11)) * 1000n);
    expect(parsePartitionValue('1969-12-31 23:59:59.999999', 'timestamptz')).toBe(-1n);
    expect(parsePartitionValue('1900-01-01 00:00:00.5', 'timestamptz')).toBe(BigInt(Date.UTC(1900, 0, 1)) * 1000n + 500000n);
    expect(parsePartitionValue('1970-01-01T00:00:00.123456Z', 'timestamptz')).toBe(123456n);
    expect(parsePartitionValue('2024-01-01T10:00:00.000000Z', 'timestamptz')).toBe(BigInt(Date.UTC(2024, 0, 1, 10)) * 1000n);
    expect(parsePartitionValue('2000-01-01T00:00:00.000-08:00', 'timestamptz')).toBe(BigInt(Date.UTC(2000, 0, 1, 8)) * 1000n);
    expect(parsePartitionValue('2013-07-05 17:01:00.123456', 'timestamp')).toBe(BigInt(Date.UTC(2013, 6, 5, 17, 1)) * 1000n + 123456n);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('2013-07-05 17:01:00+02:00', 'timestamp')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('yesterday', 'timestamptz')), 'data-invalid')).toBe(true);
  });

  it('reads numbers, booleans, decimals and binary', () => {
    expect(parsePartitionValue('-12', 'int')).toBe(-12);
    expect(parsePartitionValue('9223372036854775807', 'long')).toBe(9223372036854775807n);
    expect(parsePartitionValue('0.0', 'double')).toBe(0);
    expect(parsePartitionValue('1.1', 'float')).toBe(Math.fround(1.1));
    expect(parsePartitionValue('NaN', 'double')).toBeNaN();
    expect(parsePartitionValue('-Infinity', 'double')).toBe(-Infinity);
    expect(parsePartitionValue('false', 'boolean')).toBe(false);
    expect(parsePartitionValue('12.000000000000000000', 'decimal(38, 18)')).toBe('12.000000000000000000');
    expect(parsePartitionValue('0', 'decimal(1, 0)')).toBe('0');
    expect(parsePartitionValue('7', 'decimal(5, 2)')).toBe('7.00');
    expect(parsePartitionValue('😈', 'binary')).toEqual(new Uint8Array([0xf0, 0x9f, 0x98, 0x88]));
    expect(isTwinlakeError(thrown(() => parsePartitionValue('1.5', 'int')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('3000000000', 'int')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('9223372036854775808', 'long')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('yes', 'boolean')), 'data-invalid')).toBe(true);
    expect(isTwinlakeError(thrown(() => parsePartitionValue('x', 'uuid')), 'unsupported')).toBe(true);
  });
});

describe('serializePartitionValue', () => {
  it('writes the protocol forms', () => {
    expect(serializePartitionValue(null, 'string')).toBeNull();
    expect(serializePartitionValue(0, 'date')).toBe('1970-01-01');
    expect(serializePartitionValue(-719162, 'date')).toBe('0001-01-01');
    expect(serializePartitionValue(0n, 'timestamp')).toBe('1970-01-01 00:00:00');
    expect(serializePartitionValue(BigInt(Date.UTC(2013, 6, 5, 17, 1)) * 1000n + 123456n, 'timestamp')).toBe('2013-07-05 17:01:00.123456');
    expect(serializePartitionValue(-1n, 'timestamptz')).toBe('1969-12-31T23:59:59.999999Z');
    expect(serializePartitionValue(true, 'boolean')).toBe('true');
    expect(serializePartitionValue(1, 'double')).toBe('1.0');
    expect(serializePartitionValue(Math.fround(0.1), 'float')).toBe('0.1');
    expect(serializePartitionValue(-0, 'double')).toBe('-0.0');
    expect(serializePartitionValue(NaN, 'double')).toBe('NaN');
    expect(serializePartitionValue('12.3', 'decimal(5, 2)')).toBe('12.30');
    expect(serializePartitionValue(-5n, 'long')).toBe('-5');
  });

  it('refuses what Delta cannot hold faithfully', () => {
    const empty = thrown(() => serializePartitionValue('', 'string', 'region'));
    expect(isTwinlakeError(empty, 'unsupported')).toBe(true);
    expect(empty.message).toMatch(/^delta partition value region: expected a non-empty string/);
    expect(isTwinlakeError(thrown(() => serializePartitionValue(new Uint8Array([0xff]), 'binary')), 'unsupported')).toBe(true);
    expect(isTwinlakeError(thrown(() => serializePartitionValue('1.234', 'decimal(5, 2)')), 'invalid-input')).toBe(true);
    expect(isTwinlakeError(thrown(() => serializePartitionValue(5, 'timestamptz')), 'invalid-input')).toBe(true);
    expect(isTwinlakeError(thrown(() => serializePartitionValue(1, 'time')), 'unsupported')).toBe(true);
  });

  it('round-trips values of every type', () => {
    const cases: [string, LiteralValue][] = [
      ['string', 'plain'],
      ['string', 'ünïcödé 😈 / %20 = x'],
      ['string', ' '],
      ['int', -2147483648],
      ['int', 2147483647],
      ['long', -(2n ** 63n)],
      ['long', 2n ** 63n - 1n],
      ['double', 0.1 + 0.2],
      ['double', -1e300],
      ['double', 5e-324],
      ['float', Math.fround(3.4e38)],
      ['float', Math.fround(-1.17549435e-38)],
      ['boolean', false],
      ['date', -1],
      ['date', 19000],
      ['date', -719162],
      ['timestamp', -1n],
      ['timestamp', -62135596800000000n], // 0001-01-01 00:00:00
      ['timestamp', 253402300799999999n], // 9999-12-31 23:59:59.999999
      ['timestamptz', -2208988800000001n], // 1899-12-31 23:59:59.999999
      ['timestamptz', 1700000000123456n],
      ['decimal(38, 18)', '-0.000000000000000001'],
      ['decimal(10, 0)', '9999999999'],
      ['binary', new TextEncoder().encode('bytes \u0001\u0002')],
    ];
    for (const [type, v] of cases) {
      const s = serializePartitionValue(v, type);
      expect(parsePartitionValue(s, type), `${type} ${String(v)} via ${s}`).toEqual(v);
    }
  });
});

describe('civil dates', () => {
  it('agrees with Date.UTC over four centuries, leap days included', () => {
    for (let d = -150000; d <= 150000; d += 97) {
      const { year, month, day } = civilDate(d);
      const ms = new Date(0);
      ms.setUTCFullYear(year, month - 1, day);
      expect(Math.floor(ms.getTime() / 86_400_000)).toBe(d);
      expect(epochDay(year, month, day)).toBe(d);
    }
    expect(formatDate(epochDay(2000, 2, 29))).toBe('2000-02-29');
  });
});
