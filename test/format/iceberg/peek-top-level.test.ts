import { describe, expect, it } from 'vitest';
import { peekTopLevel, serializeTableMetadata } from '../../../src/format/iceberg/table-metadata.ts';
import { sampleMetadata } from '../../catalog/catalog-contract.ts';

/** peekTopLevel finds one top-level value of a metadata file's JSON without parsing the rest. */
describe('peekTopLevel', () => {
  const metadata = { ...sampleMetadata(), location: 'file:///w/ns/t', properties: { 'twinlake.formats': 'iceberg,delta', odd: 'a "quoted" \\ value, with } and ] inside', 'ü': '✓' } };
  const text = serializeTableMetadata(metadata);
  const parsed = JSON.parse(text) as Record<string, unknown>;

  it('finds every top-level key of a serialized metadata file as JSON.parse reads it', () => {
    for (const key of ['format-version', 'table-uuid', 'location', 'properties', 'schemas', 'partition-specs', 'refs', 'snapshot-log', 'metadata-log']) {
      if (!(key in parsed)) continue;
      expect(peekTopLevel(text, key), key).toEqual({ status: 'found', value: parsed[key] });
    }
    expect(peekTopLevel(text, 'no-such-key')).toEqual({ status: 'absent' });
    expect(peekTopLevel(JSON.stringify(parsed, null, 2), 'properties')).toEqual({ status: 'found', value: metadata.properties });
  });

  it('says truncated for a prefix that ends before the value, and finds values that end inside it', () => {
    const cut = text.indexOf('"properties"') + 20;
    expect(peekTopLevel(text.slice(0, cut), 'properties')).toEqual({ status: 'truncated' });
    expect(peekTopLevel(text.slice(0, cut), 'location')).toEqual({ status: 'found', value: 'file:///w/ns/t' });
    for (let n = 0; n < 40; n++) expect(['truncated', 'found']).toContain(peekTopLevel(text.slice(0, n), 'location').status);
  });

  it('says invalid for text that is not a JSON object', () => {
    expect(peekTopLevel('garbage', 'location')).toEqual({ status: 'invalid', at: 0 });
    expect(peekTopLevel('[1, 2]', 'location')).toEqual({ status: 'invalid', at: 0 });
    expect(peekTopLevel('{"a": 1 "location": "x"}', 'location')).toEqual({ status: 'invalid', at: 8 });
    expect(peekTopLevel('{"a": , "location": "x"}', 'location')).toEqual({ status: 'invalid', at: 6 });
    expect(peekTopLevel('{"location": tru}', 'location').status).toBe('invalid');
    expect(peekTopLevel('{}', 'location')).toEqual({ status: 'absent' });
  });
});
