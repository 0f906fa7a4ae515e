import { TWINLAKE_VERSION } from '../format/dual/version.ts';
import { registerCommands } from './commands.ts';
import { exitCodesHelp } from './exit-codes.ts';
import { TwinlakeCommand } from './options.ts';
import { settingsHelp } from './settings.ts';

/** The `twinlake` program with its commands, not yet run (main.ts runs it; tests inspect it). */
export function createProgram(): TwinlakeCommand {
  const program = new TwinlakeCommand();
  program
    .name('twinlake')
    .description('Write Parquet once; commit it as an Apache Iceberg table and a Delta Lake table together.')
    .version(TWINLAKE_VERSION)
    .option('--warehouse <dir>', 'warehouse directory (local warehouse + embedded catalog)')
    .option('--config <file>', 'config file, YAML or JSON: warehouse, storage, catalog, tables, memoryLimit, threads, tempDir (default: twinlake.yaml, .yml or .json in the current folder; twinlake config --keys lists every key)')
    .option('--memory-limit <size>', 'engine memory limit, e.g. 512MB, 4GB or 50% (default: half the machine\'s memory)')
    .option('--threads <n>', 'engine threads (default: every core)')
    .option('--temp-dir <dir>', 'folder the engine spills to past its memory limit (default: the system temp folder)')
    // Program options go before the command, so `read --version N` means a Delta version; each
    // command also accepts --warehouse and --config after its name (and those win).
    .enablePositionalOptions()
    .showHelpAfterError(false)
    .configureOutput({ outputError: () => {} })
    .exitOverride();
  registerCommands(program);
  program.addHelpText('after', () => {
    const flags = new Set(program.commands.flatMap((c) => [...c.options, ...program.options].map((o) => o.long)));
    return `\n${settingsHelp((f) => flags.has(f))}\n\n${exitCodesHelp()}\n\nEach command has its own --help with an example: twinlake write --help`;
  });
  return program;
}
