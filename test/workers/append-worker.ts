// A separate writer process: appends `batches` batches of `rows` rows to one table.
import { Lakehouse } from '../../src/index.ts';

const [warehouse, table, writer, batches, rows] = process.argv.slice(2);
const lake = await Lakehouse.open({ warehouse: warehouse!, onWarning: (m) => process.stderr.write(`warning: ${m}\n`) });
const t = lake.table(table!);
for (let b = 0; b < Number(batches); b++) {
  const data = Array.from({ length: Number(rows) }, (_, i) => ({ writer: writer!, batch: b, i, key: `${writer}-${b}-${i}` }));
  await t.append(data);
}
await lake.close();
