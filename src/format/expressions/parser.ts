import { invalidInput } from '../../core/errors.ts';

/**
 * A small filter language for reads: comparisons (`=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`),
 * `[NOT] IN (...)`, `[NOT] BETWEEN a AND b`, `IS [NOT] NULL`, `IS [NOT] NAN`, `AND`/`OR`/`NOT` with
 * the usual precedence (NOT binds tighter than AND, AND tighter than OR) and parentheses.
 *
 * Operator names are those of the Iceberg REST catalog's expression JSON (`lt-eq`, `not-in`, ...).
 */

export type ComparisonOp = 'eq' | 'not-eq' | 'lt' | 'lt-eq' | 'gt' | 'gt-eq';
export type SetOp = 'in' | 'not-in';
export type UnaryOp = 'is-null' | 'not-null' | 'is-nan' | 'not-nan';
export type PredicateOp = ComparisonOp | SetOp | UnaryOp;

/** A numeric literal as written, so decimals and longs keep every digit until binding. */
export interface NumberLiteral {
  number: string;
}

/**
 * Literal values before binding: text, booleans, numbers as written, or bytes (`X'0AFF'`).
 * Programmatic callers may also use JS numbers and bigints.
 */
export type Literal = string | boolean | number | bigint | Uint8Array | NumberLiteral;

export interface Predicate {
  kind: 'pred';
  op: PredicateOp;
  /** Path of names: `['a', 'b']` for `a.b`. */
  column: string[];
  value?: Literal;
  values?: Literal[];
}

export type Expr =
  | { kind: 'and' | 'or'; left: Expr; right: Expr }
  | { kind: 'not'; child: Expr }
  | Predicate
  | { kind: 'true' }
  | { kind: 'false' };

type Token =
  | { t: 'ident'; text: string; quoted: boolean; pos: number; end: number }
  | { t: 'string'; text: string; pos: number; end: number }
  | { t: 'hex'; bytes: Uint8Array; pos: number; end: number }
  | { t: 'number'; text: string; pos: number; end: number }
  | { t: 'op'; text: string; pos: number; end: number }
  | { t: 'end'; pos: number; end: number };

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'IS', 'NULL', 'TRUE', 'FALSE', 'BETWEEN']);
const TYPED_LITERAL = new Set(['DATE', 'TIME', 'TIMESTAMP', 'TIMESTAMPTZ']);
const COMPARISONS: Record<string, ComparisonOp> = { '=': 'eq', '==': 'eq', '!=': 'not-eq', '<>': 'not-eq', '<': 'lt', '<=': 'lt-eq', '>': 'gt', '>=': 'gt-eq' };
/** `5 < x` is `x > 5`. */
const MIRROR: Record<ComparisonOp, ComparisonOp> = { eq: 'eq', 'not-eq': 'not-eq', lt: 'gt', 'lt-eq': 'gt-eq', gt: 'lt', 'gt-eq': 'lt-eq' };

const fail = (message: string, pos: number): never => {
  throw invalidInput(`filter: ${message} at column ${pos + 1}`, { column: pos + 1 });
};

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const quoted = (close: string, what: string): string => {
    const start = i;
    let s = '';
    i++;
    for (;;) {
      if (i >= text.length) fail(`unterminated ${what} starting`, start);
      if (text[i] === close) {
        if (text[i + 1] === close) {
          s += close;
          i += 2;
          continue;
        }
        i++;
        return s;
      }
      s += text[i++];
    }
  };
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const pos = i;
    if ((c === 'X' || c === 'x') && text[i + 1] === "'") {
      i++;
      const hex = quoted("'", 'hex literal');
      if (!/^([0-9A-Fa-f]{2})*$/.test(hex)) fail(`expected an even number of hex digits in X'...'`, pos);
      const bytes = new Uint8Array(hex.length / 2);
      for (let k = 0; k < bytes.length; k++) bytes[k] = parseInt(hex.slice(2 * k, 2 * k + 2), 16);
      out.push({ t: 'hex', bytes, pos, end: i });
      continue;
    }
    if (c === "'") {
      out.push({ t: 'string', text: quoted("'", 'string'), pos, end: i });
      continue;
    }
    if (c === '"' || c === '`') {
      const name = quoted(c, 'quoted name');
      if (name === '') fail('expected a non-empty quoted name', pos);
      out.push({ t: 'ident', text: name, quoted: true, pos, end: i });
      continue;
    }
    const num = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(text.slice(i));
    const signOk = c !== '+' && c !== '-' ? true : /[\d.]/.test(text[i + 1] ?? '');
    if (num && signOk) {
      i += num[0].length;
      if (i < text.length && /[\p{L}\p{N}_.$]/u.test(text[i])) fail(`malformed number '${/^[+-]?[\p{L}\p{N}_.$]+/u.exec(text.slice(pos))![0]}'`, pos);
      out.push({ t: 'number', text: num[0], pos, end: i });
      continue;
    }
    const word = /^[\p{L}_][\p{L}\p{N}_$]*/u.exec(text.slice(i));
    if (word) {
      i += word[0].length;
      out.push({ t: 'ident', text: word[0], quoted: false, pos, end: i });
      continue;
    }
    const op = /^(<=|>=|<>|!=|==|[=<>(),.])/.exec(text.slice(i));
    if (op) {
      i += op[0].length;
      out.push({ t: 'op', text: op[0], pos, end: i });
      continue;
    }
    fail(`unexpected character ${JSON.stringify(String.fromCodePoint(text.codePointAt(i)!))}`, pos);
  }
  out.push({ t: 'end', pos: text.length, end: text.length });
  return out;
}

function describeToken(tok: Token): string {
  switch (tok.t) {
    case 'end': return 'end of input';
    case 'string': return `'${tok.text.replace(/'/g, "''")}'`;
    case 'hex': return 'a hex literal';
    case 'ident': return tok.quoted ? JSON.stringify(tok.text) : `'${tok.text}'`;
    default: return `'${tok.text}'`;
  }
}

/** Parses filter text into an `Expr`. Errors are `invalid-input` naming what was expected and where. */
export function parseFilter(text: string): Expr {
  // An empty filter is a mistake (an unset shell variable, a lost quote), not "every row": a
  // delete that read it as TRUE would empty the table.
  if (text.trim() === '') throw invalidInput('filter: the filter is empty; expected a condition such as "id = 1"');
  const tokens = tokenize(text);
  let k = 0;
  const peek = (ahead = 0) => tokens[Math.min(k + ahead, tokens.length - 1)];
  const next = () => tokens[k++];
  const isKeyword = (tok: Token, word: string) => tok.t === 'ident' && !tok.quoted && tok.text.toUpperCase() === word;
  const isOp = (tok: Token, op: string) => tok.t === 'op' && tok.text === op;
  const expected = (what: string, after: Token | undefined): never => {
    const tok = peek();
    const where = after ? ` after ${describeToken(after)}` : '';
    throw invalidInput(`filter: expected ${what}${where} at column ${tok.pos + 1}, found ${describeToken(tok)}`, { column: tok.pos + 1 });
  };

  const literal = (after: Token): Literal => {
    const tok = peek();
    if (tok.t === 'string') return next(), tok.text;
    if (tok.t === 'number') return next(), { number: tok.text };
    if (tok.t === 'hex') return next(), tok.bytes;
    if (tok.t === 'ident' && !tok.quoted) {
      const upper = tok.text.toUpperCase();
      if (upper === 'TRUE' || upper === 'FALSE') return next(), upper === 'TRUE';
      if (upper === 'NULL') fail('NULL can only follow IS (write IS NULL or IS NOT NULL)', tok.pos);
      // DATE '2024-01-01' and friends: the column's type decides the meaning, the keyword is noise.
      if (TYPED_LITERAL.has(upper) && peek(1).t === 'string') {
        next();
        return (next() as { text: string }).text;
      }
    }
    return expected('a value', after);
  };

  const column = (): string[] => {
    const path: string[] = [];
    for (;;) {
      const tok = peek();
      if (tok.t !== 'ident' || (!tok.quoted && KEYWORDS.has(tok.text.toUpperCase()))) {
        return expected(path.length === 0 ? 'a column name' : 'a name', path.length === 0 ? undefined : tokens[k - 1]);
      }
      next();
      path.push(tok.text);
      if (!isOp(peek(), '.')) return path;
      next();
    }
  };

  const startsLiteral = (tok: Token) => {
    if (tok.t === 'string' || tok.t === 'number' || tok.t === 'hex') return true;
    if (tok.t !== 'ident' || tok.quoted) return false;
    const upper = tok.text.toUpperCase();
    return TYPED_LITERAL.has(upper) && peek(1).t === 'string';
  };

  const predicate = (): Expr => {
    // `literal op column`, read as `column mirrored-op literal`.
    if (startsLiteral(peek())) {
      const litTok = peek();
      const value = literal(litTok);
      const opTok = peek();
      const op = opTok.t === 'op' ? COMPARISONS[opTok.text] : undefined;
      if (!op) return expected('a comparison operator', tokens[k - 1]);
      next();
      return { kind: 'pred', op: MIRROR[op], column: column(), value };
    }
    const path = column();
    const nameTok = tokens[k - 1];
    const tok = peek();
    if (tok.t === 'op' && COMPARISONS[tok.text]) {
      next();
      return { kind: 'pred', op: COMPARISONS[tok.text], column: path, value: literal(tok) };
    }
    let negated = false;
    let notTok: Token | undefined;
    if (isKeyword(tok, 'NOT') && (isKeyword(peek(1), 'IN') || isKeyword(peek(1), 'BETWEEN'))) {
      notTok = next();
      negated = true;
    }
    if (isKeyword(peek(), 'IN')) {
      const inTok = next();
      if (!isOp(peek(), '(')) return expected("'(' to start the IN list", inTok);
      const open = next();
      const values: Literal[] = [literal(open)];
      while (isOp(peek(), ',')) values.push(literal(next()));
      if (!isOp(peek(), ')')) return expected("',' or ')' in the IN list", tokens[k - 1]);
      next();
      return { kind: 'pred', op: negated ? 'not-in' : 'in', column: path, values };
    }
    if (isKeyword(peek(), 'BETWEEN')) {
      const betweenTok = next();
      const low = literal(betweenTok);
      if (!isKeyword(peek(), 'AND')) return expected('AND in BETWEEN ... AND ...', tokens[k - 1]);
      const high = literal(next());
      const range: Expr = {
        kind: 'and',
        left: { kind: 'pred', op: 'gt-eq', column: path, value: low },
        right: { kind: 'pred', op: 'lt-eq', column: [...path], value: high },
      };
      return negated ? { kind: 'not', child: range } : range;
    }
    if (negated) return expected('IN or BETWEEN', notTok);
    if (isKeyword(peek(), 'IS')) {
      const isTok = next();
      const not = isKeyword(peek(), 'NOT');
      if (not) next();
      const what = peek();
      if (isKeyword(what, 'NULL')) return next(), { kind: 'pred', op: not ? 'not-null' : 'is-null', column: path };
      if (what.t === 'ident' && !what.quoted && what.text.toUpperCase() === 'NAN') return next(), { kind: 'pred', op: not ? 'not-nan' : 'is-nan', column: path };
      return expected(not ? 'NULL or NAN' : 'NULL, NOT NULL, NAN or NOT NAN', not ? tokens[k - 1] : isTok);
    }
    // A bare column is a boolean test: `active` means `active = TRUE`.
    if (tok.t === 'end' || isOp(tok, ')') || isKeyword(tok, 'AND') || isKeyword(tok, 'OR')) {
      return { kind: 'pred', op: 'eq', column: path, value: true };
    }
    return expected('an operator (=, !=, <>, <, <=, >, >=, IN, NOT IN, BETWEEN, IS)', nameTok);
  };

  const primary = (): Expr => {
    const tok = peek();
    if (isOp(tok, '(')) {
      next();
      const inner = or();
      if (!isOp(peek(), ')')) {
        const at = peek();
        throw invalidInput(`filter: expected ')' at column ${at.pos + 1} to close '(' at column ${tok.pos + 1}, found ${describeToken(at)}`, { column: at.pos + 1 });
      }
      next();
      return inner;
    }
    if (tok.t === 'ident' && (isKeyword(tok, 'TRUE') || isKeyword(tok, 'FALSE'))) {
      const value = tok.text.toUpperCase() === 'TRUE';
      const after = peek(1);
      // TRUE = flag reads as a comparison; a lone TRUE is a constant.
      if (!(after.t === 'op' && COMPARISONS[after.text])) return next(), { kind: value ? 'true' : 'false' };
      next();
      const op = COMPARISONS[(next() as { text: string }).text];
      return { kind: 'pred', op: MIRROR[op], column: column(), value };
    }
    if (tok.t === 'end') return expected('a condition', k > 0 ? tokens[k - 1] : undefined);
    return predicate();
  };

  const not = (): Expr => {
    if (isKeyword(peek(), 'NOT')) {
      next();
      return { kind: 'not', child: not() };
    }
    return primary();
  };

  const and = (): Expr => {
    let left = not();
    while (isKeyword(peek(), 'AND')) {
      next();
      left = { kind: 'and', left, right: not() };
    }
    return left;
  };

  const or = (): Expr => {
    let left = and();
    while (isKeyword(peek(), 'OR')) {
      next();
      left = { kind: 'or', left, right: and() };
    }
    return left;
  };

  const expr = or();
  if (peek().t !== 'end') return expected('AND, OR or end of input', tokens[k - 1]);
  return expr;
}

/** Filter text of an expression (for messages and `--explain`); parses back to the same `Expr`. */
export function formatFilter(expr: Expr): string {
  const name = (part: string) => (/^[\p{L}_][\p{L}\p{N}_$]*$/u.test(part) && !KEYWORDS.has(part.toUpperCase()) ? part : `"${part.replace(/"/g, '""')}"`);
  const col = (path: string[]) => path.map(name).join('.');
  const lit = (v: Literal | undefined): string => {
    if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
    if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
    if (typeof v === 'number' || typeof v === 'bigint') return String(v);
    if (v instanceof Uint8Array) return `X'${Array.from(v, (b) => b.toString(16).padStart(2, '0')).join('')}'`;
    if (v && typeof v === 'object') return v.number;
    return 'NULL';
  };
  const ops: Record<ComparisonOp, string> = { eq: '=', 'not-eq': '<>', lt: '<', 'lt-eq': '<=', gt: '>', 'gt-eq': '>=' };
  const go = (e: Expr, parent: 'or' | 'and' | 'not' | 'top'): string => {
    switch (e.kind) {
      case 'true': return 'TRUE';
      case 'false': return 'FALSE';
      case 'not': return `NOT ${go(e.child, 'not')}`;
      case 'and':
      case 'or': {
        const s = `${go(e.left, e.kind)} ${e.kind.toUpperCase()} ${go(e.right, e.kind === 'and' ? 'not' : 'and')}`;
        return parent === 'top' || parent === e.kind ? s : `(${s})`;
      }
    }
    const c = col(e.column);
    switch (e.op) {
      case 'is-null': return `${c} IS NULL`;
      case 'not-null': return `${c} IS NOT NULL`;
      case 'is-nan': return `${c} IS NAN`;
      case 'not-nan': return `${c} IS NOT NAN`;
      case 'in': return `${c} IN (${(e.values ?? []).map(lit).join(', ')})`;
      case 'not-in': return `${c} NOT IN (${(e.values ?? []).map(lit).join(', ')})`;
      default: return `${c} ${ops[e.op]} ${lit(e.value)}`;
    }
  };
  return go(expr, 'top');
}
