import { inspect } from 'node:util';

/** What a redacted secret reads as. */
const MARK = '[redacted]';
/** Shorter path segments are route words (`cdp`, `devtools`, `v1`), not credentials. */
const MIN_SECRET_LENGTH = 12;
/** How deep a `cause` chain is copied; deeper causes are dropped. */
const MAX_CAUSE_DEPTH = 8;

/**
 * Cuts secrets out of text and errors. Frameworks echo the URLs they connect to (Playwright's call
 * log, Puppeteer's WebSocket errors), and a `cdpUrl` carries a credential in its path or query, so
 * every message that may hold one goes through here before it reaches the caller.
 */
export class Redactor {
  #secrets: string[];
  readonly #known: readonly string[];

  /**
   * `secrets`: literal strings to cut out (an API key); `urls`: URLs whose credentials are cut out;
   * `known`: strings that are never secret even inside such a URL (the browser id).
   */
  constructor(init: {
    secrets?: readonly (string | undefined)[];
    urls?: readonly (string | null | undefined)[];
    known?: readonly string[];
  }) {
    const found = new Set<string>();
    for (const secret of init.secrets ?? []) if (secret) found.add(secret);
    for (const url of init.urls ?? []) if (url) for (const part of secretPartsOf(url)) found.add(part);
    for (const known of init.known ?? []) found.delete(known);
    this.#known = init.known ?? [];
    // Longest first, so a secret that contains another is cut whole.
    this.#secrets = [...found].sort((a, b) => b.length - a.length);
  }

  /** Also cuts the credentials of `url`: a WebSocket URL learnt while connecting, a new `cdpUrl`. */
  addUrl(url: string | null | undefined): void {
    if (!url) return;
    const added = secretPartsOf(url).filter((part) => !this.#known.includes(part));
    this.#secrets = [...new Set([...this.#secrets, ...added])].sort((a, b) => b.length - a.length);
  }

  /** `value` without secrets, and without terminal colour codes (Playwright colours its call log). */
  text(value: string): string {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape character is the point
    let out = value.replace(/\u001b\[[0-9;]*m/g, '');
    for (const secret of this.#secrets) {
      out = out.replaceAll(secret, MARK);
      const encoded = encodeURIComponent(secret);
      if (encoded !== secret) out = out.replaceAll(encoded, MARK);
    }
    return out;
  }

  /**
   * A copy of `error` that holds no secret: name, message, stack, `code` and a redacted `cause`
   * chain. Other properties are dropped, as they may hold URLs, sockets or requests.
   */
  error(error: unknown, depth = 0): Error {
    if (!(error instanceof Error)) return new Error(this.text(describe(error)));
    const cause =
      depth < MAX_CAUSE_DEPTH && error.cause !== undefined ? this.error(error.cause, depth + 1) : undefined;
    const copy = new Error(this.text(error.message), cause === undefined ? undefined : { cause });
    copy.name = error.name;
    copy.stack = this.text(error.stack ?? `${error.name}: ${error.message}`);
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') Object.assign(copy, { code });
    return copy;
  }
}

/** The parts of a URL that may be credentials: user info, long path segments, query values. */
function secretPartsOf(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const parts = [parsed.username, parsed.password].map(decode);
  for (const segment of parsed.pathname.split('/')) {
    if (segment.length >= MIN_SECRET_LENGTH) parts.push(decode(segment));
  }
  for (const [, value] of parsed.searchParams) if (value.length >= MIN_SECRET_LENGTH / 2) parts.push(value);
  return parts.filter((part) => part.length > 0);
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** Words for a thrown non-error, such as the `ErrorEvent` a WebSocket library rejects with. */
export function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  if (typeof value === 'string') return value;
  const message = (value as { message?: unknown } | null)?.message;
  if (typeof message === 'string' && message !== '') return message;
  return inspect(value, { depth: 1, breakLength: Number.POSITIVE_INFINITY });
}
