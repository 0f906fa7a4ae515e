import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './ports.ts';

/**
 * A real PostgreSQL for tests: Debian's `postgresql` package, a throw-away cluster in a temporary
 * folder (its Unix socket there too) on a free TCP port of 127.0.0.1, started in about a second and
 * removed afterwards. Each test file that needs it starts its own, so files running in parallel
 * never meet.
 *
 * PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` OS user the
 * package creates, and its programs run as that user.
 */
export interface PostgresServer {
  host: string;
  port: number;
  user: string;
  password: string;
  /** `postgresql://user:password@127.0.0.1:port/<database>` (the default database: `postgres`). */
  uri(database?: string): string;
  /** Creates an empty database and returns its URI. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

export const POSTGRES_INSTALL = 'apt-get install -y --no-install-recommends postgresql';
const PROGRAMS = ['initdb', 'postgres'];

/** The folder holding initdb and postgres: on PATH, or Debian's versioned folder (not on PATH). */
function binDir(): string | undefined {
  const onPath = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const debian = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql')
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
    : [];
  return [...onPath, ...debian].find((dir) => PROGRAMS.every((p) => existsSync(join(dir, p))));
}

/** Why PostgreSQL cannot start here, or undefined when it can. */
export function postgresMissing(): string | undefined {
  if (!binDir()) return `PostgreSQL is not installed (no ${PROGRAMS.join(' and ')} on PATH or in /usr/lib/postgresql/*/bin; ${POSTGRES_INSTALL})`;
  if (process.getuid?.() === 0 && lookupUser('postgres') === undefined) return `PostgreSQL cannot run as root and there is no postgres user (${POSTGRES_INSTALL} creates it)`;
  return undefined;
}

function lookupUser(name: string): { uid: number; gid: number } | undefined {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = binDir();
  if (!bin) throw new Error(postgresMissing());
  // As root, run as postgres (spawn's uid/gid: the process we hold is postgres itself, not a wrapper).
  const runAs = process.getuid?.() === 0 ? lookupUser('postgres') : undefined;
  if (process.getuid?.() === 0 && !runAs) throw new Error(postgresMissing());
  const owner = runAs ?? { uid: userInfo().uid, gid: userInfo().gid };

  const dir = mkdtempSync(join(tmpdir(), 'twinlake-postgres-'));
  const data = join(dir, 'data');
  const user = 'twinlake';
  const password = 'pg-test-secret-7f3a';
  writeFileSync(join(dir, 'pwfile'), password + '\n');
  chmodSync(dir, 0o700);
  chownSync(dir, owner.uid, owner.gid);
  chownSync(join(dir, 'pwfile'), owner.uid, owner.gid);
  const as = { ...(runAs ?? {}), env: { ...process.env, LC_ALL: 'C', LANG: 'C' }, cwd: dir };

  const init = spawnSync(
    join(bin, 'initdb'),
    ['-D', data, '-U', user, `--pwfile=${join(dir, 'pwfile')}`, '--auth=scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync', '--no-instructions'],
    { ...as, encoding: 'utf8' },
  );
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.stdout}`);
  }

  const port = await freePort();
  let log = '';
  // Durability is not under test: without fsync a cluster starts and commits fast on a busy disk.
  const server: ChildProcess = spawn(
    join(bin, 'postgres'),
    ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=60'],
    { ...as, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  server.stderr!.on('data', (b: Buffer) => {
    log = (log + b.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const killSync = () => {
    // Immediate shutdown: the postmaster stops its backends and removes its shared memory.
    try {
      server.kill('SIGQUIT');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killSync);

  const uri = (database = 'postgres') => `postgresql://${user}:${password}@127.0.0.1:${port}/${database}`;
  const { default: pg } = await import('pg');
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (server.exitCode !== null) {
      process.off('exit', killSync);
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postgres exited with ${server.exitCode} before accepting connections:\n${log}`);
    }
    const client = new pg.Client({ connectionString: uri() });
    try {
      await client.connect();
      await client.end();
      break;
    } catch (e) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        killSync();
        throw new Error(`postgres did not accept connections within 60 s (${(e as Error).message}):\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    host: '127.0.0.1',
    port,
    user,
    password,
    uri,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: uri() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } finally {
        await client.end();
      }
      return uri(name);
    },
    async stop() {
      process.off('exit', killSync);
      // Fast shutdown: open sessions are ended, then the server exits.
      if (server.exitCode === null) {
        server.kill('SIGINT');
        const timer = setTimeout(() => server.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
