import { configKey, CONFIG_KEYS, DEFAULT_WAREHOUSE } from '../config/config-keys.ts';
import { parseConfigFile } from '../config/config-file.ts';
import { loadConfig } from '../config/load-config.ts';
import { resolveConfig, type TwinlakeConfig } from '../config/resolve-config.ts';
import type { EngineOptions } from '../engine/engine-settings.ts';

/**
 * The settings of a `twinlake` run and where they come from. Precedence, highest first:
 *
 *   1. an option after the command    (`twinlake read t --warehouse b`)
 *   2. the same option before it      (`twinlake --warehouse a read t`)
 *   3. the environment                (`TWINLAKE_WAREHOUSE`, ...)
 *   4. the config file                (`--config twinlake.yaml`, or twinlake.yaml in the current folder)
 *   5. the SDKs' own variables, for what is still missing (`AWS_REGION`, ...)
 *   6. the default
 *
 * The rules live in src/config (the keys, the file, the precedence); this file turns a command
 * line into their sources. A relative path in a config file is relative to that file's folder;
 * on the command line or in the environment it is relative to the current folder.
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

export { DEFAULT_WAREHOUSE };

/** The settings a command line can give, by their config key. */
const OPTION_KEYS = ['warehouse', 'memoryLimit', 'threads', 'tempDir'] as const;
const SETTING_KEYS = OPTION_KEYS.map((k) => configKey(k)!);

type Values = Partial<Record<(typeof OPTION_KEYS)[number], string | number>>;

/**
 * Parses and checks a flat JSON settings file of the warehouse and engine keys only (the form
 * before storage, catalog and tables existed). `twinlake` itself reads whole config files with
 * `loadConfig`; the rules are the same ones.
 */
export function parseConfig(text: string, file: string): Values {
  return Object.fromEntries(parseConfigFile(text, file, { keys: SETTING_KEYS, syntax: 'json' }).values) as Values;
}

/** The config file named on the command line, the command's own option first. */
export function configPath(options: SettingOptions[]): string | undefined {
  return options.find((o) => o.config !== undefined)?.config;
}

/** The options of a command line by config key: the command's own first. */
function optionValues(options: SettingOptions[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of OPTION_KEYS) {
    const given = options.find((o) => o[key] !== undefined)?.[key];
    if (given !== undefined) out[key] = given;
  }
  return out;
}

/** The warehouse and engine settings of a run from its sources, by the precedence above. */
export function resolveSettings(options: SettingOptions[], env: Record<string, string | undefined>, config: Values = {}, cwd = process.cwd()): Settings {
  const file = { file: '', values: new Map(Object.entries(config)), tables: new Map() };
  const resolved = resolveConfig({ file, env, options: optionValues(options), cwd });
  return { warehouse: resolved.warehouse, engine: resolved.engine };
}

/** Everything a run is configured with: the config file (named, or found in `cwd`), the environment, the options. */
export function runConfig(options: SettingOptions[], env: Record<string, string | undefined> = process.env, cwd = process.cwd()): Promise<TwinlakeConfig> {
  return loadConfig({ file: configPath(options), env, options: optionValues(options), cwd });
}

/** The precedence, for `--help`; `hasFlag` says which options this build of the command has. */
export function settingsHelp(hasFlag: (flag: string) => boolean): string {
  const engineKeys = CONFIG_KEYS.filter((k) => k.flag);
  return [
    'Settings (highest first): an option after the command, the same option before it, the',
    'environment, the config file (--config FILE, YAML or JSON; default twinlake.yaml, twinlake.yml',
    'or twinlake.json in the current folder), the SDKs\' own variables, the default.',
    ...engineKeys.map((k) => `  ${(hasFlag(k.flag!) ? k.flag! : '').padEnd(16)}${k.env!.padEnd(24)}config "${k.path}"`),
    '  The storage.* and catalog.* keys have variables too (storage.region: TWINLAKE_STORAGE_REGION);',
    '  tables are set in the file only. `twinlake config --keys` lists every key, `twinlake config`',
    '  what this run uses and where each value comes from. Relative paths in a config file are',
    '  relative to its folder. Default warehouse: ./warehouse.',
  ].join('\n');
}
