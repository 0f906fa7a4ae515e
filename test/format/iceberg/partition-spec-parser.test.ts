import { describe, expect, it } from 'vitest';
import { isTwinlakeError } from '../../../src/core/errors.ts';
import {
  equivalentPartitionSpecs,
  evolvePartitionSpec,
  formatPartitionSpec,
  parsePartitionSpec,
  validatePartitionSpec,
} from '../../../src/format/iceberg/partition-spec-parser.ts';
import type { NestedField, PartitionSpec, Schema } from '../../../src/format/iceberg/types.ts';

const f = (id: number, name: string, type: NestedField['type']): NestedField => ({ id, name, required: false, type });

const schema: Schema = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    f(1, 'id', 'long'),
    f(2, 'ts', 'timestamptz'),
    f(3, 'region', 'string'),
    f(4, 'user_id', 'long'),
    f(5, 'zip_code', 'string'),
    f(6, 'amount', 'double'),
    f(7, 'event_time', 'timestamp'),
    f(8, 'created_at', 'date'),
    f(9, 'my col', 'string'),
    f(10, 'address', { type: 'struct', fields: [f(11, 'zip', 'string'), f(12, 'geo', { type: 'struct', fields: [f(13, 'lat', 'double')] })] }),
    f(14, 'tags', { type: 'list', 'element-id': 15, element: { type: 'struct', fields: [f(16, 'k', 'string')] }, 'element-required': false }),
    f(17, 'price', 'decimal(9, 2)'),
    f(18, 'a"b', 'int'),
    f(19, 'Mixed', 'int'),
  ],
};

/** The error a call throws, checked to be invalid-input. */
function error(fn: () => unknown): { message: string; position?: number } {
  try {
    fn();
  } catch (e) {
    if (!isTwinlakeError(e, 'invalid-input')) throw e;
    return { message: e.message, position: e.context.position as number | undefined };
  }
  throw new Error('expected an error');
}

const parse = (text: string) => parsePartitionSpec(text, schema);
const fields = (text: string) => parse(text).fields.map((x) => [x['source-id'], x['field-id'], x.name, x.transform]);

describe('parsePartitionSpec: happy paths', () => {
  it('parses every transform with Iceberg’s default names and IDs from 1000', () => {
    expect(fields('region, year(created_at), month(ts), day(event_time), bucket(16, user_id), truncate(4, zip_code), void(id)')).toEqual([
      [3, 1000, 'region', 'identity'],
      [8, 1001, 'created_at_year', 'year'],
      [2, 1002, 'ts_month', 'month'],
      [7, 1003, 'event_time_day', 'day'],
      [4, 1004, 'user_id_bucket', 'bucket[16]'],
      [5, 1005, 'zip_code_trunc', 'truncate[4]'],
      [1, 1006, 'id_null', 'void'],
    ]);
    expect(fields('hour(ts)')).toEqual([[2, 1000, 'ts_hour', 'hour']]);
  });

  it('parses the issue’s combination, where one column has two different transforms', () => {
    expect(fields('day(ts), bucket(16, user_id), truncate(2, region), region')).toEqual([
      [2, 1000, 'ts_day', 'day'],
      [4, 1001, 'user_id_bucket', 'bucket[16]'],
      [3, 1002, 'region_trunc', 'truncate[2]'],
      [3, 1003, 'region', 'identity'],
    ]);
  });

  it('tolerates whitespace, case, plural transform names and either argument order', () => {
    expect(fields('  DAY ( ts )\t,\n bucket(\t16 ,user_id ) , Truncate(zip_code, 4), hours(event_time), identity(region)')).toEqual([
      [2, 1000, 'ts_day', 'day'],
      [4, 1001, 'user_id_bucket', 'bucket[16]'],
      [5, 1002, 'zip_code_trunc', 'truncate[4]'],
      [7, 1003, 'event_time_hour', 'hour'],
      [3, 1004, 'region', 'identity'],
    ]);
    expect(fields('years(created_at)')).toEqual([[8, 1000, 'created_at_year', 'year']]);
  });

  it('reads quoted and nested column names', () => {
    expect(fields('"my col", bucket(4, `my col`)')).toEqual([
      [9, 1000, 'my col', 'identity'],
      [9, 1001, 'my col_bucket', 'bucket[4]'],
    ]);
    expect(fields('address.zip, truncate(2, "address".`zip`), bucket(3, address.zip), address.geo.lat')).toEqual([
      [11, 1000, 'zip', 'identity'],
      [11, 1001, 'address.zip_trunc', 'truncate[2]'],
      [11, 1002, 'address.zip_bucket', 'bucket[3]'],
      [13, 1003, 'lat', 'identity'],
    ]);
    expect(fields('"a""b"')).toEqual([[18, 1000, 'a"b', 'identity']]);
    expect(fields('`a"b` AS q, bucket(2, `a"b`) AS `c``d`')).toEqual([
      [18, 1000, 'q', 'identity'],
      [18, 1001, 'c`d', 'bucket[2]'],
    ]);
  });

  it('matches a column case-insensitively when the exact name is absent', () => {
    expect(fields('REGION, mixed')).toEqual([
      [3, 1000, 'region', 'identity'],
      [19, 1001, 'Mixed', 'identity'],
    ]);
  });

  it('renames with AS', () => {
    expect(fields('day(ts) AS d, bucket(16, user_id) as "user bucket"')).toEqual([
      [2, 1000, 'd', 'day'],
      [4, 1001, 'user bucket', 'bucket[16]'],
    ]);
  });

  it('refuses an empty text (it would drop a table\'s partitioning) and honours spec ID and last partition ID', () => {
    for (const text of ['', '   ']) expect(error(() => parse(text)).message).toBe('partition spec: the partition spec is empty; expected fields such as "day(ts), region"');
    expect(parsePartitionSpec('region', schema, { specId: 3, lastPartitionId: 1007 })).toEqual({
      'spec-id': 3,
      fields: [{ 'source-id': 3, 'field-id': 1008, name: 'region', transform: 'identity' }],
    });
  });

  it('accepts the largest bucket count', () => {
    expect(fields('bucket(2147483647, id)')[0]![3]).toBe('bucket[2147483647]');
  });
});

describe('parsePartitionSpec: errors, with positions', () => {
  it('names an unknown column and lists the available ones', () => {
    const e = error(() => parse('region, day(nope)'));
    expect(e.message).toMatch(/^partition spec: unknown column nope at character 13; available columns: id, ts, region, user_id, zip_code, amount, event_time, created_at, "my col", address\.zip, address\.geo\.lat, price/);
    expect(e.position).toBe(13);
    expect(error(() => parse('address.nope')).message).toMatch(/unknown column address\.nope at character 1/);
    expect(error(() => parse('region.x')).message).toMatch(/region is a string, not a struct/);
  });

  it('refuses a case-insensitive name that matches two columns', () => {
    const twins: Schema = { ...schema, fields: [...schema.fields, f(40, 'Zone', 'string'), f(41, 'ZONE', 'string')] };
    expect(error(() => parsePartitionSpec('zone', twins)).message).toMatch(/column zone at character 1 is ambiguous: Zone, ZONE differ only in case/);
    expect(parsePartitionSpec('ZONE', twins).fields[0]!['source-id']).toBe(41);
  });

  it('refuses sources inside lists and non-primitive sources', () => {
    expect(error(() => parse('tags.k')).message).toMatch(/column tags\.k at character 1 is inside a list/);
    expect(error(() => parse('bucket(4, address)')).message).toMatch(/column address is a struct<zip: string, geo: struct<lat: double>>; partition by one of its primitive fields/);
  });

  it('says which types a transform accepts when the column’s type does not fit', () => {
    const e = error(() => parse('region, day(amount)'));
    expect(e.message).toBe(
      'partition spec: day(amount) at character 9: day does not apply to column amount of type double; day accepts date, timestamp, timestamptz, timestamp_ns, timestamptz_ns',
    );
    expect(e.position).toBe(9);
    expect(error(() => parse('hour(created_at)')).message).toMatch(/hour does not apply to column created_at of type date; hour accepts timestamp, timestamptz, timestamp_ns, timestamptz_ns/);
    expect(error(() => parse('truncate(4, ts)')).message).toMatch(/truncate accepts int, long, decimal, string, binary/);
    expect(error(() => parse('bucket(4, amount)')).message).toMatch(/bucket does not apply to column amount of type double/);
  });

  it('refuses bad bucket counts and truncate widths', () => {
    expect(error(() => parse('bucket(0, user_id)'))).toEqual({ message: 'partition spec: bucket count must be a positive integer, found 0 at character 8', position: 8 });
    expect(error(() => parse('truncate(-1, zip_code)')).message).toBe('partition spec: truncate width must be a positive integer, found -1 at character 10');
    expect(error(() => parse('bucket(1.5, user_id)')).message).toMatch(/bucket count must be a positive integer, found 1\.5/);
    expect(error(() => parse('bucket(1e3, user_id)')).message).toMatch(/found 1e3/);
    expect(error(() => parse('truncate(2147483648, zip_code)')).message).toMatch(/truncate width must be at most 2147483647, found 2147483648/);
  });

  it('checks argument counts', () => {
    expect(error(() => parse('bucket(user_id)')).message).toMatch(/bucket at character 1 takes a bucket count and a column, e\.g\. bucket\(16, user_id\); found 1 column/);
    expect(error(() => parse('truncate(4, 5)')).message).toMatch(/takes a width and a column.*found 2 numbers/);
    expect(error(() => parse('day(ts, 2)')).message).toMatch(/day at character 1 takes one column, e\.g\. day\(ts\); found 1 column and 1 number/);
    expect(error(() => parse('day()')).message).toMatch(/found no arguments/);
    expect(error(() => parse('void(id, ts)')).message).toMatch(/found 2 columns/);
  });

  it('refuses duplicate partition field names', () => {
    expect(error(() => parse('bucket(16, user_id), bucket(8, user_id)')).message).toBe(
      'partition spec: duplicate partition field name "user_id_bucket" from bucket(16, user_id) at character 1 and bucket(8, user_id) at character 22; rename one with AS',
    );
    expect(error(() => parse('region, truncate(2, zip_code) AS region')).message).toMatch(/duplicate partition field name "region"/);
    expect(fields('bucket(16, user_id), bucket(8, user_id) AS user_id_b8')[1]).toEqual([4, 1001, 'user_id_b8', 'bucket[8]']);
  });

  it('refuses the same transform twice on a column, and two time transforms on one column', () => {
    expect(error(() => parse('day(ts), day(ts) AS d2')).message).toMatch(/day\(ts\) AS d2 at character 10 repeats day\(ts\) at character 1/);
    expect(error(() => parse('region, region AS r2')).message).toMatch(/repeats region at character 1/);
    expect(error(() => parse('day(ts), hour(ts)')).message).toMatch(/hour\(ts\) at character 10 conflicts with day\(ts\) at character 1: a column takes only one of year, month, day and hour/);
    expect(fields('day(ts), hour(event_time)')).toHaveLength(2);
  });

  it('refuses a partition name that is another column’s name', () => {
    const withTsDay: Schema = { ...schema, fields: [...schema.fields, f(30, 'ts_day', 'string')] };
    expect(error(() => parsePartitionSpec('day(ts)', withTsDay, {})).message).toMatch(/partition field name "ts_day" of day\(ts\) at character 1 is the name of a column; choose another with AS/);
    expect(parsePartitionSpec('day(ts) AS ts_date', withTsDay).fields[0]!.name).toBe('ts_date');
    expect(error(() => parse('region AS zip_code')).message).toMatch(/is the name of a column/);
    expect(error(() => parse('day(ts) AS ""')).message).toMatch(/empty partition field name/);
  });

  it('explains malformed syntax: what was expected at which character', () => {
    const cases: [string, RegExp, number][] = [
      ['day(ts', /expected '\)' or ',' at character 7, found end of input/, 7],
      ['day ts', /expected ',' or end of input at character 5, found "ts"/, 5],
      [', day(ts)', /expected a column name or a transform such as day\(ts\) at character 1, found ','/, 1],
      ['day(ts),', /expected a partition field after ',' at character 9, found end of input/, 9],
      ['day(ts),, region', /expected a column name or a transform such as day\(ts\) at character 9, found ','/, 9],
      ['day((ts))', /expected a column name or a number at character 5, found '\('/, 5],
      ['region, "unterminated', /unterminated quoted name starting at character 9; expected a closing "/, 9],
      ['weekday(ts)', /unknown transform "weekday" at character 1; expected identity, year, month, day, hour, bucket, truncate or void/, 1],
      ['address.', /expected a nested column name after '.' at character 9, found end of input/, 9],
      ['day(ts) AS', /expected a partition field name after AS at character 11, found end of input/, 11],
      ['region; ts', /unexpected ";" at character 7/, 7],
      ['bucket[16](user_id)', /unexpected "\[" at character 7/, 7],
      ['"quoted"(ts)', /expected ',' or end of input at character 9, found '\('/, 9],
    ];
    for (const [text, message, position] of cases) {
      const e = error(() => parse(text));
      expect([text, e.message]).toEqual([text, expect.stringMatching(message)]);
      expect([text, e.position]).toEqual([text, position]);
    }
  });
});

describe('formatPartitionSpec', () => {
  it('writes the syntax back, with AS only for non-default names', () => {
    const text = 'day(ts), bucket(16, user_id), truncate(4, zip_code), region, void(id), year(created_at) AS y, "my col", address.zip, hour(event_time)';
    const spec = parse(text);
    expect(formatPartitionSpec(spec, schema)).toBe(text);
    expect(parse(formatPartitionSpec(spec, schema))).toEqual(spec);
  });

  it('round-trips quoting', () => {
    const spec = parse('"a""b" AS "x y", bucket(2, `my col`) AS as');
    expect(formatPartitionSpec(spec, schema)).toBe('"a""b" AS "x y", bucket(2, "my col") AS "as"');
    expect(parse(formatPartitionSpec(spec, schema))).toEqual(spec);
  });

  it('prints fields of dropped columns and unknown transforms without failing', () => {
    const spec: PartitionSpec = {
      'spec-id': 1,
      fields: [
        { 'source-id': 99, 'field-id': 1000, name: 'old_null', transform: 'void' },
        { 'source-id': 1, 'field-id': 1001, name: 'id_z', transform: 'zorder' },
      ],
    };
    expect(formatPartitionSpec(spec, schema)).toBe('void(`#99`) AS old_null, zorder(id) AS id_z');
  });

  it('prints the unpartitioned spec as an empty text', () => {
    expect(formatPartitionSpec({ 'spec-id': 0, fields: [] }, schema)).toBe('');
  });
});

describe('validatePartitionSpec', () => {
  const spec = (...fs: [number, string, string][]): PartitionSpec => ({ 'spec-id': 0, fields: fs.map(([s, name, transform], i) => ({ 'source-id': s, 'field-id': 1000 + i, name, transform })) });

  it('accepts what the parser produces', () => {
    expect(() => validatePartitionSpec(parse('day(ts), bucket(16, user_id), region, void(id)'), schema)).not.toThrow();
    expect(() => validatePartitionSpec(spec([99, 'gone_null', 'void']), schema)).not.toThrow();
  });

  it('applies the same rules to a spec given as an object', () => {
    expect(error(() => validatePartitionSpec(spec([6, 'amount_day', 'day']), schema)).message).toMatch(/field 1 \("amount_day", day\): day does not apply to column amount of type double/);
    expect(error(() => validatePartitionSpec(spec([99, 'x', 'identity']), schema)).message).toMatch(/source-id 99 is not a column/);
    expect(error(() => validatePartitionSpec(spec([1, 'x', 'zorder']), schema)).message).toMatch(/unknown transform/);
    expect(error(() => validatePartitionSpec(spec([1, 'x', 'identity'], [3, 'x', 'identity']), schema)).message).toMatch(/duplicate partition field name "x"/);
    expect(error(() => validatePartitionSpec(spec([2, 'a', 'day'], [2, 'b', 'month']), schema)).message).toMatch(/only one of year, month, day and hour/);
  });
});

describe('evolvePartitionSpec (spec §Partition Evolution)', () => {
  const spec0 = parse('day(ts), bucket(16, user_id)');
  const history = { specs: [spec0], lastPartitionId: 1001, defaultSpecId: 0 };

  it('is a no-op when given the current spec again', () => {
    const r = evolvePartitionSpec(history, parsePartitionSpec('day(ts), bucket(16, user_id)', schema, { lastPartitionId: 5000 }));
    expect(r).toEqual({ spec: spec0, isNew: false, changed: false, lastPartitionId: 1001 });
  });

  it('adds a spec, keeping IDs of fields with the same source and transform', () => {
    const r = evolvePartitionSpec(history, parse('region, day(ts), bucket(16, user_id)'));
    expect(r.isNew).toBe(true);
    expect(r.changed).toBe(true);
    expect(r.lastPartitionId).toBe(1002);
    expect(r.spec['spec-id']).toBe(1);
    expect(r.spec.fields.map((x) => [x.name, x['field-id']])).toEqual([
      ['region', 1002],
      ['ts_day', 1000],
      ['user_id_bucket', 1001],
    ]);
  });

  it('gives a changed transform a new ID, and a renamed field its old ID', () => {
    const r = evolvePartitionSpec(history, parse('day(ts) AS d, bucket(8, user_id)'));
    expect(r.spec.fields.map((x) => [x.name, x['field-id']])).toEqual([
      ['d', 1000],
      ['user_id_bucket', 1002],
    ]);
    expect(r.isNew).toBe(true);
  });

  it('reuses field IDs from any earlier spec, and an equivalent earlier spec as a whole', () => {
    const spec1 = { 'spec-id': 1, fields: [{ 'source-id': 2, 'field-id': 1000, name: 'ts_day', transform: 'day' }] };
    const later = { specs: [spec0, spec1], lastPartitionId: 1001, defaultSpecId: 1 };
    const back = evolvePartitionSpec(later, parse('day(ts), bucket(16, user_id)'));
    expect(back).toEqual({ spec: spec0, isNew: false, changed: true, lastPartitionId: 1001 });
    const mixed = evolvePartitionSpec(later, parse('bucket(16, user_id)'));
    expect(mixed.spec).toEqual({ 'spec-id': 2, fields: [{ 'source-id': 4, 'field-id': 1001, name: 'user_id_bucket', transform: 'bucket[16]' }] });
  });

  it('goes to and from the unpartitioned spec', () => {
    const unpartitioned = { specs: [{ 'spec-id': 0, fields: [] }], lastPartitionId: 999, defaultSpecId: 0 };
    expect(evolvePartitionSpec(unpartitioned, []).changed).toBe(false);
    const r = evolvePartitionSpec(unpartitioned, parse('region'));
    expect(r.spec).toEqual({ 'spec-id': 1, fields: [{ 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' }] });
    const back = evolvePartitionSpec({ specs: [unpartitioned.specs[0]!, r.spec], lastPartitionId: 1000, defaultSpecId: 1 }, []);
    expect(back).toEqual({ spec: { 'spec-id': 0, fields: [] }, isNew: false, changed: true, lastPartitionId: 1000 });
  });

  it('numbers v1 fields by position from 1000', () => {
    const r = evolvePartitionSpec({ ...history, formatVersion: 1 }, parse('day(ts), bucket(16, user_id), region'));
    expect(r.spec.fields.map((x) => x['field-id'])).toEqual([1000, 1001, 1002]);
  });

  it('treats specs as equivalent by source, transform and name, in order', () => {
    expect(equivalentPartitionSpecs(parse('day(ts), region'), parse('day(ts), region'))).toBe(true);
    expect(equivalentPartitionSpecs(parse('day(ts), region'), parse('region, day(ts)'))).toBe(false);
    expect(equivalentPartitionSpecs(parse('day(ts)'), parse('day(ts) AS d'))).toBe(false);
  });
});
