import { readFile, stat } from 'node:fs/promises';
import { CommanderError, type Command } from 'commander';
import { invalidInput, type ErrorKind } from '../core/errors.ts';
import { parseJson, stringifyJson } from '../core/json.ts';
import { Lakehouse } from '../table/lakehouse.ts';
import { resolveEngineSettings } from '../engine/engine-settings.ts';
import { parseInputFormat, type WriteInput } from '../table/write/input.ts';
import { parseFormats, type RowChangeStrategy } from '../format/dual/table-properties.ts';
import { parseTxnOption } from '../format/dual/write-txn.ts';
import type { ReadOptions } from '../table/table.ts';
import type { StructType } from '../format/iceberg/types.ts';
import { formatTable, printAlter, printRegister, printDescription, printEngine, printFiles, printHistory, printTableSummaries, printVerify, printWriteResult, printMaintenance, printDueReport } from './format.ts';
import { code as exitCode, exitCodeOfKind } from './exit-codes.ts';
import { parseRowCount, runQuickstart } from './quickstart.ts';
import { withProgress } from './progress.ts';
import { repeatable } from './options.ts';
import { runConfig, type SettingOptions } from './settings.ts';
import { openConfiguredLakehouse } from '../config/load-config.ts';
import { maintenanceDefaultsFor, qualifyTableName, tableDefaultsFor, type TableDefaults, type TwinlakeConfig } from '../config/resolve-config.ts';
import { redact } from '../config/redact.ts';
import { CONFIG_KEYS, parseDuration, parseSize, TABLE_KEYS } from '../config/config-keys.ts';
import { MAINTENANCE_OPERATIONS } from '../maintenance/maintain.ts';
import { runAndLog } from '../maintenance/run-log.ts';
import { maintainDue, configuredOptions } from '../maintenance/schedule.ts';
import { systemClock } from '../core/clock.ts';
import { Props } from '../format/dual/table-properties.ts';
import { registerServerCommands } from './server-commands.ts';

/**
 * The settings of this run (settings.ts has the precedence). Commander's `optsWithGlobals` lets
 * an option before the command win over the same option after it; here the command's own wins.
 */
async function settingsOf(cmd: Command): Promise<TwinlakeConfig> {
  const options: SettingOptions[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) options.push(c.opts<SettingOptions>());
  return runConfig(options);
}

/**
 * Runs `fn` on the lakehouse the settings describe; commands that only read open it read-only
 * (read-only mounts work). `fn` also gets the settings: table names without a namespace take the
 * configured one.
 */
async function using<T>(cmd: Command, fn: (lake: Lakehouse, config: TwinlakeConfig) => Promise<T>, opts: { readOnly?: boolean; config?: TwinlakeConfig } = {}): Promise<T> {
  const config = opts.config ?? (await settingsOf(cmd));
  const { lake, close } = await openConfiguredLakehouse(config, { readOnly: opts.readOnly });
  try {
    return await fn(lake, config);
  } finally {
    await close();
  }
}

/** A table argument in the configured default namespace when it names none. */
function tableName(config: TwinlakeConfig, name: string): string {
  return qualifyTableName(name, config.catalog.namespace);
}

/** Rows a table on a terminal shows without --limit. */
const DEFAULT_TABLE_ROWS = 100;

/** A line of a command's result; no secret leaves through it. */
function out(line: string): void {
  process.stdout.write(redact(line) + '\n');
}

/** Rows of a table, as they are: data is printed unchanged (as NDJSON and CSV output is). */
function outRows(text: string): void {
  process.stdout.write(text + '\n');
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

function parseProperties(list: string[], command = 'write'): Record<string, string> | undefined {
  if (list.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const item of list) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw invalidInput(`${command}: --property expects key=value, found ${JSON.stringify(item)}`);
    out[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return out;
}

/** The config file's schemaEvolution as the table property, unless a --property gives it. */
function withTableDefaults(properties: Record<string, string> | undefined, defaults: TableDefaults): Record<string, string> | undefined {
  if (defaults.schemaEvolution === undefined || properties?.[Props.schemaEvolution] !== undefined) return properties;
  return { ...properties, [Props.schemaEvolution]: String(defaults.schemaEvolution) };
}

function globalOptions(cmd: Command): Command {
  return cmd
    .option('--warehouse <dir>', 'warehouse directory')
    .option('--config <file>', 'config file, YAML or JSON (default: twinlake.yaml, .yml or .json in the current folder)')
    .option('--memory-limit <size>', 'engine memory limit')
    .option('--threads <n>', 'engine threads')
    .option('--temp-dir <dir>', 'engine spill folder');
}

export function registerCommands(program: Command): void {
  /** A command with the global options and its examples at the end of its `--help`. */
  const command = (name: string, ...examples: string[]) =>
    globalOptions(program.command(name)).addHelpText('after', `\nExample${examples.length > 1 ? 's' : ''}:\n${examples.map((e) => `  ${e}`).join('\n')}`);
  command('quickstart', 'twinlake quickstart --rows 10000')
    .description('write a realistic sample (100k events) into analytics.events and read it back through both formats')
    .option('--rows <count>', 'number of events', '100000')
    .option('--replace', 'overwrite analytics.events if it exists (default: append the sample again)')
    .action(async (o: { rows: string; replace?: boolean }, cmd: Command) => {
      const rows = parseRowCount(o.rows);
      await using(cmd, (lake) => runQuickstart(lake, rows, out, { replace: o.replace }));
    });

  command(
    'write',
    'twinlake write sales.orders --input orders.ndjson',
    'twinlake write sales.orders --input changes.ndjson --mode merge --key id --delete-when "op = \'D\'"',
  )
    .description('write records into a table (created on first write) as Iceberg and Delta')
    .argument('<table>', 'namespace.table')
    .requiredOption('--input <file>', "input file, folder or glob (repeatable: all go into one commit; .gz/.zst are decompressed), or '-' for standard input", repeatable)
    .option('--input-format <format>', 'ndjson | json | csv | parquet (default: from the file extension)')
    .option('--mode <mode>', "append | overwrite | merge (default: the table's writeMode in the config file, else append)")
    .option('--key <columns>', "merge: key columns, comma-separated (default: the table's keyColumns in the config file)")
    .option('--order-by <column>', 'merge: within the batch, the greatest value wins for a key (default: the last record)')
    .option('--delete-when <filter>', "merge: records matching this filter delete their key, e.g. \"op = 'D'\"")
    .option('--strategy <strategy>', 'merge: copy-on-write | merge-on-read (default: the table property write.merge.mode)')
    .option('--schema <file>', 'declared schema (Iceberg JSON struct) instead of inference')
    .option('--formats <list>', 'for a new table: iceberg,delta (default both), iceberg or delta (an existing table: see alter)')
    .option('--property <key=value>', 'for a new table: a table property (repeatable; an existing table: see alter)', repeatable, [])
    .option('--partition <spec>', 'partition spec, e.g. "day(ts), bucket(16, user_id)"; on an existing table a new spec evolves it')
    .option('--exclude-columns <columns>', 'input columns not to store, comma-separated (e.g. the op,seq that steer a merge)')
    .option('--txn <batch>', 'exactly-once batch: app=ID,version=N (the application and the batch version); a batch already committed (version not above the table\'s latest for the app) writes nothing')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, o: { input: string[]; inputFormat?: string; mode?: string; schema?: string; formats?: string; property: string[]; partition?: string; key?: string; orderBy?: string; deleteWhen?: string; strategy?: string; excludeColumns?: string; txn?: string; json?: boolean }, cmd: Command) => {
      if (o.mode !== undefined && o.mode !== 'append' && o.mode !== 'overwrite' && o.mode !== 'merge') throw invalidInput(`write: --mode must be append, overwrite or merge, found ${JSON.stringify(o.mode)}`);
      const config = await settingsOf(cmd);
      const name = tableName(config, table);
      // The table's settings in the config file fill in what the options leave out.
      const defaults = tableDefaultsFor(config, name);
      const mode = o.mode ?? defaults.writeMode ?? 'append';
      const key = o.key ?? (mode === 'merge' ? defaults.keyColumns?.join(',') : undefined);
      if (mode === 'merge' && !key) throw invalidInput('write: --mode merge needs --key COLUMNS');
      if (mode !== 'merge' && (o.key || o.orderBy || o.deleteWhen || o.strategy)) throw invalidInput('write: --key, --order-by, --delete-when and --strategy go with --mode merge');
      const format = o.inputFormat ? parseInputFormat(o.inputFormat) : undefined;
      const txn = o.txn !== undefined ? parseTxnOption(o.txn) : undefined;
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
        const common = { schema, formats: o.formats ? parseFormats(o.formats) : defaults.formats, properties: withTableDefaults(parseProperties(o.property), defaults), partition: o.partition ?? defaults.partition, excludeColumns: o.excludeColumns?.split(',').map((c) => c.trim()).filter(Boolean), txn };
        const result = await withProgress(`writing ${label}`, size, lake, () =>
          mode === 'merge'
            ? lake.table(name).merge(input, { ...common, keys: key!.split(',').map((k) => k.trim()).filter(Boolean), orderBy: o.orderBy, deleteWhen: o.deleteWhen, strategy: o.strategy as RowChangeStrategy | undefined })
            : lake.table(name).write(input, { ...common, mode: mode as 'append' | 'overwrite' }),
        );
        out(o.json ? stringifyJson(result) : printWriteResult(result));
      }, { config });
    });

  command('read', "twinlake read sales.orders --where \"region = 'us'\" --limit 10 --output csv")
    .description('read a table by name or by path (any writer), current or at a past version')
    .argument('<table>', 'namespace.table, or a table directory')
    .option('--format <format>', 'iceberg | delta (default: iceberg when present)')
    .option('--snapshot <id>', 'iceberg snapshot ID')
    .option('--version <n>', 'delta version')
    .option('--as-of <time>', 'ISO-8601 time or epoch milliseconds')
    .option('--limit <n>', 'at most N rows')
    .option('--output <format>', `ndjson | csv | table (default: table on a terminal, else ndjson; a table shows ${DEFAULT_TABLE_ROWS} rows unless --limit)`)
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
      await using(cmd, async (lake, config) => {
        if (o.explain) {
          const plan = byPath ? await lake.planPath(table, opts) : await lake.table(tableName(config, table)).plan(opts);
          out(stringifyJson({ format: plan.format, snapshotId: plan.snapshotId, deltaVersion: plan.deltaVersion, where: o.where ?? null, filesScanned: plan.task.files.length, ...plan.task.explain }));
          return;
        }
        if (output === 'table') {
          // One row past the default limit tells whether the table stopped there.
          const max = limit ?? DEFAULT_TABLE_ROWS + 1;
          const rows = byPath ? await lake.readPath(table, { ...opts, limit: max }) : await lake.table(tableName(config, table)).read({ ...opts, limit: max });
          const stopped = limit === undefined && rows.length > DEFAULT_TABLE_ROWS;
          outRows(formatTable(stopped ? rows.slice(0, DEFAULT_TABLE_ROWS) : rows, { stoppedAt: stopped ? DEFAULT_TABLE_ROWS : undefined }));
          return;
        }
        // Rows go to standard output as the engine produces them: no temporary file, memory bounded.
        const kind = output === 'csv' ? 'csv' : 'json';
        if (byPath) await lake.exportPath(table, process.stdout, { ...opts, output: kind });
        else await lake.table(tableName(config, table)).export(process.stdout, { ...opts, output: kind });
      }, { readOnly: true });
    });

  command('create', 'twinlake create sales.orders --schema orders-schema.json --partition "day(ts), region"')
    .description('create an empty table from a schema (Iceberg JSON struct), optionally partitioned')
    .argument('<table>', 'namespace.table')
    .requiredOption('--schema <file>', 'the schema, an Iceberg struct in JSON')
    .option('--partition <spec>', 'partition spec, e.g. "day(ts), bucket(16, user_id)"')
    .option('--formats <list>', 'iceberg,delta (default both), iceberg or delta')
    .option('--property <key=value>', 'a table property (repeatable)', repeatable, [])
    .action(async (table: string, o: { schema: string; partition?: string; formats?: string; property: string[] }, cmd: Command) => {
      const schema = parseJson(await readFile(o.schema, 'utf8'), o.schema) as StructType;
      await using(cmd, async (lake, config) => {
        const defaults = tableDefaultsFor(config, tableName(config, table));
        await lake.table(tableName(config, table)).create(schema, { partition: o.partition ?? defaults.partition, formats: o.formats ? parseFormats(o.formats) : defaults.formats, properties: withTableDefaults(parseProperties(o.property), defaults) });
        const d = await lake.table(tableName(config, table)).describe();
        out(`created ${d.name} at ${d.location}`);
      });
    });

  command('add-files', "twinlake add-files sales.orders 'warehouse/sales/orders/imported/*.parquet'")
    .description('add existing Parquet files below the table location to both formats without rewriting them (schema, field IDs and statistics from their footers)')
    .argument('<table>', 'namespace.table')
    .argument('<files...>', 'Parquet files or globs, inside the table location')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, files: string[], o: { json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).addFiles(files);
        if (o.json) return out(stringifyJson(r));
        const t = r.timings;
        out(`added ${r.files} file(s), ${r.rows} row(s), ${r.bytes} bytes to ${r.table}${r.recordedNameMapping ? ' (recorded a name mapping: the files carry no field IDs)' : ''}`);
        out(`  iceberg snapshot  ${r.snapshotId}\n  delta version     ${r.deltaVersion ?? '(none)'}`);
        out(`  footers ${t.footerMs.toFixed(0)} ms, iceberg commit ${t.icebergCommitMs.toFixed(0)} ms, delta commit ${t.deltaCommitMs.toFixed(0)} ms`);
      });
    });

  command('delete', "twinlake delete sales.orders --where \"region = 'eu' AND ts < '2020-01-01'\"")
    .description('delete the rows matching a filter (files without a matching row are left alone)')
    .argument('<table>', 'namespace.table')
    .requiredOption('--where <filter>', "e.g. \"region = 'us' AND ts < '2020-01-01'\"")
    .option('--strategy <strategy>', 'copy-on-write | merge-on-read (default: the table property write.delete.mode)')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, o: { where: string; strategy?: string; json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).delete(o.where, { strategy: o.strategy as RowChangeStrategy | undefined });
        if (o.json) return out(stringifyJson(r));
        out(`deleted ${r.deleted} row(s) from ${r.table}, ${r.strategy === 'merge-on-read' ? `${r.deleteFiles} delete file(s) written` : `${r.rewrittenFiles} file(s) rewritten`}`);
        if (r.rewrittenFiles + r.deleteFiles > 0) out(`  iceberg snapshot  ${r.snapshotId}\n  delta version     ${r.deltaVersion ?? '(none)'}`);
      });
    });

  command('sync', 'twinlake sync sales.orders')
    .description('make the newest Delta version mirror the current Iceberg snapshot: after a failed Delta commit, a rollback or another engine\'s commit (writes do this too)')
    .argument('<table>', 'namespace.table')
    .action(async (table: string, _o: unknown, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).syncDelta();
        out(r.written.length ? `wrote delta version(s) ${r.written.join(', ')}; delta is at version ${r.version}` : `delta is up to date at version ${r.version}`);
      });
    });

  command('verify', 'twinlake verify sales.orders --all-versions', 'twinlake verify sales.orders --repair --json')
    .description('check that the table files are whole and that Iceberg and Delta expose the same files, deletes and rows; exit 8 on drift')
    .argument('<table>', 'namespace.table')
    .option('--all-versions', 'also compare every retained snapshot with the Delta version mirroring it')
    .option('--repair', 'repair what Iceberg (or the Delta log) determines, and report what was done')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { allVersions?: boolean; repair?: boolean; json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).verify({ allVersions: o.allVersions, repair: o.repair });
        out(o.json ? stringifyJson(r, 2) : printVerify(r));
        if (!r.ok) process.exitCode = exitCode('drift');
      }, { readOnly: !o.repair });
    });

  command(
    'maintain',
    'twinlake maintain sales.orders --operation snapshot_expiry --retention 7d --dry-run',
    'twinlake maintain sales.orders --operation full_maintenance --json',
    'twinlake maintain --all --due          # from cron: every due operation of every table',
  )
    .description(`run a maintenance operation: ${MAINTENANCE_OPERATIONS.join(', ')}; or, with --all --due, what the schedules (maintenance.schedule) say is due`)
    .argument('[table]', 'namespace.table')
    .option('--operation <op>', MAINTENANCE_OPERATIONS.join(' | '))
    .option('--all', 'every table of the catalog (with --due)')
    .option('--due', "the operations each table's schedule says are due (table property maintenance.schedule, else the config's), by its run log")
    .option('--retention <duration>', "snapshot_expiry: keep snapshots younger than this (7d, 36h, 2w); default the table's history.expire.max-snapshot-age-ms, else the config's snapshotRetention, else 7d")
    .option('--sort <columns>', 'compaction: write each group sorted by these columns (comma-separated)')
    .option('--zorder <columns>', 'compaction: write each group in Z-order of these columns (comma-separated)')
    .option('--target-file-size <bytes>', "compaction: the file size to aim for (512MB, 128MiB); default the table's write.target-file-size-bytes, else the config's compactionTarget, else 128 MiB")
    .option('--explain <filter>', 'compaction: report the files this filter scans before and after')
    .option('--older-than <duration>', 'orphan_cleanup, metadata_cleanup: only files older than this (default 3d for orphans, 1h for metadata; at least 1h)')
    .option('--dry-run', 'list what would be done, changing nothing')
    .option('--json', 'print as JSON')
    .action(async (table: string | undefined, o: { operation?: string; all?: boolean; due?: boolean; retention?: string; olderThan?: string; sort?: string; zorder?: string; targetFileSize?: string; explain?: string; dryRun?: boolean; json?: boolean }, cmd: Command) => {
      if (o.all || o.due) {
        if (!o.all || !o.due || table !== undefined || o.operation !== undefined) {
          throw new CommanderError(2, 'twinlake.usage', 'error: maintain: --all goes with --due, without a table or --operation (twinlake maintain --all --due [--dry-run])');
        }
        const extra = ['retention', 'olderThan', 'sort', 'zorder', 'targetFileSize', 'explain'].filter((k) => o[k as keyof typeof o] !== undefined);
        if (extra.length) throw new CommanderError(2, 'twinlake.usage', `error: maintain: --all --due runs each operation with the table's own settings; --${extra.map((k) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)).join(', --')} do not go with it`);
        await using(cmd, async (lake, config) => {
          const report = await maintainDue(lake, (name) => maintenanceDefaultsFor(config, name), { dryRun: o.dryRun === true, clock: systemClock });
          if (o.json) out(stringifyJson(report, 2));
          else for (const line of printDueReport(report, o.dryRun === true)) out(line);
          const failed = report.filter((t) => t.error || t.runs.some((r) => r.outcome === 'failed'));
          if (failed.length) {
            process.stderr.write(`maintain: failed on ${failed.map((t) => t.table).join(', ')}\n`);
            // The first failure's code, as if it had been thrown (3 a bad setting, 6 storage, ...).
            const first = failed[0]!.error ?? failed[0]!.runs.find((r) => r.outcome === 'failed')!.error!;
            process.exitCode = exitCodeOfKind(first.kind as ErrorKind);
          }
        }, { readOnly: o.dryRun === true });
        return;
      }
      if (table === undefined || o.operation === undefined) {
        throw new CommanderError(2, 'twinlake.usage', `error: maintain: give a table and --operation OP (${MAINTENANCE_OPERATIONS.join(', ')}), or --all --due`);
      }
      const duration = (value: string | undefined, flag: string): number | undefined => {
        if (value === undefined) return undefined;
        try {
          return parseDuration(value);
        } catch {
          throw invalidInput(`maintain: ${flag} expects a duration such as "7d", "36h" or "2w", found ${JSON.stringify(value)}`);
        }
      };
      const size = (value: string, flag: string): number => {
        try {
          return parseSize(value, false);
        } catch {
          throw invalidInput(`maintain: ${flag} expects a size such as "128MiB" or "512MB", found ${JSON.stringify(value)}`);
        }
      };
      const retention = duration(o.retention, '--retention');
      const olderThan = duration(o.olderThan, '--older-than');
      const operation = o.operation;
      await using(cmd, async (lake, config) => {
        const name = tableName(config, table);
        const columns = (v: string | undefined) => v?.split(',').map((c) => c.trim()).filter((c) => c !== '');
        const { result: r } = await runAndLog(lake.table(name), operation, {
          ...configuredOptions(maintenanceDefaultsFor(config, name)),
          ...(retention !== undefined ? { retention } : {}),
          ...(olderThan !== undefined ? { olderThan } : {}),
          ...(o.sort !== undefined ? { sort: columns(o.sort) } : {}),
          ...(o.zorder !== undefined ? { zorder: columns(o.zorder) } : {}),
          ...(o.targetFileSize !== undefined ? { targetFileSize: size(o.targetFileSize, '--target-file-size') } : {}),
          ...(o.explain !== undefined ? { explainFilter: o.explain } : {}),
          ...(o.dryRun ? { dryRun: true } : {}),
        });
        out(o.json ? stringifyJson(r, 2) : printMaintenance(name, r));
      }, { readOnly: o.dryRun === true });
    });

  command('history', 'twinlake history sales.orders --json')
    .description('snapshots of a table with their Delta versions, newest first')
    .argument('<table>', 'namespace.table, or a table directory')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const byPath = await isPathArgument(table);
      await using(cmd, async (lake, config) => {
        const history = byPath ? await lake.historyPath(table) : await lake.table(tableName(config, table)).history();
        if (o.json) out(stringifyJson(history, 2));
        else out(printHistory(history));
      }, { readOnly: true });
    });

  command('tables', 'twinlake tables')
    .description('list the tables in the catalog')
    .option('--long', 'with each table\'s formats, rows, files and bytes')
    .option('--json', 'print as JSON')
    .action(async (o: { long?: boolean; json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        if (o.long) {
          const summaries = await lake.tableSummaries();
          return out(o.json ? stringifyJson(summaries) : printTableSummaries(summaries));
        }
        const tables = await lake.listTables();
        if (o.json) out(JSON.stringify(tables));
        else for (const t of tables) out(t);
      }, { readOnly: true });
    });

  command('describe', 'twinlake describe sales.orders')
    .description('location, formats, schema with field IDs, properties, snapshot and version, files and bytes')
    .argument('<table>', 'namespace.table, or a table directory')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { json?: boolean }, cmd: Command) => {
      const byPath = await isPathArgument(table);
      await using(cmd, async (lake, config) => {
        const d = byPath ? await lake.describePath(table) : await lake.table(tableName(config, table)).describe();
        if (o.json) out(stringifyJson(d, 2));
        else out(printDescription(d));
      }, { readOnly: true });
    });

  command('files', 'twinlake files sales.orders --json', 'twinlake files sales.orders --version 3 --format delta')
    .description('the live data files of a table (current or past version), each with its delete files, for other engines')
    .argument('<table>', 'namespace.table, or a table directory')
    .option('--format <format>', 'iceberg | delta (default: iceberg when present)')
    .option('--snapshot <id>', 'iceberg snapshot ID')
    .option('--version <n>', 'delta version')
    .option('--as-of <time>', 'ISO-8601 time or epoch milliseconds')
    .option('--json', 'print as JSON')
    .action(async (table: string, o: { format?: string; snapshot?: string; version?: string; asOf?: string; json?: boolean }, cmd: Command) => {
      const format = o.format as 'iceberg' | 'delta' | undefined;
      if (format !== undefined && format !== 'iceberg' && format !== 'delta') throw invalidInput(`files: --format must be iceberg or delta, found ${JSON.stringify(o.format)}`);
      const opts = { ...parseTravel(o), format };
      const byPath = await isPathArgument(table);
      await using(cmd, async (lake, config) => {
        const files = byPath ? await lake.filesPath(table, opts) : await lake.table(tableName(config, table)).files(opts);
        out(o.json ? stringifyJson(files, 2) : printFiles(files));
      }, { readOnly: true });
    });

  command('alter', 'twinlake alter sales.orders --property write.merge.mode=merge-on-read', 'twinlake alter sales.orders --formats iceberg,delta')
    .description('change table properties or formats after creation')
    .argument('<table>', 'namespace.table')
    .option('--property <key=value>', 'set a table property (repeatable), e.g. write.merge.mode=merge-on-read', repeatable, [])
    .option('--unset <key>', 'remove a table property (repeatable)', repeatable, [])
    .option('--formats <list>', 'the formats to keep: iceberg,delta, or iceberg (adding delta writes a Delta log of the current state)')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, o: { property: string[]; unset: string[]; formats?: string; json?: boolean }, cmd: Command) => {
      if (o.property.length + o.unset.length === 0 && o.formats === undefined) throw invalidInput('alter: give --property KEY=VALUE, --unset KEY or --formats LIST');
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).alter({ set: parseProperties(o.property, 'alter'), unset: o.unset, formats: o.formats });
        out(o.json ? stringifyJson(r, 2) : printAlter(r));
      });
    });

  command('register', 'twinlake register sales.orders /data/spark/orders/metadata/00007-0c1f.metadata.json')
    .description("adopt an Iceberg table another engine wrote: register its metadata file (the table stays where it is) and project it to Delta")
    .argument('<table>', 'namespace.table')
    .argument('<metadata-file>', 'the table\'s current metadata file (a path or file: URI)')
    .option('--json', 'print the result as JSON')
    .action(async (table: string, metadataFile: string, o: { json?: boolean }, cmd: Command) => {
      await using(cmd, async (lake, config) => {
        const r = await lake.table(tableName(config, table)).register(metadataFile);
        out(o.json ? stringifyJson(r, 2) : printRegister(r));
      });
    });

  command('config', 'twinlake config', 'twinlake --config prod.yaml config --json', 'twinlake config --keys')
    .description('the settings of this run (config file, environment, options) and where each comes from; secrets shown as ***')
    .option('--keys', 'every key a config file may hold, with its variable, default and meaning')
    .option('--json', 'print as JSON')
    .action(async (o: { keys?: boolean; json?: boolean }, cmd: Command) => {
      if (o.keys) {
        const keys = [...CONFIG_KEYS.map((k) => ({ ...k, path: k.path })), ...TABLE_KEYS.map((k) => ({ ...k, path: `tables["ns.table"].${k.path}` }))];
        const rows = keys.map((k) => ({ key: k.path, env: k.env ?? null, default: k.default ?? null, expects: k.expects, secret: k.secret === true, doc: k.doc }));
        if (o.json) return out(stringifyJson(rows, 2));
        const width = Math.max(...rows.map((r) => r.key.length));
        for (const r of rows) out(`${r.key.padEnd(width)}  ${(r.env ?? '').padEnd(34)}  ${r.doc}${r.default ? ` (default: ${r.default})` : ''}${r.secret ? ' [secret]' : ''}`);
        return;
      }
      const config = await settingsOf(cmd);
      const engine = resolveEngineSettings(config.engine);
      if (o.json) return out(stringifyJson({ file: config.file ?? null, warehouse: config.warehouseUri, entries: config.entries, engine }, 2));
      out(`config file  ${config.file ?? '(none)'}`);
      const width = Math.max(...config.entries.map((e) => e.key.length));
      for (const e of config.entries) out(`${e.key.padEnd(width)}  ${e.value}  (${e.source})`);
      out(printEngine(engine));
    });

  command('engine', 'twinlake engine --json', 'twinlake --memory-limit 512MB engine')
    .description('the embedded engine\'s memory limit, threads and spill folder, and where each comes from')
    .option('--json', 'print as JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const settings = resolveEngineSettings((await settingsOf(cmd)).engine);
      out(o.json ? stringifyJson(settings, 2) : printEngine(settings));
    });

  registerServerCommands(command, settingsOf);
}
