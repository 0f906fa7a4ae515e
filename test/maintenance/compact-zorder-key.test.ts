import { describe, expect, it } from 'vitest';
import { interleaveBits, orderedLong, orderedString, zorderKey } from '../../src/format/zorder.ts';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
/** Unsigned byte order, as the engine compares BLOBs. */
const compare = (a: Uint8Array, b: Uint8Array) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('Z-order keys (src/format/zorder.ts)', () => {
  it('encodes integers with the sign bit flipped, big-endian', () => {
    expect(hex(orderedLong(0n))).toBe('8000000000000000');
    expect(hex(orderedLong(1))).toBe('8000000000000001');
    expect(hex(orderedLong(-1))).toBe('7fffffffffffffff');
    expect(hex(orderedLong(-(2n ** 63n)))).toBe('0000000000000000');
    expect(hex(orderedLong(2n ** 63n - 1n))).toBe('ffffffffffffffff');
    expect(hex(orderedLong(null))).toBe('0000000000000000');
  });

  it('keeps the order of integers and of strings in unsigned byte order', () => {
    const ints = [-(2n ** 63n), -70000n, -256n, -1n, 0n, 1n, 255n, 256n, 2n ** 40n, 2n ** 63n - 1n];
    for (let i = 1; i < ints.length; i++) expect(compare(orderedLong(ints[i - 1]!), orderedLong(ints[i]!))).toBe(-1);
    const strings = ['', 'A', 'Ab', 'a', 'ab', 'abc', 'b', 'zz', 'é'];
    for (let i = 1; i < strings.length; i++) expect(compare(orderedString(strings[i - 1]!), orderedString(strings[i]!))).toBe(-1);
    // Only the first 8 bytes count: longer strings sharing them tie.
    expect(hex(orderedString('abcdefghXYZ'))).toBe(hex(orderedString('abcdefgh')));
    expect(hex(orderedString('ab'))).toBe('6162000000000000');
    expect(hex(orderedString(null))).toBe('0000000000000000');
  });

  it('interleaves bits round-robin, most significant first', () => {
    // a = 1111 0000, b = 0000 1111 → a7 b7 a6 b6 … = 10101010 01010101
    expect(hex(interleaveBits([Uint8Array.of(0xf0), Uint8Array.of(0x0f)]))).toBe('aa55');
    // three columns of one byte: 0x80, 0x00, 0x01 → bit 0 from a, the last bit from c
    expect(hex(interleaveBits([Uint8Array.of(0x80), Uint8Array.of(0x00), Uint8Array.of(0x01)]))).toBe('800001');
    expect(hex(zorderKey(['integer', 'integer'], [0n, -1n]))).toBe('9' + '5'.repeat(15) + '5'.repeat(16));
    expect(() => interleaveBits([new Uint8Array(8), new Uint8Array(4)])).toThrow(/8 and 4 bytes/);
  });

  it('orders a grid so that each quadrant is contiguous (the Z curve)', () => {
    const cells: [number, number][] = [];
    for (let x = 0; x < 4; x++) for (let y = 0; y < 4; y++) cells.push([x, y]);
    cells.sort(([ax, ay], [bx, by]) => compare(zorderKey(['integer', 'integer'], [ax, ay]), zorderKey(['integer', 'integer'], [bx, by])));
    expect(cells.map(([x, y]) => `${x}${y}`).join(' ')).toBe('00 01 10 11 02 03 12 13 20 21 30 31 22 23 32 33');
    // Each run of four is one quadrant: both columns narrow at once.
    for (let q = 0; q < 4; q++) {
      const quad = cells.slice(q * 4, q * 4 + 4);
      expect(new Set(quad.map(([x]) => x >> 1)).size).toBe(1);
      expect(new Set(quad.map(([, y]) => y >> 1)).size).toBe(1);
    }
  });
});
