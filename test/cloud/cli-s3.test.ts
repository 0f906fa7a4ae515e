import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, ndjson, tempDir } from '../helpers.ts';
import { type PostgresServer, postgresMissing, startPostgres } from '../servers/postgres.ts';
import { cloudServer } from './cloud-fixture.ts';

/**
 * The CLI on an s3:// warehouse, configured the way a user configures it: a twinlake.yaml with the
 * issue's keys (warehouse, storage with endpoint and keys, catalog). Every command reaches the
 * bucket through the config alone, and the secret key never appears in what it prints.
 */
const server = cloudServer('s3', 'test/cloud/cli-s3.test.ts');

describe.skipIf(server.skip)(`the CLI on an s3:// warehouse from twinlake.yaml${server.skip ? ` (skipped: ${server.missing})` : ''}`, () => {
  const rows = Array.from({ length: 40 }, (_, i) => ({ id: i, ts: `2026-01-0${1 + (i % 3)}T10:00:00.123456Z`, region: i % 2 ? 'eu' : 'us', amount: i * 1.5 }));

  function project(warehouse: string, catalog: string): { dir: string; run: (args: string[]) => ReturnType<typeof cli>; cleanup: () => void } {
    const tmp = tempDir('twinlake-cli-s3-');
    const s3 = server.storage.s3!;
    writeFileSync(
      join(tmp.path, 'twinlake.yaml'),
      [
        `warehouse: ${warehouse}`,
        'storage:',
        '  provider: s3',
        `  region: ${s3.region}`,
        `  endpoint: ${s3.endpoint}`,
        '  forcePathStyle: true',
        '  credential:',
        `    accessKeyId: ${s3.credentials!.accessKeyId}`,
        `    secretAccessKey: ${s3.credentials!.secretAccessKey}`,
        'catalog:',
        '  type: sql',
        `  uri: ${catalog}`,
        '  namespace: analytics',
        '',
      ].join('\n'),
    );
    writeFileSync(join(tmp.path, 'a.ndjson'), ndjson(rows.slice(0, 25)));
    writeFileSync(join(tmp.path, 'b.ndjson'), ndjson(rows.slice(25)));
    const run = (args: string[]) => {
      const r = cli(args, { cwd: tmp.path, env: { AWS_EC2_METADATA_DISABLED: 'true' } });
      // The secret is in the file only; nothing twinlake prints may repeat it.
      expect(r.stdout + r.stderr).not.toContain(s3.credentials!.secretAccessKey);
      return r;
    };
    return { dir: tmp.path, run, cleanup: tmp.cleanup };
  }

  function readIds(run: (args: string[]) => ReturnType<typeof cli>, args: string[]): number[] {
    const r = run(['read', ...args, '--output', 'ndjson']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    return r.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { id: number }).id)
      .sort((a, b) => a - b);
  }

  async function commandsOn(catalog: (dir: string) => string) {
    const warehouse = await server.newWarehouse();
    const p = project(warehouse, catalog('.'));
    try {
      expect(p.run(['write', 'events', '--input', 'a.ndjson', '--partition', 'region']).code).toBe(0);
      expect(p.run(['write', 'events', '--input', 'b.ndjson', '--mode', 'append']).code).toBe(0);
      const all = rows.map((r) => r.id);
      expect(readIds(p.run, ['events'])).toEqual(all);
      expect(readIds(p.run, ['events', '--format', 'delta'])).toEqual(all);
      expect(readIds(p.run, [`${warehouse}/analytics/events`])).toEqual(all);
      // Delta version 0 creates the table; the first write is version 1.
      expect(readIds(p.run, ['events', '--version', '0', '--format', 'delta'])).toEqual([]);
      expect(readIds(p.run, ['events', '--version', '1', '--format', 'delta'])).toEqual(all.slice(0, 25));
      expect(readIds(p.run, ['events', '--where', "region = 'eu'"])).toEqual(all.filter((i) => i % 2));

      const deleted = p.run(['delete', 'events', '--where', 'id < 5']);
      expect([deleted.code, deleted.stderr]).toEqual([0, '']);
      expect(readIds(p.run, ['events', '--format', 'delta'])).toEqual(all.filter((i) => i >= 5));

      const verify = p.run(['verify', 'events', '--json']);
      expect([verify.code, verify.stderr]).toEqual([0, '']);
      const tables = p.run(['tables']);
      expect(tables.stdout.trim().split('\n')).toEqual(['analytics.events']);
      const described = JSON.parse(p.run(['describe', 'events', '--json']).stdout) as { location: string; formats: string[] };
      expect(described.location).toBe(`${warehouse}/analytics/events`);
      expect(described.formats).toEqual(['delta', 'iceberg']);
      const files = p.run(['files', 'events']);
      expect(files.stdout).toContain(`${warehouse}/analytics/events/data/region=eu/`);

      // A Delta-only table needs the catalog's Delta registry, which the configured catalog brings.
      expect(p.run(['write', 'ledger', '--input', 'a.ndjson', '--formats', 'delta']).code).toBe(0);
      expect(readIds(p.run, ['ledger'])).toEqual(all.slice(0, 25));
      expect(p.run(['tables']).stdout.trim().split('\n')).toEqual(['analytics.events', 'analytics.ledger']);
    } finally {
      p.cleanup();
    }
  }

  it('writes, appends, reads (by name, by path, time travel, filtered), deletes, verifies and lists with a SQLite catalog', async () => {
    await commandsOn(() => './catalog.db');
  }, 180_000);

  const pgMissing = postgresMissing();
  const pgSkip = pgMissing !== undefined && !process.env.CI;
  let pg: PostgresServer | undefined;
  beforeAll(async () => {
    if (!pgSkip) pg = await startPostgres();
  }, 120_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it.skipIf(pgSkip)(`does the same with a PostgreSQL catalog${pgSkip ? ` (skipped: ${pgMissing})` : ''}`, async () => {
    const uri = await pg!.createDatabase('lake');
    await commandsOn(() => uri);
  }, 180_000);
});
