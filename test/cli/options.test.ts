import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf, failureMessage } from '../../src/cli/exit-codes.ts';
import { isRepeatable } from '../../src/cli/options.ts';
import { createProgram } from '../../src/cli/program.ts';
import { cli, listFiles, ndjson, tempDir } from '../helpers.ts';

/** Parses a command line in-process: the failure's one-line message and exit code. */
async function parse(args: string[]): Promise<{ code: number; message: string }> {
  try {
    await createProgram().parseAsync(args, { from: 'user' });
  } catch (e) {
    return { code: exitCodeOf(e), message: failureMessage(e) };
  }
  throw new Error(`expected ${args.join(' ')} to fail`);
}

/** Every option that takes a value, of the program and of every command, with a command line to reach it. */
function valueOptions(): { prefix: string[]; flag: string; repeatable: boolean }[] {
  const program = createProgram();
  const of = (cmd: Command, prefix: string[]) =>
    cmd.options.filter((o) => o.required || o.optional).map((o) => ({ prefix, flag: o.long!, repeatable: isRepeatable(o) }));
  return [
    ...of(program, []),
    ...program.commands.filter((c) => c.name() !== 'help').flatMap((c) => of(c, [c.name(), ...c.registeredArguments.map(() => 'a.b')])),
  ];
}

describe('options', () => {
  it('a single-value option given twice is a usage error, for every option of every command', async () => {
    const options = valueOptions();
    expect(options.filter((o) => !o.repeatable).length).toBeGreaterThan(25);
    expect(options.filter((o) => o.repeatable).map((o) => `${o.prefix[0]} ${o.flag}`)).toEqual(['write --input', 'write --property', 'create --property', 'alter --property', 'alter --unset']);
    for (const o of options.filter((x) => !x.repeatable)) {
      const r = await parse([...o.prefix, o.flag, 'one', o.flag, 'two']);
      const where = o.prefix.length ? `${o.prefix[0]}: ` : '';
      expect(r, `${o.prefix.join(' ')} ${o.flag}`).toEqual({ code: 2, message: `${where}${o.flag} is given more than once ("one", then "two"); give it once` });
    }
  });

  it('an empty value is a usage error, for every option of every command', async () => {
    for (const o of valueOptions()) {
      const r = await parse([...o.prefix, o.flag, ' ']);
      expect(r.code, `${o.prefix.join(' ')} ${o.flag}`).toBe(2);
      expect(r.message, `${o.prefix.join(' ')} ${o.flag}`).toMatch(new RegExp(`^([\\w-]+: )?${o.flag} expects an? [\\w=-]+, found an empty value$`));
    }
  });

  it('a repeatable option collects every value', async () => {
    const program = createProgram();
    const write = program.commands.find((c) => c.name() === 'write')!;
    write.action(() => {}); // parse only
    await program.parseAsync(['write', 'a.b', '--input', 'x.ndjson', '--property', 'a=1', '--property', 'b=2'], { from: 'user' });
    expect(write.opts().property).toEqual(['a=1', 'b=2']);
  });

  it('unknown commands and options suggest the nearest one', async () => {
    expect(await parse(['wrte'])).toEqual({ code: 2, message: "unknown command 'wrte' (did you mean write?)" });
    expect(await parse(['read', 'a.b', '--wher', 'x'])).toEqual({ code: 2, message: "unknown option '--wher' (did you mean --where?)" });
    expect(await parse(['--warehose', 'x', 'tables'])).toEqual({ code: 2, message: "unknown option '--warehose' (did you mean --warehouse?)" });
  });

  it('help documents the settings precedence and the exit codes; each command has an example', () => {
    const program = createProgram();
    let text = '';
    const capture = (c: Command) => c.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
    capture(program).outputHelp();
    expect(text).toMatch(/Settings \(highest first\): an option after the command, the same option before it, the\s+environment, the config file/);
    expect(text).toMatch(/TWINLAKE_WAREHOUSE/);
    for (const line of [/^ {2}2 +usage/m, /^ {2}3 +invalid input/m, /^ {2}4 +not found/m, /^ {2}5 +conflict/m, /^ {2}6 +I\/O/m]) expect(text).toMatch(line);
    for (const c of program.commands.filter((x) => x.name() !== 'help')) {
      text = '';
      capture(c).outputHelp();
      expect(text, c.name()).toMatch(new RegExp(`\\nExamples?:\\n {2}twinlake ${c.name()}\\b`));
    }
  });
});

describe('options through the real command', () => {
  const tmp = tempDir();
  const wh = join(tmp.path, 'wh');
  const tableDir = join(wh, 'o', 't');
  const input = join(tmp.path, 'in.ndjson');
  afterAll(() => tmp.cleanup());
  beforeAll(() => {
    writeFileSync(input, ndjson([{ id: 1, op: 'U' }, { id: 2, op: 'U' }, { id: 3, op: 'U' }]));
    const r = cli(['--warehouse', wh, 'write', 'o.t', '--input', input]);
    expect(r.code, r.stderr).toBe(0);
  });
  const count = () => cli(['--warehouse', wh, 'read', 'o.t', '--output', 'ndjson']).stdout.trim().split('\n').length;

  it('delete --where A --where B deletes nothing and says why', () => {
    const before = listFiles(tableDir);
    const r = cli(['--warehouse', wh, 'delete', 'o.t', '--where', 'id = 1', '--where', 'id = 2']);
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toBe('twinlake: delete: --where is given more than once ("id = 1", then "id = 2"); give it once\n');
    expect(listFiles(tableDir)).toEqual(before);
    expect(count()).toBe(3);
  });

  it('an empty --where, --delete-when or --partition is refused before anything is written', () => {
    const before = listFiles(tableDir);
    for (const [args, message] of [
      [['delete', 'o.t', '--where', ''], 'delete: --where expects a filter'],
      [['read', 'o.t', '--where', ''], 'read: --where expects a filter'],
      [['write', 'o.t', '--input', input, '--mode', 'merge', '--key', 'id', '--delete-when', ''], 'write: --delete-when expects a filter'],
      [['write', 'o.t', '--input', input, '--partition', ''], 'write: --partition expects a spec'],
    ] as [string[], string][]) {
      const r = cli(['--warehouse', wh, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toBe(`twinlake: ${message}, found an empty value\n`);
    }
    expect(listFiles(tableDir)).toEqual(before);
  });

  it('exit codes tell usage, invalid input, not found, conflict and I/O apart', () => {
    const schema = join(tmp.path, 's.json');
    writeFileSync(schema, JSON.stringify({ type: 'struct', fields: [{ id: 1, name: 'id', required: false, type: 'long' }] }));
    writeFileSync(join(tmp.path, 'a-file'), '');
    const cases: [string[], number, RegExp][] = [
      [['wrte', 'o.t'], 2, /^twinlake: unknown command 'wrte' \(did you mean write\?\)$/],
      [['delete', 'o.t'], 2, /required option '--where <filter>' not specified/],
      [['read', 'o.t', '--where', 'id =='], 3, /^twinlake: filter: expected a value after '==' at column 6/],
      [['read', 'o.missing'], 4, /o\.missing does not exist/],
      [['create', 'o.t', '--schema', schema], 5, /o\.t already exists/],
      [['--warehouse', join(tmp.path, 'a-file', 'wh'), 'tables'], 6, /^twinlake: warehouse: cannot read .*ENOTDIR/],
    ];
    for (const [args, code, message] of cases) {
      const r = cli(args[0] === '--warehouse' ? args : ['--warehouse', wh, ...args]);
      expect(r.code, args.join(' ')).toBe(code);
      expect(r.stderr.trim(), args.join(' ')).toMatch(message);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });
});

describe('config file and warehouse precedence through the real command', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  it('a bad config file is an error naming the key; a typo suggests the nearest key', () => {
    const file = join(tmp.path, 'bad.json');
    for (const [text, message] of [
      ['{"warehouse": 5}', `config ${file}: "warehouse" must be a folder path (string), found 5`],
      ['{"warehose": "x"}', `config ${file}: unknown key "warehose" (did you mean "warehouse"?); the keys are warehouse, memoryLimit, threads, tempDir`],
      ['{"warehouse": "w", "threads": -1}', `config ${file}: "threads" must be a positive whole number, found -1`],
    ]) {
      writeFileSync(file, text);
      const r = cli(['--config', file, 'tables'], { cwd: tmp.path });
      expect(r.stderr).toBe(`twinlake: ${message}\n`);
      expect(r.code).toBe(3);
    }
    // Nothing fell back to ./warehouse.
    expect(listFiles(tmp.path)).toEqual(['bad.json']);
    const missing = cli(['--config', join(tmp.path, 'none.json'), 'tables']);
    expect(missing.code).toBe(4);
  });

  it('resolves a relative warehouse against the config file\'s folder; an option after the command wins', () => {
    const confDir = join(tmp.path, 'conf');
    const elsewhere = join(tmp.path, 'elsewhere');
    mkdirSync(confDir);
    mkdirSync(elsewhere);
    writeFileSync(join(confDir, 'twinlake.json'), JSON.stringify({ warehouse: 'wh', memoryLimit: '512MB', threads: 2, tempDir: 'spill' }));
    const input = join(tmp.path, 'x.ndjson');
    writeFileSync(input, ndjson([{ id: 1 }]));
    const w = cli(['--config', join(confDir, 'twinlake.json'), 'write', 'c.t', '--input', input], { cwd: elsewhere });
    expect(w.code, w.stderr).toBe(0);
    expect(listFiles(join(confDir, 'wh')).some((f) => f.startsWith('c/t/metadata/'))).toBe(true);
    expect(listFiles(elsewhere)).toEqual([]);

    const a = join(tmp.path, 'a');
    const b = join(tmp.path, 'b');
    const r = cli(['--warehouse', a, 'write', 'p.t', '--input', input, '--warehouse', b]);
    expect(r.code, r.stderr).toBe(0);
    expect(listFiles(join(b, 'p', 't')).length).toBeGreaterThan(0);
    expect(listFiles(a).filter((f) => f.startsWith('p/'))).toEqual([]);
    // Given on the command line, the warehouse beats the config file and the environment.
    process.env.TWINLAKE_WAREHOUSE = join(tmp.path, 'env-wh');
    try {
      expect(cli(['--config', join(confDir, 'twinlake.json'), 'tables', '--warehouse', b]).stdout.trim()).toBe('p.t');
      expect(cli(['--config', join(confDir, 'twinlake.json'), 'tables']).stdout.trim()).toBe('');
      // ... and the environment beats the config file.
      expect(cli(['--config', join(confDir, 'twinlake.json'), 'write', 'e.t', '--input', input]).code).toBe(0);
      expect(listFiles(join(tmp.path, 'env-wh'))).toContain('catalog.db');
      expect(listFiles(join(confDir, 'wh')).some((f) => f.startsWith('e/'))).toBe(false);
    } finally {
      delete process.env.TWINLAKE_WAREHOUSE;
    }
  });
});
