import { parseDuration, parseSize } from '../config/config-keys.ts';
import type { Command } from 'commander';
import { invalidInput } from '../core/errors.ts';
import { stringifyJson } from '../core/json.ts';
import { openConfiguredLakehouse } from '../config/load-config.ts';
import { redact } from '../config/redact.ts';
import { maintenanceDefaultsFor, type TwinlakeConfig } from '../config/resolve-config.ts';
import type { buildServer } from '../server/app.ts';
import { defaultTokensFile, parseScope, TokenAuth, TokenStore } from '../server/auth.ts';
import { DEFAULT_MAX_RECORD_BYTES } from '../server/records.ts';
import { DEFAULT_LIMITS } from '../server/limits.ts';
import { interruptWrites } from '../table/write/interrupt.ts';

type CommandFactory = (name: string, ...examples: string[]) => Command;

/** The tokens file: --tokens-file, else TWINLAKE_TOKENS_FILE, else beside the warehouse. */
function tokensFile(o: { tokensFile?: string }, config: TwinlakeConfig): string {
  return o.tokensFile ?? process.env.TWINLAKE_TOKENS_FILE ?? defaultTokensFile(config.warehouseUri);
}

function parsePort(raw: string): number {
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 65535) throw invalidInput(`serve: --port expects a port number 0-65535, found ${JSON.stringify(raw)}`);
  return n;
}

function parseBytes(raw: string, flag = '--max-body'): number {
  try {
    return parseSize(raw, false);
  } catch {
    throw invalidInput(`serve: ${flag} expects a size such as 256MiB or 1000000, found ${JSON.stringify(raw)}`);
  }
}

function parseInterval(raw: string): number {
  try {
    const ms = parseDuration(raw);
    if (ms >= 1000) return ms;
  } catch {
    // said below
  }
  throw invalidInput(`serve: --maintenance-interval expects a duration of at least 1s such as "1m" or "30s", found ${JSON.stringify(raw)}`);
}

function parseCount(raw: string | undefined, flag: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw invalidInput(`serve: ${flag} expects a whole number, found ${JSON.stringify(raw)}`);
  return Number(raw);
}

function out(line: string): void {
  process.stdout.write(redact(line) + '\n');
}

/** `twinlake serve` and `twinlake token …`: thin, like every command. */
export function registerServerCommands(command: CommandFactory, settingsOf: (cmd: Command) => Promise<TwinlakeConfig>): void {
  command('serve', 'twinlake serve --port 8181', 'twinlake --config prod.yaml serve --host 0.0.0.0')
    .description('serve the management API (and the Iceberg REST catalog) over HTTP; SIGTERM or Ctrl-C lets requests in flight finish, then exits')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', '8181')
    .option('--tokens-file <file>', 'the tokens file (default: TWINLAKE_TOKENS_FILE, else <warehouse>/.twinlake/tokens.json)')
    .option('--max-body <size>', `largest record post, e.g. 256MiB (default ${DEFAULT_MAX_RECORD_BYTES / 1024 / 1024}MiB)`)
    .option('--max-json-body <size>', `largest JSON request body (default ${DEFAULT_LIMITS.maxJsonBytes / 1024 / 1024}MiB)`)
    .option('--headers-timeout <ms>', `time a client has to send a request's headers (default ${DEFAULT_LIMITS.headersTimeoutMs})`)
    .option('--request-timeout <ms>', `time a client has to send a whole request, body included (default ${DEFAULT_LIMITS.requestTimeoutMs})`)
    .option('--keep-alive-timeout <ms>', `how long an idle connection stays open (default ${DEFAULT_LIMITS.keepAliveTimeoutMs})`)
    .option('--max-connections <n>', `connections at once; past it a new one is answered 503 (default ${DEFAULT_LIMITS.maxConnections}; 0: no limit)`)
    .option('--log-level <level>', 'fatal | error | warn | info | debug', 'info')
    .option('--no-maintenance', "do not run due maintenance in the background (the config's maintenance.background: false does the same)")
    .option('--maintenance-interval <duration>', 'how often the background maintenance looks for due operations (default 1m)')
    .action(async (o: { host: string; port: string; tokensFile?: string; maxBody?: string; maxJsonBody?: string; headersTimeout?: string; requestTimeout?: string; keepAliveTimeout?: string; maxConnections?: string; logLevel: string; maintenance: boolean; maintenanceInterval?: string }, cmd: Command) => {
      const port = parsePort(o.port);
      const maxRecordBytes = o.maxBody !== undefined ? parseBytes(o.maxBody) : undefined;
      const intervalMs = o.maintenanceInterval !== undefined ? parseInterval(o.maintenanceInterval) : undefined;
      const limits = {
        maxJsonBytes: o.maxJsonBody !== undefined ? parseBytes(o.maxJsonBody, '--max-json-body') : undefined,
        headersTimeoutMs: parseCount(o.headersTimeout, '--headers-timeout'),
        requestTimeoutMs: parseCount(o.requestTimeout, '--request-timeout'),
        keepAliveTimeoutMs: parseCount(o.keepAliveTimeout, '--keep-alive-timeout'),
        maxConnections: parseCount(o.maxConnections, '--max-connections'),
      };
      const config = await settingsOf(cmd);
      const background = o.maintenance && config.maintenance.background;
      const tokens = new TokenAuth(new TokenStore(tokensFile(o, config)));
      const { lake, close } = await openConfiguredLakehouse(config);
      let app: Awaited<ReturnType<typeof buildServer>>;
      try {
        // The server (fastify and its plugins) loads only for `serve`: every other command starts faster.
        const { buildServer } = await import('../server/app.ts');
        app = await buildServer({
          lake, tokens, log: process.stderr, logLevel: o.logLevel, maxRecordBytes, limits, tempDir: config.engine.tempDir, catalogType: config.catalog.type, warehouseUri: config.warehouseUri,
          maintenance: { defaultsFor: (name) => maintenanceDefaultsFor(config, name), background: background ? { intervalMs } : false },
        });
        // Node's default backlog (511) makes the connections of a burst past it wait a second for the
        // client's retry: the queue takes as many as the server serves at once.
        await app.listen({ host: o.host, port, backlog: Math.max(511, app.serverLimits.maxConnections || 4096) });
      } catch (e) {
        await close();
        throw e;
      }
      const address = app.server.address();
      const bound = typeof address === 'object' && address ? address.port : port;
      out(`twinlake: serving ${config.warehouseUri} on http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${bound}`);
      out(background ? `twinlake: background maintenance on (due operations of maintenance.schedule, looked for every ${o.maintenanceInterval ?? '1m'})` : 'twinlake: background maintenance off');
      // The server stops on its own terms: a signal stops new requests and lets those in flight
      // (a commit among them) finish, instead of the CLI's interrupt, which abandons writes.
      await new Promise<void>((resolveStopped) => {
        for (const signal of ['SIGINT', 'SIGTERM'] as const) {
          process.removeAllListeners(signal);
          process.once(signal, () => {
            app.log.info({ signal }, 'shutting down: no new requests; waiting for requests in flight');
            // A second signal stops the writes still running (removing what they staged) and exits.
            process.once(signal, () => {
              void interruptWrites().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
            });
            app.close().then(resolveStopped, resolveStopped);
          });
        }
      });
      await close();
      out('twinlake: stopped; requests in flight finished');
    });

  const token = command('token', 'twinlake token create --name ci --scope write', 'twinlake token list', 'twinlake token revoke ci').description('bearer tokens for twinlake serve: create, list, revoke');
  const withTokens = (c: Command) => c.option('--warehouse <dir>', 'warehouse directory').option('--config <file>', 'config file, YAML or JSON').option('--tokens-file <file>', 'the tokens file (default: TWINLAKE_TOKENS_FILE, else <warehouse>/.twinlake/tokens.json)');
  const store = async (o: { tokensFile?: string }, cmd: Command) => new TokenStore(tokensFile(o, await settingsOf(cmd)));
  withTokens(token.command('create'))
    .description('create a token and print it once (only its hash is stored)')
    .requiredOption('--name <name>', 'a name for the token (the OAuth2 client id)')
    .requiredOption('--scope <scope>', 'read | write | admin (admin ⊇ write ⊇ read)')
    .option('--json', 'print as JSON')
    .action(async (o: { name: string; scope: string; tokensFile?: string; json?: boolean }, cmd: Command) => {
      const scope = parseScope(o.scope);
      const { token: secret, info } = await (await store(o, cmd)).create(o.name, scope);
      // The one place a token is printed: not through redact, and never again.
      if (o.json) return void process.stdout.write(stringifyJson({ ...info, token: secret }) + '\n');
      process.stdout.write(`${secret}\n`);
      process.stderr.write(`created token ${info.name} (scope ${info.scope}); it is shown only this once\n`);
    });
  withTokens(token.command('list'))
    .description('list tokens (names, scopes, dates; never the tokens)')
    .option('--json', 'print as JSON')
    .action(async (o: { tokensFile?: string; json?: boolean }, cmd: Command) => {
      const list = await (await store(o, cmd)).list();
      if (o.json) return out(stringifyJson(list));
      for (const t of list) out(`${t.name.padEnd(20)} ${t.scope.padEnd(6)} created ${t.createdAt}${t.revokedAt ? `  revoked ${t.revokedAt}` : ''}  ${t.id}`);
    });
  withTokens(token.command('revoke'))
    .description('revoke a token by name (or id): the server refuses it from the next request on')
    .argument('<name>', 'the token name or id')
    .action(async (name: string, o: { tokensFile?: string }, cmd: Command) => {
      const t = await (await store(o, cmd)).revoke(name);
      out(`revoked token ${t.name} (scope ${t.scope})`);
    });
}
