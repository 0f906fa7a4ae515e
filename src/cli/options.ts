import { Command, type Option } from 'commander';

/**
 * Option rules of every `twinlake` command, in one place: an option that takes a value is given
 * once and never empty. Commander's own behaviour for a repeated option is "the last one wins",
 * which turned `delete --where A --where B` into a delete by B alone; an empty value is an unset
 * shell variable or a lost quote, never a choice.
 *
 * An option is repeatable when it is declared with `repeatable` as its parser:
 *
 *   .option('--property <key=value>', 'a table property (repeatable)', repeatable, [])
 *
 * Any other option, with or without its own parser, is single-valued. Subcommands made with
 * `.command()` are `TwinlakeCommand`s too, so every option of every command follows these rules.
 */
export class TwinlakeCommand extends Command {
  override createCommand(name?: string): TwinlakeCommand {
    return new TwinlakeCommand(name);
  }

  override addOption(option: Option): this {
    if (option.required || option.optional) {
      const parse = option.parseArg;
      const many = parse === repeatable;
      if (many) repeatableOptions.add(option);
      const key = option.attributeName();
      const flag = option.long ?? option.short ?? option.flags;
      const what = /[<[]([^>\]]+)[>\]]/.exec(option.flags)?.[1] ?? 'value';
      option.argParser(<T>(value: string, previous: T): T => {
        if (value.trim() === '') this.usageError(`${flag} expects ${article(what)}, found an empty value`);
        if (!many && this.getOptionValueSource(key) === 'cli') {
          this.usageError(`${flag} is given more than once (${JSON.stringify(String(previous))}, then ${JSON.stringify(value)}); give it once`);
        }
        return (parse ? parse.call(option, value, previous) : value) as T;
      });
    }
    return super.addOption(option);
  }

  /** A usage error of this command: the command line does not parse. */
  usageError(message: string): never {
    const where = this.parent ? `${this.name()}: ` : '';
    return this.error(`${where}${message}`, { code: 'twinlake.usage' });
  }
}

const repeatableOptions = new WeakSet<Option>();

/** Whether an option was declared repeatable (for help and tests). */
export function isRepeatable(option: Option): boolean {
  return repeatableOptions.has(option);
}

/** The parser that declares an option repeatable: each use adds its value to a list. */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

function article(what: string): string {
  return /^[aeiou]/i.test(what) ? `an ${what}` : `a ${what}`;
}
