import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import { parseStats, statsValueAt } from '../../../src/format/delta/stats.ts';

describe('parseStats', () => {
  it('reads the statistics of a Spark-written add (DAT nested_types)', () => {
    const s = parseStats(
      '{"numRecords":5,"minValues":{"pk":0,"struct":{"float64":0.0}},"maxValues":{"pk":4,"struct":{"float64":4.0}},"nullCount":{"pk":0,"struct":{"float64":0,"bool":0},"array":0,"map":0}}',
    );
    expect(s.numRecords).toBe(5);
    expect(s.tightBounds).toBeUndefined();
    expect(statsValueAt(s.maxValues, ['struct', 'float64'])).toBe(4);
    expect(statsValueAt(s.nullCount, ['struct', 'bool'])).toBe(0);
    expect(statsValueAt(s.nullCount, ['array'])).toBe(0);
    expect(statsValueAt(s.minValues, ['struct', 'bool'])).toBeUndefined();
    expect(statsValueAt(s.minValues, ['pk', 'deeper'])).toBeUndefined();
  });

  it('keeps longs beyond 2^53 exact and reads tightBounds', () => {
    const s = parseStats('{"numRecords":1,"minValues":{"id":9223372036854775807},"tightBounds":false}');
    expect(s.minValues.id).toBe(9223372036854775807n);
    expect(s.tightBounds).toBe(false);
    expect(s.maxValues).toEqual({});
  });

  it('allows stats with only a record count, or none at all', () => {
    expect(parseStats('{"numRecords":50}')).toEqual({ numRecords: 50, minValues: {}, maxValues: {}, nullCount: {} });
    expect(parseStats('{}').numRecords).toBeUndefined();
  });

  it('refuses malformed stats', () => {
    for (const bad of ['[1]', '{"numRecords":-1}', '{"numRecords":"3"}', '{"minValues":3}', '{"tightBounds":"yes"}', '{']) {
      let error: unknown;
      try {
        parseStats(bad);
      } catch (e) {
        error = e;
      }
      expect(isTwinlakeError(error, 'data-invalid'), bad).toBe(true);
      expect((error as Error).message.startsWith('delta stats'), bad).toBe(true);
    }
  });
});
