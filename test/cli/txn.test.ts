import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/core/json.ts';
import { cli, listFiles, ndjson, tempDir } from '../helpers.ts';

describe('twinlake write --txn (idempotent batches)', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());
  const wh = ['--warehouse', join(tmp.path, 'wh')];

  it('a replayed batch says so and writes nothing, in every mode; --json carries the outcome', () => {
    const input = join(tmp.path, 'batch.ndjson');
    writeFileSync(input, ndjson([{ id: 1, v: 'a' }, { id: 2, v: 'b' }]));
    const first = cli(['write', 'etl.orders', '--input', input, '--txn', 'app=ingest-7,version=42', ...wh]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^created etl\.orders \(append\)\n  batch             ingest-7 version 42\n/);

    const again = cli(['write', 'etl.orders', '--input', input, '--txn', 'app=ingest-7,version=42', ...wh]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.split('\n')[0]).toBe(
      'skipped etl.orders (append): batch ingest-7 version 42 is already committed (the table holds ingest-7 up to version 42); nothing was written',
    );
    const table = join(tmp.path, 'wh', 'etl', 'orders');
    const files = listFiles(table);
    for (const mode of [['--mode', 'overwrite'], ['--mode', 'merge', '--key', 'id']]) {
      const r = cli(['write', 'etl.orders', '--input', input, '--txn', 'app=ingest-7,version=41', '--json', ...mode, ...wh]);
      expect(r.code, r.stderr).toBe(0);
      const result = parseJson(r.stdout, 'stdout') as { txn: Record<string, unknown>; files: number; mode: string };
      expect(result.txn).toEqual({ appId: 'ingest-7', version: 41, status: 'already-committed', latestVersion: 42 });
      expect(result.files).toBe(0);
    }
    expect(listFiles(table)).toEqual(files);

    const merged = cli(['write', 'etl.orders', '--input', input, '--txn', 'app=ingest-7,version=43', '--mode', 'merge', '--key', 'id', '--json', ...wh]);
    expect(merged.code, merged.stderr).toBe(0);
    expect((parseJson(merged.stdout, 'stdout') as { txn: unknown }).txn).toEqual({ appId: 'ingest-7', version: 43, status: 'committed', latestVersion: 42 });
    for (const format of ['iceberg', 'delta']) {
      const read = cli(['read', 'etl.orders', '--format', format, '--output', 'ndjson', ...wh]);
      expect(read.stdout.trim().split('\n')).toHaveLength(2);
    }
  });

  it('refuses a malformed --txn with one line, before anything is written', () => {
    const input = join(tmp.path, 'bad.ndjson');
    writeFileSync(input, ndjson([{ id: 1 }]));
    const cases: [string[], number, string][] = [
      [['--txn', 'app=a'], 3, 'twinlake: write: --txn "app=a": expected app=ID,version=N, version is missing\n'],
      [['--txn', 'version=3'], 3, 'twinlake: write: --txn "version=3": expected app=ID,version=N, app is missing\n'],
      [['--txn', 'app=a,version=x'], 3, 'twinlake: write: --txn "app=a,version=x": version expects a whole number, found "x"\n'],
      [['--txn', 'app=a,version=-1'], 3, 'twinlake: write: --txn "app=a,version=-1": version expects a whole number, found "-1"\n'],
      [['--txn', 'app=a,version=1,version=2'], 3, 'twinlake: write: --txn "app=a,version=1,version=2": version is given twice\n'],
      [['--txn', 'app=a,version=1,mode=x'], 3, 'twinlake: write: --txn "app=a,version=1,mode=x": expected app=ID,version=N, found "mode=x"\n'],
      [['--txn', 'app=,version=1'], 3, 'twinlake: write: --txn "app=,version=1": expected a non-empty application id, found ""\n'],
      [['--txn', 'app=a,version=99999999999999999999'], 3, 'twinlake: write: --txn "app=a,version=99999999999999999999": expected the batch version to be a whole number from 0 to 9223372036854775807, found 99999999999999999999\n'],
      [['--txn', 'app=a,version=1', '--txn', 'app=b,version=2'], 2, 'twinlake: write: --txn is given more than once ("app=a,version=1", then "app=b,version=2"); give it once\n'],
    ];
    for (const [args, code, stderr] of cases) {
      const r = cli(['write', 'etl.bad', '--input', input, ...args, ...wh]);
      expect([r.code, r.stderr], args.join(' ')).toEqual([code, stderr]);
    }
    expect(listFiles(join(tmp.path, 'wh', 'etl', 'bad'))).toEqual([]);
  });
});
