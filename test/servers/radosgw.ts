import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.ts';

/**
 * A real S3 endpoint for tests: Ceph's RADOS Gateway on a throw-away one-node cluster (one
 * monitor, one in-memory OSD, no cephx), started by radosgw-start.sh beside this file in about two
 * seconds. S3 emulators on npm ignore `If-None-Match: *`, so they could not prove putIfAbsent.
 *
 * Each test file that needs it starts its own (on free ports, in its own folder), so files running
 * in parallel do not meet and files that do not need it pay nothing.
 */
export interface RadosGateway {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Creates another S3 user (for access-denied tests) and returns its keys. */
  addUser(uid: string): { accessKeyId: string; secretAccessKey: string };
  stop(): Promise<void>;
}

const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'ceph-authtool', 'monmaptool', 'curl'];
const HERE = dirname(fileURLToPath(import.meta.url));
export const RADOSGW_INSTALL = 'apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd curl';

/** Why the gateway cannot start here (the missing programs), or undefined when it can. */
export function radosGatewayMissing(): string | undefined {
  const path = (process.env.PATH ?? '').split(delimiter).concat('/usr/sbin', '/usr/bin');
  const missing = BINARIES.filter((b) => !path.some((dir) => existsSync(join(dir, b))));
  return missing.length === 0 ? undefined : `RADOS Gateway is not installed (missing ${missing.join(', ')}; ${RADOSGW_INSTALL})`;
}

export async function startRadosGateway(): Promise<RadosGateway> {
  const dir = mkdtempSync(join(tmpdir(), 'twinlake-radosgw-'));
  const env = {
    ...process.env,
    CEPH_DIR: dir,
    RGW_PORT: String(await freePort()),
    MON_V2: String(await freePort()),
    MON_V1: String(await freePort()),
    S3_ACCESS_KEY: 'test',
    S3_SECRET_KEY: 'testtesttest',
    // Tests write at most a few hundred MB; the default 4 GiB cap is more RAM than a busy host spares.
    MEMSTORE_BYTES: String(1024 * 1024 * 1024),
  };
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('bash', [join(HERE, 'radosgw-start.sh')], { env, timeout: 120_000 }, (err, out, errOut) => {
      if (err) reject(new Error(`radosgw-start.sh failed: ${err.message}\n${errOut}\nlogs: ${dir}/log`));
      else resolve(out);
    });
  });
  const ready = /READY endpoint=(\S+)/.exec(stdout);
  if (!ready) throw new Error(`radosgw-start.sh did not report READY:\n${stdout}`);
  const stopSync = () => {
    // Kill by the PIDs the start script recorded, so a crashed test run leaves no daemons behind.
    const pids = existsSync(join(dir, 'pids')) ? readFileSync(join(dir, 'pids'), 'utf8').split('\n').filter(Boolean) : [];
    for (const pid of pids.reverse()) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stopSync);
  return {
    endpoint: ready[1],
    accessKeyId: env.S3_ACCESS_KEY,
    secretAccessKey: env.S3_SECRET_KEY,
    addUser(uid) {
      const keys = { accessKeyId: `${uid}-key`, secretAccessKey: `${uid}-secret-0123456789` };
      execFileSync('radosgw-admin', ['-c', join(dir, 'ceph.conf'), '-n', 'client.rgw.a', 'user', 'create', `--uid=${uid}`, `--display-name=${uid}`, `--access-key=${keys.accessKeyId}`, `--secret-key=${keys.secretAccessKey}`], { stdio: 'ignore' });
      return keys;
    },
    async stop() {
      process.off('exit', stopSync);
      await new Promise<void>((resolve) => execFile('bash', [join(HERE, 'radosgw-stop.sh')], { env }, () => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
