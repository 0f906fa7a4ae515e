import { readFile } from 'node:fs/promises';
import { icebergRead } from 'icebird';

/**
 * Reads a table with icebird, an Iceberg reader that shares no code with ours. icebird fetches
 * everything over HTTP(S) and Node's fetch has no `file:` scheme, so `file:` URLs are served from
 * disk (with Range support) while it runs.
 */
export async function readWithIcebird(tableDir: string): Promise<Record<string, unknown>[]> {
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith('file://')) return realFetch(input, init);
    const data = await readFile(decodeURIComponent(url.slice('file://'.length))).catch(() => undefined);
    if (!data) return new Response('not found', { status: 404 });
    const range = new Headers(init?.headers).get('range');
    if (init?.method === 'HEAD') return new Response(null, { headers: { 'content-length': String(data.length) } });
    if (range) {
      const [, a, b] = /bytes=(\d+)-(\d*)/.exec(range)!;
      return new Response(data.subarray(Number(a), b ? Number(b) + 1 : data.length), { status: 206 });
    }
    return new Response(data);
  }) as typeof fetch;
  try {
    return (await icebergRead({ tableUrl: `file://${tableDir}` })) as Record<string, unknown>[];
  } finally {
    globalThis.fetch = realFetch;
  }
}
