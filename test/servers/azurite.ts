import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../testdata.ts';

/**
 * A real Azure Blob endpoint for tests: Azurite's blob service (npm devDependency), in memory, on
 * a port the kernel picks. `--skipApiVersionCheck` because the SDK may speak a newer service
 * version than this Azurite knows; `--loose` because it otherwise rejects headers it does not
 * implement. Each test file that needs it starts its own.
 */
export interface Azurite {
  /** The Blob service URL of the emulator's well-known account. */
  endpoint: string;
  account: string;
  accountKey: string;
  connectionString: string;
  stop(): Promise<void>;
}

/** Azurite's documented development account and key (not a secret). */
const ACCOUNT = 'devstoreaccount1';
const KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const BIN = join(repoRoot, 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js');

export function azuriteMissing(): string | undefined {
  return existsSync(BIN) ? undefined : `Azurite is not installed (${BIN} is missing; npm ci installs it from devDependencies)`;
}

export interface AzuriteOptions {
  /**
   * Serve HTTPS with this certificate and accept OAuth bearer tokens (`--oauth basic`: Azurite
   * checks a token's issuer, audience and lifetime, not its signature). The SDK sends tokens only
   * over HTTPS, so service-principal tests need this.
   */
  https?: { certFile: string; keyFile: string };
}

export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  const dir = mkdtempSync(join(tmpdir(), 'twinlake-azurite-'));
  const args = ['--blobHost', '127.0.0.1', '--blobPort', '0', '--inMemoryPersistence', '--extentMemoryLimit', '1024', '--skipApiVersionCheck', '--disableTelemetry', '--loose', '--silent'];
  if (options.https) args.push('--cert', options.https.certFile, '--key', options.https.keyFile, '--oauth', 'basic');
  // cwd: Azurite writes its debug and metadata files to the working folder.
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`azurite did not start in 30 s:\n${out}`)), 30_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /successfully listens on https?:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`azurite exited with code ${code}:\n${out}`));
    });
  });
  const protocol = options.https ? 'https' : 'http';
  const endpoint = `${protocol}://127.0.0.1:${port}/${ACCOUNT}`;
  return {
    endpoint,
    account: ACCOUNT,
    accountKey: KEY,
    connectionString: `DefaultEndpointsProtocol=${protocol};AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=${endpoint};`,
    async stop() {
      process.off('exit', kill);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null) kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
