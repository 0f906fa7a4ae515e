import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A TEST DOUBLE of AWS Glue, not an emulator: a loopback HTTP server that speaks Glue's JSON
 * protocol (awsJson1_1: `POST /`, `X-Amz-Target: AWSGlue.<Op>`, errors as `{"__type", "Message"}`
 * with HTTP 400) for exactly the calls GlueCatalog makes, with databases and tables in memory.
 *
 * What it does as Glue does: one catalog per region (the region is read from the SigV4 credential
 * scope of each request, so a client configured for another region sees none of these databases),
 * names kept in lower case, `UpdateTable` replacing the whole table definition and refusing a stale
 * `VersionId` with ConcurrentModificationException, `DeleteDatabase` deleting the tables in it,
 * pagination with `NextToken`, and Glue's error shapes (EntityNotFoundException,
 * AlreadyExistsException, AccessDeniedException for configured denials, UnrecognizedClientException
 * for an unknown access key).
 *
 * A request's CatalogId is recorded (and stored on what it creates) but does not select another
 * catalog: there is one per region.
 *
 * What it cannot prove: real IAM and Lake Formation (a denial here is a configured list of
 * operations, the signature is not checked), real Glue's consistency and its VersionId check under
 * load, its quotas and throttling, and that Athena, Spark or Trino read the tables.
 */
export interface GlueDoubleOptions {
  /** Requests signed with another access key get UnrecognizedClientException. */
  accessKeyId?: string;
  /** The account the double's catalogs belong to (the default CatalogId). */
  accountId?: string;
  /** Items per page of GetDatabases and GetTables (Glue: up to 100). */
  pageSize?: number;
}

export interface GlueTableRecord {
  Name: string;
  DatabaseName: string;
  TableType?: string;
  Parameters?: Record<string, string>;
  StorageDescriptor?: { Location?: string; Columns?: { Name: string; Type?: string; Comment?: string; Parameters?: Record<string, string> }[] };
  Description?: string;
  VersionId: string;
  CatalogId: string;
  CreateTime: number;
  UpdateTime: number;
  [key: string]: unknown;
}

interface DatabaseRecord {
  Name: string;
  Description?: string;
  LocationUri?: string;
  Parameters?: Record<string, string>;
  CatalogId: string;
  CreateTime: number;
  tables: Map<string, GlueTableRecord>;
}

/** One request as the double received it. */
export interface GlueCall {
  op: string;
  region: string;
  body: Record<string, unknown>;
  /** The error type returned, if any. */
  error?: string;
}

class GlueFault extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export class GlueDouble {
  readonly calls: GlueCall[] = [];
  /** Archived table versions per `region/db/table` (UpdateTable without SkipArchive). */
  readonly archived = new Map<string, number>();
  private readonly regions = new Map<string, Map<string, DatabaseRecord>>();
  private readonly denied = new Set<string>();
  private readonly losing = new Map<string, number>();
  private readonly accountId: string;
  private readonly pageSize: number;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
    private readonly options: GlueDoubleOptions,
  ) {
    this.accountId = options.accountId ?? '123456789012';
    this.pageSize = options.pageSize ?? 100;
  }

  /** Starts a double on a free loopback port. */
  static async start(options: GlueDoubleOptions = {}): Promise<GlueDouble> {
    let double: GlueDouble | undefined;
    const server = createServer((req, res) => void double!.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    double = new GlueDouble(server, `http://127.0.0.1:${port}`, options);
    return double;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Answers every later call of `op` (`UpdateTable`, …) with AccessDeniedException, as IAM would. */
  deny(op: string): void {
    this.denied.add(op);
  }

  allow(op: string): void {
    this.denied.delete(op);
  }

  /**
   * The next `count` calls of `op` are carried out and their connection is then dropped before
   * any response: what a client sees when a response is lost on the way.
   */
  loseResponses(op: string, count = 1): void {
    this.losing.set(op, count);
  }

  /** Creates a database directly (as an administrator or Terraform would). */
  createDatabase(region: string, name: string): void {
    this.catalog(region).set(name, { Name: name, CatalogId: this.accountId, CreateTime: now(), tables: new Map() });
  }

  /** A table as Glue holds it, for assertions. */
  table(region: string, database: string, name: string): GlueTableRecord | undefined {
    return this.regions.get(region)?.get(database)?.tables.get(name);
  }

  databases(region: string): string[] {
    return [...(this.regions.get(region)?.keys() ?? [])].sort();
  }

  private catalog(region: string): Map<string, DatabaseRecord> {
    let c = this.regions.get(region);
    if (!c) this.regions.set(region, (c = new Map()));
    return c;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const target = String(req.headers['x-amz-target'] ?? '');
    const op = target.startsWith('AWSGlue.') ? target.slice('AWSGlue.'.length) : target;
    const auth = String(req.headers.authorization ?? '');
    // AWS4-HMAC-SHA256 Credential=<key id>/<date>/<region>/glue/aws4_request, SignedHeaders=…, Signature=…
    const scope = /Credential=([^/]+)\/\d{8}\/([^/]+)\/glue\/aws4_request/.exec(auth);
    const region = scope?.[2] ?? '';
    let body: Record<string, unknown> = {};
    const call: GlueCall = { op, region, body };
    this.calls.push(call);
    try {
      body = call.body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
      if (req.method !== 'POST' || !target.startsWith('AWSGlue.')) throw new GlueFault('UnknownOperationException', `unknown operation ${target}`);
      if (!scope) throw new GlueFault('MissingAuthenticationTokenException', 'Missing Authentication Token');
      if (this.options.accessKeyId !== undefined && scope[1] !== this.options.accessKeyId) {
        throw new GlueFault('UnrecognizedClientException', 'The security token included in the request is invalid.');
      }
      if (this.denied.has(op)) {
        throw new GlueFault(
          'AccessDeniedException',
          `User: arn:aws:iam::${this.accountId}:user/tester is not authorized to perform: glue:${op} on resource: arn:aws:glue:${region}:${this.accountId}:catalog because no identity-based policy allows the glue:${op} action`,
        );
      }
      const out = this.run(op, this.catalog(region), body, region);
      const lose = this.losing.get(op) ?? 0;
      if (lose > 0) {
        this.losing.set(op, lose - 1);
        req.socket.destroy();
        return;
      }
      send(res, 200, out, {});
    } catch (e) {
      if (!(e instanceof GlueFault)) {
        call.error = 'InternalServiceException';
        send(res, 500, { __type: 'InternalServiceException', Message: String(e) }, { 'x-amzn-errortype': 'InternalServiceException' });
        return;
      }
      call.error = e.type;
      send(res, 400, { __type: e.type, Message: e.message }, { 'x-amzn-errortype': e.type });
    }
  }

  private run(op: string, catalog: Map<string, DatabaseRecord>, body: Record<string, unknown>, region: string): Record<string, unknown> {
    const database = (name: unknown): DatabaseRecord => {
      const db = catalog.get(lower(name, 'DatabaseName'));
      if (!db) throw new GlueFault('EntityNotFoundException', `Database ${String(name)} not found.`);
      return db;
    };
    const table = (db: DatabaseRecord, name: unknown): GlueTableRecord => {
      const t = db.tables.get(lower(name, 'Name'));
      if (!t) throw new GlueFault('EntityNotFoundException', `Table ${String(name)} not found.`);
      return t;
    };
    switch (op) {
      case 'CreateDatabase': {
        const input = object(body.DatabaseInput, 'DatabaseInput');
        const name = lower(input.Name, 'DatabaseInput.Name');
        if (catalog.has(name)) throw new GlueFault('AlreadyExistsException', 'Database already exists.');
        catalog.set(name, {
          Name: name,
          Description: input.Description as string | undefined,
          LocationUri: input.LocationUri as string | undefined,
          Parameters: (input.Parameters as Record<string, string> | undefined) ?? {},
          CatalogId: this.catalogId(body),
          CreateTime: now(),
          tables: new Map(),
        });
        return {};
      }
      case 'GetDatabase': {
        const { tables: _, ...db } = database(body.Name);
        return { Database: db };
      }
      case 'GetDatabases': {
        const all = [...catalog.values()].sort((a, b) => (a.Name < b.Name ? -1 : 1)).map(({ tables: _, ...db }) => db);
        return this.page(all, body, 'DatabaseList');
      }
      case 'DeleteDatabase': {
        database(body.Name);
        // Glue deletes the tables of a database with it.
        catalog.delete(lower(body.Name, 'Name'));
        return {};
      }
      case 'CreateTable': {
        const db = database(body.DatabaseName);
        const input = object(body.TableInput, 'TableInput');
        const name = lower(input.Name, 'TableInput.Name');
        if (db.tables.has(name)) throw new GlueFault('AlreadyExistsException', `Table already exists.`);
        const t = now();
        db.tables.set(name, { ...clone(input), Name: name, DatabaseName: db.Name, VersionId: '0', CatalogId: this.catalogId(body), CreateTime: t, UpdateTime: t });
        return {};
      }
      case 'GetTable':
        return { Table: table(database(body.DatabaseName), body.Name) };
      case 'GetTables': {
        const db = database(body.DatabaseName);
        const all = [...db.tables.values()].sort((a, b) => (a.Name < b.Name ? -1 : 1));
        return this.page(all, body, 'TableList');
      }
      case 'UpdateTable': {
        const db = database(body.DatabaseName);
        const input = object(body.TableInput, 'TableInput');
        const current = table(db, input.Name);
        if (body.VersionId !== undefined && body.VersionId !== current.VersionId) {
          throw new GlueFault('ConcurrentModificationException', 'Update table failed due to concurrent modifications.');
        }
        if (body.SkipArchive !== true) {
          const key = `${region}/${db.Name}/${current.Name}`;
          this.archived.set(key, (this.archived.get(key) ?? 0) + 1);
        }
        // UpdateTable replaces the definition: what the input leaves out is gone.
        db.tables.set(current.Name, {
          ...clone(input),
          Name: current.Name,
          DatabaseName: db.Name,
          VersionId: String(Number(current.VersionId) + 1),
          CatalogId: current.CatalogId,
          CreateTime: current.CreateTime,
          UpdateTime: now(),
        });
        return {};
      }
      case 'DeleteTable': {
        const db = database(body.DatabaseName);
        table(db, body.Name);
        db.tables.delete(lower(body.Name, 'Name'));
        return {};
      }
      default:
        throw new GlueFault('UnknownOperationException', `the Glue test double does not implement ${op}`);
    }
  }

  private catalogId(body: Record<string, unknown>): string {
    return typeof body.CatalogId === 'string' ? body.CatalogId : this.accountId;
  }

  private page<T>(all: T[], body: Record<string, unknown>, key: string): Record<string, unknown> {
    const start = typeof body.NextToken === 'string' ? Number(body.NextToken) : 0;
    const size = Math.min(typeof body.MaxResults === 'number' ? body.MaxResults : this.pageSize, this.pageSize);
    const items = all.slice(start, start + size);
    return start + size < all.length ? { [key]: items, NextToken: String(start + size) } : { [key]: items };
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': `req-${Date.now()}`, ...headers });
  res.end(text);
}

function lower(name: unknown, field: string): string {
  if (typeof name !== 'string' || name === '') throw new GlueFault('InvalidInputException', `${field} is required`);
  return name.toLowerCase();
}

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) throw new GlueFault('InvalidInputException', `${field} is required`);
  return value as Record<string, unknown>;
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Glue's awsJson timestamps are epoch seconds. */
function now(): number {
  return Date.now() / 1000;
}
