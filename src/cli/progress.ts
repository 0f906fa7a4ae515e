/**
 * A progress line on a terminal while a long write runs: elapsed time and input size. DuckDB
 * reads the input in its own threads, so time is what can honestly be shown.
 */
export async function withProgress<T>(label: string, bytes: number | undefined, fn: () => Promise<T>): Promise<T> {
  if (!process.stderr.isTTY) return fn();
  const start = Date.now();
  const size = bytes === undefined ? '' : ` (${formatBytes(bytes)})`;
  const draw = () => process.stderr.write(`\r${label}${size} ... ${((Date.now() - start) / 1000).toFixed(1)}s`);
  const timer = setInterval(draw, 250);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
    process.stderr.write('\r\x1b[K');
  }
}

export function formatBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}
