import { dataInvalid, invalidInput } from '../core/errors.ts';

/**
 * Sets of non-negative 64-bit integers (row positions) as Roaring bitmaps, with the "portable"
 * 64-bit serialization that Iceberg deletion vectors (Puffin `deletion-vector-v1`) and Delta
 * deletion vectors share: a little-endian u64 count of 32-bit bitmaps, then for each, in
 * ascending unsigned key order, its u32 key (the high 32 bits) and a standard 32-bit Roaring
 * bitmap of the low 32 bits (RoaringFormatSpec).
 *
 * A 32-bit bitmap splits its values by their high 16 bits into containers of the low 16 bits: an
 * array (at most 4096 values, sorted u16), a bitmap (65536 bits), or runs (start, length - 1).
 * In memory a container is an array or a bitmap; runs are chosen when writing, where smaller.
 */

const SERIAL_COOKIE_NO_RUN = 12346;
const SERIAL_COOKIE = 12347;
/** With run containers, the offset header is written only from this many containers on. */
const NO_OFFSET_THRESHOLD = 4;
const ARRAY_MAX = 4096;
const BITMAP_WORDS = 2048; // 65536 bits as u32 words
const BITMAP_BYTES = 8192;
const TWO_32 = 4294967296;
/** The key's most significant bit must be 0 (both specs: positive 64-bit positions). */
const MAX_KEY = 0x7fffffff;

export type ContainerKind = 'array' | 'bitmap' | 'run';

type Container = { kind: 'array'; values: Uint16Array; size: number } | { kind: 'bitmap'; words: Uint32Array; size: number };

/** What a serialized bitmap holds, container by container; for tests and diagnostics. */
export interface RoaringLayout {
  key: number;
  containers: { key: number; kind: ContainerKind; cardinality: number }[];
}

class Bitmap32 {
  readonly containers = new Map<number, Container>();
  private sorted: number[] | undefined;

  keys(): number[] {
    this.sorted ??= [...this.containers.keys()].sort((a, b) => a - b);
    return this.sorted;
  }

  setContainer(key: number, c: Container): void {
    if (!this.containers.has(key)) this.sorted = undefined;
    this.containers.set(key, c);
  }

  add(low: number): boolean {
    const hi = low >>> 16;
    const lo = low & 0xffff;
    let c = this.containers.get(hi);
    if (!c) {
      c = { kind: 'array', values: new Uint16Array(4), size: 0 };
      this.setContainer(hi, c);
    }
    if (c.kind === 'bitmap') {
      const w = lo >>> 5;
      const bit = 1 << (lo & 31);
      if (c.words[w]! & bit) return false;
      c.words[w] = c.words[w]! | bit;
      c.size++;
      return true;
    }
    // Appending in ascending order, the common case when building from sorted positions, is O(1).
    let at = c.size;
    if (c.size > 0 && c.values[c.size - 1]! >= lo) {
      at = lowerBound(c.values, c.size, lo);
      if (c.values[at] === lo) return false;
    }
    if (c.size === ARRAY_MAX) {
      const b = toBitmap(c);
      this.containers.set(hi, b);
      b.words[lo >>> 5] = b.words[lo >>> 5]! | (1 << (lo & 31));
      b.size++;
      return true;
    }
    if (c.size === c.values.length) {
      const grown = new Uint16Array(Math.min(ARRAY_MAX, c.values.length * 2));
      grown.set(c.values);
      c.values = grown;
    }
    c.values.copyWithin(at + 1, at, c.size);
    c.values[at] = lo;
    c.size++;
    return true;
  }

  has(low: number): boolean {
    const c = this.containers.get(low >>> 16);
    if (!c) return false;
    const lo = low & 0xffff;
    if (c.kind === 'bitmap') return (c.words[lo >>> 5]! & (1 << (lo & 31))) !== 0;
    const at = lowerBound(c.values, c.size, lo);
    return at < c.size && c.values[at] === lo;
  }

  get cardinality(): number {
    let n = 0;
    for (const c of this.containers.values()) n += c.size;
    return n;
  }
}

function lowerBound(values: Uint16Array, size: number, x: number): number {
  let lo = 0;
  let hi = size;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function toBitmap(c: Container): Container & { kind: 'bitmap' } {
  if (c.kind === 'bitmap') return c;
  const words = new Uint32Array(BITMAP_WORDS);
  for (let i = 0; i < c.size; i++) {
    const v = c.values[i]!;
    words[v >>> 5] = words[v >>> 5]! | (1 << (v & 31));
  }
  return { kind: 'bitmap', words, size: c.size };
}

/** Runs of consecutive values in a container, as [start, end) pairs in ascending order. */
function* containerRuns(c: Container): Generator<[number, number]> {
  if (c.kind === 'array') {
    let i = 0;
    while (i < c.size) {
      const start = c.values[i]!;
      let end = start + 1;
      i++;
      while (i < c.size && c.values[i] === end) {
        end++;
        i++;
      }
      yield [start, end];
    }
    return;
  }
  let v = 0;
  while (v < 65536) {
    const w = c.words[v >>> 5]! >>> (v & 31);
    if (w === 0) {
      v = (v | 31) + 1; // nothing set in the rest of this word
      continue;
    }
    if ((w & 1) === 0) {
      v += 31 - Math.clz32(w & -w);
      continue;
    }
    const start = v;
    while (v < 65536 && (c.words[v >>> 5]! & (1 << (v & 31))) !== 0) v++;
    yield [start, v];
  }
}

function countRuns(c: Container): number {
  let n = 0;
  for (const _ of containerRuns(c)) n++;
  return n;
}

/** A position as (high 32 bits, low 32 bits), checked to be a non-negative 63-bit integer. */
function split(pos: number | bigint): [number, number] {
  if (typeof pos === 'bigint') {
    if (pos < 0n || pos > 0x7fffffffffffffffn) throw invalidInput(`roaring: expected a position in [0, 2^63), found ${pos}`);
    return [Number(pos >> 32n), Number(pos & 0xffffffffn)];
  }
  if (!Number.isSafeInteger(pos) || pos < 0) throw invalidInput(`roaring: expected a non-negative integer position, found ${pos}`);
  return [Math.floor(pos / TWO_32), pos % TWO_32];
}

function join(high: number, low: number): bigint {
  return (BigInt(high) << 32n) | BigInt(low);
}

export class RoaringBitmap64 {
  private readonly buckets = new Map<number, Bitmap32>();
  private sortedKeys: number[] | undefined;

  static of(positions: Iterable<number | bigint>): RoaringBitmap64 {
    const b = new RoaringBitmap64();
    for (const p of positions) b.add(p);
    return b;
  }

  /** Adds a position; false when it was already present. */
  add(pos: number | bigint): boolean {
    const [high, low] = split(pos);
    return this.bucket(high).add(low);
  }

  /** Adds every position in [start, end). */
  addRange(start: number | bigint, end: number | bigint): void {
    if (BigInt(end) <= BigInt(Number.MAX_SAFE_INTEGER)) {
      for (let p = Number(start); p < Number(end); p++) this.add(p);
      return;
    }
    for (let p = BigInt(start); p < BigInt(end); p++) this.add(p);
  }

  /** Adds every position of `other`. */
  addAll(other: RoaringBitmap64): void {
    for (const [start, end] of other.ranges()) this.addRange(start, end);
  }

  has(pos: number | bigint): boolean {
    const [high, low] = split(pos);
    return this.buckets.get(high)?.has(low) ?? false;
  }

  get cardinality(): number {
    let n = 0;
    for (const b of this.buckets.values()) n += b.cardinality;
    return n;
  }

  /** Positions in ascending order. */
  *values(): Generator<bigint> {
    for (const [start, end] of this.ranges()) for (let p = start; p < end; p++) yield p;
  }

  /** Maximal runs of consecutive positions as [start, end) in ascending order. */
  *ranges(): Generator<[bigint, bigint]> {
    let open: [bigint, bigint] | undefined;
    for (const high of this.keys()) {
      const b = this.buckets.get(high)!;
      for (const key of b.keys()) {
        const base = join(high, key * 65536);
        for (const [s, e] of containerRuns(b.containers.get(key)!)) {
          const start = base + BigInt(s);
          const end = base + BigInt(e);
          if (open && open[1] === start) open[1] = end;
          else {
            if (open) yield open;
            open = [start, end];
          }
        }
      }
    }
    if (open) yield open;
  }

  /** The portable 64-bit serialization (see the module comment). */
  serialize(): Uint8Array {
    const parts: Uint8Array[] = [];
    const keys = this.keys().filter((k) => this.buckets.get(k)!.cardinality > 0);
    const head = new Uint8Array(8);
    new DataView(head.buffer).setBigUint64(0, BigInt(keys.length), true);
    parts.push(head);
    for (const k of keys) {
      const key = new Uint8Array(4);
      new DataView(key.buffer).setUint32(0, k, true);
      parts.push(key, serialize32(this.buckets.get(k)!));
    }
    return concat(parts);
  }

  /** Reads the portable 64-bit serialization; `bytes` must hold exactly one bitmap. */
  static deserialize(bytes: Uint8Array): RoaringBitmap64 {
    const r = new ByteReader(bytes);
    const count = r.u64();
    if (count > BigInt(bytes.length)) throw dataInvalid(`roaring: expected at most ${bytes.length} buckets in ${bytes.length} bytes, found a count of ${count}`);
    const out = new RoaringBitmap64();
    let previous = -1;
    for (let i = 0; i < Number(count); i++) {
      const key = r.u32();
      if (key > MAX_KEY) throw dataInvalid(`roaring: expected bucket keys below 2^31, found ${key}`);
      if (key <= previous) throw dataInvalid(`roaring: expected bucket keys in ascending order, found ${key} after ${previous}`);
      previous = key;
      out.buckets.set(key, deserialize32(r));
    }
    if (r.pos !== bytes.length) throw dataInvalid(`roaring: expected ${r.pos} bytes, found ${bytes.length}`);
    return out;
  }

  /**
   * A bitmap from standard 32-bit Roaring serializations, one per high-32-bit key; each `bytes`
   * must hold exactly one.
   */
  static fromBuckets(buckets: { key: number; bytes: Uint8Array }[]): RoaringBitmap64 {
    const out = new RoaringBitmap64();
    for (const { key, bytes } of buckets) {
      if (!Number.isInteger(key) || key < 0 || key > MAX_KEY) throw dataInvalid(`roaring: expected bucket keys in [0, 2^31), found ${key}`);
      if (out.buckets.has(key)) throw dataInvalid(`roaring: bucket key ${key} appears twice`);
      const r = new ByteReader(bytes);
      out.buckets.set(key, deserialize32(r));
      if (r.pos !== bytes.length) throw dataInvalid(`roaring: bucket ${key} expected ${r.pos} bytes, found ${bytes.length}`);
    }
    return out;
  }

  /** The containers a serialized bitmap holds, without building the set. */
  static layout(bytes: Uint8Array): RoaringLayout[] {
    const r = new ByteReader(bytes);
    const count = Number(r.u64());
    const out: RoaringLayout[] = [];
    for (let i = 0; i < count; i++) {
      const key = r.u32();
      const containers: RoaringLayout['containers'] = [];
      deserialize32(r, (k, kind, cardinality) => containers.push({ key: k, kind, cardinality }));
      out.push({ key, containers });
    }
    return out;
  }

  private keys(): number[] {
    this.sortedKeys ??= [...this.buckets.keys()].sort((a, b) => a - b);
    return this.sortedKeys;
  }

  private bucket(high: number): Bitmap32 {
    let b = this.buckets.get(high);
    if (!b) {
      b = new Bitmap32();
      this.buckets.set(high, b);
      this.sortedKeys = undefined;
    }
    return b;
  }
}

// --- the 32-bit format --------------------------------------------------------------------------

interface Planned {
  key: number;
  container: Container;
  kind: ContainerKind;
  bytes: number;
}

/** The smallest encoding of each container, as Roaring's run optimization chooses it. */
function plan(b: Bitmap32): Planned[] {
  return b.keys().flatMap((key): Planned[] => {
    const c = b.containers.get(key)!;
    if (c.size === 0) return [];
    const kind: ContainerKind = c.size <= ARRAY_MAX ? 'array' : 'bitmap';
    const plain = kind === 'array' ? 2 * c.size : BITMAP_BYTES;
    const runBytes = 2 + 4 * countRuns(c);
    return runBytes < plain ? [{ key, container: c, kind: 'run', bytes: runBytes }] : [{ key, container: c, kind, bytes: plain }];
  });
}

function serialize32(b: Bitmap32): Uint8Array {
  const planned = plan(b);
  const n = planned.length;
  const hasRun = planned.some((p) => p.kind === 'run');
  const withOffsets = !hasRun || n >= NO_OFFSET_THRESHOLD;
  const headerBytes = (hasRun ? 4 + Math.ceil(n / 8) : 8) + 4 * n + (withOffsets ? 4 * n : 0);
  const total = headerBytes + planned.reduce((s, p) => s + p.bytes, 0);
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  let pos = 0;
  if (hasRun) {
    // An empty bitmap cannot have runs, so n >= 1 here.
    v.setUint32(pos, SERIAL_COOKIE | ((n - 1) << 16), true);
    pos += 4;
    planned.forEach((p, i) => {
      if (p.kind === 'run') out[pos + (i >>> 3)] = out[pos + (i >>> 3)]! | (1 << (i & 7));
    });
    pos += Math.ceil(n / 8);
  } else {
    v.setUint32(pos, SERIAL_COOKIE_NO_RUN, true);
    v.setUint32(pos + 4, n, true);
    pos += 8;
  }
  for (const p of planned) {
    v.setUint16(pos, p.key, true);
    v.setUint16(pos + 2, p.container.size - 1, true);
    pos += 4;
  }
  if (withOffsets) {
    let offset = headerBytes;
    for (const p of planned) {
      v.setUint32(pos, offset, true);
      pos += 4;
      offset += p.bytes;
    }
  }
  for (const p of planned) {
    const c = p.container;
    if (p.kind === 'run') {
      const runs = [...containerRuns(c)];
      v.setUint16(pos, runs.length, true);
      pos += 2;
      for (const [s, e] of runs) {
        v.setUint16(pos, s, true);
        v.setUint16(pos + 2, e - s - 1, true);
        pos += 4;
      }
    } else if (p.kind === 'array') {
      for (const [s, e] of containerRuns(c)) for (let x = s; x < e; x++, pos += 2) v.setUint16(pos, x, true);
    } else {
      const words = toBitmap(c).words;
      for (let i = 0; i < BITMAP_WORDS; i++, pos += 4) v.setUint32(pos, words[i]!, true);
    }
  }
  return out;
}

function deserialize32(r: ByteReader, visit?: (key: number, kind: ContainerKind, cardinality: number) => void): Bitmap32 {
  const start = r.pos;
  const cookie = r.u32();
  let n: number;
  let runFlags: Uint8Array | undefined;
  if ((cookie & 0xffff) === SERIAL_COOKIE) {
    n = (cookie >>> 16) + 1;
    runFlags = r.bytes(Math.ceil(n / 8));
  } else if (cookie === SERIAL_COOKIE_NO_RUN) {
    n = r.u32();
  } else {
    throw dataInvalid(`roaring: expected cookie ${SERIAL_COOKIE_NO_RUN} or ${SERIAL_COOKIE}, found ${cookie & 0xffff}`);
  }
  if (n > 65536) throw dataInvalid(`roaring: expected at most 65536 containers, found ${n}`);
  const keys: number[] = [];
  const cards: number[] = [];
  for (let i = 0; i < n; i++) {
    const key = r.u16();
    if (i > 0 && key <= keys[i - 1]!) throw dataInvalid(`roaring: expected container keys in ascending order, found ${key} after ${keys[i - 1]}`);
    keys.push(key);
    cards.push(r.u16() + 1);
  }
  let offsets: number[] | undefined;
  if (!runFlags || n >= NO_OFFSET_THRESHOLD) {
    offsets = [];
    for (let i = 0; i < n; i++) offsets.push(r.u32());
  }
  const out = new Bitmap32();
  for (let i = 0; i < n; i++) {
    if (offsets && r.pos - start !== offsets[i]) throw dataInvalid(`roaring: container ${i} expected at offset ${offsets[i]}, found at ${r.pos - start}`);
    const isRun = runFlags !== undefined && (runFlags[i >>> 3]! & (1 << (i & 7))) !== 0;
    const card = cards[i]!;
    const kind: ContainerKind = isRun ? 'run' : card <= ARRAY_MAX ? 'array' : 'bitmap';
    visit?.(keys[i]!, kind, card);
    let c: Container;
    if (kind === 'run') {
      const runs = r.u16();
      const values: [number, number][] = [];
      let total = 0;
      let previousEnd = -1;
      for (let j = 0; j < runs; j++) {
        const s = r.u16();
        const len = r.u16() + 1;
        if (s <= previousEnd || s + len > 65536) throw dataInvalid(`roaring: run ${s}+${len} in container ${keys[i]} overlaps or overflows`);
        previousEnd = s + len - 1;
        values.push([s, s + len]);
        total += len;
      }
      if (total !== card) throw dataInvalid(`roaring: container ${keys[i]} expected ${card} values, its runs hold ${total}`);
      c = card <= ARRAY_MAX ? { kind: 'array', values: new Uint16Array(card), size: 0 } : { kind: 'bitmap', words: new Uint32Array(BITMAP_WORDS), size: 0 };
      for (const [s, e] of values) {
        for (let x = s; x < e; x++) {
          if (c.kind === 'array') c.values[c.size++] = x;
          else {
            c.words[x >>> 5] = c.words[x >>> 5]! | (1 << (x & 31));
            c.size++;
          }
        }
      }
    } else if (kind === 'array') {
      const values = new Uint16Array(card);
      for (let j = 0; j < card; j++) {
        values[j] = r.u16();
        if (j > 0 && values[j]! <= values[j - 1]!) throw dataInvalid(`roaring: array container ${keys[i]} is not strictly ascending`);
      }
      c = { kind: 'array', values, size: card };
    } else {
      const words = new Uint32Array(BITMAP_WORDS);
      let count = 0;
      for (let j = 0; j < BITMAP_WORDS; j++) {
        words[j] = r.u32();
        count += popcount(words[j]!);
      }
      if (count !== card) throw dataInvalid(`roaring: bitmap container ${keys[i]} expected ${card} values, found ${count}`);
      c = { kind: 'bitmap', words, size: card };
    }
    out.setContainer(keys[i]!, c);
  }
  return out;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

class ByteReader {
  pos = 0;
  private readonly view: DataView;
  constructor(private readonly data: Uint8Array) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }
  private need(n: number): void {
    if (this.pos + n > this.data.length) throw dataInvalid(`roaring: expected ${n} more bytes at offset ${this.pos}, found ${this.data.length - this.pos}`);
  }
  u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.pos, true);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    return v;
  }
  bytes(n: number): Uint8Array {
    this.need(n);
    const v = this.data.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}
