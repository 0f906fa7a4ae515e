/**
 * The one error class of Twinlake. Expected outcomes (a lost compare-and-swap, a taken Delta
 * version) are values, not exceptions; a `TwinlakeError` means the operation did not happen.
 *
 * Messages start with the domain and say what was expected and what was found, e.g.
 * `iceberg metadata: current-schema-id 3 not in schemas [0, 1]`.
 */
export type ErrorKind =
  | 'invalid-input' // the caller's data or arguments are wrong (bad JSON, type mismatch, bad name)
  | 'not-found' // a table, namespace, snapshot or file that does not exist
  | 'already-exists'
  | 'unsupported' // a valid request for a feature Twinlake does not implement
  | 'data-invalid' // files written by someone else are malformed
  | 'commit-conflict' // a concurrent commit won; safe to refresh and retry
  | 'commit-state-unknown' // the commit may or may not have happened
  | 'io' // storage failed
  | 'internal'; // a bug

export interface ErrorContext {
  [key: string]: unknown;
}

export class TwinlakeError extends Error {
  readonly kind: ErrorKind;
  readonly context: ErrorContext;
  readonly retryable: boolean;

  constructor(kind: ErrorKind, message: string, context: ErrorContext = {}, options: { cause?: unknown; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TwinlakeError';
    this.kind = kind;
    this.context = context;
    this.retryable = options.retryable ?? (kind === 'commit-conflict' || kind === 'io');
  }
}

export function invalidInput(message: string, context?: ErrorContext): TwinlakeError {
  return new TwinlakeError('invalid-input', message, context);
}

export function notFound(message: string, context?: ErrorContext): TwinlakeError {
  return new TwinlakeError('not-found', message, context);
}

export function unsupported(message: string, context?: ErrorContext): TwinlakeError {
  return new TwinlakeError('unsupported', message, context);
}

export function dataInvalid(message: string, context?: ErrorContext): TwinlakeError {
  return new TwinlakeError('data-invalid', message, context);
}

export function internal(message: string, context?: ErrorContext): TwinlakeError {
  return new TwinlakeError('internal', message, context);
}

export function isTwinlakeError(e: unknown, kind?: ErrorKind): e is TwinlakeError {
  return e instanceof TwinlakeError && (kind === undefined || e.kind === kind);
}

/** The message of anything thrown, for one-line reports. */
export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
