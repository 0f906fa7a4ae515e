import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { invalidInput } from '../core/errors.ts';
import { parseJson, stringifyJson } from '../core/json.ts';
import { Lakehouse } from '../table/lakehouse.ts';
import { parseInputFormat, type WriteInput } from '../table/input.ts';
import { parseFormats, type RowChangeStrategy } from '../table/table-properties.ts';
import type { ReadOptions } from '../table/table.ts';
import type { MergeResult } from '../table/merge.ts';
import type { StructType } from '../spec/iceberg/types.ts';
import { formatTable, printDescription, printHistory } from './format.ts';
import { parseRowCount, runQuickstart } from './quickstart.ts';
import { withProgress } from './progress.ts';

interface GlobalOptions {
  warehouse?: string;
  config?: string;
}

async function openLakehouse(cmd: Command): Promise<Lakehouse> {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  let warehouse = opts.warehouse;
  if (opts.config) {
    const text = await readFile(opts.config, 'utf8').catch((e) => {
      throw invalidInput(`config: cannot read ${opts.config} (${(e as Error).message})`);
    });
    const config = parseJson(text, opts.config) as { warehouse?: string };
    warehouse ??= config.warehouse;
  }
  return Lakehouse.open({ warehouse: warehouse ?? process.env.TWINLAKE_WAREHOUSE ?? './warehouse' });
}

async function using<T>(cmd: Command, fn: (lake: Lakehouse) => Promise<T>): Promise<T> {
  const lake = await openLakehouse(cmd);
  try {
    return await fn(lake);
  } finally {
    await lake.close();
  }
}

function out(line: string): void {
  process.stdout.write(line + '\n');
}

function parseTravel(o: { snapshot?: string; version?: string; asOf?: string }): ReadOptions {
  const travel: ReadOptions = {};
  if (o.snapshot !== undefined) {
    if (!/^-?\d+$/.test(o.snapshot)) throw invalidInput(`read: --snapshot expects a snapshot ID, found ${JSON.stringify(o.snapshot)}`);
    travel.snapshotId = BigInt(o.snapshot);
  }
  if (o.version !== undefined) {
    if (!/^\d+$/.test(o.version)) throw invalidInput(`read: --version expects a Delta version number, found ${JSON.stringify(o.version)}`);
    travel.version = Number(o.version);
  }
  if (o.asOf !== undefined) travel.asOf = o.asOf;
  return travel;
}

/** A table argument is a path when it contains a slash or names an existing directory. */
async function isPathArgument(arg: string): Promise<boolean> {
  if (arg.includes('/') || arg.startsWith('file:')) return true;
  return (await stat(arg).catch(() => undefined))?.isDirectory() ?? false;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function parseProperties(list: string[]): Record<string, string> | undefined {
  if (list.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw invalidInput(`write: --property expects key=value, found ${JSON.stringify(item)}`);
    out[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return out;
}

function globalOptions(cmd: Command): Command {
  return cmd.option('--warehouse <dir>', 'warehouse directory').option('--config <file>', 'JSON config file');
}

export function registerCommands(program: Command): void {
  const command = (name: string) => globalOptions(program.command(name));
  command('quickstart')
    .description('write a realistic sample (100k events) into analytics.events and read it back through both formats')
    .option('--rows <n>', 'number of events', '100000')
    .option('--replace', 'overwrite analytics.events if it exists (default: append the sample again)')
    .action(async (o: { rows: string; replace?: boolean }, cmd: Command) => {
      const rows = parseRowCount(o.rows);
      await using(cmd, (lake) => runQuickstart(lake, rows, out, { replace: o.replace }));
    });

  command('write')
    .description('write records into a table (created on first write) as Iceberg and Delta')
    .argument('<table>', 'namespace.table')
    .requiredOption('--input <file>', "input file, folder or glob (repeatable: all go into one commit; .gz/.zst are decompressed), or '-' for standard input", (value: string, previous?: string[]) => [...(previous ?? []), value])
    .option('--input-format <format>', 'ndjson | json | csv | parquet (default: from the file extension)')
    .option('--mode <mode>', 'append | overwrite | merge', 'append')
    .option('--key <columns>', 'merge: key columns, comma-separated')
    .option('--order-by <column>', 'merge: within the batch, the greatest value wins for a key (default: the last record)')
    .option('--delete-when <filter>', "merge: records matching this filter delete their key, e.g. \"op = 'D'\"")
    .option('--strategy <strategy>', 'merge: copy-on-write | merge-on-read (default: the table property write.merge.mode)')
    .option('--schema <file>', 'declared schema (Iceberg JSON struct) instead of inference')
    .option('--formats <list>', 'for a new table: iceberg,delta (default both), iceberg or delta')
    .option('--property <key=value>', 'for a new table: a table property (repeatable)', collect, [])
    .option('--partition <spec>', 'partition spec, e.g. "day(ts), bucket(16, user_id)"; on an existing table a new spec evolves it')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, o: { input: string[]; inputFormat?: string; mode: string; schema?: string; formats?: string; property: string[]; partition?: string; key?: string; orderBy?: string; deleteWhen?: string; strategy?: string; json?: boolean }, cmd: Command) => {
      if (o.mode !== 'append' && o.mode !== 'overwrite' && o.mode !== 'merge') throw invalidInput(`write: --mode must be append, overwrite or merge, found ${JSON.stringify(o.mode)}`);
      if (o.mode === 'merge' && !o.key) throw invalidInput('write: --mode merge needs --key COLUMNS');
      if (o.mode !== 'merge' && (o.key || o.orderBy || o.deleteWhen || o.strategy)) throw invalidInput('write: --key, --order-by, --delete-when and --strategy go with --mode merge');
      const format = o.inputFormat ? parseInputFormat(o.inputFormat) : undefined;
      let input: WriteInput;
      const stdin = o.input.includes('-');
      if (stdin) {
        if (o.input.length > 1) throw invalidInput('write: --input - (standard input) cannot be combined with other inputs');
        if (!format) throw invalidInput("write: --input - (standard input) needs --input-format");
        input = { stream: process.stdin, format, name: 'standard input' };
      } else {
        input = o.input.length === 1 ? { path: o.input[0]!, format } : { paths: o.input, format };
      }
      let schema: StructType | undefined;
      if (o.schema) schema = parseJson(await readFile(o.schema, 'utf8'), o.schema) as StructType;
      const label = stdin ? 'standard input' : o.input.join(', ');
      const sizes = stdin ? [] : await Promise.all(o.input.map(async (p) => { const info = await stat(p).catch(() => undefined); return info?.isFile() ? info.size : undefined; }));
      const size = sizes.length > 0 && sizes.every((s) => s !== undefined) ? sizes.reduce((a, b) => a! + b!, 0) : undefined;
      await using(cmd, async (lake) => {
        const common = { schema, formats: o.formats ? parseFormats(o.formats) : undefined, properties: parseProperties(o.property), partition: o.partition };
        const result = await withProgress(`writing ${label}`, size, () =>
          o.mode === 'merge'
            ? lake.table(table).merge(input, { ...common, keys: o.key!.split(',').map((k) => k.trim()).filter(Boolean), orderBy: o.orderBy, deleteWhen: o.deleteWhen, strategy: o.strategy as RowChangeStrategy | undefined })
            : lake.table(table).write(input, { ...common, mode: o.mode as 'append' | 'overwrite' }),
        );
        if (o.json) return out(stringifyJson(result));
        out(`${result.created ? 'created' : 'wrote'} ${result.table} (${o.mode})`);
        if ('inserted' in result) {
          const m = result as MergeResult;
          const how = m.strategy === 'merge-on-read' ? `${m.deleteFiles} delete files written` : `${m.rewrittenFiles} files rewritten`;
          out(`  merged            ${m.inserted} inserted, ${m.updated} updated, ${m.deleted} deleted, ${how} (${m.strategy})`);
        }
        out(`  iceberg snapshot  ${result.snapshotId}`);
        if (result.deltaVersion !== undefined) out(`  delta version     ${result.deltaVersion}${result.deltaCommitted ? '' : ' (pending: repaired by the next write)'}`);
        out(`  files             ${result.files}`);
        out(`  rows              ${result.rows}`);
        out(`  bytes             ${result.bytes}`);
      });
    });

  command('read')
    .description('read a table by name or by path (any writer), current or at a past version')
    .argument('<table>', 'namespace.table, or a table directory')
    .option('--format <format>', 'iceberg | delta (default: iceberg when present)')
    .option('--snapshot <id>', 'iceberg snapshot ID')
    .option('--version <n>', 'delta version')
    .option('--as-of <time>', 'ISO-8601 time or epoch milliseconds')
    .option('--limit <n>', 'at most N rows')
    .option('--output <format>', 'ndjson | csv | table (default: table on a terminal, else ndjson)')
    .option('--where <filter>', "filter, e.g. \"region = 'us' AND ts >= '2024-01-01'\" (skips files that cannot match)")
    .option('--explain', 'print how many manifests and files were scanned and skipped, not the rows')
    .action(async (table: string, o: { format?: string; snapshot?: string; version?: string; asOf?: string; limit?: string; output?: string; where?: string; explain?: boolean }, cmd: Command) => {
      const format = o.format as 'iceberg' | 'delta' | undefined;
      if (format !== undefined && format !== 'iceberg' && format !== 'delta') throw invalidInput(`read: --format must be iceberg or delta, found ${JSON.stringify(o.format)}`);
      const output = o.output ?? (process.stdout.isTTY ? 'table' : 'ndjson');
      if (!['ndjson', 'csv', 'table'].includes(output)) throw invalidInput(`read: --output must be ndjson, csv or table, found ${JSON.stringify(output)}`);
      const limit = o.limit !== undefined ? Number(o.limit) : undefined;
      if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) throw invalidInput(`read: --limit expects a whole number, found ${JSON.stringify(o.limit)}`);
      const opts: ReadOptions = { ...parseTravel(o), format, limit, where: o.where };
      const byPath = await isPathArgument(table);
      await using(cmd, async (lake) => {
        if (o.explain) {
          const plan = byPath ? await lake.planPath(table, opts) : await lake.table(table).plan(opts);
          out(stringifyJson({ format: plan.format, snapshotId: plan.snapshotId, deltaVersion: plan.deltaVersion, where: o.where ?? null, filesScanned: plan.task.files.length, ...plan.task.explain }));
          return;
        }
        if (output === 'table') {
          const rows = byPath ? await lake.readPath(table, { ...opts, limit: limit ?? 100 }) : await lake.table(table).read({ ...opts, limit: limit ?? 100 });
          out(formatTable(rows));
          return;
        }
        const dir = await mkdtemp(join(tmpdir(), 'twinlake-read-'));
        try {
          const file = join(dir, output === 'csv' ? 'out.csv' : 'out.ndjson');
          const kind = output === 'csv' ? 'csv' : 'json';
          if (byPath) await lake.exportPath(table, file, { ...opts, output: kind });
          else await lake.table(table).export(file, { ...opts, output: kind });
          await pipeline(createReadStream(file), process.stdout, { end: false });
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      });
    });

  command('create')
    .description('create an empty table from a schema (Iceberg JSON struct), optionally partitioned')
    .argument('<table>', 'namespace.table')
    .requiredOption('--schema <file>', 'the schema, an Iceberg struct in JSON')
    .option('--partition <spec>', 'partition spec, e.g. "day(ts), bucket(16, user_id)"')
    .option('--formats <list>', 'iceberg,delta (default both), iceberg or delta')
    .option('--property <key=value>', 'a table property (repeatable)', collect, [])
    .action(async (table: string, o: { schema: string; partition?: string; formats?: string; property: string[] }, cmd: Command) => {
      const schema = parseJson(await readFile(o.schema, 'utf8'), o.schema) as StructType;
      await using(cmd, async (lake) => {
        await lake.table(table).create(schema, { partition: o.partition, formats: o.formats ? parseFormats(o.formats) : undefined, properties: parseProperties(o.property) });
        const d = await lake.table(table).describe();
        out(`created ${d.name} at ${d.location}`);
      });
    });

  command('delete')
    .description('delete the rows matching a filter (files without a matching row are left alone)')
    .argument('<table>', 'namespace.table')
    .requiredOption('--where <filter>', "e.g. \"region = 'us' AND ts < '2020-01-01'\"")
    .option('--strategy <strategy>', 'copy-on-write | merge-on-read (default: the table property write.delete.mode)')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, o: { where: string; strategy?: string; json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake) => {
        const r = await lake.table(table).delete(o.where, { strategy: o.strategy as RowChangeStrategy | undefined });
        if (o.json) return out(stringifyJson(r));
        out(`deleted ${r.deleted} row(s) from ${r.table}, ${r.strategy === 'merge-on-read' ? `${r.deleteFiles} delete file(s) written` : `${r.rewrittenFiles} file(s) rewritten`}`);
        if (r.rewrittenFiles + r.deleteFiles > 0) out(`  iceberg snapshot  ${r.snapshotId}\n  delta version     ${r.deltaVersion ?? '(none)'}`);
      });
    });

  command('sync')
    .description('write the Delta versions missing after a failed Delta commit (writes do this too)')
    .argument('<table>', 'namespace.table')
    .action(async (table: string, _o: unknown, cmd: Command) => {
      await using(cmd, async (lake) => {
        const r = await lake.table(table).syncDelta();
        out(r.written.length ? `wrote delta version(s) ${r.written.join(', ')}; delta is at version ${r.version}` : `delta is up to date at version ${r.version}`);
      });
    });

  command('history')
    .description('snapshots of a table with their Delta versions, newest first')
    .argument('<table>', 'namespace.table')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake) => {
        const history = await lake.table(table).history();
        if (o.json) out(stringifyJson(history, 2));
        else out(printHistory(history));
      });
    });

  command('tables')
    .description('list the tables in the catalog')
    .option('--json', 'print as JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake) => {
        const tables = await lake.listTables();
        if (o.json) out(JSON.stringify(tables));
        else for (const t of tables) out(t);
      });
    });

  command('describe')
    .description('location, formats, schema with field IDs, properties, snapshot and version, files and bytes')
    .argument('<table>', 'namespace.table')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake) => {
        const d = await lake.table(table).describe();
        if (o.json) out(stringifyJson(d, 2));
        else out(printDescription(d));
      });
    });
}
