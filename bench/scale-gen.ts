// Writes NDJSON events (bench/data.ts) to standard output until `argv[2]` bytes are written, then
// reports the rows written on standard error as `{"rows": n, "bytes": n}`: the stream bench/scale.ts
// pipes into `twinlake write --input -`, generated as it is read so no input file exists.
import { eventRows } from './data.ts';

const target = Number(process.argv[2]);
const event = eventRows();
let rows = 0;
let bytes = 0;
const out = process.stdout;
while (bytes < target) {
  let buf = '';
  let size = 0;
  while (size < 1 << 20 && bytes + size < target) {
    const line = JSON.stringify(event(rows++)) + '\n';
    buf += line;
    size += Buffer.byteLength(line);
  }
  bytes += size;
  if (!out.write(buf)) await new Promise<void>((r) => out.once('drain', () => r()));
}
out.end(() => process.stderr.write(JSON.stringify({ rows, bytes }) + '\n'));
