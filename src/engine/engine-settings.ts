import { readFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { invalidInput } from '../core/errors.ts';

/**
 * What the embedded engine may use. Each setting comes from, in order: the caller (library
 * `engine` option, CLI flag or config file key), the environment (`TWINLAKE_MEMORY_LIMIT`,
 * `TWINLAKE_THREADS`, `TWINLAKE_TEMP_DIR`), or a default derived from the machine.
 */
export interface EngineOptions {
  /** A size such as `512MB`, `4GB`, `2GiB`, or a share of the machine's memory such as `50%`. */
  memoryLimit?: string;
  /** Worker threads of the engine (a positive integer). */
  threads?: number;
  /** The folder the engine spills to when a query outgrows the memory limit. */
  tempDir?: string;
}

export type SettingSource = 'option' | 'environment' | 'default';

export interface EngineSettings {
  memoryLimitBytes: number;
  threads: number;
  /** The folder each session creates its own spill folder in. */
  tempDir: string;
  /** Where each setting came from, so a report or an error can say which one to change. */
  sources: { memoryLimit: SettingSource; threads: SettingSource; tempDir: SettingSource };
  /** The memory the default is a share of: the machine's, or the container's limit when lower. */
  machineMemoryBytes: number;
}

const FLAGS = { memoryLimit: '--memory-limit', threads: '--threads', tempDir: '--temp-dir' } as const;

export const ENGINE_ENV = { memoryLimit: 'TWINLAKE_MEMORY_LIMIT', threads: 'TWINLAKE_THREADS', tempDir: 'TWINLAKE_TEMP_DIR' } as const;

/**
 * Half of the machine's memory: DuckDB's own default (80%) leaves too little for Node, the
 * catalog and the buffers of the files being uploaded, and other processes on a shared machine.
 */
const DEFAULT_MEMORY_SHARE = 0.5;
/** Below this DuckDB cannot hold the working set of an ordinary COPY. */
const MIN_MEMORY_BYTES = 32 * 2 ** 20;

const UNITS: Record<string, number> = {
  b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
  k: 1e3, m: 1e6, g: 1e9, t: 1e12,
};

/** The memory this process may use: the machine's, or a cgroup (container) limit when lower. */
export function machineMemoryBytes(): number {
  let limit = totalmem();
  for (const file of ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']) {
    try {
      const text = readFileSync(file, 'utf8').trim();
      // cgroup v2 says "max" when unlimited; v1 says a number near 2^63.
      if (/^\d+$/.test(text)) limit = Math.min(limit, Number(text));
      break;
    } catch {
      // not in a cgroup of that version
    }
  }
  return limit;
}

/** Parses a memory size as DuckDB spells them (KB = 1000 bytes, KiB = 1024) or a share in %. */
export function parseMemoryLimit(text: string, machineBytes: number, from: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*|%)\s*$/i.exec(text);
  const unit = m?.[2]?.toLowerCase() ?? '';
  const factor = unit === '%' ? machineBytes / 100 : UNITS[unit === '' ? 'b' : unit];
  if (!m || factor === undefined || (unit === '%' && Number(m[1]) > 100)) {
    throw invalidInput(`engine: ${from} expects a memory size such as 512MB, 4GB or 50%, found ${JSON.stringify(text)}`);
  }
  const bytes = Math.floor(Number(m[1]) * factor);
  if (bytes < MIN_MEMORY_BYTES) {
    throw invalidInput(`engine: ${from} must be at least ${formatBytes(MIN_MEMORY_BYTES)}, found ${JSON.stringify(text)}`, { minimum: formatBytes(MIN_MEMORY_BYTES) });
  }
  return bytes;
}

function parseThreads(value: number | string, from: string): number {
  const n = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > 1024) throw invalidInput(`engine: ${from} expects a whole number of threads from 1 to 1024, found ${JSON.stringify(value)}`);
  return n;
}

export function resolveEngineSettings(options: EngineOptions = {}, env: NodeJS.ProcessEnv = process.env): EngineSettings {
  const machine = machineMemoryBytes();
  const pick = <K extends keyof EngineOptions>(key: K): { value: EngineOptions[K] | string; source: SettingSource; from: string } | undefined => {
    if (options[key] !== undefined) return { value: options[key], source: 'option', from: `${FLAGS[key]} (${key})` };
    const fromEnv = env[ENGINE_ENV[key]];
    if (fromEnv !== undefined && fromEnv !== '') return { value: fromEnv, source: 'environment', from: ENGINE_ENV[key] };
    return undefined;
  };
  const memory = pick('memoryLimit');
  const threads = pick('threads');
  const temp = pick('tempDir');
  if (temp && (typeof temp.value !== 'string' || temp.value.trim() === '')) {
    throw invalidInput(`engine: ${temp.from} expects a folder, found ${JSON.stringify(temp.value)}`);
  }
  return {
    memoryLimitBytes: memory ? parseMemoryLimit(String(memory.value), machine, memory.from) : Math.max(MIN_MEMORY_BYTES, Math.floor(machine * DEFAULT_MEMORY_SHARE)),
    threads: threads ? parseThreads(threads.value as number | string, threads.from) : availableParallelism(),
    tempDir: resolve(temp ? String(temp.value) : tmpdir()),
    sources: { memoryLimit: memory?.source ?? 'default', threads: threads?.source ?? 'default', tempDir: temp?.source ?? 'default' },
    machineMemoryBytes: machine,
  };
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1).replace(/\.0$/, '')} ${units[i]}`;
}

/** How to raise a setting, in the words of each way it can be given. */
export function howToSet(key: keyof EngineOptions): string {
  return `${FLAGS[key]}, ${ENGINE_ENV[key]} or the engine setting ${key}`;
}
