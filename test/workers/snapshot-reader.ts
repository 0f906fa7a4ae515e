// A separate reader process holding one old snapshot: reads it by snapshot ID (Iceberg) and by
// its Delta version, again and again, until the file `stop` exists. One JSON line per read on
// stdout: {format, at, done, ids} for rows read, {format, at, done, kind, message} for an error
// (`at`/`done`: when the read started and ended, ms since the epoch).
import { existsSync } from 'node:fs';
import { Lakehouse } from '../../src/index.ts';

const [warehouse, table, snapshotId, version, stop] = process.argv.slice(2);
const lake = await Lakehouse.open({ warehouse: warehouse!, onWarning: (m) => process.stderr.write(`warning: ${m}\n`) });
const t = lake.table(table!);
const reads = [
  { format: 'iceberg' as const, travel: { snapshotId: BigInt(snapshotId!) } },
  { format: 'delta' as const, travel: { version: Number(version) } },
];
while (!existsSync(stop!)) {
  for (const { format, travel } of reads) {
    const at = Date.now();
    try {
      const rows = await t.read({ format, ...travel });
      const ids = rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      process.stdout.write(JSON.stringify({ format, at, done: Date.now(), ids }) + '\n');
    } catch (e) {
      const err = e as Error & { kind?: string };
      process.stdout.write(JSON.stringify({ format, at, done: Date.now(), kind: err.kind ?? err.name, message: err.message }) + '\n');
    }
  }
}
await lake.close();
