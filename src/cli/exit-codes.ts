import { CommanderError } from 'commander';
import { errorMessage, TwinlakeError, type ErrorKind } from '../core/errors.ts';

/**
 * Exit codes of `twinlake`, one per kind of failure a script may want to tell apart. This table
 * is the only place that maps errors to codes; `--help` prints it.
 */
export const EXIT_CODES = [
  { code: 0, name: 'success', meaning: 'success' },
  { code: 1, name: 'failure', meaning: 'an unexpected failure (a bug: please report it)' },
  { code: 2, name: 'usage', meaning: 'usage: unknown command or option, a missing, empty or repeated option' },
  { code: 3, name: 'invalid-input', meaning: 'invalid input: a bad value, filter, schema, input record or config file' },
  { code: 4, name: 'not-found', meaning: 'not found: a table, snapshot, version or file that does not exist' },
  { code: 5, name: 'conflict', meaning: 'conflict: the table already exists, or a concurrent commit won (retry)' },
  { code: 6, name: 'io', meaning: 'I/O: storage failed, or a commit may or may not have happened' },
  { code: 7, name: 'unsupported', meaning: 'unsupported: a valid request Twinlake does not implement' },
  { code: 8, name: 'drift', meaning: 'drift: verify found damaged table files or formats that disagree (and did not repair them)' },
] as const;

type ExitName = (typeof EXIT_CODES)[number]['name'];

/** The code of a named outcome, for commands that end without an error (verify's drift). */
export const code = (name: ExitName): number => EXIT_CODES.find((c) => c.name === name)!.code;

const BY_KIND: Record<ErrorKind, ExitName> = {
  'invalid-input': 'invalid-input',
  'data-invalid': 'invalid-input',
  'not-found': 'not-found',
  'already-exists': 'conflict',
  'commit-conflict': 'conflict',
  'commit-state-unknown': 'io',
  io: 'io',
  unsupported: 'unsupported',
  internal: 'failure',
};

/** Commander's ways of ending a run that are not failures: help and the version printed. */
const COMMANDER_DONE = new Set(['commander.helpDisplayed', 'commander.version', 'commander.help']);

/** The exit code for anything thrown: Commander's parse errors are usage errors. */
export function exitCodeOf(e: unknown): number {
  if (e instanceof CommanderError) return COMMANDER_DONE.has(e.code) ? 0 : code('usage');
  if (e instanceof TwinlakeError) return exitCodeOfKind(e.kind);
  return code('failure');
}

/** The exit code of a failure known only by its kind (a run's recorded error). */
export function exitCodeOfKind(kind: ErrorKind): number {
  return code(BY_KIND[kind]);
}

/**
 * The one line printed for a failure. Commander's messages start with "error: " and put their
 * suggestion on a second line ("(Did you mean write?)"), which a one-line report must keep.
 */
export function failureMessage(e: unknown): string {
  const text = errorMessage(e).replace(/^error: /, '');
  if (!(e instanceof CommanderError)) return text.split('\n')[0]!;
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .join(' ')
    .replace('(Did you mean', '(did you mean');
}

/** The exit-code table for `--help`. */
export function exitCodesHelp(): string {
  return ['Exit codes:', ...EXIT_CODES.map((c) => `  ${String(c.code).padEnd(3)}${c.meaning}`)].join('\n');
}
