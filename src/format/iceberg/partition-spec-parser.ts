import { invalidInput } from '../../core/errors.ts';
import { indexById, isPrimitive, typeToString } from './schema.ts';
import { canTransform, formatTransform, partitionFieldName, transformSourceTypes, tryParseTransform, type ParsedTransform, type TransformKind } from './transforms.ts';
import type { IcebergType, NestedField, PartitionField, PartitionSpec, Schema, StructType } from './types.ts';

/**
 * The partition syntax users write everywhere (CLI, config, API):
 *
 *   region, day(ts), bucket(16, user_id), truncate(4, zip_code), hour(event_time), void(x)
 *
 * Fields are separated by top-level commas; columns may be quoted ("a b" or `a b`, a doubled quote
 * escapes itself) and nested in structs (`address.zip`); `AS name` overrides the default partition
 * field name. Errors are `invalid-input` with the character position, raised before anything is
 * written. Also: the reverse (`formatPartitionSpec`) and spec evolution with field-ID reuse.
 */

/** Partition field IDs start after 999 (spec Appendix C §Partition Specs; the v1 convention). */
export const PARTITION_DATA_ID_START = 1000;

// ---------------------------------------------------------------------------------------------
// Tokens

type Token =
  | { kind: 'name'; text: string; quoted: boolean; pos: number }
  | { kind: 'number'; text: string; pos: number }
  | { kind: '(' | ')' | ',' | '.' | 'end'; pos: number };

const BARE_NAME = /[\p{L}_][\p{L}\p{N}_$]*/uy;
const NUMBER = /[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?/y;

function fail(message: string, pos: number, text: string): never {
  throw invalidInput(`partition spec: ${message}`, { position: pos + 1, spec: text });
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')' || c === ',' || c === '.') {
      tokens.push({ kind: c, pos: i++ });
    } else if (c === '"' || c === '`') {
      let name = '';
      let j = i + 1;
      for (;;) {
        if (j >= text.length) fail(`unterminated quoted name starting at character ${i + 1}; expected a closing ${c}`, i, text);
        if (text[j] === c) {
          if (text[j + 1] === c) {
            name += c;
            j += 2;
            continue;
          }
          break;
        }
        name += text[j++];
      }
      tokens.push({ kind: 'name', text: name, quoted: true, pos: i });
      i = j + 1;
    } else if (/[\d+-]/.test(c)) {
      NUMBER.lastIndex = i;
      const m = NUMBER.exec(text);
      if (!m) fail(`unexpected ${JSON.stringify(c)} at character ${i + 1}; expected a number such as 16`, i, text);
      tokens.push({ kind: 'number', text: m[0], pos: i });
      i += m[0].length;
    } else {
      BARE_NAME.lastIndex = i;
      const m = BARE_NAME.exec(text);
      if (!m) fail(`unexpected ${JSON.stringify(c)} at character ${i + 1}; expected a column name, a transform, ',' or a parenthesis (quote names with other characters: "my-col")`, i, text);
      tokens.push({ kind: 'name', text: m[0], quoted: false, pos: i });
      i += m[0].length;
    }
  }
  tokens.push({ kind: 'end', pos: text.length });
  return tokens;
}

function show(t: Token): string {
  if (t.kind === 'end') return 'end of input';
  if (t.kind === 'name') return t.quoted ? `quoted name ${JSON.stringify(t.text)}` : JSON.stringify(t.text);
  if (t.kind === 'number') return t.text;
  return `'${t.kind}'`;
}

// ---------------------------------------------------------------------------------------------
// Syntax

interface ColumnRef {
  path: string[];
  pos: number;
}

interface Term {
  transform: ParsedTransform;
  column: ColumnRef;
  alias?: { name: string; pos: number };
  pos: number;
  /** The term as written, for messages. */
  source: string;
}

const TRANSFORM_NAMES: Record<string, TransformKind> = {
  identity: 'identity',
  year: 'year',
  years: 'year',
  month: 'month',
  months: 'month',
  day: 'day',
  days: 'day',
  hour: 'hour',
  hours: 'hour',
  bucket: 'bucket',
  truncate: 'truncate',
  void: 'void',
};

const MAX_INT = 2147483647;

class Parser {
  private i = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly text: string,
  ) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const t = this.peek();
    if (t.kind !== 'end') this.i++;
    return t;
  }

  private expect(kind: Token['kind'], what: string): Token {
    const t = this.peek();
    if (t.kind !== kind) fail(`expected ${what} at character ${t.pos + 1}, found ${show(t)}`, t.pos, this.text);
    return this.next();
  }

  terms(): Term[] {
    const out: Term[] = [];
    if (this.peek().kind === 'end') return out;
    for (;;) {
      out.push(this.term());
      const t = this.peek();
      if (t.kind === 'end') return out;
      if (t.kind !== ',') fail(`expected ',' or end of input at character ${t.pos + 1}, found ${show(t)}`, t.pos, this.text);
      this.next();
      const after = this.peek();
      if (after.kind === 'end') fail(`expected a partition field after ',' at character ${after.pos + 1}, found end of input`, after.pos, this.text);
    }
  }

  private term(): Term {
    const start = this.peek();
    if (start.kind !== 'name') fail(`expected a column name or a transform such as day(ts) at character ${start.pos + 1}, found ${show(start)}`, start.pos, this.text);
    let term: Omit<Term, 'source'>;
    if (!start.quoted && this.peek(1).kind === '(') term = this.call();
    else term = { transform: { kind: 'identity' }, column: this.column(), pos: start.pos };
    const as = this.peek();
    if (as.kind === 'name' && !as.quoted && as.text.toLowerCase() === 'as') {
      this.next();
      const name = this.expect('name', 'a partition field name after AS') as Extract<Token, { kind: 'name' }>;
      term.alias = { name: name.text, pos: name.pos };
    }
    return { ...term, source: this.text.slice(start.pos, this.peek().pos).trim() };
  }

  private column(): ColumnRef {
    const first = this.expect('name', 'a column name') as Extract<Token, { kind: 'name' }>;
    const path = [first.text];
    while (this.peek().kind === '.') {
      this.next();
      path.push((this.expect('name', "a nested column name after '.'") as Extract<Token, { kind: 'name' }>).text);
    }
    return { path, pos: first.pos };
  }

  private call(): Omit<Term, 'source'> {
    const nameTok = this.next() as Extract<Token, { kind: 'name' }>;
    const kind = TRANSFORM_NAMES[nameTok.text.toLowerCase()];
    if (!kind) {
      fail(`unknown transform ${JSON.stringify(nameTok.text)} at character ${nameTok.pos + 1}; expected identity, year, month, day, hour, bucket, truncate or void`, nameTok.pos, this.text);
    }
    this.expect('(', `'(' after ${nameTok.text}`);
    const args: (ColumnRef | { number: string; pos: number })[] = [];
    if (this.peek().kind !== ')') {
      for (;;) {
        const t = this.peek();
        if (t.kind === 'number') {
          this.next();
          args.push({ number: t.text, pos: t.pos });
        } else if (t.kind === 'name') args.push(this.column());
        else fail(`expected a column name or a number at character ${t.pos + 1}, found ${show(t)}`, t.pos, this.text);
        if (this.peek().kind !== ',') break;
        this.next();
      }
    }
    const close = this.peek();
    if (close.kind !== ')') fail(`expected ')' or ',' at character ${close.pos + 1}, found ${show(close)}`, close.pos, this.text);
    this.next();

    const columns = args.filter((a): a is ColumnRef => 'path' in a);
    const numbers = args.filter((a): a is { number: string; pos: number } => 'number' in a);
    if (kind === 'bucket' || kind === 'truncate') {
      const example = kind === 'bucket' ? 'bucket(16, user_id)' : 'truncate(4, zip_code)';
      if (columns.length !== 1 || numbers.length !== 1) {
        fail(`${kind} at character ${nameTok.pos + 1} takes a ${kind === 'bucket' ? 'bucket count' : 'width'} and a column, e.g. ${example}; found ${describeArgs(columns.length, numbers.length)}`, nameTok.pos, this.text);
      }
      const n = numbers[0]!;
      const what = kind === 'bucket' ? 'bucket count' : 'truncate width';
      if (!/^[+-]?\d+$/.test(n.number) || Number(n.number) < 1) fail(`${what} must be a positive integer, found ${n.number} at character ${n.pos + 1}`, n.pos, this.text);
      if (Number(n.number) > MAX_INT) fail(`${what} must be at most ${MAX_INT}, found ${n.number} at character ${n.pos + 1}`, n.pos, this.text);
      return { transform: { kind, param: Number(n.number) }, column: columns[0]!, pos: nameTok.pos };
    }
    if (columns.length !== 1 || numbers.length !== 0) {
      fail(`${kind} at character ${nameTok.pos + 1} takes one column, e.g. ${kind}(ts); found ${describeArgs(columns.length, numbers.length)}`, nameTok.pos, this.text);
    }
    return { transform: { kind }, column: columns[0]!, pos: nameTok.pos };
  }
}

function describeArgs(columns: number, numbers: number): string {
  if (columns + numbers === 0) return 'no arguments';
  const parts = [];
  if (columns) parts.push(`${columns} column${columns > 1 ? 's' : ''}`);
  if (numbers) parts.push(`${numbers} number${numbers > 1 ? 's' : ''}`);
  return parts.join(' and ');
}

// ---------------------------------------------------------------------------------------------
// Columns

/** Dotted paths of every column reachable through structs (partition sources cannot be inside lists or maps). */
function columnPaths(struct: StructType, prefix: string[] = []): { path: string[]; field: NestedField }[] {
  return struct.fields.flatMap((f) => {
    const path = [...prefix, f.name];
    const here = { path, field: f };
    return typeof f.type !== 'string' && f.type.type === 'struct' ? [here, ...columnPaths(f.type, path)] : [here];
  });
}

function availableColumns(schema: Schema): string {
  const names = columnPaths(schema)
    .filter((c) => isPrimitive(c.field.type))
    .map((c) => c.path.map(quoteName).join('.'));
  return names.length > 30 ? `${names.slice(0, 30).join(', ')}, … (${names.length} in all)` : names.join(', ') || '(none)';
}

function resolveColumn(schema: Schema, ref: ColumnRef, text: string): { field: NestedField; path: string[] } {
  let fields = schema.fields;
  const path: string[] = [];
  let field: NestedField | undefined;
  for (let k = 0; k < ref.path.length; k++) {
    const want = ref.path[k]!;
    field = fields.find((f) => f.name === want);
    if (!field) {
      // Delta compares column names case-insensitively; accept a unique case-insensitive match.
      const ci = fields.filter((f) => f.name.toLowerCase() === want.toLowerCase());
      if (ci.length > 1) fail(`column ${quoteName(want)} at character ${ref.pos + 1} is ambiguous: ${ci.map((f) => quoteName(f.name)).join(', ')} differ only in case; write the exact name`, ref.pos, text);
      field = ci[0];
    }
    const written = ref.path.map(quoteName).join('.');
    if (!field) fail(`unknown column ${written} at character ${ref.pos + 1}; available columns: ${availableColumns(schema)}`, ref.pos, text);
    path.push(field.name);
    if (k < ref.path.length - 1) {
      const t = field.type;
      if (typeof t === 'string') fail(`unknown column ${written} at character ${ref.pos + 1}: ${path.join('.')} is a ${t}, not a struct; available columns: ${availableColumns(schema)}`, ref.pos, text);
      if (t.type !== 'struct') fail(`column ${written} at character ${ref.pos + 1} is inside a ${t.type}; partition sources cannot be inside a list or map`, ref.pos, text);
      fields = t.fields;
    }
  }
  return { field: field!, path };
}

function quoteName(name: string): string {
  return /^[\p{L}_][\p{L}\p{N}_$]*$/u.test(name) && name.toLowerCase() !== 'as' ? name : `"${name.replace(/"/g, '""')}"`;
}

// ---------------------------------------------------------------------------------------------
// Checks shared by parsed and given specs

interface Candidate {
  field: Omit<PartitionField, 'field-id'>;
  kind: TransformKind;
  /** Where the field came from, for messages: `day(ts) at character 5`. */
  where: string;
  pos?: number;
}

const TIME: ReadonlySet<TransformKind> = new Set(['year', 'month', 'day', 'hour']);

/**
 * The rules of Iceberg Java's `PartitionSpec.Builder`: one field per (column, transform), at most
 * one of year/month/day/hour per column, unique non-empty names, and no name that is another
 * column's name (identity and void fields may carry their own column's name).
 */
function checkCandidates(candidates: Candidate[], schema: Schema, text: string): void {
  const at = (c: Candidate, msg: string): never => {
    if (c.pos !== undefined) fail(msg, c.pos, text);
    throw invalidInput(`partition spec: ${msg}`);
  };
  const schemaNames = new Map(columnPaths(schema).map((c) => [c.path.join('.'), c.field.id]));
  const byTransform = new Map<string, Candidate>();
  const byTime = new Map<number, Candidate>();
  const byName = new Map<string, Candidate>();
  for (const c of candidates) {
    const f = c.field;
    if (f.name === '') at(c, `${c.where} has an empty partition field name`);
    const key = `${f['source-id']}|${f.transform}`;
    const same = byTransform.get(key);
    if (same) at(c, `${c.where} repeats ${same.where}; each transform may partition a column once`);
    byTransform.set(key, c);
    if (TIME.has(c.kind)) {
      const other = byTime.get(f['source-id']);
      if (other) at(c, `${c.where} conflicts with ${other.where}: a column takes only one of year, month, day and hour`);
      byTime.set(f['source-id'], c);
    }
    const dup = byName.get(f.name);
    if (dup) at(c, `duplicate partition field name ${JSON.stringify(f.name)} from ${dup.where} and ${c.where}; rename one with AS`);
    byName.set(f.name, c);
    const column = schemaNames.get(f.name);
    const ownName = (c.kind === 'identity' || c.kind === 'void') && column === f['source-id'];
    if (column !== undefined && !ownName) {
      at(c, `partition field name ${JSON.stringify(f.name)} of ${c.where} is the name of a column; choose another with AS`);
    }
  }
}

function checkSource(kind: TransformKind, transform: string, type: IcebergType, column: string, where: string, fail: (msg: string) => never): void {
  if (kind === 'void') return;
  if (!isPrimitive(type)) fail(`${where}: column ${column} is a ${typeToString(type)}; partition by one of its primitive fields instead`);
  if (!canTransform(transform, type)) fail(`${where}: ${kind} does not apply to column ${column} of type ${typeToString(type)}; ${kind} accepts ${transformSourceTypes(kind)}`);
}

// ---------------------------------------------------------------------------------------------
// Public API

export interface ParsePartitionSpecOptions {
  /** Defaults to 0. */
  specId?: number;
  /** New field IDs start after this; defaults to 999 (so the first field is 1000). */
  lastPartitionId?: number;
}

/**
 * Parses the partition syntax against `schema`. An empty or blank text is refused rather than read
 * as "unpartitioned": given to an existing table it would silently drop its partitioning.
 */
export function parsePartitionSpec(text: string, schema: Schema, options: ParsePartitionSpecOptions = {}): PartitionSpec {
  if (text.trim() === '') fail('the partition spec is empty; expected fields such as "day(ts), region"', 0, text);
  const terms = new Parser(tokenize(text), text).terms();
  const candidates: Candidate[] = terms.map((t) => {
    const { field, path } = resolveColumn(schema, t.column, text);
    const transform = formatTransform(t.transform);
    const where = `${t.source} at character ${t.pos + 1}`;
    checkSource(t.transform.kind, transform, field.type, path.map(quoteName).join('.'), where, (msg) => fail(msg, t.pos, text));
    const name = t.alias?.name ?? partitionFieldName(transform, path);
    return { field: { 'source-id': field.id, name, transform }, kind: t.transform.kind, where, pos: t.alias?.pos ?? t.pos };
  });
  checkCandidates(candidates, schema, text);
  let next = options.lastPartitionId ?? PARTITION_DATA_ID_START - 1;
  return { 'spec-id': options.specId ?? 0, fields: candidates.map((c) => ({ 'source-id': c.field['source-id'], 'field-id': ++next, name: c.field.name, transform: c.field.transform })) };
}

/**
 * Checks a spec given as an object (JSON config, API) by the same rules as the syntax: known
 * columns, transforms valid for their types, no repeated or conflicting fields or names.
 */
export function validatePartitionSpec(spec: PartitionSpec, schema: Schema): void {
  const index = indexById(schema);
  const candidates = spec.fields.map((f, i): Candidate => {
    const where = `field ${i + 1} (${JSON.stringify(f.name)}, ${f.transform})`;
    const bad = (msg: string): never => {
      throw invalidInput(`partition spec: ${msg}`, { field: f.name });
    };
    const p = tryParseTransform(f.transform);
    if (!p) bad(`${where}: unknown transform; expected identity, bucket[N], truncate[W], year, month, day, hour or void`);
    const source = index.get(f['source-id']);
    if (!source && p!.kind !== 'void') bad(`${where}: source-id ${f['source-id']} is not a column of the schema`);
    if (source) checkSource(p!.kind, f.transform, source.field.type, source.path.join('.'), where, bad);
    return { field: f, kind: p!.kind, where };
  });
  checkCandidates(candidates, schema, '');
}

/**
 * The syntax for a spec: `day(ts), bucket(16, user_id), region`, with `AS name` where a field's name
 * is not the default. A field whose source column is gone prints as `#<source-id>` (it will not
 * parse back); an unknown transform prints as `name(column)`.
 */
export function formatPartitionSpec(spec: PartitionSpec, schema: Schema): string {
  const index = indexById(schema);
  return spec.fields
    .map((f) => {
      const source = index.get(f['source-id']);
      const column = source ? source.path.map(quoteName).join('.') : `\`#${f['source-id']}\``;
      const p = tryParseTransform(f.transform);
      let text: string;
      if (!p) text = `${f.transform}(${column})`;
      else if (p.kind === 'identity') text = column;
      else if (p.kind === 'bucket' || p.kind === 'truncate') text = `${p.kind}(${p.param}, ${column})`;
      else text = `${p.kind}(${column})`;
      const defaultName = p && source ? partitionFieldName(f.transform, source.path) : undefined;
      return f.name === defaultName ? text : `${text} AS ${quoteName(f.name)}`;
    })
    .join(', ');
}

/** Equivalent per spec §Partitioning: same number of fields, each with the same source, transform and name. */
export function equivalentPartitionSpecs(a: PartitionSpec, b: PartitionSpec): boolean {
  return (
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => {
      const g = b.fields[i]!;
      return f['source-id'] === g['source-id'] && f.name === g.name && sameTransform(f.transform, g.transform);
    })
  );
}

function sameTransform(a: string, b: string): boolean {
  const pa = tryParseTransform(a);
  const pb = tryParseTransform(b);
  return pa && pb ? formatTransform(pa) === formatTransform(pb) : a.trim() === b.trim();
}

export interface PartitionSpecHistory {
  specs: PartitionSpec[];
  lastPartitionId: number;
  /** The table's current default spec; `changed` compares against it. */
  defaultSpecId?: number;
  formatVersion?: 1 | 2 | 3;
}

export interface EvolvedPartitionSpec {
  /** The spec to use, with its final spec-id and field IDs. */
  spec: PartitionSpec;
  /** Whether `spec` must be added to the table (no equivalent spec exists). */
  isNew: boolean;
  /** Whether the default spec changes (false when re-giving the current spec: a no-op). */
  changed: boolean;
  lastPartitionId: number;
}

/**
 * Evolves a table's partitioning to `newSpec` (its spec-id and field IDs are ignored) per spec
 * §Partition Evolution: a field with the same source and transform as a field of any earlier spec
 * keeps that field's ID; other fields get IDs after `lastPartitionId`. An equivalent existing spec
 * is reused rather than added again (spec §Partitioning: writers must not create a new spec when a
 * compatible one exists). In v1 tables field IDs are positional from 1000, as v1 readers assume.
 */
export function evolvePartitionSpec(history: PartitionSpecHistory, newSpec: PartitionSpec | PartitionField[]): EvolvedPartitionSpec {
  const fields = Array.isArray(newSpec) ? newSpec : newSpec.fields;
  const known = new Map<string, number>();
  for (const s of history.specs) {
    for (const f of s.fields) {
      const key = fieldKey(f);
      known.set(key, Math.max(known.get(key) ?? -Infinity, f['field-id']));
    }
  }
  let last = history.lastPartitionId;
  const assigned: PartitionField[] = fields.map((f, i) => {
    let id: number;
    if (history.formatVersion === 1) id = PARTITION_DATA_ID_START + i;
    else id = known.get(fieldKey(f)) ?? ++last;
    return { 'source-id': f['source-id'], 'field-id': id, name: f.name, transform: f.transform };
  });
  const candidate: PartitionSpec = { 'spec-id': -1, fields: assigned };
  const existing = history.specs.find((s) => equivalentPartitionSpecs(s, candidate));
  if (existing) {
    const changed = history.defaultSpecId === undefined ? false : existing['spec-id'] !== history.defaultSpecId;
    return { spec: existing, isNew: false, changed, lastPartitionId: history.lastPartitionId };
  }
  const specId = history.specs.reduce((m, s) => Math.max(m, s['spec-id']), -1) + 1;
  const lastPartitionId = Math.max(history.lastPartitionId, ...assigned.map((f) => f['field-id']));
  return { spec: { 'spec-id': specId, fields: assigned }, isNew: true, changed: true, lastPartitionId };
}

function fieldKey(f: Pick<PartitionField, 'source-id' | 'transform'>): string {
  const p = tryParseTransform(f.transform);
  return `${f['source-id']}|${p ? formatTransform(p) : f.transform.trim()}`;
}
