import { openCatalog, type OpenedCatalog } from '../catalog/open-catalog.ts';
import { resolveEngineSettings } from '../engine/engine-settings.ts';
import { Lakehouse } from '../table/lakehouse.ts';
import { findConfigFile, readConfigFile } from './config-file.ts';
import { redact } from './redact.ts';
import { resolveConfig, type TwinlakeConfig } from './resolve-config.ts';

export interface LoadConfigOptions {
  /** The config file to read; default `TWINLAKE_CONFIG`, else `twinlake.yaml`, `.yml` or `.json` in `cwd` when present. */
  file?: string;
  env?: Record<string, string | undefined>;
  /** Values given by the caller (command-line options), by key path; they win over everything. */
  options?: Record<string, unknown>;
  optionNames?: Record<string, string>;
  cwd?: string;
}

/** Finds, reads and checks the config file, and applies the environment and the options to it. */
export async function loadConfig(opts: LoadConfigOptions = {}): Promise<TwinlakeConfig> {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  const named = opts.file ?? (env.TWINLAKE_CONFIG ? env.TWINLAKE_CONFIG : undefined);
  const path = named ?? findConfigFile(cwd);
  const file = path === undefined ? undefined : await readConfigFile(path, cwd);
  return resolveConfig({ file, env, options: opts.options, optionNames: opts.optionNames, cwd });
}

/**
 * Opens the warehouse a config describes: its catalog (openCatalog, unless nothing configured one:
 * then the Lakehouse's embedded default) and its stores. Bad engine settings and settings the
 * stores cannot take fail before anything is created.
 */
export async function openConfiguredLakehouse(config: TwinlakeConfig, opts: { readOnly?: boolean; onWarning?: (message: string) => void } = {}): Promise<{ lake: Lakehouse; close: () => Promise<void> }> {
  resolveEngineSettings(config.engine);
  let opened: OpenedCatalog | undefined;
  if (config.catalogConfigured) opened = await openCatalog(config.catalog, { warehouseUri: config.warehouseUri, storage: config.storage, readOnly: opts.readOnly });
  let lake: Lakehouse;
  try {
    lake = await Lakehouse.open({
      warehouse: config.warehouse,
      engine: config.engine,
      readOnly: opts.readOnly,
      catalog: opened?.catalog,
      deltaRegistry: opened?.deltaRegistry,
      // The configured stores serve the warehouse and any location on them (a table read by its s3:// path).
      storage: config.storage,
      onWarning: opts.onWarning ?? ((m) => process.stderr.write(`warning: ${redact(m)}\n`)),
    });
  } catch (e) {
    await opened?.close();
    throw e;
  }
  return {
    lake,
    close: async () => {
      try {
        await lake.close();
      } finally {
        await opened?.close();
      }
    },
  };
}
