import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBSession } from '../../src/engine/duckdb-session.ts';
import { encodeParquet } from '../../src/engine/encode.ts';
import { inferSchema, inputRelation } from '../../src/engine/infer-schema.ts';
import type { Schema } from '../../src/format/iceberg/types.ts';
import { tempDir } from '../helpers.ts';

const ROWS = 2_000_000;
const MEMORY_LIMIT_MB = 256;

let dir: { path: string; cleanup: () => void };
let input: string;
beforeAll(async () => {
  dir = tempDir();
  input = join(dir.path, 'big.ndjson');
  const gen = await DuckDBSession.open();
  await gen.run(`COPY (SELECT i AS id, md5(i::VARCHAR) || md5((i + 1)::VARCHAR) || md5((i + 2)::VARCHAR) AS h, i / 7 AS x, make_timestamp(1600000000000000 + i * 1000)::TIMESTAMPTZ AS t, {'a': i % 100, 'tags': ['x' || (i % 13)]} AS o FROM range(${ROWS}) r(i)) TO '${input}' (FORMAT json)`);
  gen.close();
});
afterAll(() => dir.cleanup());

describe('encoding a large input', () => {
  it(`streams ${ROWS} NDJSON rows with memory near the session limit`, async () => {
    const inputBytes = statSync(input).size;
    const session = await DuckDBSession.open({ memoryLimit: `${MEMORY_LIMIT_MB}MB`, threads: 2, tempDir: join(dir.path, 'spill') });
    try {
      const inferred = await inferSchema(session, { path: input, format: 'ndjson' });
      let id = 0;
      const number = (t: any): any => (typeof t === 'string' ? t : t.type === 'struct' ? { ...t, fields: t.fields.map((f: any) => ({ ...f, id: ++id, type: number(f.type) })) } : t.type === 'list' ? { ...t, 'element-id': ++id, element: number(t.element) } : t);
      const schema: Schema = { ...number(inferred), 'schema-id': 0 };
      const before = process.memoryUsage().rss;
      let peak = before;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
      const files = await encodeParquet(session, {
        source: inputRelation({ path: input, format: 'ndjson' }, schema),
        schema, physicalNames: new Map(), outputDir: join(dir.path, 'out'), targetFileSizeBytes: 32 << 20, filePrefix: 'big-',
      });
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      expect(files.reduce((a, f) => a + f.recordCount, 0)).toBe(ROWS);
      expect(files.length).toBeGreaterThan(1);
      const growthMb = (peak - before) / 2 ** 20;
      // The input is well over the limit; the process grows by about the limit, not by the input.
      expect(inputBytes / 2 ** 20).toBeGreaterThan(MEMORY_LIMIT_MB * 1.4);
      expect(growthMb).toBeLessThan(MEMORY_LIMIT_MB * 1.5);
    } finally {
      session.close();
    }
  });
});
