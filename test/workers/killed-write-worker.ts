// A writer process killed mid-write: it appends to a table and dies (SIGKILL, no cleanup runs)
// the moment the write has moved its data files into the table and written its manifest list,
// before the catalog writes the new metadata file. What it leaves is what a crashed writer leaves.
import { Lakehouse } from '../../src/index.ts';
import { FileIO } from '../../src/io/file-io.ts';
import { storeForLocation } from '../../src/io/store-for-uri.ts';
import { FaultyStore } from '../faults.ts';

const [warehouse, table] = process.argv.slice(2);
class KillingStore extends FaultyStore {
  override async put(path: string, body: Uint8Array | string) {
    await super.put(path, body);
    if (/(^|\/)snap-[^/]*\.avro$/.test(path)) process.kill(process.pid, 'SIGKILL');
  }
}
const io = new FileIO((uri) => {
  const { store, key } = storeForLocation(uri);
  return { store: new KillingStore(store), key };
});
const lake = await Lakehouse.open({ warehouse: warehouse!, io });
await lake.table(table!).append(Array.from({ length: 50 }, (_, i) => ({ id: 1000 + i, grp: 'a' })));
process.stderr.write('the write finished: it was not killed\n');
process.exit(0);
