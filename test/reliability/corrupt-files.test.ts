import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Lakehouse, type Table } from '../../src/index.ts';
import { errorOf, listFiles, tempDir } from '../helpers.ts';

/**
 * Every kind of table file, damaged every way: cut in half, zeroed, overwritten with garbage, or
 * replaced by the same kind of file of another table (a valid file, the hardest case). For each,
 * a read gives a TwinlakeError naming the file and what was expected (or, for a file that is only
 * a hint, the right rows), `verify` names it, and a write either refuses and leaves every table
 * file as it was, repairs the file from what determines it, or leaves the damage exactly as it
 * was (still refused by reads) — never a wrong answer, never dropped rows.
 *
 * The table below is the README's corruption table.
 */

type Kind =
  | 'metadata.json'
  | 'manifest list'
  | 'manifest'
  | 'data file'
  | 'delete file'
  | 'Puffin deletion vector'
  | 'Delta commit'
  | 'Delta checkpoint'
  | '_last_checkpoint'
  | 'version hint'
  | 'catalog row';
type Damage = 'truncated' | 'zeroed' | 'garbage' | 'from another table' | 'missing';

/** What a write on the damaged table does. */
type Write =
  | 'refused' // fails with the read's error; every table file is left as it was
  | 'repaired' // warns naming the file and rewrites it from what determines it; reads are right again
  | 'untouched'; // succeeds without needing the file; the file stays byte for byte, reads still refuse it

interface Row {
  kind: Kind;
  damage: Damage;
  /** The read's error, or `rows` when the file is only a hint and the read is still right. */
  read: RegExp | 'rows';
  /** verify: a finding (kind: fragment of what it found) or the error it stops with. */
  verify: { finding: string; found?: RegExp } | RegExp;
  write: Write;
}

const notAvro = /not an Avro container file \(expected magic "Obj\\x01", found/;
const sizeMismatch = /expected \d+ bytes as the table metadata records \(file_size_in_bytes\), found \d+/;
const notParquet = /expected a Parquet file \(PAR1 at its start and end\), found bytes that are not/;

export const corruptionTable: Row[] = [
  { kind: 'metadata.json', damage: 'truncated', read: /at line 1, column \d+/, verify: /at line 1, column \d+/, write: 'refused' },
  { kind: 'metadata.json', damage: 'zeroed', read: /unexpected "\\u0000" at line 1, column 1/, verify: /unexpected "\\u0000"/, write: 'refused' },
  { kind: 'metadata.json', damage: 'garbage', read: /unexpected "\\u0007" at line 1, column 1/, verify: /unexpected "\\u0007"/, write: 'refused' },
  { kind: 'metadata.json', damage: 'from another table', read: /expected metadata of a table whose metadata folder holds it, found metadata of the table at \S+\/other\d+\/t/, verify: /found metadata of the table at/, write: 'refused' },

  { kind: 'manifest list', damage: 'truncated', read: /file truncated \(needed \d+ bytes at byte \d+, file has \d+\)/, verify: /file truncated/, write: 'refused' },
  { kind: 'manifest list', damage: 'zeroed', read: notAvro, verify: notAvro, write: 'refused' },
  { kind: 'manifest list', damage: 'garbage', read: notAvro, verify: notAvro, write: 'refused' },
  { kind: 'manifest list', damage: 'from another table', read: /expected the manifest list of snapshot \d+, found one written for snapshot \d+/, verify: /expected the manifest list of snapshot/, write: 'refused' },

  { kind: 'manifest', damage: 'truncated', read: /file truncated \(needed \d+ bytes at byte \d+, file has \d+\)/, verify: /file truncated/, write: 'untouched' },
  { kind: 'manifest', damage: 'zeroed', read: notAvro, verify: notAvro, write: 'untouched' },
  { kind: 'manifest', damage: 'garbage', read: notAvro, verify: notAvro, write: 'untouched' },
  { kind: 'manifest', damage: 'from another table', read: /expected 1 added, 0 existing and 0 deleted entries with 10 added rows \(the manifest list's counts\), found \d+ added, \d+ existing and \d+ deleted entries with \d+ added rows/, verify: /the manifest list's counts/, write: 'untouched' },

  { kind: 'data file', damage: 'truncated', read: sizeMismatch, verify: { finding: 'table-file-damaged', found: /^\d+ bytes$/ }, write: 'untouched' },
  { kind: 'data file', damage: 'zeroed', read: notParquet, verify: { finding: 'table-file-damaged', found: /"\\u0000\\u0000\\u0000\\u0000"/ }, write: 'untouched' },
  { kind: 'data file', damage: 'garbage', read: notParquet, verify: { finding: 'table-file-damaged', found: /^"\\u0007/ }, write: 'untouched' },
  { kind: 'data file', damage: 'from another table', read: sizeMismatch, verify: { finding: 'table-file-damaged', found: /^\d+ bytes$/ }, write: 'untouched' },

  { kind: 'delete file', damage: 'truncated', read: sizeMismatch, verify: notParquet, write: 'untouched' },
  { kind: 'delete file', damage: 'zeroed', read: notParquet, verify: notParquet, write: 'untouched' },
  { kind: 'delete file', damage: 'garbage', read: notParquet, verify: notParquet, write: 'untouched' },
  // Same size or not, the other table's deletes are caught: by size, else by the rows' file_path.
  { kind: 'delete file', damage: 'from another table', read: /file_size_in_bytes|expected deletes of \S+ only \(its referenced_data_file\), found a row for \S+\/other\d+\//, verify: { finding: 'deletes' }, write: 'untouched' },

  { kind: 'Puffin deletion vector', damage: 'truncated', read: sizeMismatch, verify: { finding: 'table-file-damaged', found: /^\d+ bytes$/ }, write: 'untouched' },
  { kind: 'Puffin deletion vector', damage: 'zeroed', read: /expected the Puffin magic at the end of the file, found none/, verify: /expected size \d+, found 0/, write: 'untouched' },
  { kind: 'Puffin deletion vector', damage: 'garbage', read: /expected the Puffin magic at the end of the file, found none/, verify: /expected size \d+, found \d+/, write: 'untouched' },
  { kind: 'Puffin deletion vector', damage: 'from another table', read: /file_size_in_bytes|expected the deletion vector of \S+, found one of \S+\/other\d+\//, verify: { finding: 'deletes' }, write: 'untouched' },

  { kind: 'Delta commit', damage: 'truncated', read: /line \d+: unterminated string/, verify: { finding: 'delta-commit-unparsable' }, write: 'repaired' },
  { kind: 'Delta commit', damage: 'zeroed', read: /line 1: unexpected "\\u0000"/, verify: { finding: 'delta-commit-unparsable' }, write: 'repaired' },
  { kind: 'Delta commit', damage: 'garbage', read: /line 1: unexpected "\\u0007"/, verify: { finding: 'delta-commit-unparsable' }, write: 'repaired' },
  { kind: 'Delta commit', damage: 'from another table', read: /read: \S+ does not exist/, verify: { finding: 'delta-behind' }, write: 'untouched' },

  { kind: 'Delta checkpoint', damage: 'truncated', read: /expected a Parquet file, found unreadable bytes/, verify: { finding: 'delta-checkpoint-unreadable' }, write: 'repaired' },
  { kind: 'Delta checkpoint', damage: 'zeroed', read: /expected a Parquet file, found unreadable bytes/, verify: { finding: 'delta-checkpoint-unreadable' }, write: 'repaired' },
  { kind: 'Delta checkpoint', damage: 'garbage', read: /expected a Parquet file, found unreadable bytes/, verify: { finding: 'delta-checkpoint-unreadable' }, write: 'repaired' },
  { kind: 'Delta checkpoint', damage: 'from another table', read: /read: \S+ does not exist/, verify: { finding: 'delta-checkpoint-differs' }, write: 'untouched' },

  // `_last_checkpoint` and the version hint are hints: a read that finds one wrong is still right.
  { kind: '_last_checkpoint', damage: 'truncated', read: 'rows', verify: { finding: 'delta-last-checkpoint', found: /unterminated string/ }, write: 'repaired' },
  { kind: '_last_checkpoint', damage: 'zeroed', read: 'rows', verify: { finding: 'delta-last-checkpoint', found: /unexpected "\\u0000"/ }, write: 'repaired' },
  { kind: '_last_checkpoint', damage: 'garbage', read: 'rows', verify: { finding: 'delta-last-checkpoint', found: /unexpected "\\u0007"/ }, write: 'repaired' },
  { kind: '_last_checkpoint', damage: 'from another table', read: 'rows', verify: { finding: 'delta-last-checkpoint', found: /whose checkpoint does not exist/ }, write: 'repaired' },

  // Read by path (the hint is what a reader without the catalog goes by).
  { kind: 'version hint', damage: 'truncated', read: /expected a metadata version number or file name, found an empty file/, verify: { finding: 'version-hint-missing-file', found: /an empty file/ }, write: 'repaired' },
  { kind: 'version hint', damage: 'zeroed', read: /expected a metadata version number or file name, found "\\u0000"/, verify: { finding: 'version-hint-missing-file' }, write: 'repaired' },
  { kind: 'version hint', damage: 'garbage', read: /expected a metadata version number or file name, found "\\u0007"/, verify: { finding: 'version-hint-missing-file' }, write: 'repaired' },
  { kind: 'version hint', damage: 'from another table', read: 'rows', verify: { finding: 'version-hint-missing-file', found: /whose v\d+\.metadata\.json does not exist/ }, write: 'repaired' },

  { kind: 'catalog row', damage: 'garbage', read: /unexpected "\\u0007" at line 1, column 1/, verify: /unexpected "\\u0007"/, write: 'refused' },
  { kind: 'catalog row', damage: 'missing', read: /points to metadata file \S+, which does not exist/, verify: /which does not exist/, write: 'refused' },
];

const tmp = tempDir();
const warnings: string[] = [];
let lake: Lakehouse;
let n = 0;

beforeAll(async () => {
  lake = await Lakehouse.open({ warehouse: tmp.path, onWarning: (m) => warnings.push(m) });
});
afterAll(async () => {
  await lake.close();
  tmp.cleanup();
});

const dir = (name: string) => join(tmp.path, ...name.split('.'));
const ids = (rows: Record<string, unknown>[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

/** Which file of a table each kind is, and which table shape has one. */
const kinds: Record<Kind, { formatVersion: '2' | '3'; checkpoints?: boolean; file: RegExp; read: 'iceberg' | 'delta' | 'path' }> = {
  'metadata.json': { formatVersion: '2', file: /^metadata\/v\d+\.metadata\.json$/, read: 'iceberg' },
  'manifest list': { formatVersion: '2', file: /^metadata\/snap-.*\.avro$/, read: 'iceberg' },
  manifest: { formatVersion: '2', file: /^metadata\/.*-m\d+\.avro$/, read: 'iceberg' },
  'data file': { formatVersion: '2', file: /^data\/(?!.*-deletes).*\.parquet$/, read: 'iceberg' },
  'delete file': { formatVersion: '2', file: /^data\/.*-deletes\.parquet$/, read: 'iceberg' },
  'Puffin deletion vector': { formatVersion: '3', file: /^data\/.*\.puffin$/, read: 'iceberg' },
  'Delta commit': { formatVersion: '2', file: /^_delta_log\/\d+\.json$/, read: 'delta' },
  'Delta checkpoint': { formatVersion: '2', checkpoints: true, file: /^_delta_log\/\d+\.checkpoint\.parquet$/, read: 'delta' },
  _last_checkpoint: { formatVersion: '2', checkpoints: true, file: /^_delta_log\/_last_checkpoint$/, read: 'delta' },
  'version hint': { formatVersion: '2', file: /^metadata\/version-hint\.text$/, read: 'path' },
  'catalog row': { formatVersion: '2', file: /^metadata\/v\d+\.metadata\.json$/, read: 'iceberg' },
};

/**
 * A merge-on-read table: rows with one deleted (a position delete file in v2, a Puffin DV in v3),
 * and `extra` more appends. The other table has other rows, fewer of them, deletes another one and
 * has more commits, so each of its files differs from ours in content.
 */
async function makeTable(name: string, kind: Kind, shape: { rows: number; first: number; deleted: number; extra: number }): Promise<Table> {
  const k = kinds[kind];
  const t = lake.table(name);
  const properties: Record<string, string> = { 'format-version': k.formatVersion, 'write.delete.mode': 'merge-on-read', 'delta.checkpointInterval': k.checkpoints ? '2' : '100' };
  await t.append(Array.from({ length: shape.rows }, (_, i) => ({ id: shape.first + i, g: i % 2 })), { properties });
  await t.delete(`id = ${shape.first + shape.deleted}`);
  const extra = shape.extra;
  for (let i = 0; i < extra; i++) await t.append([{ id: 100 + i, g: 0 }]);
  return t;
}

/**
 * The file of a kind the current state reads: the current snapshot's manifest list, else the
 * newest file matching the kind (by name, numbers compared as numbers).
 */
function newestFile(name: string, pattern: RegExp): string {
  if (pattern === kinds['manifest list'].file) {
    const metadata = JSON.parse(readFileSync(join(dir(name), newestFile(name, kinds['metadata.json'].file)), 'utf8'));
    const list: string = metadata.snapshots.find((s: { 'snapshot-id': number }) => s['snapshot-id'] === metadata['current-snapshot-id'])['manifest-list'];
    return `metadata/${basename(list)}`;
  }
  const found = listFiles(dir(name)).filter((f) => pattern.test(f));
  expect(found.length, `a ${pattern} file in ${name}`).toBeGreaterThan(0);
  return found.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1)!;
}

function damaged(bytes: Buffer, damage: Damage, other: Buffer): Buffer {
  if (damage === 'truncated') return bytes.subarray(0, Math.floor(bytes.length / 2));
  if (damage === 'zeroed') return Buffer.alloc(bytes.length);
  if (damage === 'garbage') return Buffer.from(Array.from({ length: bytes.length }, (_, i) => (i * 131 + 7) & 255));
  return other;
}

/** Every table file with a hash of its bytes: equal before and after means nothing changed. */
function snapshotFiles(name: string): string[] {
  return listFiles(dir(name)).map((f) => `${f} ${createHash('sha256').update(readFileSync(join(dir(name), f))).digest('hex')}`);
}

function pointCatalogAt(name: string, location: string): void {
  const db = new Database(join(tmp.path, 'catalog.db'));
  try {
    const [namespace, table] = name.split('.');
    const changed = db.prepare('UPDATE iceberg_tables SET metadata_location = ? WHERE table_namespace = ? AND table_name = ?').run(location, namespace, table);
    expect(changed.changes).toBe(1);
  } finally {
    db.close();
  }
}

describe('corrupt and hostile table files', () => {
  for (const row of corruptionTable) {
    it(`${row.kind}, ${row.damage}: read ${row.read === 'rows' ? 'right' : 'refuses'}, verify names it, a write ${row.write === 'refused' ? 'refuses and changes nothing' : row.write === 'repaired' ? 'repairs it' : 'leaves it as it was'}`, async () => {
      const k = kinds[row.kind];
      const id = ++n;
      const name = `ours${id}.t`;
      const t = await makeTable(name, row.kind, { rows: 10, first: 0, deleted: 3, extra: k.checkpoints ? 1 : 0 });
      await makeTable(`other${id}.t`, row.kind, { rows: 7, first: 1000, deleted: 5, extra: 2 });
      const before = ids(await t.read());
      expect(ids(await t.read({ format: 'delta' }))).toEqual(before);

      // The damage, and the name the errors must give.
      let named: string;
      const file = newestFile(name, k.file);
      if (row.kind === 'catalog row') {
        const target = row.damage === 'missing' ? join(dir(name), 'metadata', 'v99.metadata.json') : join(dir(name), 'metadata', 'garbage.metadata.json');
        if (row.damage !== 'missing') writeFileSync(target, damaged(readFileSync(join(dir(name), file)), 'garbage', Buffer.alloc(0)));
        pointCatalogAt(name, `file://${target}`);
        named = basename(target);
      } else {
        const other = readFileSync(join(dir(`other${id}.t`), newestFile(`other${id}.t`, k.file)));
        writeFileSync(join(dir(name), file), damaged(readFileSync(join(dir(name), file)), row.damage, other));
        named = basename(file);
      }

      // A fresh lakehouse: nothing cached from before the damage.
      const fresh = await Lakehouse.open({ warehouse: tmp.path, onWarning: (m) => warnings.push(m) });
      try {
        const table = fresh.table(name);
        const read = () => (k.read === 'path' ? fresh.readPath(dir(name)) : table.read({ format: k.read }));
        let readError: RegExp | undefined;
        if (row.read === 'rows') expect(ids(await read())).toEqual(before);
        else {
          const e = await errorOf(read());
          expect(e.message).toMatch(row.read);
          // Data and delete files are named by their path; the message may name the other table's
          // file it found as well. The Delta log names the file it could not follow.
          if (!/does not exist/.test(e.message) || row.kind === 'catalog row') expect(e.message).toContain(named);
          readError = row.read;
        }

        const filesBefore = snapshotFiles(name);
        if ('finding' in row.verify) {
          const v = await table.verify();
          expect(v.ok).toBe(false);
          const f = v.findings.find((x) => x.kind === (row.verify as { finding: string }).finding);
          expect(f, v.findings.map((x) => `${x.kind} ${x.file} ${x.found}`).join("; ")).toBeDefined();
          if (row.verify.found) expect(f!.found).toMatch(row.verify.found);
        } else {
          const e = await errorOf(table.verify());
          expect(e.message).toMatch(row.verify);
        }
        expect(snapshotFiles(name)).toEqual(filesBefore); // verify alone changes nothing

        const warned = warnings.length;
        if (row.write === 'refused') {
          const e = await errorOf(table.append([{ id: 50, g: 0 }]));
          expect(e.message).toMatch(readError ?? /./);
          expect(snapshotFiles(name)).toEqual(filesBefore);
          return;
        }
        await table.append([{ id: 50, g: 0 }]);
        if (row.write === 'repaired') {
          expect(warnings.slice(warned).join('\n')).toContain(named);
          expect(ids(await read())).toEqual([...before, 50].sort((a, b) => a - b));
          expect(ids(await table.read())).toEqual([...before, 50].sort((a, b) => a - b));
        } else {
          // The damaged file is left as it was and is still refused: the write made nothing worse.
          const stillThere = snapshotFiles(name).find((l) => l.startsWith(`${file} `));
          expect(stillThere).toBe(filesBefore.find((l) => l.startsWith(`${file} `)));
          const e = await errorOf(read());
          expect(e.message).toMatch(readError!);
          // A damaged Delta file leaves the Iceberg view, the truth, whole.
          if (k.read === 'delta') expect(ids(await table.read())).toEqual([...before, 50].sort((a, b) => a - b));
        }
      } finally {
        await fresh.close();
      }
    });
  }
});
