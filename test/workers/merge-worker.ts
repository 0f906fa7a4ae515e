// A separate merging process: upserts its own keys into one table, several rounds.
import { Lakehouse } from '../../src/index.ts';

const [warehouse, table, writer, rounds, strategy] = process.argv.slice(2);
const lake = await Lakehouse.open({ warehouse: warehouse!, onWarning: (m) => process.stderr.write(`warning: ${m}\n`) });
const t = lake.table(table!);
// A owns ids 0-39, B 1000-1039, C 2000-2039, ...: writers never touch each other's keys.
const base = (writer!.charCodeAt(0) - 65) * 1000;
for (let r = 0; r < Number(rounds); r++) {
  const batch = Array.from({ length: 20 }, (_, i) => ({ id: base + ((r * 7 + i) % 40), owner: writer!, round: r }));
  await t.merge(batch, { keys: ['id'], ...(strategy ? { strategy: strategy as 'copy-on-write' | 'merge-on-read' } : {}) });
}
await lake.close();
