import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../core/errors.ts';
import { stringifyJson } from '../../core/json.ts';
import { quoteString } from '../../engine/duckdb-session.ts';
import { buildLastCheckpoint, CHECKPOINT_COLUMNS, checkpointActions, parseLastCheckpoint } from '../../format/delta/checkpoint.ts';
import { checkpointPath } from '../../format/delta/actions.ts';
import { readDeltaSnapshot } from './delta-log.ts';
import type { TableContext } from '../table-context.ts';
import { identString } from '../table-context.ts';
import { stagingFolder, trackStaging } from '../write/interrupt.ts';

/**
 * A classic Parquet checkpoint every `delta.checkpointInterval` versions (PROTOCOL.md
 * §Checkpoints), so readers and writers start from it instead of replaying the whole log. A
 * checkpoint is an optimization: failing to write one only warns.
 */
export async function writeDeltaCheckpointIfDue(
  ctx: TableContext,
  location: string,
  versions: readonly number[],
  interval: number,
  warn: (m: string) => void,
): Promise<void> {
  // One checkpoint at the newest due version among those just written covers them all.
  const due = versions.filter((v) => v > 0 && v % interval === 0);
  if (due.length === 0) return;
  const version = Math.max(...due);
  try {
    await writeDeltaCheckpoint(ctx, location, version);
  } catch (e) {
    warn(`delta: checkpoint ${version} of ${identString(ctx.ident)} was not written (${errorMessage(e)})`);
  }
}

export async function writeDeltaCheckpoint(ctx: Pick<TableContext, 'io' | 'session'>, location: string, version: number): Promise<void> {
  const { store, key } = ctx.io.storeAt(location);
  const snapshot = await readDeltaSnapshot(store, key, { version });
  const rows = checkpointActions(snapshot);
  const session = await ctx.session();
  const dir = await stagingFolder(session, 'twinlake-checkpoint-');
  const untrack = trackStaging(dir);
  try {
    const json = join(dir, 'rows.ndjson');
    const parquet = join(dir, 'checkpoint.parquet');
    await writeFile(json, rows.map((r) => stringifyJson(r)).join('\n') + '\n');
    const columns = CHECKPOINT_COLUMNS.map((c) => `${quoteString(c.name)}: ${quoteString(c.type)}`).join(', ');
    await session.run(
      `COPY (SELECT ${CHECKPOINT_COLUMNS.map((c) => `"${c.name}"`).join(', ')} FROM read_json(${quoteString(json)}, format = 'newline_delimited', columns = {${columns}})) ` +
        `TO ${quoteString(parquet)} (FORMAT parquet, COMPRESSION zstd)`,
    );
    const bytes = await readFile(parquet);
    const uri = `${location}/${checkpointPath(version)}`;
    // Two writers may both checkpoint version N; the files they write describe the same state.
    await ctx.io.writeIfAbsent(uri, bytes);
    const lastUri = `${location}/_delta_log/_last_checkpoint`;
    // A torn or garbage `_last_checkpoint` is only a stale hint: this checkpoint replaces it.
    const current = (await ctx.io.exists(lastUri)) ? await ctx.io.readText(lastUri).then((t) => parseLastCheckpoint(t).version, () => -1) : -1;
    if (current < version) {
      await ctx.io.write(lastUri, buildLastCheckpoint({ version, size: rows.length, sizeInBytes: bytes.length, numOfAddFiles: snapshot.files.length }));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
    untrack();
  }
}
