import { type IncomingMessage, type Server, createServer, request } from 'node:http';

/**
 * A loopback HTTP proxy in front of a real server (RADOS Gateway, Azurite) that can lose answers:
 * the request reaches the server and takes effect, then the proxy drops the client's connection
 * instead of relaying the response, as a network failure after the server acted would. It relays
 * the Host header unchanged, so signed requests still verify.
 */
/**
 * A passing failure the proxy gives instead of relaying a request: the connection reset before
 * the request reaches the server, no answer at all (the client's timeout fires), a 500, or a 503
 * asking the client to slow down (S3 SlowDown, Azure ServerBusy).
 */
export type Fault = 'reset' | 'timeout' | '500' | '503';
export const FAULTS: readonly Fault[] = ['reset', 'timeout', '500', '503'];

export interface LossyProxy {
  endpoint: string;
  /** Lose the answer to the next `n` requests matching `match`. */
  loseNext(n: number, match: (req: IncomingMessage) => boolean): void;
  /** Requests relayed or failed since the proxy started. */
  readonly requests: number;
  /** Fail request number `n` (counting from 1 as `requests` does) with `fault`, once. */
  failRequest(n: number, fault: Fault): void;
  /** Fail every request matching `match` with `fault` until called with undefined. */
  failAll(match: ((req: IncomingMessage) => boolean) | undefined, fault?: Fault): void;
  /** Requests seen, as `METHOD path` with the upstream status (or `lost`). */
  log: string[];
  stop(): Promise<void>;
}

/** The error answers of each service, as its SDK parses them. */
function faultAnswer(flavor: 's3' | 'azure', status: 500 | 503): { headers: Record<string, string>; body: string } {
  const code = status === 503 ? (flavor === 's3' ? 'SlowDown' : 'ServerBusy') : 'InternalError';
  const message = status === 503 ? 'Please reduce your request rate.' : 'We encountered an internal error. Please try again.';
  const body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  return { headers: { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(body)), ...(flavor === 'azure' ? { 'x-ms-error-code': code } : {}) }, body };
}

export async function startLossyProxy(target: string, options: { flavor?: 's3' | 'azure' } = {}): Promise<LossyProxy> {
  const upstream = new URL(target);
  const flavor = options.flavor ?? 's3';
  let lose = 0;
  let match: (req: IncomingMessage) => boolean = () => false;
  let requests = 0;
  const once = new Map<number, Fault>();
  let always: { match: (req: IncomingMessage) => boolean; fault: Fault } | undefined;
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
    const n = ++requests;
    const fault = once.get(n) ?? (always?.match(req) ? always.fault : undefined);
    once.delete(n);
    if (fault !== undefined) {
      log.push(`${req.method} ${req.url} ${fault}`);
      // The request never reaches the server: each of these is safe for the client to repeat.
      req.resume();
      if (fault === 'reset') req.socket.destroy();
      else if (fault === 'timeout') req.socket.setTimeout(0);
      else {
        const answer = faultAnswer(flavor, fault === '500' ? 500 : 503);
        req.on('end', () => {
          res.writeHead(Number(fault), answer.headers);
          res.end(answer.body);
        });
      }
      return;
    }
    const losing = lose > 0 && match(req);
    if (losing) lose--;
    const out = request(
      { hostname: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        log.push(`${req.method} ${req.url} ${losing ? 'lost' : answer.statusCode}`);
        if (losing) {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => req.socket.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    loseNext(n, m) {
      lose = n;
      match = m;
    },
    log,
    get requests() {
      return requests;
    },
    failRequest(n, fault) {
      once.set(n, fault);
    },
    failAll(m, fault) {
      always = m && fault ? { match: m, fault } : undefined;
    },
    stop() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
