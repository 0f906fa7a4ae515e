import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { CRC32C } from '@google-cloud/storage';

/**
 * A TEST DOUBLE for Google Cloud Storage, not an emulator: a loopback HTTP server that speaks the
 * GCS JSON API for exactly the requests `@google-cloud/storage` sends for GcsStore's operations
 * (uploads of type media, multipart and resumable, object metadata and media with Range, list
 * with prefix and pageToken, delete, bucket metadata), keeping objects in memory. It enforces
 * `ifGenerationMatch` on uploads the way GCS documents it (0 = only if no live object; 412
 * conditionNotMet otherwise), checking and creating in one step, so concurrent creators get one
 * winner.
 *
 * No GCS emulator that honours ifGenerationMatch runs here, which is why this exists. What it
 * cannot prove: that GCS itself behaves as written here (consistency under real concurrency across
 * its frontends, its exact error bodies, IAM, retries on real 429/503, resumable-upload edge cases
 * such as lost chunks), nor anything about authentication beyond what `requests` records. It
 * proves that GcsStore sends the requests and preconditions the contract depends on and maps the
 * answers GCS documents.
 */
export interface GcsDouble {
  /** The `apiEndpoint` to give the SDK. */
  endpoint: string;
  /** Every request received, in order (the contract relies on what the SDK actually sends). */
  requests: RecordedRequest[];
  createBucket(name: string): void;
  /** Store the next `n` uploads but drop the connection instead of answering, as a lost response. */
  loseResponses(n: number): void;
  /** Answer requests needing `permission` with GCS's 403, as for a principal lacking it. */
  deny(permission: string, principal?: string): void;
  stop(): Promise<void>;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
}

interface StoredObject {
  data: Buffer;
  /** Custom metadata (`x-goog-meta-*`, the `metadata` field of the JSON API). */
  metadata?: Record<string, string>;
  generation: number;
  updated: Date;
  contentType: string;
}

interface Session {
  bucket: string;
  name: string;
  contentType: string;
  ifGenerationMatch: string | null;
  chunks: Buffer[];
  received: number;
}

export interface GcsDoubleOptions {
  /** Answer requests without an Authorization header with GCS's 401 for anonymous callers. */
  requireAuth?: boolean;
}

export async function startGcsDouble(settings: GcsDoubleOptions = {}): Promise<GcsDouble> {
  const buckets = new Map<string, Map<string, StoredObject>>();
  const sessions = new Map<string, Session>();
  const denied = new Map<string, string>();
  const requests: RecordedRequest[] = [];
  let generations = Date.now() * 1000;
  let endpoint = '';
  let lose = 0;

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { ...(body === undefined ? {} : { 'content-type': 'application/json; charset=UTF-8' }), ...headers });
    res.end(text);
  };
  const fail = (res: ServerResponse, status: number, reason: string, message: string) =>
    send(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason }] } });

  const metadata = (bucket: string, name: string, o: StoredObject) => ({
    kind: 'storage#object',
    id: `${bucket}/${name}/${o.generation}`,
    selfLink: `${endpoint}/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}`,
    name,
    bucket,
    generation: String(o.generation),
    metageneration: '1',
    contentType: o.contentType,
    size: String(o.data.length),
    crc32c: crc32c(o.data),
    updated: o.updated.toISOString(),
    timeCreated: o.updated.toISOString(),
    ...(o.metadata ? { metadata: o.metadata } : {}),
  });

  /** Checks the precondition and stores the object in one synchronous step: no other request interleaves. */
  const commit = (res: ServerResponse, bucket: string, name: string, data: Buffer, contentType: string, ifGenerationMatch: string | null, custom?: Record<string, string>) => {
    const objects = buckets.get(bucket);
    if (!objects) return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
    const existing = objects.get(name);
    if (ifGenerationMatch !== null && String(existing?.generation ?? 0) !== ifGenerationMatch) {
      return fail(res, 412, 'conditionNotMet', 'At least one of the pre-conditions you specified did not hold.');
    }
    const o = { data, generation: ++generations, updated: new Date(), contentType, metadata: custom };
    objects.set(name, o);
    if (lose > 0) {
      // The object is stored, but its answer never arrives: the client sees a reset connection.
      lose--;
      res.socket?.destroy();
      return;
    }
    send(res, 200, metadata(bucket, name, o));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://double');
    const body = await readBody(req);
    requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers });
    const q = url.searchParams;
    const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const object = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    const list = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const bucketPath = /^\/storage\/v1\/b\/([^/]+)$/.exec(url.pathname);
    const permission = upload ? 'storage.objects.create' : req.method === 'DELETE' ? 'storage.objects.delete' : list ? 'storage.objects.list' : object ? 'storage.objects.get' : 'storage.buckets.get';
    if (settings.requireAuth && req.headers.authorization === undefined) {
      return fail(res, 401, 'required', `Anonymous caller does not have ${permission} access to the Google Cloud Storage ${upload || object ? 'object' : 'bucket'}. Permission '${permission}' denied on resource (or it may not exist).`);
    }
    const who = denied.get(permission);
    if (who !== undefined) {
      return fail(res, 403, 'forbidden', `${who} does not have ${permission} access to the Google Cloud Storage ${upload || object ? 'object' : 'bucket'}. Permission '${permission}' denied on resource (or it may not exist).`);
    }

    if (upload && req.method === 'POST') {
      const bucket = decodeURIComponent(upload[1]);
      const type = q.get('uploadType');
      if (type === 'media') return commit(res, bucket, q.get('name') ?? '', body, req.headers['content-type'] ?? 'application/octet-stream', q.get('ifGenerationMatch'));
      if (type === 'multipart') {
        const parts = multipartParts(req.headers['content-type'] ?? '', body);
        if (!parts) return fail(res, 400, 'invalid', 'Expected a multipart/related body with metadata and media.');
        const meta = JSON.parse(parts[0].body.toString('utf8')) as { name?: string; contentType?: string; metadata?: Record<string, string> };
        return commit(res, bucket, meta.name ?? q.get('name') ?? '', parts[1].body, meta.contentType ?? parts[1].contentType, q.get('ifGenerationMatch'), meta.metadata);
      }
      if (type === 'resumable') {
        if (!buckets.has(bucket)) return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
        const meta = body.length > 0 ? (JSON.parse(body.toString('utf8')) as { name?: string; contentType?: string }) : {};
        const id = randomUUID();
        const contentType = meta.contentType ?? (req.headers['x-upload-content-type'] as string | undefined) ?? 'application/octet-stream';
        sessions.set(id, { bucket, name: meta.name ?? q.get('name') ?? '', contentType, ifGenerationMatch: q.get('ifGenerationMatch'), chunks: [], received: 0 });
        return send(res, 200, undefined, { location: `${endpoint}/upload/storage/v1/b/${upload[1]}/o?uploadType=resumable&upload_id=${id}` });
      }
      return fail(res, 400, 'invalid', `Unsupported uploadType ${type}.`);
    }
    if (upload && req.method === 'PUT') {
      const session = sessions.get(q.get('upload_id') ?? '');
      if (!session) return fail(res, 404, 'notFound', 'No such upload session.');
      // Content-Range: bytes first-last/total, bytes first-last/* (more to come) or bytes */total (a status query).
      const range = /^bytes (?:(\d+)-(\d+)|\*)\/(\d+|\*)$/.exec(String(req.headers['content-range'] ?? `bytes */${session.received + body.length}`));
      if (!range) return fail(res, 400, 'invalid', `Bad Content-Range ${req.headers['content-range']}.`);
      if (range[1] !== undefined) {
        if (Number(range[1]) !== session.received) return fail(res, 400, 'invalid', `Chunk starts at ${range[1]}, expected ${session.received}.`);
        session.chunks.push(body);
        session.received += body.length;
      }
      if (range[3] !== '*' && session.received === Number(range[3])) {
        sessions.delete(q.get('upload_id') ?? '');
        return commit(res, session.bucket, session.name, Buffer.concat(session.chunks), session.contentType, session.ifGenerationMatch);
      }
      return send(res, 308, undefined, session.received > 0 ? { range: `bytes=0-${session.received - 1}` } : {});
    }
    if (object) {
      const objects = buckets.get(decodeURIComponent(object[1]));
      if (!objects) return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
      const name = decodeURIComponent(object[2]);
      const o = objects.get(name);
      if (req.method === 'DELETE') {
        if (!o) return fail(res, 404, 'notFound', `No such object: ${object[1]}/${name}`);
        objects.delete(name);
        return send(res, 204);
      }
      if (req.method !== 'GET') return fail(res, 405, 'invalid', 'Method not allowed.');
      if (!o) return fail(res, 404, 'notFound', `No such object: ${object[1]}/${name}`);
      if (q.get('alt') !== 'media') return send(res, 200, metadata(object[1], name, o));
      const headers = { 'content-type': o.contentType, 'x-goog-generation': String(o.generation), 'x-goog-stored-content-encoding': 'identity', 'x-goog-hash': `crc32c=${crc32c(o.data)}` };
      const r = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ''));
      if (!r) {
        res.writeHead(200, { ...headers, 'content-length': String(o.data.length) });
        return res.end(o.data);
      }
      const start = Number(r[1]);
      if (start >= o.data.length) return fail(res, 416, 'requestedRangeNotSatisfiable', 'The requested range cannot be satisfied.');
      const end = Math.min(r[2] === '' ? o.data.length - 1 : Number(r[2]), o.data.length - 1);
      const { 'x-goog-hash': _, ...rangeHeaders } = headers;
      res.writeHead(206, { ...rangeHeaders, 'content-range': `bytes ${start}-${end}/${o.data.length}`, 'content-length': String(end - start + 1) });
      return res.end(o.data.subarray(start, end + 1));
    }
    if (list && req.method === 'GET') {
      const objects = buckets.get(decodeURIComponent(list[1]));
      if (!objects) return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
      const prefix = q.get('prefix') ?? '';
      const max = Math.min(Number(q.get('maxResults') ?? 1000), 1000);
      const after = q.get('pageToken') === null ? undefined : Buffer.from(q.get('pageToken')!, 'base64url').toString('utf8');
      const names = [...objects.keys()].filter((n) => n.startsWith(prefix) && (after === undefined || Buffer.compare(Buffer.from(n), Buffer.from(after)) > 0));
      names.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const page = names.slice(0, max);
      const more = names.length > max;
      return send(res, 200, {
        kind: 'storage#objects',
        ...(page.length > 0 ? { items: page.map((n) => metadata(list[1], n, objects.get(n)!)) } : {}),
        ...(more ? { nextPageToken: Buffer.from(page.at(-1)!).toString('base64url') } : {}),
      });
    }
    if (bucketPath && req.method === 'GET') {
      if (!buckets.has(decodeURIComponent(bucketPath[1]))) return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
      return send(res, 200, { kind: 'storage#bucket', name: bucketPath[1], id: bucketPath[1] });
    }
    fail(res, 400, 'invalid', `The test double does not implement ${req.method} ${url.pathname}.`);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (!res.headersSent) fail(res, 500, 'backendError', e instanceof Error ? e.message : String(e));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    endpoint,
    requests,
    createBucket(name) {
      if (!buckets.has(name)) buckets.set(name, new Map());
    },
    loseResponses(n) {
      lose = n;
    },
    deny(permission, principal = 'reader@twinlake-test.iam.gserviceaccount.com') {
      denied.set(permission, principal);
    },
    stop() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The parts of a multipart/related body (the SDK's single-request upload: metadata JSON, then media). */
function multipartParts(contentType: string, body: Buffer): { contentType: string; body: Buffer }[] | undefined {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return undefined;
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { contentType: string; body: Buffer }[] = [];
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = body.subarray(start + 2, next - 2); // after CRLF, before the CRLF ahead of the next delimiter
    const headerEnd = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    parts.push({ contentType: /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1] ?? 'application/octet-stream', body: part.subarray(headerEnd + 4) });
    at = next;
  }
  return parts.length === 2 ? parts : undefined;
}

function crc32c(data: Buffer): string {
  const c = new CRC32C();
  c.update(data);
  return c.toString();
}
