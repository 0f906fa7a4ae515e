import { exitCodeOf, failureMessage } from './exit-codes.ts';
import { createProgram } from './program.ts';
import { interruptWrites } from '../table/write/interrupt.ts';
import { redact } from '../config/redact.ts';

/**
 * The `twinlake` command. Thin: parse arguments, call the library, format the result. Exit 0 on
 * success; on failure one line on stderr and the exit code of its kind (exit-codes.ts).
 */
// The AWS SDK warns once per process that its releases after January 2027 need Node 22. This
// package pins its SDK version, so the warning is not something a user of the command can act on,
// and a command's stderr is kept to its one line. Setting the variable to anything else shows it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

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
      .then(({ removed, left }) =>
        process.stderr.write(
          `twinlake: interrupted by ${signal}${removed ? '; files not yet committed were removed' : ''}` +
            `${left.length ? `; could not remove the staging folder(s) ${left.join(', ')}: delete them by hand` : ''}\n`,
        ),
      )
      .finally(() => process.exit(code)) as Promise<never>;
  });
}

try {
  await createProgram().parseAsync(process.argv);
} catch (e) {
  // The write failed because it was interrupted: the interrupt reports and exits.
  if (interrupted) await interrupted;
  const code = exitCodeOf(e);
  if (code === 0) process.exit(0); // --help, --version
  // No secret leaves in a failure, whoever (an SDK, a server) quoted it.
  process.stderr.write(`twinlake: ${redact(failureMessage(e))}\n`);
  process.exit(code);
}
