/**
 * Small Parquet files read in-process, row objects out (hyparquet): Delta checkpoints, which are
 * read before any query runs. The reader is loaded on first use; most commands never need it, and
 * start-up time counts.
 */
export async function readParquetRows(bytes: Uint8Array, parsers: Record<string, (v: never) => unknown>): Promise<Record<string, unknown>[]> {
  const file = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? (bytes.buffer as ArrayBuffer) : bytes.slice().buffer;
  const [{ parquetReadObjects }, { compressors }] = await Promise.all([import('hyparquet'), import('hyparquet-compressors')]);
  return parquetReadObjects({ file, compressors, parsers: parsers as never });
}
