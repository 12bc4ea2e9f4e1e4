/**
 * What the observer keeps of URLs and headers. Secrets are replaced by {@link REDACTED} before
 * anything is stored, so nothing secret can reach entries, events, summaries or HAR files.
 */

/** What a secret value is replaced with. */
export const REDACTED = '[redacted]';

/** Longest URL or header value kept; longer ones are cut, so a bound on entries is a bound on memory. */
export const MAX_VALUE_LENGTH = 8 * 1024;

/** `data:` URLs carry whole files; only their start is kept. */
const MAX_DATA_URL_LENGTH = 96;

/** Header names always redacted, unless allowed by name. */
const SECRET_HEADER_NAMES = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

/** Header names that look like they carry a credential: `x-api-key`, `x-auth-token`, `x-csrf-token`, … */
const SECRET_HEADER_PATTERN =
  /api[-_]?key|apikey|access[-_]?key|token|secret|passw(?:or)?d|credential|signature|session|csrf|xsrf|^x-(?:[\w-]*-)?auth/i;

/** Query parameter names always treated as secret (compared case-insensitively). */
const SECRET_QUERY_NAMES = new Set([
  'key',
  'sig',
  'code',
  'auth',
  'sid',
  'pwd',
  'pass',
  'jwt',
  'hash',
  'otp',
]);

/** Query parameter names that look like they carry a credential: `access_token`, `api_key`, `X-Amz-Signature`, … */
const SECRET_QUERY_PATTERN =
  /token|secret|passw(?:or)?d|api[-_]?key|apikey|access[-_]?key|signature|credential|session|auth/i;

/** Headers whose values are URLs: their secret query parameters are redacted like a request URL's. */
const URL_HEADERS = new Set(['location', 'referer', 'content-location', 'refresh']);

/** Names whose values are secret: a set of lower-case names and a list of patterns. */
interface Matcher {
  names: Set<string>;
  patterns: RegExp[];
}

export interface RedactionRules {
  /** Header names whose values are kept though they look secret. */
  allowHeaders: readonly string[];
  /** More header names (exact, case-insensitive) or patterns to redact. */
  redactHeaders: readonly (string | RegExp)[];
  /** Query parameter names whose values are kept though they look secret. */
  allowQueryParams: readonly string[];
  /** More query parameter names (exact, case-insensitive) or patterns to redact. */
  redactQueryParams: readonly (string | RegExp)[];
}

/** Redacts URLs and headers by a fixed set of rules. */
export class Redactor {
  readonly #headers: Matcher;
  readonly #allowHeaders: Set<string>;
  readonly #queryParams: Matcher;
  readonly #allowQueryParams: Set<string>;
  /** Header names already judged; pages send the same few dozen names over and over. */
  readonly #headerVerdicts = new Map<string, boolean>();

  constructor(rules: RedactionRules) {
    this.#headers = matcher(SECRET_HEADER_NAMES, SECRET_HEADER_PATTERN, rules.redactHeaders);
    this.#allowHeaders = new Set(rules.allowHeaders.map((name) => name.toLowerCase()));
    this.#queryParams = matcher(SECRET_QUERY_NAMES, SECRET_QUERY_PATTERN, rules.redactQueryParams);
    this.#allowQueryParams = new Set(rules.allowQueryParams.map((name) => name.toLowerCase()));
  }

  /** Whether a header's value is replaced. */
  isSecretHeader(name: string): boolean {
    const lower = name.toLowerCase();
    let verdict = this.#headerVerdicts.get(lower);
    if (verdict === undefined) {
      verdict = !this.#allowHeaders.has(lower) && matches(this.#headers, lower);
      // A page cannot grow this without bound by inventing header names.
      if (this.#headerVerdicts.size < 1_000) this.#headerVerdicts.set(lower, verdict);
    }
    return verdict;
  }

  /** Whether a query parameter's value is replaced. */
  isSecretQueryParam(name: string): boolean {
    const lower = name.toLowerCase();
    return !this.#allowQueryParams.has(lower) && matches(this.#queryParams, lower);
  }

  /**
   * The URL with secret query (and fragment) parameter values replaced, a password in it replaced,
   * and its length bounded. URLs without `?`, `#` or `@` come back unchanged, at no cost.
   */
  url(url: string): string {
    if (url.startsWith('data:')) {
      return url.length > MAX_DATA_URL_LENGTH ? `${url.slice(0, MAX_DATA_URL_LENGTH)}…` : url;
    }
    const withoutSecrets = url.includes('@') ? withoutPassword(url) : url;
    const hash = withoutSecrets.indexOf('#');
    const beforeHash = hash === -1 ? withoutSecrets : withoutSecrets.slice(0, hash);
    let result = this.#withQuery(beforeHash);
    if (hash !== -1) {
      // OAuth's implicit flow puts `#access_token=…` here; hash routers put `#/path?token=…`.
      const fragment = withoutSecrets.slice(hash + 1);
      result += `#${fragment.includes('?') ? this.#withQuery(fragment) : this.#params(fragment)}`;
    }
    return cut(result);
  }

  /** Redacts what follows the first `?`. */
  #withQuery(text: string): string {
    const query = text.indexOf('?');
    return query === -1 ? text : `${text.slice(0, query + 1)}${this.#params(text.slice(query + 1))}`;
  }

  /** Lower-case names, secret values replaced, URL values redacted, lengths bounded. */
  headers(headers: unknown): Record<string, string> {
    const result: Record<string, string> = {};
    if (typeof headers !== 'object' || headers === null) return result;
    let count = 0;
    for (const [rawName, rawValue] of Object.entries(headers as Record<string, unknown>)) {
      // A bound on the number of headers, as on their length.
      if (++count > 200) break;
      const name = rawName.toLowerCase();
      const value = typeof rawValue === 'string' ? rawValue : String(rawValue);
      if (this.isSecretHeader(name)) result[name] = REDACTED;
      else if (URL_HEADERS.has(name)) result[name] = this.#urlHeader(name, value);
      else result[name] = cut(value);
    }
    return result;
  }

  #urlHeader(name: string, value: string): string {
    // `refresh: 5; url=https://…`
    if (name === 'refresh')
      return cut(value.replace(/(url=)(.*)$/i, (_all, key, url) => key + this.url(url)));
    return this.url(value);
  }

  /** `a=1&token=x` → `a=1&token=[redacted]`; the names and their order are kept. */
  #params(params: string): string {
    if (!params.includes('=')) return params;
    const parts = params.split('&');
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      const equals = part.indexOf('=');
      if (equals <= 0) continue;
      if (this.isSecretQueryParam(decodeName(part.slice(0, equals)))) {
        parts[i] = `${part.slice(0, equals + 1)}${REDACTED}`;
      }
    }
    return parts.join('&');
  }
}

function matcher(names: Set<string>, pattern: RegExp, extra: readonly (string | RegExp)[]): Matcher {
  const result: Matcher = { names: new Set(names), patterns: [pattern] };
  for (const item of extra) {
    if (typeof item === 'string') result.names.add(item.toLowerCase());
    // A global or sticky pattern keeps state between tests; a copy without those flags does not.
    else result.patterns.push(new RegExp(item.source, item.flags.replace(/[gy]/g, '')));
  }
  return result;
}

function matches(matcher: Matcher, lowerName: string): boolean {
  if (matcher.names.has(lowerName)) return true;
  for (const pattern of matcher.patterns) if (pattern.test(lowerName)) return true;
  return false;
}

function decodeName(name: string): string {
  if (!name.includes('%') && !name.includes('+')) return name;
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
}

/** `https://user:pass@host/` → `https://user:[redacted]@host/`; a user name alone is kept. */
function withoutPassword(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme === -1) return url;
  const authorityStart = scheme + 3;
  let authorityEnd = url.length;
  for (const stop of ['/', '?', '#']) {
    const at = url.indexOf(stop, authorityStart);
    if (at !== -1 && at < authorityEnd) authorityEnd = at;
  }
  const at = url.lastIndexOf('@', authorityEnd);
  if (at < authorityStart) return url;
  const colon = url.indexOf(':', authorityStart);
  if (colon === -1 || colon > at) return url;
  return `${url.slice(0, colon + 1)}${REDACTED}${url.slice(at)}`;
}

function cut(value: string): string {
  return value.length > MAX_VALUE_LENGTH ? `${value.slice(0, MAX_VALUE_LENGTH)}…` : value;
}
