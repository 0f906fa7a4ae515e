import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { invalidInput, isTwinlakeError, notFound, TwinlakeError } from '../core/errors.ts';
import { isJsonObject, parseJson } from '../core/json.ts';
import { nearest } from './nearest.ts';
import { checkConfigValue, CONFIG_KEYS, isLocation, TABLE_KEYS, type ConfigKey } from './config-keys.ts';
import { addSecret } from './redact.ts';

/** What a config file says: checked values by key path, and the per-table entries by table name. */
export interface ConfigFile {
  /** The file, as named (relative to the current folder, or absolute). */
  file: string;
  values: Map<string, unknown>;
  tables: Map<string, Map<string, unknown>>;
}

/** The names `twinlake` looks for in the current folder when no file is named. */
export const CONFIG_FILE_NAMES = ['twinlake.yaml', 'twinlake.yml', 'twinlake.json'] as const;

/**
 * The config file of the current folder, if there is one. Two of them is an error: which one
 * wins would be a guess.
 */
export function findConfigFile(cwd = process.cwd()): string | undefined {
  const found = CONFIG_FILE_NAMES.filter((n) => existsSync(join(cwd, n)));
  if (found.length > 1) {
    throw invalidInput(`config: found ${found.join(' and ')} in ${cwd}; keep one, or name the one to use with --config FILE`);
  }
  return found[0] === undefined ? undefined : join(cwd, found[0]);
}

/** Reads and checks a config file (YAML, or JSON for `.json` files); a relative name is found from `cwd`. */
export async function readConfigFile(file: string, cwd = process.cwd()): Promise<ConfigFile> {
  const text = await readFile(resolve(cwd, file), 'utf8').catch((e: NodeJS.ErrnoException) => {
    const why = `config: cannot read ${file} (${e.message})`;
    throw e.code === 'ENOENT' ? notFound(why) : invalidInput(why);
  });
  return parseConfigFile(text, file, { cwd });
}

export interface ParseOptions {
  /** The keys the file may hold; default every key and `tables`. */
  keys?: readonly ConfigKey[];
  /** `json` or `yaml`; default from the file name (`.json` is JSON, anything else YAML). */
  syntax?: 'json' | 'yaml';
  /** The folder a relative file name is relative to (default the current folder). */
  cwd?: string;
}

/**
 * Parses and checks a config file's text. An unknown key is an error with the nearest known key:
 * a typo must not fall back to a default. Relative paths are resolved against the file's folder
 * (the file is written once and used from anywhere). Errors name the file, the key path and, in
 * YAML, the line and column.
 */
export function parseConfigFile(text: string, file: string, opts: ParseOptions = {}): ConfigFile {
  const keys = opts.keys ?? CONFIG_KEYS;
  const withTables = opts.keys === undefined;
  const syntax = opts.syntax ?? (/\.json$/i.test(file) ? 'json' : 'yaml');
  const domain = `config ${file}`;
  let root: unknown;
  let positionOf: (path: (string | number)[]) => string = () => '';
  if (syntax === 'json') {
    root = parseJson(text, domain);
    if (!isJsonObject(root) || Array.isArray(root)) {
      throw invalidInput(`${domain}: expected a JSON object such as {"warehouse": "./warehouse"}, found ${Array.isArray(root) ? 'an array' : JSON.stringify(root)}`);
    }
  } else {
    const lines = new LineCounter();
    const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true });
    const error = doc.errors[0];
    if (error) {
      const at = error.linePos?.[0];
      // The parser's own message, without its quote of the file (which may hold a secret).
      const what = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
      throw invalidInput(`${domain}${at ? `, line ${at.line}, column ${at.col}` : ''}: YAML: ${what}`, { file, line: at?.line, column: at?.col });
    }
    try {
      root = doc.toJS() ?? {};
    } catch (e) {
      throw invalidInput(`${domain}: YAML: ${(e as Error).message}`);
    }
    if (!isJsonObject(root) || Array.isArray(root)) {
      throw invalidInput(`${domain}: expected a mapping such as "warehouse: ./warehouse", found ${Array.isArray(root) ? 'a list' : JSON.stringify(root)}`);
    }
    positionOf = (path) => yamlPosition(doc, lines, path);
  }
  const base = dirname(resolve(opts.cwd ?? process.cwd(), file));
  const out: ConfigFile = { file, values: new Map(), tables: new Map() };
  const fail = (e: unknown, path: (string | number)[]): never => {
    // Add the line and column to a message of the form "config F: ...".
    if (isTwinlakeError(e) && e.message.startsWith(`${domain}: `)) {
      const at = positionOf(path);
      if (at) throw new TwinlakeError(e.kind, `${domain}${at}: ${e.message.slice(domain.length + 2)}`, e.context);
    }
    throw e;
  };
  const visit = (obj: Record<string, unknown>, prefix: string, rules: readonly ConfigKey[], sink: Map<string, unknown>, label: (path: string) => string, astPath: string[]) => {
    const children = sectionKeys(rules, prefix, withTables && prefix === '' && sink === out.values);
    for (const [name, value] of Object.entries(obj)) {
      const path = prefix ? `${prefix}.${name}` : name;
      const at = [...astPath, name];
      if (!children.includes(name)) {
        const near = nearest(name, children);
        const whose = prefix || sink !== out.values ? `the keys of ${label(prefix)} are` : 'the keys are';
        // At the top the list names the settings (as it always has); the sections are found by
        // the suggestion and documented with their keys.
        const listed = prefix || sink !== out.values ? children : children.filter((c) => rules.some((k) => k.path === c));
        fail(invalidInput(`${domain}: unknown key ${label(path)}${near ? ` (did you mean ${label(prefix ? `${prefix}.${near}` : near)}?)` : ''}; ${whose} ${listed.join(', ')}`, { key: path }), at);
      }
      if (value === null) continue; // `credential:` with nothing below it: unset
      if (path === 'tables' && sink === out.values) {
        visitTables(value, at);
        continue;
      }
      const rule = rules.find((k) => k.path === path);
      if (!rule) {
        if (!isJsonObject(value) || Array.isArray(value)) {
          fail(invalidInput(`${domain}: ${label(path)} must be a mapping of the keys ${sectionKeys(rules, path, false).join(', ')}, found ${JSON.stringify(value)}`, { key: path }), at);
        }
        visit(value as Record<string, unknown>, path, rules, sink, label, at);
        continue;
      }
      let checked: unknown;
      try {
        checked = checkConfigValue(rule, value, true, `${domain}: ${label(path)}`);
      } catch (e) {
        fail(e, at);
      }
      if (rule.secret && typeof checked === 'string') addSecret(checked);
      if (rule.relative && typeof checked === 'string' && !isLocation(checked)) checked = resolve(base, checked);
      sink.set(path, checked);
    }
  };
  const visitTables = (value: unknown, at: string[]) => {
    if (!isJsonObject(value) || Array.isArray(value)) {
      fail(invalidInput(`${domain}: "tables" must be a mapping of table names to their settings, such as tables: { "sales.orders": { writeMode: merge, keyColumns: [id] } }, found ${JSON.stringify(value)}`, { key: 'tables' }), at);
    }
    for (const [table, settings] of Object.entries(value as Record<string, unknown>)) {
      const label = (path: string) => `tables[${JSON.stringify(table)}]${path ? `.${path}` : ''}`;
      if (settings === null) continue;
      if (!isJsonObject(settings) || Array.isArray(settings)) {
        fail(invalidInput(`${domain}: ${label('')} must be a mapping of the keys ${TABLE_KEYS.map((k) => k.path).join(', ')}, found ${JSON.stringify(settings)}`, { key: `tables.${table}` }), [...at, table]);
      }
      const sink = new Map<string, unknown>();
      visit(settings as Record<string, unknown>, '', TABLE_KEYS, sink, (p) => label(p), [...at, table]);
      out.tables.set(table.normalize('NFC'), sink);
    }
  };
  visit(root as Record<string, unknown>, '', keys, out.values, (p) => JSON.stringify(p), []);
  return out;
}

/** The names one level below `prefix` in a key table, in the table's order. */
function sectionKeys(rules: readonly ConfigKey[], prefix: string, withTables: boolean): string[] {
  const names: string[] = [];
  for (const k of rules) {
    if (prefix && !k.path.startsWith(`${prefix}.`)) continue;
    const name = k.path.slice(prefix ? prefix.length + 1 : 0).split('.')[0]!;
    if (!names.includes(name)) names.push(name);
  }
  // `tables` goes after the storage and catalog sections, before the engine keys.
  if (withTables) names.splice(names.indexOf('catalog') + 1, 0, 'tables');
  return names;
}

/** ", line L, column C" of the key at `path` in a YAML document ('' when unknown). */
function yamlPosition(doc: Document, lines: LineCounter, path: (string | number)[]): string {
  const parent = path.length > 1 ? doc.getIn(path.slice(0, -1), true) : doc.contents;
  const items = (parent as { items?: { key?: { value?: unknown; range?: [number, number, number] } }[] } | null)?.items;
  const pair = items?.find((i) => i.key?.value === path[path.length - 1]);
  const offset = pair?.key?.range?.[0];
  if (offset === undefined) return '';
  const { line, col } = lines.linePos(offset);
  return `, line ${line}, column ${col}`;
}
