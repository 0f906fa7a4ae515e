/** Draws over a seeded source of numbers in [0, 1): the same seed, the same sequence of cases. */
export function seededDraws(next: () => number) {
  return {
    next,
    int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!,
    sample: <T>(xs: readonly T[], n: number): T[] => {
      const copy = [...xs];
      const out: T[] = [];
      while (out.length < n && copy.length > 0) out.push(copy.splice(Math.floor(next() * copy.length), 1)[0]!);
      return out;
    },
  };
}
