import { exitCodeOf, failureMessage } from './exit-codes.ts';
import { createProgram } from './program.ts';

/**
 * The `twinlake` command. Thin: parse arguments, call the library, format the result. Exit 0 on
 * success; on failure one line on stderr and the exit code of its kind (exit-codes.ts).
 */
// `twinlake read ... | head` closes the pipe early: that is the reader's choice, not a failure.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

try {
  await createProgram().parseAsync(process.argv);
} catch (e) {
  const code = exitCodeOf(e);
  if (code === 0) process.exit(0); // --help, --version
  process.stderr.write(`twinlake: ${failureMessage(e)}\n`);
  process.exit(code);
}
