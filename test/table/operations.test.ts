import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommit, type CommitInfo } from '../../src/format/delta/actions.ts';
import { lakehouseFixture } from '../lakehouse-fixture.ts';

function commitInfo(dir: string, version: number): CommitInfo {
  const actions = parseCommit(readFileSync(join(dir, '_delta_log', `${String(version).padStart(20, '0')}.json`), 'utf8'), `version ${version}`);
  return (actions.find((a) => 'commitInfo' in a) as { commitInfo: CommitInfo }).commitInfo;
}

describe('operations are named as they are', () => {
  const fx = lakehouseFixture();

  it('results and Delta commits name merges and deletes with Delta\'s operations', async () => {
    const t = fx.lake.table('ops.t');
    const dir = join(fx.warehouse, 'ops', 't');
    expect((await t.append([{ id: 1, op: 'U' }, { id: 2, op: 'U' }, { id: 3, op: 'U' }])).mode).toBe('append');
    const m = await t.merge([{ id: 2, op: 'D' }, { id: 4, op: 'I' }], { keys: ['id'], deleteWhen: "op = 'D'" });
    expect(m.mode).toBe('merge');
    const merge = commitInfo(dir, m.deltaVersion!);
    expect(merge.operation).toBe('MERGE');
    expect(merge.operationParameters).toMatchObject({ predicate: 'target.id = source.id' });
    expect(JSON.parse(String(merge.operationParameters!.matchedPredicates))).toEqual([{ actionType: 'delete', predicate: "op = 'D'" }, { actionType: 'update' }]);
    expect(merge.isBlindAppend).toBe(false);

    for (const strategy of ['copy-on-write', 'merge-on-read'] as const) {
      const where = strategy === 'copy-on-write' ? 'id = 1' : 'id = 3';
      const d = await t.delete(where, { strategy });
      expect(d.mode).toBe('delete');
      const info = commitInfo(dir, d.deltaVersion!);
      expect(info.operation).toBe('DELETE');
      expect(info.operationParameters).toEqual({ predicate: where });
    }
    expect((await t.delete('id = 999')).mode).toBe('delete');
    const o = await t.overwrite([{ id: 9, op: 'I' }]);
    expect(commitInfo(dir, o.deltaVersion!).operationParameters).toMatchObject({ mode: 'Overwrite' });
    expect((await t.history()).map((h) => h.change ?? h.operation)).toEqual(['overwrite', 'delete', 'delete', 'merge', 'append']);
  });

  it('describe right after create shows Delta version 0', async () => {
    const t = fx.lake.table('ops.created');
    await t.create({ type: 'struct', fields: [{ id: 1, name: 'id', required: false, type: 'long' }] });
    expect((await t.describe()).deltaVersion).toBe(0);
    const only = fx.lake.table('ops.icebergonly');
    await only.create({ type: 'struct', fields: [{ id: 1, name: 'id', required: false, type: 'long' }] }, { formats: ['iceberg'] });
    expect((await only.describe()).deltaVersion).toBeUndefined();
  });

  it('history counts rows with row-level deletes applied', async () => {
    const t = fx.lake.table('ops.counted');
    await t.append(Array.from({ length: 10 }, (_, i) => ({ id: i })));
    await t.delete('id < 3', { strategy: 'merge-on-read' });
    const h = await t.history();
    expect(h[0]!.totalRecords).toBe(7);
    expect(h[0]!.totalRecords).toBe(await t.count());
    expect(h[1]!.totalRecords).toBe(10);
  });

  it('describe and history take a table path, whoever keeps the catalog', async () => {
    const t = fx.lake.table('ops.bypath');
    await t.append([{ id: 1 }]);
    await t.append([{ id: 2 }]);
    const dir = join(fx.warehouse, 'ops', 'bypath');
    const d = await fx.lake.describePath(dir);
    const byName = await t.describe();
    expect(d).toMatchObject({ formats: ['delta', 'iceberg'], records: 2, files: 2, currentSnapshotId: byName.currentSnapshotId, deltaVersion: 2, tableUuid: byName.tableUuid });
    expect((await fx.lake.historyPath(dir)).map((e) => e.snapshotId)).toEqual((await t.history()).map((e) => e.snapshotId));

    const delta = fx.lake.table('ops.deltaonly');
    await delta.append([{ id: 1 }], { formats: ['delta'] });
    const dd = await fx.lake.describePath(join(fx.warehouse, 'ops', 'deltaonly'));
    expect(dd).toMatchObject({ formats: ['delta'], records: 1, deltaVersion: 0 });
    expect((await fx.lake.historyPath(join(fx.warehouse, 'ops', 'deltaonly'))).map((e) => e.deltaVersion)).toEqual([0]);

    const summaries = await fx.lake.tableSummaries();
    expect(summaries.find((s) => s.name === 'ops.bypath')).toMatchObject({ formats: ['delta', 'iceberg'], rows: 2, files: 2 });
    expect(summaries.find((s) => s.name === 'ops.t')).toMatchObject({ rows: 1 });
  });
});
