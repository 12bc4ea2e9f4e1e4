/**
 * JSON read with what canonical signing needs and `JSON.parse` loses: number literals as written,
 * keys in body order, and repeated keys refused; and the canonical form written from it (keys by
 * Unicode code point, no spaces, ASCII only). Not public.
 */

const MAX_DEPTH = 256;

/** A JSON value as the body wrote it: numbers keep their literal, objects their keys in order. */
export type JsonNode =
  | { kind: 'object'; entries: [string, JsonNode][] }
  | { kind: 'array'; items: JsonNode[] }
  | { kind: 'string'; value: string }
  | { kind: 'number'; literal: string }
  | { kind: 'literal'; literal: 'true' | 'false' | 'null' };

/**
 * A strict JSON (RFC 8259) parser that keeps what canonicalisation needs and refuses repeated keys;
 * a failure is a `SyntaxError`.
 */
export function parseJson(text: string): JsonNode {
  let at = 0;
  const fail = (why: string): never => {
    throw new SyntaxError(`${why} at offset ${at}`);
  };
  const skipSpace = () => {
    while (at < text.length) {
      const c = text.charCodeAt(at);
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return;
      at++;
    }
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

  const parseString = (): string => {
    at++; // the opening quote
    let out = '';
    for (;;) {
      if (at >= text.length) fail('unterminated string');
      const c = text.charCodeAt(at);
      if (c === 0x22) {
        at++;
        return out;
      }
      if (c < 0x20) fail('a control character in a string');
      if (c !== 0x5c) {
        out += text[at];
        at++;
        continue;
      }
      const escaped = text[at + 1];
      at += 2;
      switch (escaped) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = text.slice(at, at + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('a bad \\u escape');
          out += String.fromCharCode(Number.parseInt(hex, 16));
          at += 4;
          break;
        }
        default:
          at -= 2;
          fail('a bad escape');
      }
    }
  };

  const parseValue = (depth: number): JsonNode => {
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH}`);
    skipSpace();
    const c = text[at];
    if (c === '{') {
      at++;
      const entries: [string, JsonNode][] = [];
      const keys = new Set<string>();
      skipSpace();
      if (text[at] === '}') {
        at++;
        return { kind: 'object', entries };
      }
      for (;;) {
        skipSpace();
        if (text[at] !== '"') fail('expected a key');
        const key = parseString();
        // Two parsers may pick different values for a repeated key: refused, never guessed.
        if (keys.has(key)) fail(`the key ${JSON.stringify(key)} is repeated`);
        keys.add(key);
        skipSpace();
        if (text[at] !== ':') fail("expected ':'");
        at++;
        entries.push([key, parseValue(depth + 1)]);
        skipSpace();
        if (text[at] === ',') {
          at++;
          continue;
        }
        if (text[at] === '}') {
          at++;
          return { kind: 'object', entries };
        }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      at++;
      const items: JsonNode[] = [];
      skipSpace();
      if (text[at] === ']') {
        at++;
        return { kind: 'array', items };
      }
      for (;;) {
        items.push(parseValue(depth + 1));
        skipSpace();
        if (text[at] === ',') {
          at++;
          continue;
        }
        if (text[at] === ']') {
          at++;
          return { kind: 'array', items };
        }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return { kind: 'string', value: parseString() };
    for (const literal of ['true', 'false', 'null'] as const) {
      if (text.startsWith(literal, at)) {
        at += literal.length;
        return { kind: 'literal', literal };
      }
    }
    NUMBER.lastIndex = at;
    const number = NUMBER.exec(text);
    if (number === null) return fail('unexpected input');
    at += number[0].length;
    return { kind: 'number', literal: number[0] };
  };

  const root = parseValue(0);
  skipSpace();
  if (at !== text.length) fail('unexpected input after the value');
  return root;
}

/** Sorted keys by code point, `,` and `:` with no spaces, ASCII-only strings, numbers as written. */
export function canonicalJson(node: JsonNode): string {
  switch (node.kind) {
    case 'object':
      return `{${[...node.entries]
        .sort(([a], [b]) => compareCodePoints(a, b))
        .map(([key, value]) => `${quote(key)}:${canonicalJson(value)}`)
        .join(',')}}`;
    case 'array':
      return `[${node.items.map(canonicalJson).join(',')}]`;
    case 'string':
      return quote(node.value);
    case 'number':
    case 'literal':
      return node.literal;
  }
}

const SHORT_ESCAPES: Record<number, string> = {
  34: '\\"',
  92: '\\\\',
  8: '\\b',
  12: '\\f',
  10: '\\n',
  13: '\\r',
  9: '\\t',
};

/** A JSON string with every character outside printable ASCII escaped, one UTF-16 unit at a time. */
function quote(value: string): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    const short = SHORT_ESCAPES[unit];
    if (short !== undefined) out += short;
    else if (unit < 0x20 || unit > 0x7e) out += `\\u${unit.toString(16).padStart(4, '0')}`;
    else out += value[i];
  }
  return `${out}"`;
}

/** Orders by Unicode code point, where UTF-16 order would put U+10000 before U+E000. */
function compareCodePoints(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.codePointAt(i) as number;
    const y = b.codePointAt(j) as number;
    if (x !== y) return x - y;
    i += x > 0xffff ? 2 : 1;
    j += y > 0xffff ? 2 : 1;
  }
  return a.length - i - (b.length - j);
}

export function toValue(node: JsonNode): unknown {
  switch (node.kind) {
    case 'object': {
      const object: Record<string, unknown> = {};
      // defineProperty, so that a "__proto__" key is a key and not a prototype.
      for (const [key, value] of node.entries) {
        Object.defineProperty(object, key, {
          value: toValue(value),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return object;
    }
    case 'array':
      return node.items.map(toValue);
    case 'string':
      return node.value;
    case 'number':
      return Number(node.literal);
    case 'literal':
      return node.literal === 'null' ? null : node.literal === 'true';
  }
}
