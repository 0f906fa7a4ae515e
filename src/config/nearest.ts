/**
 * The candidate nearest to a mistyped word, for "did you mean ...?": case, `-` and `_` are
 * ignored (`memory_limit` → `memoryLimit`), then the optimal-string-alignment distance decides,
 * within a third of the word's length (at least 2 edits).
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[-_\s]/g, '');
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = distance(norm(word), norm(c));
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  return bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/** Edits (insert, delete, substitute, swap of neighbours) from a to b. */
function distance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
