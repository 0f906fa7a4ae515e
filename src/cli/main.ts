import { Command, Option } from 'commander';
import { errorMessage } from '../core/errors.ts';
import { interruptWrites } from '../table/interrupt.ts';
import { TWINLAKE_VERSION } from '../table/version.ts';
import { registerCommands } from './commands.ts';

/**
 * The `twinlake` command. Thin: parse arguments, call the library, format the result. Exit 0 on
 * success; on failure one line on stderr and a non-zero exit.
 */
// `twinlake read ... | head` closes the pipe early: that is the reader's choice, not a failure.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

// Ctrl-C or SIGTERM during a write: remove what the write staged and has not committed, then
// exit as the signal would have (128 + its number). A second signal ends the process at once.
let interrupted: Promise<never> | undefined;
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.once(signal, () => {
    interrupted ??= interruptWrites()
      .then(({ removed }) => process.stderr.write(`twinlake: interrupted by ${signal}${removed ? '; files not yet committed were removed' : ''}\n`))
      .finally(() => process.exit(code)) as Promise<never>;
  });
}

const program = new Command();
program
  .name('twinlake')
  .description('Write Parquet once; commit it as an Apache Iceberg table and a Delta Lake table together.')
  .version(TWINLAKE_VERSION)
  .addOption(new Option('--warehouse <dir>', 'warehouse directory (local warehouse + embedded catalog)'))
  .addOption(new Option('--config <file>', 'JSON config file: {"warehouse": "..."}'))
  // Program options go before the command, so `read --version N` means a Delta version; each
  // command also accepts --warehouse and --config after its name.
  .enablePositionalOptions()
  .showHelpAfterError(false)
  .configureOutput({ outputError: () => {} })
  .exitOverride();

registerCommands(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  // The write failed because it was interrupted: the interrupt reports and exits.
  if (interrupted) await interrupted;
  const err = e as { code?: string; exitCode?: number };
  if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') process.exit(0);
  const message = errorMessage(e).replace(/^error: /, '').split('\n')[0];
  process.stderr.write(`twinlake: ${message}\n`);
  process.exit(typeof err.exitCode === 'number' && err.exitCode !== 0 ? err.exitCode : 1);
}
