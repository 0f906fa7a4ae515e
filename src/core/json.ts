/**
 * JSON that keeps 64-bit integers exact. Iceberg snapshot IDs are random 63-bit numbers, which
 * `JSON.parse` would round. Integers outside the safe range parse as `bigint`; `bigint` values
 * serialize as plain JSON numbers.
 */

export type JsonValue = null | boolean | number | bigint | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object (not null, not an array). */
export function isJsonObject(x: unknown): x is Record<string, any> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

export function parseJson(text: string, source = 'json'): any {
  // Fast path: the engine's JSON.parse, with integers too long to be exact carried through as
  // marked strings. A text that could spell the marker itself takes the slow path.
  if (text.includes('\\u0001')) return parseJsonSlow(text, source);
  // First only the long integers that stand as values (after `:`, `,` or `[`, before `,`, `}` or
  // `]`) are marked, which touches a few places of a large metadata file instead of every token.
  // A match inside a string would close that string and leave a bare `\` behind it, which no JSON
  // parses: such a text falls through to the matching of strings and numbers below.
  let longValues = 0;
  const quick = text.replace(LONG_VALUES, (m: string, digits: string) => {
    longValues++;
    return `${m.slice(0, m.length - digits.length)}"${BIG_MARK_ESCAPED}${digits}"`;
  });
  if (longValues === 0 && !/\d{16}/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      return parseJsonSlow(text, source);
    }
  }
  try {
    const value = JSON.parse(quick);
    // Every long integer of the text stands as a value (none is a lone top-level number, none
    // has a fraction or exponent): the marked ones are all there is to revive.
    if (!/^\s*-?\d/.test(text)) return reviveMarked(value);
  } catch {
    // A long integer inside a string: match strings first below.
  }
  let marked = false;
  const prepared = text.replace(TOKENS, (m) => {
    if (m.charCodeAt(0) === 34 || m.length < 16 || !/^-?\d+$/.test(m)) return m;
    marked = true;
    return `"\\u0001big:${m}"`;
  });
  try {
    return marked ? JSON.parse(prepared, reviveBig) : JSON.parse(text);
  } catch {
    // Fall through to the slow parser: its message says where the text is malformed.
  }
  return parseJsonSlow(text, source);
}

/**
 * JSON strings, or JSON numbers (as the grammar defines them), left to right. The string pattern
 * is written as runs of plain characters between escapes: an alternation repeated per character
 * makes V8's regex engine recurse once per character, which overflows its stack on strings of a
 * few megabytes.
 */
const TOKENS = /"[^"\\]*(?:\\.[^"\\]*)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** A prefix no JSON text can produce: JSON forbids raw control characters inside strings. */
const BIG_MARK = '\u0001big:';
/** BIG_MARK as JSON text spells it inside a string. */
const BIG_MARK_ESCAPED = '\\u0001big:';
/** An integer of 16 or more digits standing as a value: an object member's, an array element. */
const LONG_VALUES = /[:,[]\s*(-?\d{16,})(?=\s*[,}\]])/g;

/** The marked strings of a parsed value as numbers (bigint when not exact as a number), in place. */
function reviveMarked(value: unknown): unknown {
  if (typeof value === 'string') return value.charCodeAt(0) === 1 ? reviveBig('', value) : value;
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = reviveMarked(value[i]);
    return value;
  }
  const obj = value as Record<string, unknown>;
  for (const k in obj) {
    const v = obj[k];
    if (typeof v === 'object' || typeof v === 'string') obj[k] = reviveMarked(v);
  }
  return obj;
}

function reviveBig(_key: string, value: unknown): unknown {
  if (typeof value === 'string' && value.startsWith(BIG_MARK)) {
    const digits = value.slice(BIG_MARK.length);
    const n = Number(digits);
    return Number.isSafeInteger(n) ? n : BigInt(digits);
  }
  return value;
}

function parseJsonSlow(text: string, source: string): any {
  let i = 0;
  const fail = (what: string): never => {
    const before = text.slice(0, i);
    const line = before.split('\n').length;
    const column = i - before.lastIndexOf('\n');
    throw new SyntaxError(`${source}: ${what} at line ${line}, column ${column}`);
  };
  const ws = () => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
  };
  const value = (): any => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, any> = {};
      ws();
      if (text[i] === '}') { i++; return obj; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected '"' but found ${JSON.stringify(text[i] ?? 'end of input')}`);
        const key = string();
        ws();
        if (text[i] !== ':') fail(`expected ':' but found ${JSON.stringify(text[i] ?? 'end of input')}`);
        i++;
        obj[key] = value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return obj; }
        fail(`expected ',' or '}' but found ${JSON.stringify(text[i] ?? 'end of input')}`);
      }
    }
    if (c === '[') {
      i++;
      const arr: any[] = [];
      ws();
      if (text[i] === ']') { i++; return arr; }
      for (;;) {
        arr.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return arr; }
        fail(`expected ',' or ']' but found ${JSON.stringify(text[i] ?? 'end of input')}`);
      }
    }
    if (c === '"') return string();
    if (c === 't' && text.startsWith('true', i)) { i += 4; return true; }
    if (c === 'f' && text.startsWith('false', i)) { i += 5; return false; }
    if (c === 'n' && text.startsWith('null', i)) { i += 4; return null; }
    return number();
  };
  const string = (): string => {
    const start = i;
    i++;
    let simple = true;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 34) break;
      if (c === 92) { simple = false; i += 2; continue; }
      i++;
    }
    if (i >= text.length) fail('unterminated string');
    i++;
    const raw = text.slice(start, i);
    return simple ? raw.slice(1, -1) : JSON.parse(raw);
  };
  const number = (): number | bigint => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail(`unexpected ${JSON.stringify(text[i] ?? 'end of input')}`);
    const raw = m![0];
    i += raw.length;
    if (m![2] === undefined && m![3] === undefined) {
      const n = Number(raw);
      return Number.isSafeInteger(n) ? n : BigInt(raw);
    }
    return Number(raw);
  };
  const result = value();
  ws();
  if (i < text.length) fail(`unexpected ${JSON.stringify(text[i])} after the value`);
  return result;
}

/** `JSON.stringify` that writes `bigint` as a number; `indent` as in `JSON.stringify`. */
export function stringifyJson(value: unknown, indent?: number): string {
  if (indent === undefined) {
    const out = compact(value);
    return out === undefined ? (undefined as unknown as string) : out;
  }
  const marks = new Map<string, string>();
  let n = 0;
  const text = JSON.stringify(
    value,
    (_k, v) => {
      if (typeof v === 'bigint') {
        const mark = `\u0000bigint${n++}\u0000`;
        marks.set(mark, v.toString());
        return mark;
      }
      return v;
    },
    indent,
  );
  if (marks.size === 0) return text;
  return text.replace(/"\\u0000bigint\d+\\u0000"/g, (m) => marks.get(JSON.parse(m))!);
}

/**
 * Compact serialization with bigint support, written out by hand: `JSON.stringify` with a
 * replacer calls back for every key and is several times slower on large metadata files.
 * Follows `JSON.stringify`: `toJSON` is honoured, undefined/functions are skipped in objects and
 * become null in arrays, non-finite numbers become null.
 */
function compact(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'bigint':
      return v.toString();
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (v === null) return 'null';
  const obj = v as { toJSON?: () => unknown };
  if (typeof obj.toJSON === 'function') return compact(obj.toJSON());
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ',';
      out += compact(v[i]) ?? 'null';
    }
    return out + ']';
  }
  if (v instanceof Map || v instanceof Set) return '{}';
  let out = '{';
  let first = true;
  for (const key of Object.keys(v as object)) {
    const item = compact((v as Record<string, unknown>)[key]);
    if (item === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + item;
    first = false;
  }
  return out + '}';
}
