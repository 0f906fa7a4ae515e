import { Readable } from 'node:stream';
import avro from 'avsc';

/**
 * An independent Avro reader for tests: avsc's own container decoder (`streams.BlockDecoder`),
 * which shares no framing or codec code with src/format/iceberg/avro.ts. Longs decode to decimal
 * strings so they can be compared with bigints without trusting our long type.
 */

const StringLong = avro.types.LongType.__with({
  fromBuffer: (buf: Buffer) => buf.readBigInt64LE(0).toString(),
  toBuffer: (s: string) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(s));
    return buf;
  },
  fromJSON: (x: unknown) => String(x),
  toJSON: (s: string) => Number(s),
  isValid: (s: unknown) => typeof s === 'string' && /^-?\d+$/.test(s),
  compare: (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0),
});

const typeHook = (schema: any): any => (schema === 'long' || (schema && typeof schema === 'object' && schema.type === 'long') ? StringLong : undefined);

export interface AvscDecoded {
  schemaJson: any;
  metadata: Record<string, string>;
  codec: string;
  records: any[];
}

export function decodeWithAvsc(bytes: Uint8Array, codecs?: Record<string, (buf: Buffer, cb: (err: Error | null, out?: Buffer) => void) => void>): Promise<AvscDecoded> {
  return new Promise((resolve, reject) => {
    const records: any[] = [];
    let metadata: Record<string, string> = {};
    let codec = '';
    const decoder = new avro.streams.BlockDecoder({
      parseHook: (schema: any) => avro.Type.forSchema(schema, { typeHook } as any),
      ...(codecs ? { codecs: { ...avro.streams.BlockDecoder.defaultCodecs(), ...codecs } } : {}),
    } as any);
    decoder.on('metadata', (_type: unknown, c: string, header: { meta: Record<string, Buffer> }) => {
      codec = c;
      metadata = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString('utf8')]));
    });
    decoder.on('data', (r: any) => records.push(r));
    decoder.on('end', () => resolve({ schemaJson: JSON.parse(metadata['avro.schema']!), metadata, codec, records }));
    decoder.on('error', reject);
    Readable.from([Buffer.from(bytes)]).pipe(decoder);
  });
}

/** All `field-id`, `element-id`, `key-id`, `value-id` attributes of an Avro schema JSON. */
export function idsInAvroSchema(schema: any): Map<number, string> {
  const out = new Map<number, string>();
  const visit = (s: any, where: string) => {
    if (Array.isArray(s)) return s.forEach((b) => visit(b, where));
    if (s === null || typeof s !== 'object') return;
    if (Array.isArray(s.fields)) {
      for (const f of s.fields) {
        if (f['field-id'] !== undefined) out.set(f['field-id'], `${where}${f.name}`);
        visit(f.type, `${where}${f.name}.`);
      }
    }
    if (s['element-id'] !== undefined) out.set(s['element-id'], `${where}element`);
    if (s.items !== undefined) visit(s.items, where);
    if (s.values !== undefined) visit(s.values, where);
  };
  visit(schema, '');
  return out;
}
