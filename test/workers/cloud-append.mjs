// A separate writer process on a cloud warehouse, through the built library (dist/): appends
// `batches` batches of `rows` rows to one table. Its one argument is JSON:
// { warehouse, storage, dbPath, table, writer, batches, rows }.
import { Lakehouse, SqlCatalog, storeForLocation } from '../../dist/index.js';

const job = JSON.parse(process.argv[2]);
const catalog = new SqlCatalog({ name: 'twinlake', dbPath: job.dbPath, warehouse: { store: storeForLocation(job.warehouse, job.storage).store, rootUri: job.warehouse } });
const lake = await Lakehouse.open({ warehouse: job.warehouse, storage: job.storage, catalog, engine: { threads: 1, memoryLimit: '256MB' } });
const t = lake.table(job.table);
for (let b = 0; b < job.batches; b++) {
  const data = Array.from({ length: job.rows }, (_, i) => ({ id: job.base + b * job.rows + i, writer: job.writer, batch: b }));
  await t.append(data);
}
await lake.close();
catalog.close();
