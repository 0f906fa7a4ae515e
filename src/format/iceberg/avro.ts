import { deflateRawSync, inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { dataInvalid, invalidInput, TwinlakeError, unsupported } from '../../core/errors.ts';
import { parseJson } from '../../core/json.ts';
import { crc32 } from '../../core/crc32.ts';

/**
 * Avro Object Container Files (Avro spec §Object Container Files), synchronous and bytes in/out.
 *
 * Records are encoded and decoded by avsc. Every Avro `long` is a `bigint` on both sides:
 * snapshot IDs are random 63-bit numbers and would lose precision as doubles. Writers may pass
 * safe-integer numbers for longs too. `bytes` and `fixed` values come back as `Uint8Array`s
 * (avsc `Buffer`s).
 *
 * avsc's `Type` keeps no custom attributes, so the `field-id`s Iceberg needs in the file's schema
 * would be lost if the header were written from the `Type`: the writer stores the caller's raw
 * schema JSON in `avro.schema` instead.
 */

export type AvroCodec = 'null' | 'deflate';

/** A record field with its Iceberg field ID: optional ones are unions with null, defaulting to null. */
export const optionalField = (name: string, id: number, type: unknown) => ({ name, type: ['null', type], default: null, 'field-id': id });
export const requiredField = (name: string, id: number, type: unknown) => ({ name, type, 'field-id': id });

export interface AvroContainer {
  /** The writer's schema, as stored in the header (with any custom attributes such as field-id). */
  schemaJson: any;
  /** File metadata, `avro.schema` and `avro.codec` included, decoded as UTF-8. */
  metadata: Record<string, string>;
  records: any[];
}

const MAGIC = [0x4f, 0x62, 0x6a, 0x01]; // "Obj" 1
const BLOCK_TARGET_BYTES = 1 << 20;
/**
 * zlib's fastest level. Manifests repeat themselves (paths, field IDs, counts): on 100,000 entries
 * level 1 compresses them as small as the default level 6 does (a few percent either way) in a
 * fifth of the time, which was most of a large commit's manifest writing.
 */
const DEFLATE_LEVEL = 1;

const BigIntLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0),
  toBuffer: (n: bigint | number) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: (x: unknown) => BigInt(x as number),
  toJSON: (n: bigint) => Number(n),
  isValid: (n: unknown) =>
    (typeof n === 'bigint' && n >= -(2n ** 63n) && n < 2n ** 63n) || (typeof n === 'number' && Number.isSafeInteger(n)),
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
});

/** avsc ignores `registry` for `{"type": "long", "logicalType": ...}`; a type hook sees every schema. */
function longHook(schema: unknown): any {
  if (schema === 'long') return BigIntLong;
  if (schema !== null && typeof schema === 'object' && (schema as { type?: unknown }).type === 'long') return BigIntLong;
  return undefined;
}

const typeCache = new Map<string, avro.Type>();

/** `kind`: a schema we were given to write is invalid input; one found in a file is invalid data. */
function avroType(schemaJson: unknown, source: string, kind: 'invalid-input' | 'data-invalid'): avro.Type {
  // avsc compiles a reader and writer per type; manifests of one table share a handful of
  // schemas, so compiled types are kept by their JSON text.
  const key = JSON.stringify(schemaJson);
  const cached = typeCache.get(key);
  if (cached) return cached;
  try {
    const type = avro.Type.forSchema(schemaJson as avro.Schema, { typeHook: longHook, wrapUnions: 'auto' } as any);
    if (typeCache.size >= 64) typeCache.delete(typeCache.keys().next().value!);
    typeCache.set(key, type);
    return type;
  } catch (e) {
    throw new TwinlakeError(kind, `${source}: invalid Avro schema: ${(e as Error).message}`, {}, { cause: e });
  }
}

/** Field defaults only matter when resolving against a reader schema; foreign writers get them wrong. */
function withoutDefaults(schema: any): any {
  if (Array.isArray(schema)) return schema.map(withoutDefaults);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: any = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'default') continue;
    out[k] = k === 'type' || k === 'items' || k === 'values' || k === 'fields' ? withoutDefaults(v) : v;
  }
  return out;
}

export function writeAvroContainer(args: {
  schemaJson: object;
  records: any[];
  metadata: Record<string, string>;
  codec: AvroCodec;
  syncMarker: Uint8Array;
}): Uint8Array {
  const { schemaJson, records } = args;
  const type = avroType(schemaJson, 'avro', 'invalid-input');
  return writeAvroBlocks({
    ...args,
    count: records.length,
    encode(w, i) {
      let buf: Buffer;
      try {
        buf = type.toBuffer(records[i]);
      } catch (e) {
        throw new TwinlakeError('invalid-input', `avro: record ${i} does not match the schema: ${(e as Error).message}`, {}, { cause: e });
      }
      w.bytesRaw(buf);
    },
  });
}

/**
 * An Avro container file whose records the caller encodes itself, straight into the block buffer
 * (a compiled encoder: see manifest.ts). Blocks are cut where `writeAvroContainer` cuts them (once
 * a block holds BLOCK_TARGET_BYTES), so both write the same bytes for the same records.
 */
export function writeAvroBlocks(args: {
  schemaJson: object;
  metadata: Record<string, string>;
  codec: AvroCodec;
  syncMarker: Uint8Array;
  count: number;
  encode: (w: AvroWriter, i: number) => void;
}): Uint8Array {
  const { schemaJson, codec, syncMarker, count, encode } = args;
  if (syncMarker.length !== 16) throw invalidInput(`avro: sync marker must be 16 bytes, found ${syncMarker.length}`);
  if (codec !== 'null' && codec !== 'deflate') throw unsupported(`avro: codec ${JSON.stringify(codec)} is not supported for writing; expected null or deflate`);
  const out = new ByteSink();
  out.bytes(Uint8Array.from(MAGIC));
  const meta: [string, Uint8Array][] = Object.entries({ ...args.metadata, 'avro.schema': JSON.stringify(schemaJson), 'avro.codec': codec }).map(
    ([k, v]) => [k, Buffer.from(v, 'utf8')],
  );
  out.long(meta.length);
  for (const [k, v] of meta) {
    out.string(k);
    out.long(v.length);
    out.bytes(v);
  }
  out.long(0);
  out.bytes(syncMarker);

  const block = new AvroWriter(Math.min(BLOCK_TARGET_BYTES + 4096, 64 * 1024 + count * 64));
  let pending = 0;
  const flush = () => {
    if (pending === 0) return;
    const raw = block.view();
    // The block buffer is reused: what the sink keeps must be a copy (deflate makes one).
    const data = codec === 'deflate' ? deflateRawSync(raw, { level: DEFLATE_LEVEL }) : Buffer.from(raw);
    out.long(pending);
    out.long(data.length);
    out.bytes(data);
    out.bytes(syncMarker);
    pending = 0;
    block.reset();
  };
  for (let i = 0; i < count; i++) {
    encode(block, i);
    pending++;
    if (block.length >= BLOCK_TARGET_BYTES) flush();
  }
  flush();
  return out.result();
}

/**
 * Avro binary encoding (Avro spec §Binary Encoding) into one growable buffer, for compiled
 * encoders: no buffer per value or record. Longs are zig-zag varints from a safe-integer number
 * or a bigint; ints must fit 32 bits.
 */
export class AvroWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initial = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(Math.max(64, initial));
  }

  get length(): number {
    return this.pos;
  }

  /** The bytes written so far (a view: valid until the next write or reset). */
  view(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  reset(): void {
    this.pos = 0;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A union branch index or any small non-negative count (a one-byte varint below 64). */
  branch(index: number): void {
    this.room(1);
    this.buf[this.pos++] = index << 1;
  }

  int(n: number): void {
    this.room(5);
    let z = ((n << 1) ^ (n >> 31)) >>> 0;
    while (z >= 0x80) {
      this.buf[this.pos++] = (z & 0x7f) | 0x80;
      z >>>= 7;
    }
    this.buf[this.pos++] = z;
  }

  /** A safe-integer number (|n| < 2^53), written without bigint arithmetic. */
  long(n: number): void {
    if (n >= -0x40000000 && n < 0x40000000) return this.int(n);
    this.room(10);
    let z = n >= 0 ? n * 2 : -n * 2 - 1;
    while (z >= 0x80) {
      this.buf[this.pos++] = (z % 0x80) | 0x80;
      z = Math.floor(z / 0x80);
    }
    this.buf[this.pos++] = z;
  }

  bigLong(n: bigint): void {
    if (n >= -0x40000000n && n < 0x40000000n) return this.int(Number(n));
    this.room(10);
    // The same long again (every ADDED entry of a manifest carries the snapshot's ID): its bytes
    // as last written, instead of ten steps of bigint arithmetic.
    if (n === this.lastBig) {
      this.buf.set(this.lastBigBytes.subarray(0, this.lastBigLength), this.pos);
      this.pos += this.lastBigLength;
      return;
    }
    const start = this.pos;
    let z = BigInt.asUintN(64, (n << 1n) ^ (n >> 63n));
    while (z >= 0x80n) {
      this.buf[this.pos++] = Number(z & 0x7fn) | 0x80;
      z >>= 7n;
    }
    this.buf[this.pos++] = Number(z);
    this.lastBig = n;
    this.lastBigLength = this.pos - start;
    this.buf.copy(this.lastBigBytes, 0, start, this.pos);
  }

  private lastBig: bigint | undefined;
  private readonly lastBigBytes = Buffer.alloc(10);
  private lastBigLength = 0;

  boolean(b: boolean): void {
    this.room(1);
    this.buf[this.pos++] = b ? 1 : 0;
  }

  float(x: number): void {
    this.room(4);
    this.buf.writeFloatLE(x, this.pos);
    this.pos += 4;
  }

  double(x: number): void {
    this.room(8);
    this.buf.writeDoubleLE(x, this.pos);
    this.pos += 8;
  }

  string(s: string): void {
    // At most three bytes per UTF-16 unit; the length prefix is written once the size is known.
    const max = s.length * 3;
    this.room(max + 10);
    const prefix = max < 64 ? 1 : max < 8192 ? 2 : max < 1048576 ? 3 : 5;
    const n = this.buf.write(s, this.pos + prefix, 'utf8');
    const needed = n < 64 ? 1 : n < 8192 ? 2 : n < 1048576 ? 3 : n < 134217728 ? 4 : 5;
    if (needed !== prefix) this.buf.copy(this.buf, this.pos + needed, this.pos + prefix, this.pos + prefix + n);
    this.long(n);
    this.pos += n;
  }

  /** Avro `bytes`: length, then the bytes. */
  bytes(b: Uint8Array): void {
    this.long(b.length);
    this.bytesRaw(b);
  }

  /** Bytes as they are: an Avro `fixed`, or a value encoded elsewhere. */
  bytesRaw(b: Uint8Array): void {
    const n = b.length;
    this.room(n);
    // Bounds are a few bytes: a loop beats TypedArray.set's call overhead there.
    if (n <= 32) {
      const buf = this.buf;
      let p = this.pos;
      for (let k = 0; k < n; k++) buf[p++] = b[k]!;
      this.pos = p;
    } else {
      this.buf.set(b, this.pos);
      this.pos += n;
    }
  }
}

export function readAvroContainer(bytes: Uint8Array, source = 'avro'): AvroContainer {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const src = new ByteSource(buf, source);
  for (let i = 0; i < 4; i++) {
    if (buf[i] !== MAGIC[i]) throw dataInvalid(`${source}: not an Avro container file (expected magic "Obj\\x01", found ${JSON.stringify(buf.subarray(0, 4).toString('latin1'))})`);
  }
  src.pos = 4;
  const metadata: Record<string, string> = {};
  for (;;) {
    let count = src.long();
    if (count === 0) break;
    if (count < 0) {
      count = -count;
      src.long(); // block size in bytes, unused
    }
    for (let i = 0; i < count; i++) {
      const key = src.string();
      metadata[key] = src.string();
    }
  }
  const sync = src.take(16);
  const schemaText = metadata['avro.schema'];
  if (schemaText === undefined) throw dataInvalid(`${source}: Avro header has no avro.schema`);
  let schemaJson: any;
  try {
    schemaJson = parseJson(schemaText, `${source} avro.schema`);
  } catch (e) {
    throw new TwinlakeError('data-invalid', `${source}: avro.schema is not JSON: ${(e as Error).message}`, {}, { cause: e });
  }
  const codec = metadata['avro.codec'] ?? 'null';
  const type = avroType(withoutDefaults(schemaJson), source, 'data-invalid');

  const records: any[] = [];
  while (src.pos < buf.length) {
    const count = src.long();
    const size = src.long();
    if (count < 0 || size < 0) throw dataInvalid(`${source}: negative block count or size at byte ${src.pos}`);
    const block = decompress(codec, src.take(size), source);
    const marker = src.take(16);
    if (!marker.equals(sync)) throw dataInvalid(`${source}: block sync marker does not match the header's at byte ${src.pos - 16}`);
    let pos = 0;
    for (let i = 0; i < count; i++) {
      let res: { value: any; offset: number };
      try {
        res = type.decode(block, pos);
      } catch (e) {
        throw new TwinlakeError('data-invalid', `${source}: cannot decode record ${records.length}: ${(e as Error).message}`, {}, { cause: e });
      }
      if (res.offset < 0) throw dataInvalid(`${source}: block ends inside record ${records.length} (block of ${count} records, ${block.length} bytes)`);
      records.push(res.value);
      pos = res.offset;
    }
  }
  return { schemaJson, metadata, records };
}

function decompress(codec: string, data: Buffer, source: string): Buffer {
  switch (codec) {
    case 'null':
      return data;
    case 'deflate':
      return inflateRawSync(data);
    case 'snappy': {
      // Avro appends the big-endian CRC32 of the uncompressed block to each snappy block.
      if (data.length < 4) throw dataInvalid(`${source}: snappy block shorter than its checksum`);
      const out = snappyUncompress(data.subarray(0, data.length - 4), source);
      const expected = data.readUInt32BE(data.length - 4);
      const found = crc32(out);
      if (expected !== found) throw dataInvalid(`${source}: snappy block checksum mismatch (expected ${expected}, found ${found})`);
      return out;
    }
    default:
      throw unsupported(`${source}: Avro codec ${JSON.stringify(codec)} is not supported; expected null, deflate or snappy`);
  }
}

/** Raw snappy block format (no framing), as Avro uses it. */
export function snappyUncompress(input: Uint8Array, source = 'snappy'): Buffer {
  let pos = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= input.length || shift > 28) throw dataInvalid(`${source}: bad snappy length header`);
    const b = input[pos++]!;
    length += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) break;
  }
  const out = Buffer.alloc(length);
  let o = 0;
  const fail = (what: string): never => {
    throw dataInvalid(`${source}: corrupt snappy data (${what} at input byte ${pos})`);
  };
  while (pos < input.length) {
    const tag = input[pos++]!;
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) {
        const n = len - 59;
        if (pos + n > input.length) fail('truncated literal length');
        len = 0;
        for (let i = 0; i < n; i++) len += input[pos + i]! * 2 ** (8 * i);
        pos += n;
      }
      len += 1;
      if (pos + len > input.length || o + len > length) fail('literal overruns');
      out.set(input.subarray(pos, pos + len), o);
      pos += len;
      o += len;
      continue;
    }
    let len: number;
    let offset: number;
    if (kind === 1) {
      len = ((tag >>> 2) & 7) + 4;
      if (pos >= input.length) fail('truncated copy');
      offset = ((tag >>> 5) << 8) | input[pos++]!;
    } else if (kind === 2) {
      len = (tag >>> 2) + 1;
      if (pos + 2 > input.length) fail('truncated copy');
      offset = input[pos]! | (input[pos + 1]! << 8);
      pos += 2;
    } else {
      len = (tag >>> 2) + 1;
      if (pos + 4 > input.length) fail('truncated copy');
      offset = (input[pos]! | (input[pos + 1]! << 8) | (input[pos + 2]! << 16)) + input[pos + 3]! * 2 ** 24;
      pos += 4;
    }
    if (offset === 0 || offset > o || o + len > length) fail('copy out of range');
    // Copies may overlap their own output (run-length style), so copy byte by byte.
    for (let i = 0; i < len; i++, o++) out[o] = out[o - offset]!;
  }
  if (o !== length) fail(`expected ${length} bytes, produced ${o}`);
  return out;
}


/** Avro zig-zag varints for header and block framing (counts and sizes: safe integers). */
class ByteSource {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly source: string,
  ) {}

  long(): number {
    let n = 0;
    let shift = 1;
    for (;;) {
      if (this.pos >= this.buf.length) throw dataInvalid(`${this.source}: file ends inside a varint`);
      const b = this.buf[this.pos++]!;
      n += (b & 0x7f) * shift;
      if (b < 0x80) break;
      shift *= 128;
      if (shift > 2 ** 56) throw dataInvalid(`${this.source}: varint too large at byte ${this.pos}`);
    }
    return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
  }

  take(n: number): Buffer {
    if (this.pos + n > this.buf.length) throw dataInvalid(`${this.source}: file truncated (needed ${n} bytes at byte ${this.pos}, file has ${this.buf.length})`);
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  string(): string {
    const n = this.long();
    if (n < 0) throw dataInvalid(`${this.source}: negative string length at byte ${this.pos}`);
    return this.take(n).toString('utf8');
  }
}

class ByteSink {
  private chunks: Uint8Array[] = [];
  private size = 0;

  bytes(b: Uint8Array): void {
    this.chunks.push(b);
    this.size += b.length;
  }

  long(v: number): void {
    let n = v >= 0 ? v * 2 : -v * 2 - 1;
    const out: number[] = [];
    while (n >= 0x80) {
      out.push((n % 0x80) | 0x80);
      n = Math.floor(n / 0x80);
    }
    out.push(n);
    this.bytes(Uint8Array.from(out));
  }

  string(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.long(b.length);
    this.bytes(b);
  }

  result(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Navigating a writer's schema JSON, so readers can find fields by Iceberg field ID.

export interface AvroField {
  name: string;
  /** The Iceberg `field-id` attribute, when the writer stored one. */
  id?: number;
  schema: any;
}

export interface AvroFieldIndex {
  list: AvroField[];
  byId: Map<number, AvroField>;
  byName: Map<string, AvroField>;
}

/** Named types (records, fixed, enums) of a schema by short and full name. */
export function namedTypes(schema: any): Map<string, any> {
  const out = new Map<string, any>();
  const visit = (s: any, namespace: string | undefined) => {
    if (Array.isArray(s)) return s.forEach((b) => visit(b, namespace));
    if (s === null || typeof s !== 'object') return;
    let ns = namespace;
    if (typeof s.name === 'string' && (s.type === 'record' || s.type === 'error' || s.type === 'fixed' || s.type === 'enum')) {
      const full = s.name.includes('.') ? s.name : s.namespace ? `${s.namespace}.${s.name}` : ns ? `${ns}.${s.name}` : s.name;
      out.set(full, s);
      out.set(full.slice(full.lastIndexOf('.') + 1), s);
      ns = full.includes('.') ? full.slice(0, full.lastIndexOf('.')) : ns;
    }
    if (Array.isArray(s.fields)) for (const f of s.fields) visit(f.type, ns);
    if (s.items !== undefined) visit(s.items, ns);
    if (s.values !== undefined) visit(s.values, ns);
    if (typeof s.type === 'object') visit(s.type, ns);
  };
  visit(schema, undefined);
  return out;
}

/** A name reference replaced by its definition; `{type: {...}}` wrappers unwrapped. */
export function resolveNamed(schema: any, named: Map<string, any>): any {
  if (typeof schema === 'string') return named.get(schema) ?? named.get(schema.slice(schema.lastIndexOf('.') + 1)) ?? schema;
  if (schema && typeof schema === 'object' && !Array.isArray(schema) && typeof schema.type === 'object') return resolveNamed(schema.type, named);
  return schema;
}

/** The non-null branch of an optional union (`["null", T]`), or the schema itself. */
export function nonNull(schema: any): any {
  if (!Array.isArray(schema)) return schema;
  const branches = schema.filter((b) => b !== 'null' && !(b && b.type === 'null'));
  return branches.length === 1 ? branches[0] : schema;
}

export function fieldsById(recordSchema: any, named: Map<string, any>, source: string): AvroFieldIndex {
  const rec = resolveNamed(recordSchema, named);
  if (!rec || rec.type !== 'record' || !Array.isArray(rec.fields)) {
    throw dataInvalid(`${source}: expected an Avro record schema, found ${JSON.stringify(rec)?.slice(0, 200)}`);
  }
  const list: AvroField[] = rec.fields.map((f: any) => {
    const raw = f['field-id'];
    const id = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : undefined;
    return id === undefined ? { name: f.name, schema: f.type } : { name: f.name, id, schema: f.type };
  });
  const byId = new Map<number, AvroField>();
  const byName = new Map<string, AvroField>();
  for (const f of list) {
    if (f.id !== undefined) byId.set(f.id, f);
    byName.set(f.name, f);
  }
  return { list, byId, byName };
}

/** A decoded Avro int or long as a number. */
export function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  throw dataInvalid(`avro: expected a number, found ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
}

/** A decoded Avro bytes/fixed value as a standalone Uint8Array (not a view into the file). */
export function toBytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  throw dataInvalid(`avro: expected bytes, found ${typeof v}`);
}
