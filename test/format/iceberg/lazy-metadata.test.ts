import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJson, stringifyJson } from '../../../src/core/json.ts';
import {
  currentSnapshot,
  isLazyList,
  LAZY_TEXT,
  parseTableMetadata,
  parseTableMetadataLazily,
  parseTableMetadataWhole,
  serializeTableMetadata,
  snapshotAsOf,
  snapshotById,
} from '../../../src/format/iceberg/table-metadata.ts';
import { testdata } from '../../helpers.ts';
import { rng as mulberry32 } from '../expressions/random-filters.ts';

/**
 * The lazy parse of a metadata file (snapshot list and logs left as text until used, one snapshot
 * found on its own) is held to the whole parse: for every metadata file of the foreign tables in
 * ../shared/testdata/iceberg and for generated files written every way JSON allows (whitespace
 * anywhere, escapes in keys and values, keys in any order and repeated, strings that spell
 * brackets, quotes and other snapshots' IDs, IDs of every size), every lookup answers what the
 * whole parse answers, and once read the lists are the whole parse's, in the same key order.
 */

function expectSameAsWhole(text: string, label: string): void {
  const whole = parseTableMetadataWhole(text, 'm.json');
  const lazy = () => {
    const m = parseTableMetadataLazily(text, 'm.json');
    expect(m, `${label}: the lazy parse declined a valid file`).toBeDefined();
    return m!;
  };
  // The first and last snapshots, some between, and IDs no snapshot has.
  const all = whole.snapshots.map((s) => s['snapshot-id']);
  const some = all.length <= 10 ? all : [...all.slice(0, 3), ...all.slice(-3), ...[0.2, 0.4, 0.6, 0.8].map((f) => all[Math.floor(all.length * f)]!)];
  const ids = [...some, 0n, 1n, -1n, 1234567890123456789n, ...some.slice(0, 3).map((id) => id + 1n)];
  // Each lookup on a fresh lazy object: on one whose snapshot list is still text.
  for (const id of ids) {
    const m = lazy();
    expect(snapshotById(m, id), `${label}: snapshot ${id}`).toStrictEqual(snapshotById(whole, id));
  }
  const first = lazy();
  expect(currentSnapshot(first), `${label}: current snapshot`).toStrictEqual(currentSnapshot(whole));
  for (const s of whole.snapshots.slice(0, 3)) expect(snapshotById(first, s['snapshot-id'])).toStrictEqual(s);
  const found = currentSnapshot(first);
  expect(Object.keys(first), `${label}: key order`).toEqual(Object.keys(whole));
  expect({ ...first }, `${label}: the whole object`).toStrictEqual({ ...whole });
  // A snapshot found alone is the very object the list holds once read.
  if (found) expect(first.snapshots.includes(found)).toBe(true);
  expect(serializeTableMetadata(lazy())).toBe(serializeTableMetadata(whole));
  const timed = lazy();
  for (const e of whole['snapshot-log'].slice(-2)) expect(snapshotAsOf(timed, e['timestamp-ms'])).toStrictEqual(snapshotAsOf(whole, e['timestamp-ms']));
}

const fixturesRoot = path.join(testdata, 'iceberg');
const fixtures: { dir: string }[] = existsSync(path.join(fixturesRoot, 'fixtures.json')) ? parseJson(readFileSync(path.join(fixturesRoot, 'fixtures.json'), 'utf8')) : [];

describe('lazy metadata parse', () => {
  it.skipIf(fixtures.length === 0)('reads every metadata file of the foreign tables as the whole parse does', () => {
    let files = 0;
    for (const f of fixtures) {
      const dir = path.join(fixturesRoot, f.dir, 'metadata');
      if (!existsSync(dir)) continue;
      for (const name of readdirSync(dir).filter((n) => n.endsWith('.metadata.json'))) {
        expectSameAsWhole(readFileSync(path.join(dir, name), 'utf8'), `${f.dir}/${name}`);
        files++;
      }
    }
    expect(fixtures.length).toBe(93);
    expect(files).toBeGreaterThan(93);
  });

  it('reads generated metadata, written every way JSON allows, as the whole parse does', () => {
    for (let seed = 1; seed <= 80; seed++) {
      const r = rng(seed);
      expectSameAsWhole(writeJson(r, generatedMetadata(r), 0), `seed ${seed}`);
    }
  });

  it('parses a large file lazily: a read of the current snapshot leaves the others as text', () => {
    const r = rng(7);
    const meta = generatedMetadata(r, 1000) as { snapshots: { 'snapshot-id': bigint }[]; [k: string]: unknown };
    // An ID as writers make them (one a double could spell otherwise is looked up in the whole list).
    const current = [...meta.snapshots].reverse().find((s) => BigInt(Number(s['snapshot-id'])) !== s['snapshot-id'])!['snapshot-id'];
    meta['current-snapshot-id'] = current;
    meta.refs = { main: { 'snapshot-id': current, type: 'branch' } };
    const text = stringifyJson(meta);
    expect(text.length).toBeGreaterThan(LAZY_TEXT);
    const m = parseTableMetadata(text, 'm.json');
    expect(isLazyList(m, 'snapshots')).toBe(true);
    const found = currentSnapshot(m);
    expect(found).toStrictEqual(currentSnapshot(parseTableMetadataWhole(text, 'm.json')));
    // A reader planning again and again asks for the same snapshot: it stays found.
    for (let i = 0; i < 20; i++) expect(currentSnapshot(m)).toBe(found);
    expect(isLazyList(m, 'snapshots')).toBe(true);
    expect(m.snapshots).toHaveLength(1000);
    expect(isLazyList(m, 'snapshots')).toBe(false);
  });

  it('says what the whole parse says about a damaged file', () => {
    const r = rng(11);
    const text = stringifyJson(generatedMetadata(r, 1000));
    const message = (f: () => unknown) => {
      try {
        f();
        return 'parsed';
      } catch (e) {
        return (e as Error).message;
      }
    };
    // Damage the scan sees (cut files, characters JSON has not, brackets unpaired) is refused at
    // once, as the whole parse refuses it; damage only a parse sees (valid characters in an invalid
    // order, inside a list left as text) is said, in the same words, when the list is read.
    const damaged: [string, 'at once' | 'when read'][] = [
      [text.slice(0, text.length - 1), 'at once'],
      [text.slice(0, Math.floor(text.length / 2)), 'at once'],
      [text.slice(0, 10), 'at once'],
      ['\u0000'.repeat(LAZY_TEXT), 'at once'],
      [replaceAfterMiddle(text, ',"sequence-number"', ';"sequence-number"'), 'at once'],
      [replaceAfterMiddle(text, ',"sequence-number"', '\u0007"sequence-number"'), 'at once'],
      [replaceAfterMiddle(text, '},"manifest-list"', ',"manifest-list"'), 'at once'],
      [replaceAfterMiddle(text, '],"snapshot-log"', '},"snapshot-log"'), 'at once'],
      [text + ' x', 'at once'],
      [replaceAfterMiddle(text, '"timestamp-ms":', '"timestamp-ms":0'), 'when read'],
      [replaceAfterMiddle(text, ',"sequence-number"', ',,"sequence-number"'), 'when read'],
    ];
    for (const [t, when] of damaged) {
      const said = message(() => parseTableMetadataWhole(t, 'm.json'));
      expect(said).not.toBe('parsed');
      if (when === 'at once') expect(message(() => parseTableMetadata(t, 'm.json'))).toBe(said);
      else expect(message(() => parseTableMetadata(t, 'm.json').snapshots)).toBe(said);
    }
    // Valid JSON that is not valid metadata, in a list left as text: said when the list is read.
    const bad = text.replace(/"snapshot-id":(\d+),"sequence-number":7,/, '"snapshot-id":"$1","sequence-number":7,');
    expect(bad).not.toBe(text);
    const said = message(() => parseTableMetadataWhole(bad, 'm.json'));
    expect(said).toMatch(/expected an integer for snapshot-id, found "\d+" \(m\.json\)/);
    const m = parseTableMetadata(bad, 'm.json');
    expect(message(() => m.snapshots)).toBe(said);
  });
});

type R = ReturnType<typeof rng>;

function replaceAfterMiddle(text: string, what: string, by: string): string {
  const at = text.indexOf(what, text.length / 2);
  expect(at).toBeGreaterThan(0);
  return text.slice(0, at) + by + text.slice(at + what.length);
}

function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}

/** Snapshot IDs of every size: 63-bit (what writers make), negative, small, and doubles' exact ones. */
function snapshotId(r: R): bigint {
  return r.pick([
    () => BigInt.asIntN(64, (BigInt(r.int(0, 0xffffffff)) << 32n) | BigInt(r.int(0, 0xffffffff))),
    () => BigInt(r.int(0, 0x7fffffff)) << 31n | BigInt(r.int(0, 0x7fffffff)),
    () => BigInt(r.int(1, 40)),
    () => BigInt(r.int(1, 2 ** 20)) << 40n,
  ])();
}

/** Strings that a scanner could mistake: brackets, quotes, backslashes, other snapshots' text, non-ASCII. */
function trickyText(r: R, ids: bigint[]): string {
  const id = ids.length > 0 ? String(r.pick(ids)) : '42';
  return r.pick([
    () => 'plain',
    () => `a "quoted" \\ value, with } and ] and { and [ inside`,
    () => `{"snapshot-id":${id},"x":[1,2]}`,
    () => `"snapshot-id": ${id}`,
    () => id,
    () => 'ü✓ 中 😀 \u2028',
    () => '\\"}]',
    () => '',
  ])();
}

function generatedMetadata(r: R, count = r.int(0, 40)): Record<string, unknown> {
  const ids: bigint[] = [];
  const snapshots: Record<string, unknown>[] = [];
  const log: Record<string, unknown>[] = [];
  let parent: bigint | undefined;
  let ts = 1_700_000_000_000;
  for (let i = 0; i < count; i++) {
    let id = snapshotId(r);
    while (ids.includes(id)) id = snapshotId(r);
    ids.push(id);
    ts += r.int(0, 5);
    const summary: Record<string, unknown> = { operation: r.pick(['append', 'overwrite', 'delete']), 'added-records': String(r.int(0, 100)) };
    if (r.chance(0.5)) summary[`note-${i}`] = trickyText(r, ids);
    if (r.chance(0.2)) summary['parent-id'] = String(r.pick(ids));
    const s: Record<string, unknown> = { 'snapshot-id': id, 'sequence-number': i + 1, 'timestamp-ms': ts, summary, 'manifest-list': `s3://b/t/metadata/snap-${id}-1-${i}.avro` };
    if (parent !== undefined) s['parent-snapshot-id'] = parent;
    if (r.chance(0.3)) s['schema-id'] = 0;
    if (r.chance(0.1)) s['first-row-id'] = r.int(0, 1000);
    if (r.chance(0.1)) s.extra = { nested: [trickyText(r, ids), { deep: [id] }] };
    snapshots.push(s);
    log.push({ 'timestamp-ms': ts, 'snapshot-id': id });
    parent = r.chance(0.9) ? id : parent;
  }
  const current = ids.length > 0 ? r.pick([ids.at(-1)!, r.pick(ids)]) : undefined;
  const m: Record<string, unknown> = {
    'format-version': r.pick([1, 2, 2, 3]),
    'table-uuid': 'a0b1c2d3-0000-4000-8000-000000000000',
    location: `s3://b/t${trickyText(r, ids).replace(/[^a-z]/g, '')}`,
    'last-sequence-number': count,
    'last-updated-ms': ts,
    'last-column-id': 2,
    'current-schema-id': 0,
    schemas: [{ type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: true, type: 'long' }, { id: 2, name: trickyText(r, ids) || 'v', required: false, type: 'string' }] }],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'write.format.default': 'parquet', odd: trickyText(r, ids), 'snapshot-id': String(current ?? 0) },
    'current-snapshot-id': current ?? (r.chance(0.5) ? -1 : null),
    refs: current === undefined ? {} : { main: { 'snapshot-id': current, type: 'branch' }, ...(r.chance(0.3) ? { tag: { 'snapshot-id': r.pick(ids), type: 'tag' } } : {}) },
    snapshots,
    'snapshot-log': log,
    'metadata-log': Array.from({ length: r.int(0, 5) }, (_, i) => ({ 'timestamp-ms': ts - i, 'metadata-file': `s3://b/t/metadata/v${i}.metadata.json` })),
    statistics: [],
  };
  if (r.chance(0.3)) m['unknown-key'] = { snapshots: [{ 'snapshot-id': current ?? 1 }], text: trickyText(r, ids) };
  if (count < 100 && r.chance(0.2)) delete m['snapshot-log'];
  if (count < 100 && r.chance(0.1)) m.snapshots = r.pick([null, []]);
  return m;
}

/**
 * JSON text of `v` written as some writer might: whitespace between any tokens, characters of
 * keys and strings escaped at random, keys shuffled, and now and then a key given twice (the
 * first time with a decoy value: JSON.parse keeps the last).
 */
function writeJson(r: R, v: unknown, depth: number): string {
  const ws = () => (r.chance(0.15) ? r.pick([' ', '\n', '\t', '\r\n  ', '   ']) : '');
  if (v === null || typeof v === 'boolean') return String(v);
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  if (typeof v === 'string') return writeString(r, v);
  if (Array.isArray(v)) return `[${ws()}${v.map((x) => writeJson(r, x, depth + 1) + ws()).join(`,${ws()}`)}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  if (r.chance(0.3)) entries.sort(() => r.next() - 0.5);
  const parts = entries.map(([k, x]) => `${writeString(r, k)}${ws()}:${ws()}${writeJson(r, x, depth + 1)}`);
  if (depth === 0 && entries.length > 0 && r.chance(0.3)) {
    const [k] = r.pick(entries);
    parts.unshift(`${writeString(r, k)}:${r.pick(['[]', '{"snapshot-id":1}', '"decoy"', '[{"snapshot-id":1}]'])}`);
  }
  return `{${ws()}${parts.join(`${ws()},${ws()}`)}${ws()}}`;
}

function writeString(r: R, s: string): string {
  if (!r.chance(0.1)) return JSON.stringify(s);
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (code > 0xffff || !r.chance(0.4)) out += JSON.stringify(ch).slice(1, -1);
    else out += r.chance(0.5) ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u${code.toString(16).padStart(4, '0').toUpperCase()}`;
  }
  return out + '"';
}

