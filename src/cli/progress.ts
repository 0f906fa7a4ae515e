import type { Lakehouse } from '../table/lakehouse.ts';

/**
 * A progress line on a terminal while a long write runs. DuckDB reads the input in its own
 * threads and reports how far its running statement is: the fraction of the input it has read.
 * (Its "rows processed" counts the JSON and CSV readers' internal units, not records, so no row
 * count is shown until the write returns with one.) A write runs a few statements over the input
 * (a sample for inference, then the full conversion), so the line follows the current pass, and
 * its rate and ETA start again with each. Only on a TTY: a pipe or a log gets no progress.
 */
export interface ProgressSample {
  /** Since the write started. */
  elapsedMs: number;
  /** The input's size, when known (a file; not standard input). */
  totalBytes?: number;
  /** How far the engine's current pass over the input is, 0..1, when known. */
  fraction?: number;
  /** Since the current pass started: its rate and ETA are measured over this. */
  passMs?: number;
}

/** One progress line, e.g. `writing e.ndjson  24.0 MiB / 48.0 MiB  50%  12.0 MiB/s  ETA 2s  3.1s`. */
export function formatProgress(label: string, s: ProgressSample): string {
  const parts = [label];
  const elapsed = `${(s.elapsedMs / 1000).toFixed(1)}s`;
  if (s.fraction === undefined) {
    if (s.totalBytes !== undefined) parts.push(`(${formatBytes(s.totalBytes)})`);
    parts.push('...', elapsed);
    return parts.join(' ');
  }
  const f = Math.max(0, Math.min(1, s.fraction));
  const seconds = Math.max(s.passMs ?? s.elapsedMs, 1) / 1000;
  if (s.totalBytes !== undefined) parts.push(`${formatBytes(f * s.totalBytes)} / ${formatBytes(s.totalBytes)}`);
  // Never 100% before the write returns: the commit is still to come.
  parts.push(`${Math.min(99, Math.floor(f * 100))}%`);
  if (s.totalBytes !== undefined) parts.push(`${formatBytes((f * s.totalBytes) / seconds)}/s`);
  if (f > 0 && f < 1) parts.push(`ETA ${formatDuration((seconds * (1 - f)) / f)}`);
  parts.push(elapsed);
  return parts.join('  ');
}

/**
 * Turns the engine's reports into samples: a fraction that falls back means a new pass began.
 */
export class ProgressTracker {
  private passStart: number;
  private last = -1;

  constructor(private readonly start: number, private readonly totalBytes?: number) {
    this.passStart = start;
  }

  sample(now: number, engine: { fraction: number } | undefined): ProgressSample {
    const base = { elapsedMs: now - this.start, totalBytes: this.totalBytes };
    if (!engine) return base;
    if (engine.fraction < this.last) this.passStart = now;
    this.last = engine.fraction;
    return { ...base, fraction: engine.fraction, passMs: now - this.passStart };
  }
}

/** Runs a write, drawing its progress on stderr when that is a terminal. */
export async function withProgress<T>(label: string, bytes: number | undefined, lake: Lakehouse, fn: () => Promise<T>): Promise<T> {
  if (!process.stderr.isTTY) return fn();
  const session = await lake.session();
  await session.trackProgress();
  const tracker = new ProgressTracker(Date.now(), bytes);
  const draw = () => process.stderr.write(`\r\x1b[K${formatProgress(label, tracker.sample(Date.now(), session.progress()))}`);
  const timer = setInterval(draw, 250);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
    process.stderr.write('\r\x1b[K');
  }
}

/** Bytes in binary units, named as such (KiB, MiB, ...): 1 MiB = 1024 × 1024 bytes. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** `42s`, `3m05s`, `1h02m`. */
export function formatDuration(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
