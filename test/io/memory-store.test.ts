import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/io/memory-store.ts';
import type { ObjectStore } from '../../src/io/object-store.ts';
import { objectStoreContract } from './object-store-contract.ts';

objectStoreContract('MemoryStore', async () => ({ store: new MemoryStore('contract'), cleanup: async () => {} }));

describe('MemoryStore', () => {
  it('is rooted at memory://<name> and keeps separate instances apart', async () => {
    const a = new MemoryStore('a');
    const b = new MemoryStore('b');
    expect(a.root).toBe('memory://a');
    await a.put('k', 'in a');
    expect(await b.head('k')).toBeUndefined();
  });

  it('rejects names that would not form a URI authority', () => {
    expect(() => new MemoryStore('has/slash')).toThrow(/memory store/);
    expect(() => new MemoryStore('')).toThrow(/memory store/);
  });

  it('has no local paths', () => {
    const store: ObjectStore = new MemoryStore();
    expect(store.localPath?.('x')).toBeUndefined();
  });
});
