import { dirname, isAbsolute, resolve } from 'node:path';
import { invalidInput, isTwinlakeError } from '../core/errors.ts';
import { isJsonObject, parseJson } from '../core/json.ts';
import { isUri } from '../core/uri.ts';
import { machineMemoryBytes, parseMemoryLimit, type EngineOptions } from '../engine/engine-settings.ts';
import { nearest } from './suggest.ts';

/**
 * The settings of a `twinlake` run and where they come from. Precedence, highest first:
 *
 *   1. an option after the command    (`twinlake read t --warehouse b`)
 *   2. the same option before it      (`twinlake --warehouse a read t`)
 *   3. the environment                (`TWINLAKE_WAREHOUSE`, ...)
 *   4. the config file                (`--config twinlake.json`)
 *   5. the default
 *
 * the order of git, npm and the AWS CLI: what is typed now beats what was set for the session,
 * which beats what was written down for every run. A relative path in a config file is relative to
 * that file's folder (the file is written once and used from anywhere); on the command line or in
 * the environment it is relative to the current folder.
 */
export interface Settings {
  warehouse: string;
  /** Given on the command line or in the config file; the library reads the environment itself. */
  engine: EngineOptions;
}

/** What a command line gives, as typed: each command's options, the command's own first. */
export interface SettingOptions {
  warehouse?: string;
  config?: string;
  memoryLimit?: string;
  threads?: string | number;
  tempDir?: string;
}

export const DEFAULT_WAREHOUSE = './warehouse';

type Key = 'warehouse' | 'memoryLimit' | 'threads' | 'tempDir';

const SETTINGS: Record<Key, { flag: string; env: string; expects: string }> = {
  warehouse: { flag: '--warehouse', env: 'TWINLAKE_WAREHOUSE', expects: 'a folder path (string)' },
  memoryLimit: { flag: '--memory-limit', env: 'TWINLAKE_MEMORY_LIMIT', expects: 'a size such as "512MB", "2GiB" or "50%" (string)' },
  threads: { flag: '--threads', env: 'TWINLAKE_THREADS', expects: 'a positive whole number' },
  tempDir: { flag: '--temp-dir', env: 'TWINLAKE_TEMP_DIR', expects: 'a folder path (string)' },
};
const KEYS = Object.keys(SETTINGS) as Key[];

type Values = Partial<Record<Key, string | number>>;

/**
 * Checks one value; `typed` says it came from JSON (a number must be a number there), otherwise
 * it is text from a command line or the environment.
 */
function checkValue(key: Key, value: unknown, typed: boolean, where: string): string | number {
  const bad = (): never => {
    throw invalidInput(`${where} must be ${SETTINGS[key].expects}, found ${JSON.stringify(value) ?? String(value)}`, { key, value });
  };
  if (key === 'threads') {
    // A command-line parser may have made it a number already; in JSON it must be one.
    const n = typeof value === 'number' ? value : !typed && typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) bad();
    return n as number;
  }
  if (typeof value !== 'string' || value.trim() === '') bad();
  if (key === 'memoryLimit') {
    try {
      parseMemoryLimit(value as string, machineMemoryBytes(), where); // the engine's own rule, our message
    } catch (e) {
      // A size below the engine's minimum is not a malformed size: say the minimum.
      const minimum = isTwinlakeError(e) ? e.context.minimum : undefined;
      if (typeof minimum === 'string') throw invalidInput(`${where} must be at least ${minimum}, found ${JSON.stringify(value)}`, { key, value });
      bad();
    }
  }
  return (value as string).trim();
}

/** A relative path resolved against `base`; URIs and absolute paths as given. */
function resolvePath(value: string, base: string): string {
  return isUri(value) || isAbsolute(value) ? value : resolve(base, value);
}

/**
 * Parses and checks a config file: a JSON object of known keys with values of the right type.
 * Unknown keys are errors (with the nearest known key): a typo must not fall back to a default.
 */
export function parseConfig(text: string, file: string): Values {
  const domain = `config ${file}`;
  const json = parseJson(text, domain);
  if (!isJsonObject(json) || Array.isArray(json)) {
    throw invalidInput(`${domain}: expected a JSON object such as {"warehouse": "./warehouse"}, found ${Array.isArray(json) ? 'an array' : JSON.stringify(json)}`);
  }
  const out: Values = {};
  for (const [key, value] of Object.entries(json)) {
    if (!(KEYS as string[]).includes(key)) {
      const near = nearest(key, KEYS);
      throw invalidInput(`${domain}: unknown key ${JSON.stringify(key)}${near ? ` (did you mean ${JSON.stringify(near)}?)` : ''}; the keys are ${KEYS.join(', ')}`, { key });
    }
    const k = key as Key;
    const checked = checkValue(k, value, true, `${domain}: ${JSON.stringify(k)}`);
    out[k] = k === 'warehouse' || k === 'tempDir' ? resolvePath(checked as string, dirname(resolve(file))) : checked;
  }
  return out;
}

/** The config file named on the command line, the command's own option first. */
export function configPath(options: SettingOptions[]): string | undefined {
  return options.find((o) => o.config !== undefined)?.config;
}

/** The settings of a run from its sources, by the precedence above. */
export function resolveSettings(options: SettingOptions[], env: Record<string, string | undefined>, config: Values = {}, cwd = process.cwd()): Settings {
  const value = (key: Key): string | number | undefined => {
    const given = options.find((o) => o[key] !== undefined)?.[key];
    if (given !== undefined) return checkValue(key, given, false, SETTINGS[key].flag);
    const fromEnv = env[SETTINGS[key].env];
    if (fromEnv !== undefined && fromEnv !== '') {
      // The engine reads its own variables (and reports them as the source); the warehouse is ours.
      return key === 'warehouse' ? checkValue(key, fromEnv, false, `environment: ${SETTINGS[key].env}`) : undefined;
    }
    return config[key];
  };
  const engine: EngineOptions = {};
  const memoryLimit = value('memoryLimit');
  if (memoryLimit !== undefined) engine.memoryLimit = memoryLimit as string;
  const threads = value('threads');
  if (threads !== undefined) engine.threads = threads as number;
  const tempDir = value('tempDir');
  if (tempDir !== undefined) engine.tempDir = resolvePath(tempDir as string, cwd);
  return { warehouse: (value('warehouse') as string | undefined) ?? DEFAULT_WAREHOUSE, engine };
}

/** The precedence, for `--help`; `hasFlag` says which options this build of the command has. */
export function settingsHelp(hasFlag: (flag: string) => boolean): string {
  return [
    'Settings (highest first): an option after the command, the same option before it, the',
    'environment, the config file (--config FILE, JSON), the default.',
    ...KEYS.map((k) => `  ${(hasFlag(SETTINGS[k].flag) ? SETTINGS[k].flag : '').padEnd(16)}${SETTINGS[k].env.padEnd(24)}config "${k}"`),
    '  Relative paths in a config file are relative to its folder. Default warehouse: ./warehouse.',
  ].join('\n');
}
