import { describe, expect, it } from 'vitest';
import { hashLong } from '../../../src/format/iceberg/murmur3.ts';
import { parseDate, parseTime, parseTimestamp } from '../../../src/format/iceberg/single-value.ts';
import {
  applyTransform,
  bindTransform,
  canTransform,
  formatTransform,
  parseTransform,
  partitionFieldName,
  partitionHumanString,
  partitionPathSegment,
  partitionPathValue,
  transformResultType,
  truncateCodePoints,
  tryParseTransform,
  urlEncode,
} from '../../../src/format/iceberg/transforms.ts';
import { transformResultType as fromManifest } from '../../../src/format/iceberg/manifest.ts';

const ts = (text: string) => parseTimestamp(text, 'micros').value;
const tsNs = (text: string) => parseTimestamp(text, 'nanos').value;
const MS_PER_DAY = 86_400_000;
const MS_PER_HOUR = 3_600_000;

/** Reference ordinals from the platform's own UTC calendar (Date), independent of the code under test. */
function ref(ms: number) {
  const d = new Date(ms);
  const year = d.getUTCFullYear() - 1970;
  return { year, month: year * 12 + d.getUTCMonth(), day: Math.floor(ms / MS_PER_DAY), hour: Math.floor(ms / MS_PER_HOUR) };
}

describe('parsing transforms', () => {
  it('reads the spec’s JSON forms and writes them back', () => {
    for (const t of ['identity', 'year', 'month', 'day', 'hour', 'void', 'bucket[16]', 'truncate[4]']) {
      expect(formatTransform(parseTransform(t))).toBe(t);
    }
    expect(parseTransform(' bucket[ 16 ] ')).toEqual({ kind: 'bucket', param: 16 });
    expect(parseTransform('Day')).toEqual({ kind: 'day' });
  });

  it('reports unknown transforms as unsupported, and bad parameters as invalid', () => {
    expect(tryParseTransform('zorder')).toBeUndefined();
    expect(tryParseTransform('bucket[0]')).toBeUndefined();
    expect(() => parseTransform('zorder')).toThrow(expect.objectContaining({ kind: 'unsupported' }));
    expect(() => parseTransform('bucket[0]')).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
    expect(() => parseTransform('truncate[3000000000]')).toThrow(/between 1 and 2147483647/);
  });
});

describe('source types and result types (spec §Partition Transforms table)', () => {
  const all = ['boolean', 'int', 'long', 'float', 'double', 'decimal(9, 2)', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns', 'string', 'uuid', 'fixed[4]', 'binary'];
  const accepts: Record<string, string[]> = {
    identity: all,
    'bucket[8]': ['int', 'long', 'decimal(9, 2)', 'date', 'time', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns', 'string', 'uuid', 'fixed[4]', 'binary'],
    'truncate[8]': ['int', 'long', 'decimal(9, 2)', 'string', 'binary'],
    year: ['date', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns'],
    month: ['date', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns'],
    day: ['date', 'timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns'],
    hour: ['timestamp', 'timestamptz', 'timestamp_ns', 'timestamptz_ns'],
    void: all,
  };
  for (const [transform, ok] of Object.entries(accepts)) {
    it(`${transform} accepts exactly ${ok.length === all.length ? 'every primitive' : ok.join(', ')}`, () => {
      for (const t of all) expect([t, canTransform(transform, t)]).toEqual([t, ok.includes(t)]);
    });
  }

  it('refuses geometry, geography and nested types except for void, and unknown transforms', () => {
    expect(canTransform('identity', 'geometry(OGC:CRS84)')).toBe(false);
    expect(canTransform('bucket[4]', { type: 'struct', fields: [] })).toBe(false);
    expect(canTransform('void', { type: 'struct', fields: [] })).toBe(true);
    expect(canTransform('zorder', 'int')).toBe(false);
    expect(canTransform('bucket[0]', 'int')).toBe(false);
  });

  it('gives each transform’s result type', () => {
    expect(transformResultType('identity', 'decimal(9,2)')).toBe('decimal(9, 2)');
    expect(transformResultType('truncate[4]', 'binary')).toBe('binary');
    expect(transformResultType('bucket[16]', 'uuid')).toBe('int');
    expect(transformResultType('year', 'date')).toBe('int');
    expect(transformResultType('month', 'timestamp_ns')).toBe('int');
    expect(transformResultType('hour', 'timestamptz')).toBe('int');
    expect(transformResultType('day', 'timestamp')).toBe('date');
    expect(transformResultType('void', 'string')).toBe('string');
    expect(transformResultType('void', { type: 'struct', fields: [] })).toBe('int');
    expect(() => transformResultType('identity', { type: 'struct', fields: [] })).toThrow(/primitive/);
  });

  it('is the same function manifests use', () => {
    expect(fromManifest).toBe(transformResultType);
  });
});

describe('bucket', () => {
  it('is (hash & Integer.MAX_VALUE) % N on the Appendix B hashes', () => {
    // 34 hashes to 2017239379 (Appendix B)
    expect(applyTransform('bucket[100]', 'int', 34)).toBe(2017239379 % 100);
    expect(applyTransform('bucket[100]', 'long', 34n)).toBe(2017239379 % 100);
    // 'iceberg' hashes to 1210000089
    expect(applyTransform('bucket[16]', 'string', 'iceberg')).toBe(1210000089 % 16);
    // negative hashes lose their sign bit: -188683207 & 0x7fffffff = 1958800441
    expect(applyTransform('bucket[16]', 'binary', Uint8Array.of(0, 1, 2, 3))).toBe(((-188683207 & 0x7fffffff) >>> 0) % 16);
    expect(applyTransform('bucket[7]', 'timestamp_ns', tsNs('2017-11-16T22:31:08.000001001'))).toBe((-1207196810 & 0x7fffffff) % 7);
    expect(applyTransform('bucket[5]', 'decimal(9, 2)', '14.20')).toBe((-500754589 & 0x7fffffff) % 5);
  });

  it('puts negative ints and longs in buckets within [0, N)', () => {
    for (const v of [-1, -2, -34, -2147483648, -123456789]) {
      const b = applyTransform('bucket[10]', 'int', v) as number;
      expect(b).toBeGreaterThanOrEqual(0);
      expect(b).toBeLessThan(10);
      expect(b).toBe((hashLong(v) & 0x7fffffff) % 10);
      expect(applyTransform('bucket[10]', 'long', BigInt(v))).toBe(b);
    }
  });

  it('maps null to null', () => {
    expect(applyTransform('bucket[10]', 'string', null)).toBeNull();
  });
});

describe('truncate', () => {
  it('follows the spec’s examples', () => {
    expect(applyTransform('truncate[10]', 'int', 1)).toBe(0);
    expect(applyTransform('truncate[10]', 'int', -1)).toBe(-10);
    expect(applyTransform('truncate[10]', 'long', 1n)).toBe(0n);
    expect(applyTransform('truncate[10]', 'long', -1n)).toBe(-10n);
    expect(applyTransform('truncate[50]', 'decimal(9, 2)', '10.65')).toBe('10.50');
    expect(applyTransform('truncate[3]', 'string', 'iceberg')).toBe('ice');
    expect(applyTransform('truncate[3]', 'binary', Uint8Array.of(1, 2, 3, 4, 5))).toEqual(Uint8Array.of(1, 2, 3));
  });

  it('uses the floor-mod rule for negative integers', () => {
    const cases: [number, number, number][] = [
      [0, 10, 0],
      [9, 10, 0],
      [10, 10, 10],
      [-10, 10, -10],
      [-11, 10, -20],
      [-9, 10, -10],
      [-1, 1, -1],
      [7, 3, 6],
      [-7, 3, -9],
    ];
    for (const [v, w, expected] of cases) {
      expect(applyTransform(`truncate[${w}]`, 'int', v)).toBe(expected);
      expect(applyTransform(`truncate[${w}]`, 'long', BigInt(v))).toBe(BigInt(expected));
    }
  });

  it('refuses values whose truncation would overflow the type, and truncates every other extreme exactly', () => {
    const INT_MIN = -2147483648;
    const LONG_MIN = -(2n ** 63n);
    // The lower multiple of 10 of -2147483641 … -2147483648 is below the smallest int.
    for (const v of [INT_MIN, INT_MIN + 7]) {
      expect(() => applyTransform('truncate[10]', 'int', v)).toThrow(
        `iceberg partition: truncate[10] of int ${v}: its truncation, -2147483650, would be below the smallest int (-2147483648); Iceberg Java would wrap it into the largest partition, where range filters never find it`,
      );
    }
    expect(applyTransform('truncate[10]', 'int', INT_MIN + 8)).toBe(-2147483640);
    expect(applyTransform('truncate[10]', 'int', 2147483647)).toBe(2147483640);
    expect(applyTransform('truncate[1]', 'int', INT_MIN)).toBe(INT_MIN);
    expect(applyTransform('truncate[2]', 'int', INT_MIN)).toBe(INT_MIN);
    expect(() => applyTransform('truncate[10]', 'long', LONG_MIN)).toThrow(/^iceberg partition: truncate\[10\] of long -9223372036854775808: its truncation, -9223372036854775810, would be below the smallest long/);
    expect(() => applyTransform('truncate[10]', 'long', LONG_MIN + 7n)).toThrow(/would be below the smallest long/);
    expect(applyTransform('truncate[10]', 'long', LONG_MIN + 8n)).toBe(-9223372036854775800n);
    expect(applyTransform('truncate[10]', 'long', 2n ** 63n - 1n)).toBe(9223372036854775800n);
    expect(applyTransform('truncate[2]', 'long', LONG_MIN)).toBe(LONG_MIN);
    // Java's (v % W) + W overflows an int for widths over 2^30: its result is not a truncation.
    expect(() => applyTransform('truncate[2147483647]', 'int', 5)).toThrow(/^iceberg partition: truncate\[2147483647\] of int 5: Iceberg's formula \(v % 2147483647\) \+ 2147483647 would pass the largest int \(2147483647\)/);
    expect(applyTransform('truncate[2147483647]', 'long', 5n)).toBe(0n);
  });

  it('truncates a big negative long exactly', () => {
    const v = -(2n ** 62n) - 1n; // -4611686018427387905
    expect(applyTransform('truncate[1000]', 'long', v)).toBe(-4611686018427388000n);
  });

  it('truncates decimals on the unscaled value at the column’s scale', () => {
    expect(applyTransform('truncate[10]', 'decimal(9, 2)', '12.34')).toBe('12.30');
    expect(applyTransform('truncate[10]', 'decimal(9, 2)', '12.30')).toBe('12.30');
    expect(applyTransform('truncate[10]', 'decimal(9, 2)', '12.29')).toBe('12.20');
    expect(applyTransform('truncate[10]', 'decimal(9, 2)', '0.05')).toBe('0.00');
    expect(applyTransform('truncate[10]', 'decimal(9, 2)', '-0.05')).toBe('-0.10');
    expect(applyTransform('truncate[100]', 'decimal(9, 0)', '-1')).toBe('-100');
    // unscaled 10000000004 ≡ 2 (mod 3): digit sum 5
    expect(applyTransform('truncate[3]', 'decimal(38, 10)', '1.0000000004')).toBe('1.0000000002');
  });

  it('truncates strings by code points, never splitting a surrogate pair', () => {
    expect(applyTransform('truncate[2]', 'string', '😀😁😂')).toBe('😀😁');
    expect(applyTransform('truncate[2]', 'string', 'a😀b')).toBe('a😀');
    expect(applyTransform('truncate[1]', 'string', '😀')).toBe('😀');
    expect(applyTransform('truncate[5]', 'string', 'ab')).toBe('ab');
    expect(applyTransform('truncate[3]', 'string', 'zürich')).toBe('zür');
    expect(applyTransform('truncate[4]', 'string', '')).toBe('');
    const long = 'é'.repeat(100_000);
    expect(applyTransform('truncate[16]', 'string', long)).toBe('é'.repeat(16));
    // the result is at most W code points, and a prefix of the input
    for (const s of ['𝒜𝒝𝒞x', 'x𝒜', '日本語テキスト', '\u{10FFFF}\u{10000}']) {
      const out = truncateCodePoints(s, 2);
      expect([...out].length).toBe(Math.min(2, [...s].length));
      expect(s.startsWith(out)).toBe(true);
    }
  });

  it('truncates binary by bytes', () => {
    const utf8 = new TextEncoder().encode('😀'); // 4 bytes
    expect(applyTransform('truncate[2]', 'binary', utf8)).toEqual(utf8.slice(0, 2));
    expect(applyTransform('truncate[8]', 'binary', utf8)).toEqual(utf8);
    expect(applyTransform('truncate[2]', 'binary', new Uint8Array(0))).toEqual(new Uint8Array(0));
  });
});

describe('year, month, day, hour', () => {
  it('counts from the epoch, negative before 1970, with floor semantics', () => {
    for (const t of ['timestamp', 'timestamptz'] as const) {
      expect(applyTransform('year', t, 0n)).toBe(0);
      expect(applyTransform('month', t, 0n)).toBe(0);
      expect(applyTransform('day', t, 0n)).toBe(0);
      expect(applyTransform('hour', t, 0n)).toBe(0);
      expect(applyTransform('year', t, -1n)).toBe(-1);
      expect(applyTransform('month', t, -1n)).toBe(-1);
      expect(applyTransform('day', t, -1n)).toBe(-1);
      expect(applyTransform('hour', t, -1n)).toBe(-1);
    }
    expect(applyTransform('day', 'timestamp', -86_400_000_000n)).toBe(-1);
    expect(applyTransform('day', 'timestamp', -86_400_000_001n)).toBe(-2);
    expect(applyTransform('hour', 'timestamp', -3_600_000_000n)).toBe(-1);
    expect(applyTransform('hour', 'timestamp', -3_600_000_001n)).toBe(-2);
    expect(applyTransform('day', 'timestamp_ns', -1n)).toBe(-1);
    expect(applyTransform('hour', 'timestamptz_ns', -1n)).toBe(-1);
  });

  it('handles Dec 31 / Jan 1 and the leap day', () => {
    expect(applyTransform('year', 'timestamp', ts('2023-12-31T23:59:59.999999'))).toBe(53);
    expect(applyTransform('year', 'timestamp', ts('2024-01-01T00:00:00'))).toBe(54);
    expect(applyTransform('month', 'timestamp', ts('2023-12-31T23:59:59.999999'))).toBe(53 * 12 + 11);
    expect(applyTransform('month', 'timestamp', ts('2024-01-01T00:00:00'))).toBe(54 * 12);
    expect(applyTransform('month', 'timestamp', ts('2024-02-29T12:00:00'))).toBe(54 * 12 + 1);
    expect(applyTransform('month', 'timestamp', ts('2024-03-01T00:00:00'))).toBe(54 * 12 + 2);
    expect(applyTransform('day', 'date', parseDate('2024-02-29'))).toBe(Date.UTC(2024, 1, 29) / MS_PER_DAY);
    expect(applyTransform('day', 'timestamp', ts('2024-02-29T23:59:59.999999'))).toBe(Date.UTC(2024, 1, 29) / MS_PER_DAY);
    expect(applyTransform('year', 'date', parseDate('1969-12-31'))).toBe(-1);
    expect(applyTransform('year', 'date', parseDate('1969-01-01'))).toBe(-1);
    expect(applyTransform('year', 'date', parseDate('1968-12-31'))).toBe(-2);
    expect(applyTransform('month', 'date', parseDate('1969-12-01'))).toBe(-1);
    expect(applyTransform('month', 'date', parseDate('1969-11-30'))).toBe(-2);
    expect(applyTransform('month', 'date', parseDate('1900-02-28'))).toBe(-70 * 12 + 1);
    expect(applyTransform('hour', 'timestamptz', ts('2024-01-15T10:59:59.999999Z'))).toBe(Date.UTC(2024, 0, 15, 10) / MS_PER_HOUR);
    // a zoned literal is converted to UTC first: hours are UTC hours, no DST involved
    expect(applyTransform('hour', 'timestamptz', ts('2024-03-31T03:30:00+02:00'))).toBe(Date.UTC(2024, 2, 31, 1) / MS_PER_HOUR);
  });

  it('agrees with the platform’s UTC calendar on random instants from 1600 to 2400', () => {
    let seed = 12345;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const lo = Date.UTC(1600, 0, 1);
    const hi = Date.UTC(2400, 0, 1);
    for (let i = 0; i < 3000; i++) {
      const ms = Math.floor(lo + rand() * (hi - lo));
      const micros = BigInt(ms) * 1000n + BigInt(Math.floor(rand() * 1000));
      const r = ref(ms);
      expect([ms, applyTransform('year', 'timestamp', micros)]).toEqual([ms, r.year]);
      expect([ms, applyTransform('month', 'timestamptz', micros)]).toEqual([ms, r.month]);
      expect([ms, applyTransform('day', 'timestamp', micros)]).toEqual([ms, r.day]);
      expect([ms, applyTransform('hour', 'timestamptz', micros)]).toEqual([ms, r.hour]);
      expect(applyTransform('hour', 'timestamp_ns', micros * 1000n + 999n)).toBe(r.hour);
      const days = Math.floor(ms / MS_PER_DAY);
      const rd = ref(days * MS_PER_DAY);
      expect(applyTransform('year', 'date', days)).toBe(rd.year);
      expect(applyTransform('month', 'date', days)).toBe(rd.month);
      expect(applyTransform('day', 'date', days)).toBe(days);
    }
  });

  it('accepts a long given as a number and refuses non-integers', () => {
    expect(applyTransform('day', 'timestamp', 86_400_000_000)).toBe(1);
    expect(() => applyTransform('day', 'timestamp', '2024-01-01')).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
    expect(() => applyTransform('year', 'date', 1.5)).toThrow(/integer/);
  });
});

describe('identity and void', () => {
  it('keep or drop the value', () => {
    expect(applyTransform('identity', 'string', 'x')).toBe('x');
    expect(applyTransform('identity', 'double', NaN)).toBeNaN();
    expect(applyTransform('void', 'string', 'x')).toBeNull();
    expect(applyTransform('void', { type: 'struct', fields: [] }, 'x')).toBeNull();
  });

  it('every transform maps null to null', () => {
    for (const [t, type] of [['identity', 'int'], ['year', 'date'], ['month', 'timestamp'], ['day', 'timestamptz'], ['hour', 'timestamp'], ['bucket[3]', 'string'], ['truncate[3]', 'string']] as const) {
      expect(applyTransform(t, type, null)).toBeNull();
    }
  });

  it('refuses a transform that does not apply to the type, naming what it accepts', () => {
    expect(() => bindTransform('day', 'double')).toThrow(/day accepts date, timestamp/);
    expect(() => applyTransform('truncate[2]', 'uuid', 'x')).toThrow(expect.objectContaining({ kind: 'invalid-input' }));
  });
});

describe('partition field names (Iceberg Java PartitionSpec.Builder defaults)', () => {
  it('appends the transform’s suffix', () => {
    expect(partitionFieldName('day', 'ts')).toBe('ts_day');
    expect(partitionFieldName('year', 'ts')).toBe('ts_year');
    expect(partitionFieldName('month', 'ts')).toBe('ts_month');
    expect(partitionFieldName('hour', 'ts')).toBe('ts_hour');
    expect(partitionFieldName('bucket[16]', 'user_id')).toBe('user_id_bucket');
    expect(partitionFieldName('truncate[4]', 'zip_code')).toBe('zip_code_trunc');
    expect(partitionFieldName('void', 'x')).toBe('x_null');
    expect(partitionFieldName('identity', 'region')).toBe('region');
  });

  it('uses the full path for nested columns, and the column’s own name for identity', () => {
    expect(partitionFieldName('day', ['event', 'ts'])).toBe('event.ts_day');
    expect(partitionFieldName('identity', ['address', 'zip'])).toBe('zip');
    expect(partitionFieldName('identity', 'a.b')).toBe('a.b');
  });
});

describe('path values (Java PartitionSpec.partitionToPath)', () => {
  const day = (text: string) => Date.UTC(Number(text.slice(0, 4)), Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10))) / MS_PER_DAY;

  it('writes time ordinals as dates', () => {
    const v = ts('2024-01-15T10:30:00');
    const value = (t: string) => partitionPathValue(t, 'timestamp', applyTransform(t, 'timestamp', v));
    expect(value('year')).toBe('2024');
    expect(value('month')).toBe('2024-01');
    expect(value('day')).toBe('2024-01-15');
    expect(value('hour')).toBe('2024-01-15-10');
    expect(partitionPathValue('year', 'date', -1)).toBe('1969');
    expect(partitionPathValue('month', 'date', -1)).toBe('1969-12');
    expect(partitionPathValue('month', 'date', -13)).toBe('1968-12');
    expect(partitionPathValue('day', 'timestamp', -1)).toBe('1969-12-31');
    expect(partitionPathValue('hour', 'timestamp', -1)).toBe('1969-12-31-23');
    expect(partitionPathValue('day', 'date', day('2024-02-29'))).toBe('2024-02-29');
    expect(partitionPathValue('year', 'date', 10000 - 1970)).toBe('10000');
    expect(partitionPathValue('year', 'date', -1975)).toBe('-005');
  });

  it('writes identity values as Java prints them, escaped like URLEncoder', () => {
    expect(partitionPathValue('identity', 'date', day('2024-01-15'))).toBe('2024-01-15');
    expect(partitionPathValue('identity', 'timestamp', ts('2024-01-15T10:30:00'))).toBe('2024-01-15T10%3A30%3A00');
    expect(partitionHumanString('identity', 'timestamp', ts('2024-01-15T10:30:00.5'))).toBe('2024-01-15T10:30:00.5');
    expect(partitionHumanString('identity', 'timestamp', ts('1969-12-31T23:59:59.999999'))).toBe('1969-12-31T23:59:59.999999');
    expect(partitionHumanString('identity', 'timestamptz', ts('2024-01-15T10:30:00Z'))).toBe('2024-01-15T10:30:00+00:00');
    expect(partitionPathValue('identity', 'timestamptz', ts('2024-01-15T10:30:00Z'))).toBe('2024-01-15T10%3A30%3A00%2B00%3A00');
    expect(partitionHumanString('identity', 'timestamp_ns', tsNs('2024-01-15T10:30:00.000000001'))).toBe('2024-01-15T10:30:00.000000001');
    expect(partitionHumanString('identity', 'time', parseTime('10:00'))).toBe('10:00');
    expect(partitionHumanString('identity', 'time', parseTime('10:00:05'))).toBe('10:00:05');
    expect(partitionHumanString('identity', 'time', parseTime('10:00:00.5'))).toBe('10:00:00.500');
    expect(partitionHumanString('identity', 'time', parseTime('10:00:00.000001'))).toBe('10:00:00.000001');
    expect(partitionPathValue('identity', 'string', 'us east/1')).toBe('us+east%2F1');
    expect(partitionPathValue('identity', 'string', 'a-b_c.d*e~')).toBe('a-b_c.d*e%7E');
    expect(partitionPathValue('identity', 'string', 'zürich😀')).toBe('z%C3%BCrich%F0%9F%98%80');
    expect(partitionPathValue('identity', 'string', '%=&?#')).toBe('%25%3D%26%3F%23');
    expect(partitionPathValue('identity', 'binary', Uint8Array.of(0, 1, 2, 3))).toBe('AAECAw%3D%3D');
    expect(partitionPathValue('identity', 'uuid', 'f79c3e09-677c-4bbd-a479-3f349cb785e7')).toBe('f79c3e09-677c-4bbd-a479-3f349cb785e7');
    expect(partitionPathValue('identity', 'uuid', Uint8Array.of(0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd, 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7))).toBe('f79c3e09-677c-4bbd-a479-3f349cb785e7');
    expect(partitionPathValue('identity', 'boolean', true)).toBe('true');
    expect(partitionPathValue('identity', 'long', -5n)).toBe('-5');
  });

  it('prints decimals and floating point as Java’s toString does', () => {
    expect(partitionHumanString('truncate[50]', 'decimal(9, 2)', '10.50')).toBe('10.50');
    expect(partitionHumanString('identity', 'decimal(9, 2)', '-0.05')).toBe('-0.05');
    expect(partitionHumanString('identity', 'decimal(38, 10)', '0.0000000001')).toBe('1E-10');
    expect(partitionHumanString('identity', 'decimal(38, 10)', '0')).toBe('0E-10');
    expect(partitionHumanString('identity', 'decimal(38, 8)', '0.00000123')).toBe('0.00000123');
    expect(partitionHumanString('identity', 'decimal(38, 9)', '-0.000000123')).toBe('-1.23E-7');
    expect(partitionHumanString('identity', 'double', 1)).toBe('1.0');
    expect(partitionHumanString('identity', 'double', -2.5)).toBe('-2.5');
    expect(partitionHumanString('identity', 'double', 1e7)).toBe('1.0E7');
    expect(partitionHumanString('identity', 'double', 1234567.5)).toBe('1234567.5');
    expect(partitionHumanString('identity', 'double', 0.001)).toBe('0.001');
    expect(partitionHumanString('identity', 'double', 0.0001)).toBe('1.0E-4');
    expect(partitionHumanString('identity', 'double', 1.5e300)).toBe('1.5E300');
    expect(partitionHumanString('identity', 'double', NaN)).toBe('NaN');
    expect(partitionHumanString('identity', 'double', -Infinity)).toBe('-Infinity');
    expect(partitionHumanString('identity', 'double', -0)).toBe('-0.0');
    expect(partitionHumanString('identity', 'float', Math.fround(0.1))).toBe('0.1');
    expect(partitionHumanString('identity', 'float', Math.fround(3.4e38))).toBe('3.4E38');
  });

  it('writes bucket numbers, null as "null", and whole segments', () => {
    expect(partitionPathValue('bucket[16]', 'string', 7)).toBe('7');
    expect(partitionPathValue('day', 'timestamp', null)).toBe('__HIVE_DEFAULT_PARTITION__');
    expect(partitionPathValue('identity', 'string', null)).toBe('__HIVE_DEFAULT_PARTITION__');
    // The string "null" and a value spelling Hive's null name get folders of their own.
    expect(partitionPathValue('identity', 'string', 'null')).toBe('null');
    expect(partitionPathValue('identity', 'string', '__HIVE_DEFAULT_PARTITION__')).toBe('%5F_HIVE_DEFAULT_PARTITION__');
    expect(decodeURIComponent(partitionPathValue('identity', 'string', '__HIVE_DEFAULT_PARTITION__'))).toBe('__HIVE_DEFAULT_PARTITION__');
    expect(partitionPathValue('truncate[26]', 'string', '__HIVE_DEFAULT_PARTITION__')).toBe('%5F_HIVE_DEFAULT_PARTITION__');
    expect(partitionPathSegment('ts_day', 'day', 'timestamp', 0)).toBe('ts_day=1970-01-01');
    expect(partitionPathSegment('my col', 'identity', 'string', 'a/b')).toBe('my+col=a%2Fb');
  });

  it('escapes lone surrogates as "?" like Java', () => {
    expect(urlEncode('a\ud800b')).toBe('a%3Fb');
  });
});
