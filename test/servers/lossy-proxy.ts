import { type IncomingMessage, type Server, createServer, request } from 'node:http';

/**
 * A loopback HTTP proxy in front of a real server (RADOS Gateway, Azurite) that can lose answers:
 * the request reaches the server and takes effect, then the proxy drops the client's connection
 * instead of relaying the response, as a network failure after the server acted would. It relays
 * the Host header unchanged, so signed requests still verify.
 */
export interface LossyProxy {
  endpoint: string;
  /** Lose the answer to the next `n` requests matching `match`. */
  loseNext(n: number, match: (req: IncomingMessage) => boolean): void;
  /** Requests seen, as `METHOD path` with the upstream status (or `lost`). */
  log: string[];
  stop(): Promise<void>;
}

export async function startLossyProxy(target: string): Promise<LossyProxy> {
  const upstream = new URL(target);
  let lose = 0;
  let match: (req: IncomingMessage) => boolean = () => false;
  const log: string[] = [];
  const server: Server = createServer((req, res) => {
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
    stop() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
