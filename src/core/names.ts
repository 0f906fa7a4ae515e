import { invalidInput } from './errors.ts';

/**
 * The rules for names: namespace levels and table names, which become folders of a table's
 * location, and column names, which reach the engine's SQL and every reader's schema. One place
 * for them, so the library, the CLI and the server refuse the same names with the same words.
 */

/**
 * The longest folder name, in UTF-8 bytes: ext4, XFS, Btrfs and ZFS allow 255 bytes per name
 * (APFS and NTFS count characters, and 255 bytes is never more than 255 of those). Counted in
 * bytes, not characters: 100 CJK characters are 300 bytes, which no Linux file system takes.
 */
export const MAX_NAME_BYTES = 255;

/** What a folder name may not hold, worded for messages. */
export const FOLDER_NAME_RULE =
  `not empty, at most ${MAX_NAME_BYTES} UTF-8 bytes, no '/' or '\\', no '..', not starting with '.', no '%', no control characters`;

/** What a column name may not hold, worded for messages. */
export const COLUMN_NAME_RULE = 'not empty, no control characters (U+0000-U+001F, U+007F-U+009F)';

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The UTF-8 length of a name. */
export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/**
 * Why a namespace level or table name cannot be a folder, or undefined when it can. The name must
 * not leave or alias its folder (`/`, `\`, `..`, a leading `.`: `.`, `..`, hidden), must fit the
 * file system (bytes), and must read back as itself from a location: a location is a URI, and a
 * reader that percent-decodes it (delta-rs, or any `file:` URL parser) would read `%2e%2e` as
 * `..` and `%2f` as `/`, so `%` is refused rather than escaped in one format and not the other.
 */
export function folderNameProblem(part: unknown): string | undefined {
  if (typeof part !== 'string' || part === '') return 'is empty';
  if (/[/\\]/.test(part)) return 'contains a path separator';
  if (part.includes('..')) return "contains '..'";
  if (part.startsWith('.')) return "starts with '.'";
  const control = CONTROL.exec(part);
  if (control) return `contains a control character (${codePoint(control[0])})`;
  if (part.includes('%')) return "contains '%' (a reader that percent-decodes the table's location would name another folder)";
  const bytes = utf8Bytes(part);
  if (bytes > MAX_NAME_BYTES) return `is ${bytes} bytes long in UTF-8, longer than ${MAX_NAME_BYTES} bytes (the limit of a folder name)`;
  return undefined;
}

/** Why a column name cannot be used, or undefined when it can. */
export function columnNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name === '') return 'is empty';
  const control = CONTROL.exec(name);
  // NUL ends a string in the engine's SQL parser and in C readers; the other control characters
  // cannot be typed in a filter and are mangled by CSV headers and terminals.
  if (control) return `contains a control character (${codePoint(control[0])})`;
  return undefined;
}

/** A struct's shape, as far as its names go (any depth: struct fields, list elements, map keys and values). */
export type NamedType = string | { type: string; fields?: { name: string; type: NamedType }[]; element?: NamedType; key?: NamedType; value?: NamedType };

/** The first column name at any depth that breaks COLUMN_NAME_RULE, with its path and why. */
export function badColumnName(type: NamedType, prefix: string[] = []): { path: string[]; name: string; why: string } | undefined {
  if (typeof type === 'string') return undefined;
  for (const f of type.fields ?? []) {
    const why = columnNameProblem(f.name);
    if (why) return { path: [...prefix, f.name], name: f.name, why };
    const inner = badColumnName(f.type, [...prefix, f.name]);
    if (inner) return inner;
  }
  for (const [part, t] of [['element', type.element], ['key', type.key], ['value', type.value]] as const) {
    const inner = t === undefined ? undefined : badColumnName(t, [...prefix, part]);
    if (inner) return inner;
  }
  return undefined;
}

function codePoint(ch: string): string {
  return 'U+' + ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
}

/** Refuses a struct holding a column name that breaks COLUMN_NAME_RULE; `where` starts the message. */
export function checkColumnNames(type: NamedType, where: string): void {
  const bad = badColumnName(type);
  if (!bad) return;
  throw invalidInput(`${where}: column ${JSON.stringify(bad.path.join('.'))} ${bad.why}; a column name must be ${COLUMN_NAME_RULE}`, { column: bad.path.join('.') });
}
