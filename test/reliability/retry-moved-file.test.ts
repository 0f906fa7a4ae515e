import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TwinlakeError } from '../../src/core/errors.ts';
import { LocalStore } from '../../src/io/local-store.ts';
import { RetryingStore } from '../../src/io/retrying-store.ts';
import { tempDir } from '../helpers.ts';

/**
 * A store may consume the local file putFile stores (the local store renames it into place). When
 * such a call took effect but its answer was lost (the folder's fsync after the rename failed
 * with EINTR), the retry layer's repeat finds no local file: it must see that the first attempt
 * landed rather than fail the write with ENOENT. Found by the model-checked workload (seed 119:
 * a compaction whose data file's putFile failed once after its effect).
 */
describe('a retried putFile whose first attempt moved the file in', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());
  const noWait = { sleep: async () => undefined, random: () => 0.5 };

  /** The local store, with its next putFile failing after its effect, as a lost answer. */
  function landedThenFails(): LocalStore {
    const store = new LocalStore(join(tmp.path, 'wh'));
    let left = 1;
    const putFile = store.putFile.bind(store);
    store.putFile = async (path: string, localFile: string) => {
      await putFile(path, localFile);
      if (left-- > 0) throw new TwinlakeError('io', `local store: cannot sync the folder of ${path}: EINTR`, { path, code: 'EINTR' });
    };
    return store;
  }

  it('succeeds, and the file is in place', async () => {
    const inner = landedThenFails();
    const local = join(tmp.path, 'staged.parquet');
    writeFileSync(local, 'PAR1 rows PAR1');
    await new RetryingStore(inner, noWait).putFile!('t/data/a.parquet', local);
    expect(readFileSync(join(tmp.path, 'wh', 't/data/a.parquet'), 'utf8')).toBe('PAR1 rows PAR1');
  });

  it('a local file gone without having landed still fails, naming the file', async () => {
    const inner = new LocalStore(join(tmp.path, 'wh'));
    const local = join(tmp.path, 'never-written.parquet');
    const err = await new RetryingStore(inner, noWait).putFile!('t/data/b.parquet', local).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TwinlakeError);
    expect((err as Error).message).toContain('b.parquet');
  });
});
