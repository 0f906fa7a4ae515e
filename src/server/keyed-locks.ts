/**
 * Work serialized per key within this server: `with` runs `f` once every earlier holder of each
 * of its keys has finished (keys taken in sorted order, so two holders of several keys cannot
 * deadlock). A failed holder releases its keys like a finished one.
 */
export class KeyedLocks<K> {
  private readonly tails = new Map<string, Promise<void>>();
  private readonly waiting = new Map<string, number>();

  constructor(private readonly keyOf: (k: K) => string) {}

  /** Someone holds the key or waits for it. */
  busy(k: K): boolean {
    return this.waiting.has(this.keyOf(k));
  }

  run<T>(k: K, f: () => Promise<T>): Promise<T> {
    return this.with([k], f);
  }

  async with<T>(items: readonly K[], f: () => Promise<T>): Promise<T> {
    const keys = [...new Set(items.map(this.keyOf))].sort();
    for (const key of keys) this.waiting.set(key, (this.waiting.get(key) ?? 0) + 1);
    const releases: (() => void)[] = [];
    try {
      for (const key of keys) releases.push(await this.acquire(key));
      return await f();
    } finally {
      for (const release of releases.reverse()) release();
      for (const key of keys) {
        const left = this.waiting.get(key)! - 1;
        if (left === 0) this.waiting.delete(key);
        else this.waiting.set(key, left);
      }
    }
  }

  private async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = previous.then(() => mine);
    this.tails.set(key, tail);
    await previous;
    return () => {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
