import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { localPath } from '../../src/core/uri.ts';
import { Lakehouse } from '../../src/table/lakehouse.ts';
import type { Table } from '../../src/table/table.ts';
import { cli, errorOf, listFiles, tempDir } from '../helpers.ts';
import { startServer, type TestServer } from '../server/server-fixture.ts';

/**
 * Hostile names and values (issue 14, item 6). Partition values that spell paths, escapes and
 * line breaks, values and column names past the file system's 255-byte limit on a name: every
 * file lands inside its table's folder, every reader (ours for each format, DuckDB over the
 * listed files) finds it and reads each value back exactly. Names that could leave or alias a
 * folder are refused, with the name and the rule, by the library, the CLI and the server.
 */

const LONG_ASCII = 'v'.repeat(300);
const LONG_UTF8 = 'é'.repeat(200); // 400 bytes, 1,200 once escaped
const VALUES: (string | null)[] = [
  'a/b',
  '../../../escape',
  'x=y',
  '100%',
  '%2e%2e',
  '%2F',
  '..',
  '.',
  'line\nbreak',
  'tab\there',
  'back\\slash',
  'ünï🦆',
  'cafe\u0301', // NFD: a value is data, kept as written
  'café', // NFC
  ' spaced ',
  'null',
  '__HIVE_DEFAULT_PARTITION__',
  LONG_ASCII,
  LONG_UTF8,
  LONG_UTF8 + 'x', // differs from the last only past the shortened folder name's prefix
  null,
];
/** A column name that is every kind of trouble as a path segment. */
const HOSTILE_COLUMN = '../p/q %=';

let dir: { path: string; cleanup: () => void };
let warehouse: string;
let lake: Lakehouse;

beforeAll(async () => {
  dir = tempDir('twinlake-names-');
  warehouse = join(dir.path, 'wh');
  lake = await Lakehouse.open({ warehouse, onWarning: () => {} });
});
afterAll(async () => {
  await lake?.close();
  dir?.cleanup();
});

const rowsById = (rows: Record<string, unknown>[], column: string) => new Map(rows.map((r) => [Number(r.id), r[column] ?? null]));

/** The add actions of every commit in a table's Delta log. */
function deltaAdds(tableDir: string): { path: string; partitionValues: Record<string, string | null> }[] {
  const log = join(tableDir, '_delta_log');
  return readdirSync(log)
    .filter((n) => n.endsWith('.json'))
    .flatMap((n) => readFileSync(join(log, n), 'utf8').trim().split('\n'))
    .map((l) => JSON.parse(l) as { add?: { path: string; partitionValues: Record<string, string | null> } })
    .flatMap((a) => (a.add ? [a.add] : []));
}

async function duckdbRows(paths: string[], column: string): Promise<Map<number, unknown>> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
    // DuckDB's defaults: it decides itself whether the folders are Hive partitions.
    const reader = await conn.runAndReadAll(`SELECT id, "${column.replace(/"/g, '""')}" AS v FROM read_parquet([${list}])`);
    return new Map(reader.getRowObjects().map((r) => [Number(r.id), r.v ?? null]));
  } finally {
    conn.closeSync();
  }
}

/** Every file under the temp folder: inside the warehouse, and there inside a table folder or the catalog. */
function expectContained(tables: string[]): void {
  const all = listFiles(dir.path);
  for (const f of all) {
    expect(f.startsWith('wh/'), `${f} is outside the warehouse`).toBe(true);
    const rel = f.slice('wh/'.length);
    expect(rel === 'catalog.db' || rel.startsWith('catalog.db-') || tables.some((t) => rel.startsWith(t + '/')), `${f} is outside every table folder`).toBe(true);
    for (const segment of f.split('/')) expect(Buffer.byteLength(segment), `a name in ${f} is over 255 bytes`).toBeLessThanOrEqual(255);
  }
}

async function expectReadersAgree(t: Table, tableDir: string, column: string, expected: Map<number, unknown>): Promise<void> {
  expect(rowsById(await t.read(), column)).toEqual(expected);
  expect(rowsById(await t.read({ format: 'delta' }), column)).toEqual(expected);
  const iceberg = (await t.files()).files.map((f) => f.path).sort();
  const delta = (await t.files({ format: 'delta' })).files.map((f) => f.path).sort();
  expect(delta).toEqual(iceberg);
  // Iceberg's locations name the files literally, as Java's HadoopFileIO (whose Path quotes a
  // '%') and PyIceberg take them: each one is a file on disk under that very name.
  const onDisk = new Set(listFiles(tableDir).map((f) => join(tableDir, f)));
  for (const p of iceberg) expect(onDisk.has(localPath(p)), `${p} is not a file on disk`).toBe(true);
  // DuckDB over the listed live files.
  expect(await duckdbRows(iceberg.map(localPath), column)).toEqual(expected);
  // Delta's add.path is the relative path URI-encoded (PROTOCOL.md §Add File): one decoding
  // gives the file's name on disk; partitionValues hold the raw value.
  const adds = deltaAdds(tableDir);
  expect(adds.map((a) => join(tableDir, decodeURIComponent(a.path))).sort()).toEqual(iceberg.map(localPath));
  for (const a of adds) {
    expect(a.path).not.toMatch(/[^A-Za-z0-9\-._~=@+,/%]/);
    expect(decodeURIComponent(a.path).startsWith('data/')).toBe(true);
  }
  expect(new Set(adds.map((a) => a.partitionValues[column] ?? null))).toEqual(new Set(expected.values()));
}

describe('hostile partition values', () => {
  test('values that spell paths, escapes, line breaks and names past 255 bytes land inside the table, and every reader reads them back exactly', async () => {
    const t = lake.table('hostile.values');
    const rows = VALUES.map((k, id) => ({ id, k }));
    const r = await t.write(rows, { partition: 'k' });
    // One file per value: distinct values never share a file (the long ones not either).
    expect(r.files).toBe(new Set(VALUES).size);
    const tableDir = join(warehouse, 'hostile', 'values');
    await expectReadersAgree(t, tableDir, 'k', new Map(rows.map((x) => [x.id, x.k])));
    expectContained(['hostile/values']);
    // Folder names stay short and readable; a long value's folder is shortened and says so.
    const folders = [...new Set(listFiles(join(tableDir, 'data')).map((f) => f.split('/')[0]!))];
    expect(folders.every((f) => Buffer.byteLength(f) <= 128)).toBe(true);
    expect(folders.filter((f) => f.includes('~'))).toHaveLength(3);
    expect(folders).toContain('k=a%2Fb');
    expect(folders).toContain('k=__HIVE_DEFAULT_PARTITION__');
    expect(folders).toContain('k=%5F_HIVE_DEFAULT_PARTITION__');
  });

  test('a second write of a long value goes to the same folder, and a column name that is all trouble partitions safely', async () => {
    const t = lake.table('hostile.column');
    const first = [{ id: 1, [HOSTILE_COLUMN]: LONG_UTF8 }, { id: 2, [HOSTILE_COLUMN]: 'a/../b' }];
    await t.write(first, { partition: JSON.stringify(HOSTILE_COLUMN) });
    await t.write([{ id: 3, [HOSTILE_COLUMN]: LONG_UTF8 }], { partition: JSON.stringify(HOSTILE_COLUMN) });
    const tableDir = join(warehouse, 'hostile', 'column');
    await expectReadersAgree(t, tableDir, HOSTILE_COLUMN, new Map([[1, LONG_UTF8], [2, 'a/../b'], [3, LONG_UTF8]]));
    const folders = listFiles(join(tableDir, 'data')).map((f) => f.split('/')[0]!);
    expect(new Set(folders).size).toBe(2);
    expect(folders.every((f) => f.startsWith('..%2Fp%2Fq+%25%3D'))).toBe(true);
    expectContained(['hostile/values', 'hostile/column']);
  });

  test('an empty string: an Iceberg-only table keeps it; a table that keeps Delta refuses it (Delta reads "" as null)', async () => {
    const iceberg = lake.table('hostile.empty_iceberg');
    await iceberg.write([{ id: 1, k: '' }, { id: 2, k: null }], { partition: 'k', formats: ['iceberg'] });
    expect(rowsById(await iceberg.read(), 'k')).toEqual(new Map([[1, ''], [2, null]]));
    const e = await errorOf(lake.table('hostile.empty_dual').write([{ id: 1, k: '' }], { partition: 'k' }));
    expect(e.kind).toBe('invalid-input');
    expect(e.message).toMatch(/empty string.*Delta reads it back as null/);
  });
});

describe('hostile names', () => {
  const BAD: [string | { namespace: string[]; name: string }, RegExp][] = [
    ['hostile.a%2e%2e', /contains '%'/],
    ['hostile.100%', /contains '%'/],
    ['hostile.a\u0000b', /control character \(U\+0000\)/],
    ['hostile.a\nb', /control character \(U\+000A\)/],
    ['hostile.' + '表'.repeat(86), /is 258 bytes long in UTF-8, longer than 255 bytes \(the limit of a folder name\)/],
    ['hostile.a\\b', /path separator/],
    [{ namespace: ['hostile'], name: '..' }, /contains '\.\.'/],
    [{ namespace: ['hostile'], name: '.hidden' }, /starts with '\.'/],
    [{ namespace: ['hostile'], name: '../../etc' }, /path separator/],
    [{ namespace: ['..'], name: 't' }, /contains '\.\.'/],
    [{ namespace: ['hostile'], name: '%2e%2e%2f%2e%2e' }, /contains '%'/],
  ];

  test('names that would leave, alias or overflow a folder are refused with the name and the rule, and nothing is written', async () => {
    for (const [ident, why] of BAD) {
      const name = JSON.stringify(ident);
      const e = await errorOf(() => lake.table(ident).write([{ id: 1 }]));
      expect(e.kind, name).toBe('invalid-input');
      expect(e.message, name).toMatch(why);
      expect(e.message, name).toMatch(/a name must be not empty, at most 255 UTF-8 bytes/);
    }
    // 85 CJK characters are 255 bytes: the longest name a folder takes.
    await lake.table('hostile.' + '表'.repeat(85)).write([{ id: 1 }]);
    expect(listFiles(dir.path).some((f) => f.startsWith(`wh/hostile/${'表'.repeat(85)}/metadata/`))).toBe(true);
    expect(listFiles(dir.path).filter((f) => f.includes('%') && !f.includes('/data/'))).toEqual([]);
  });

  test('a column name with a NUL or a control character is refused before the engine sees it', async () => {
    for (const [name, code] of [['a\u0000b', 'U\\+0000'], ['a\u001bb', 'U\\+001B']] as const) {
      const e = await errorOf(lake.table('hostile.cols').write([{ id: 1, [name]: 1 }]));
      expect(e.kind).toBe('invalid-input');
      expect(e.message).toMatch(new RegExp(`column .* contains a control character \\(${code}\\); a column name must be`));
    }
    expect(await lake.table('hostile.cols').exists()).toBe(false);
  });

  test('NFC and NFD spellings name one table and one folder', async () => {
    await lake.table('hostile.caf\u00e9').write([{ id: 1 }]);
    await lake.table('hostile.cafe\u0301').write([{ id: 2 }]);
    expect((await lake.table('hostile.caf\u00e9').read()).map((r) => Number(r.id)).sort()).toEqual([1, 2]);
    const folders = readdirSync(join(warehouse, 'hostile')).filter((n) => n.normalize('NFC') === 'caf\u00e9');
    expect(folders).toEqual(['caf\u00e9']);
  });

  test('two names that differ only in case do not share a folder: the second is refused', async () => {
    await lake.table('hostile.Sales').write([{ id: 1 }]);
    const e = await errorOf(lake.table('hostile.sales').write([{ id: 2 }]));
    expect(e.message).toMatch(/table hostile\.sales: its name differs from table hostile\.Sales's only in case/);
    const e2 = await errorOf(lake.table('HOSTILE.SALES').write([{ id: 2 }]));
    expect(e2.message).toMatch(/differs from table hostile\.Sales's only in case/);
    expect(await lake.table('hostile.sales').exists()).toBe(false);
    expect((await lake.table('hostile.Sales').read()).map((r) => Number(r.id))).toEqual([1]);
  });

  test('a path past the file system limit of 4,096 bytes (34 partition fields of long values) fails cleanly, naming the limits, and leaves nothing behind', async () => {
    // Each folder name is within 255 bytes (128 at most); together they pass PATH_MAX.
    const columns = Array.from({ length: 34 }, (_, i) => `c${i}`.padEnd(60, '_'));
    const row = Object.fromEntries([['id', 1], ...columns.map((c) => [c, c.repeat(5)])]);
    const t = lake.table('hostile.deep');
    const e = await errorOf(t.write([row], { partition: columns.join(', ') }));
    expect(e.message).toMatch(/the file system allows: 255 bytes per name, 4096 bytes in all \(ENAMETOOLONG\)/);
    expect(e.retryable).toBe(false);
    expect(await t.exists()).toBe(false);
    expect(listFiles(join(warehouse, 'hostile')).filter((f) => f.startsWith('deep/'))).toEqual([]);
  });

  test('the CLI refuses a bad name with the name and the rule (exit code 3)', () => {
    const input = join(dir.path, 'in.ndjson');
    writeFileSync(input, '{"id":1}\n');
    const r = cli(['--warehouse', join(dir.path, 'cli-wh'), 'write', 'ns.%2e%2e', '--input', input]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/"%2e%2e" contains '%'.*a name must be not empty, at most 255 UTF-8 bytes/);
    expect(listFiles(join(dir.path, 'cli-wh')).filter((f) => !f.startsWith('catalog.db'))).toEqual([]);
  });
});

describe('the server refuses bad names', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s?.close();
  });

  test('400 naming the name and the rule; nothing written', async () => {
    const body = (tableName: string, icebergNamespace = 'ns') => ({
      connectionId: 'c',
      tableName,
      storageProvider: 'local',
      icebergEnabled: true,
      deltaEnabled: true,
      icebergCatalogType: 'sql',
      icebergNamespace,
    });
    for (const [b, why] of [
      [body('%2e%2e'), /contains '%'/],
      [body('a\u0000b'), /control character/],
      [body('ok', '..'), /contains '\.\.'|is empty/],
      [body('表'.repeat(100)), /300 bytes long in UTF-8, longer than 255 bytes/],
    ] as const) {
      const r = await s.call('POST', '/api/managed-lakehouse/tables', { body: b });
      expect(r.status, JSON.stringify(b)).toBe(400);
      expect(r.json.error.message).toMatch(why);
      expect(r.json.error.message).toMatch(/a name must be/);
    }
    expect(listFiles(s.warehouse).filter((f) => !f.startsWith('catalog.db'))).toEqual([]);
  });
});
