import { errorMessage, isTwinlakeError, type ErrorKind } from '../core/errors.ts';
import { redact } from '../config/redact.ts';

/**
 * The error body every route answers with, `{"error": {message, type, code}}` — the Iceberg REST
 * catalog's ErrorModel, so the management API and the catalog speak one error shape. `type` is the
 * exception name Iceberg's clients switch on; `code` repeats the HTTP status.
 */
export interface ErrorBody {
  error: { message: string; type: string; code: number };
}

/** An error a route raises on purpose, with its HTTP status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string = typeForStatus(status),
  ) {
    super(message);
  }
}

const TYPES: Record<number, string> = {
  400: 'BadRequestException',
  401: 'NotAuthorizedException',
  403: 'ForbiddenException',
  404: 'NotFoundException',
  409: 'AlreadyExistsException',
  408: 'RequestTimeoutException',
  413: 'PayloadTooLargeException',
  415: 'UnsupportedMediaTypeException',
  500: 'InternalServerError',
  501: 'NotImplementedException',
  502: 'BadGatewayException',
};

export function typeForStatus(status: number): string {
  return TYPES[status] ?? (status >= 500 ? 'InternalServerError' : 'BadRequestException');
}

/** The status of each library error kind; one table, as exit-codes.ts is for the CLI. */
const STATUS_OF_KIND: Record<ErrorKind, { status: number; type?: string }> = {
  'invalid-input': { status: 400 },
  'data-invalid': { status: 400 },
  'not-found': { status: 404 },
  'already-exists': { status: 409 },
  'commit-conflict': { status: 409, type: 'CommitFailedException' },
  // The commit may have happened: never a 4xx (or 503), which a client takes as "did not happen".
  'commit-state-unknown': { status: 500, type: 'CommitStateUnknownException' },
  io: { status: 502 },
  unsupported: { status: 501 },
  internal: { status: 500 },
};

/** The status and body for anything a route threw; no secret leaves through the message. */
export function errorResponse(e: unknown): { status: number; body: ErrorBody } {
  let status = 500;
  let type: string | undefined;
  if (e instanceof HttpError) {
    status = e.status;
    type = e.type;
  } else if (isTwinlakeError(e)) {
    ({ status, type } = STATUS_OF_KIND[e.kind]);
  } else {
    const fastify = e as { statusCode?: number; validation?: unknown; validationContext?: string };
    if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 600) status = fastify.statusCode;
  }
  return { status, body: errorBody(status, errorMessage(e), type) };
}

export function errorBody(status: number, message: string, type = typeForStatus(status)): ErrorBody {
  return { error: { message: redact(message), type, code: status } };
}
