import { errorMessage, isTwinlakeError, type TwinlakeError } from '../../core/errors.ts';

/**
 * How a failure becomes the REST catalog's error body (`{"error": {message, type, code}}`). The
 * type names are the exception names Java, PyIceberg and iceberg-js switch on.
 */
export class RestError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export const restError = (code: number, type: string, message: string) => new RestError(code, type, message);

/** What a route is doing, so a `not-found` names the right thing and a commit never answers 4xx for an unknown outcome. */
export type RouteKind = 'namespace' | 'table' | 'commit';

/**
 * A commit answers 4xx only when nothing happened for certain (a failed requirement, a bad
 * update, a missing table). Anything else on a commit is 500 CommitStateUnknownException: a
 * client takes a 4xx (and 503) as "definitely failed" and deletes the files the commit named.
 */
export function toRestError(e: unknown, kind: RouteKind): RestError {
  if (e instanceof RestError) return e;
  if (!isTwinlakeError(e)) {
    return kind === 'commit'
      ? restError(500, 'CommitStateUnknownException', `iceberg rest: the commit may or may not have happened (${errorMessage(e)})`)
      : restError(500, 'InternalServerError', `iceberg rest: ${errorMessage(e)}`);
  }
  switch (e.kind) {
    case 'not-found':
      return restError(404, notFoundType(e, kind), e.message);
    case 'already-exists':
      return restError(409, 'AlreadyExistsException', e.message);
    case 'invalid-input':
      return restError(400, 'BadRequestException', e.message);
    case 'unsupported':
      // An unknown update or requirement is a bad request the client must not retry.
      return kind === 'commit' ? restError(400, 'BadRequestException', e.message) : restError(406, 'UnsupportedOperationException', e.message);
    case 'commit-conflict':
      return restError(409, 'CommitFailedException', e.message);
    case 'commit-state-unknown':
      return restError(500, 'CommitStateUnknownException', e.message);
    default:
      if (kind === 'commit') return restError(500, 'CommitStateUnknownException', `iceberg rest: the commit may or may not have happened (${e.message})`);
      return restError(e.kind === 'io' ? 503 : 500, e.kind === 'io' ? 'ServiceUnavailableException' : 'InternalServerError', e.message);
  }
}

function notFoundType(e: TwinlakeError, kind: RouteKind): string {
  if ('table' in e.context) return 'NoSuchTableException';
  if ('namespace' in e.context) return 'NoSuchNamespaceException';
  return kind === 'namespace' ? 'NoSuchNamespaceException' : 'NoSuchTableException';
}

export function errorBody(e: RestError): { error: { message: string; type: string; code: number } } {
  return { error: { message: e.message, type: e.type, code: e.code } };
}
