import type { Page } from 'playwright-core';
import { hostAllowed, type ResolvedSecret } from './vault.js';

/**
 * How a run types a secret for its driver: only into a focused field of a page whose host the
 * secret allows, and with the value kept out of everything the run shows.
 */

/** The page's host is not one where the secret may be typed. */
export class SecretRefusedError extends Error {
  override readonly name = 'SecretRefusedError';
  /** The host of the page, or null for a page without one (`about:blank`, `data:`). */
  readonly host: string | null;

  constructor(message: string, host: string | null) {
    super(message);
    this.host = host;
  }
}

/**
 * Types `secret` into the focused field of `page` and resolves with the page's host. Refuses, with
 * {@link SecretRefusedError}, a host the secret does not allow, checked before and after the focus
 * is looked at (the page may navigate meanwhile); refuses a page with no editable field focused, or
 * with the focus inside a frame, whose host would be another's.
 */
export async function typeSecretInto(spec: {
  page: Page;
  secret: ResolvedSecret;
  redactor: Redactor;
  /** Throws when the run has ended meanwhile. */
  stillOpen: () => void;
}): Promise<string> {
  const { page, secret, redactor } = spec;
  const allowedHere = () => {
    const host = hostOf(page.url());
    return { host, allowed: host !== null && hostAllowed(host, secret.allowed) };
  };
  const before = allowedHere();
  if (!before.allowed || before.host === null) {
    const rules = secret.allowed.map((rule) => (rule.subdomainsOnly ? `*.${rule.host}` : rule.host));
    throw new SecretRefusedError(
      `typeSecret: the secret ${secret.alias} may not be typed on ${before.host ?? page.url()}; it is allowed on ${rules.join(', ')}`,
      before.host,
    );
  }
  const focus = await page.evaluate(FOCUS_CHECK);
  if (focus !== 'editable') {
    throw new Error(
      focus === 'frame'
        ? 'typeSecret: the focused field is inside a frame; focus a field of the page itself'
        : 'typeSecret: no editable field has the focus; focus the field first',
    );
  }
  const after = allowedHere();
  if (!after.allowed) {
    throw new SecretRefusedError(`typeSecret: the page left ${before.host} before typing`, after.host);
  }
  spec.stillOpen();
  const value = secret.value();
  redactor.add(value);
  try {
    await page.keyboard.insertText(value);
  } catch (error) {
    throw new Error(`typeSecret: typing ${secret.alias} failed: ${redactor.text(messageOf(error))}`);
  }
  return before.host;
}

/** Cuts every secret value (and the per-browser URL secret) out of what a run shows. */
export class Redactor {
  readonly #values = new Set<string>();

  constructor(secrets: readonly ResolvedSecret[]) {
    for (const secret of secrets) for (const value of secret.staticValues) this.add(value);
  }

  /** Values shorter than 3 characters would cut ordinary text to pieces; they are left. */
  add(value: string): void {
    if (value.length >= 3) this.#values.add(value);
  }

  /** The secret part of a `cdpUrl` or `liveUrl`. */
  addUrlSecret(url: string | null): void {
    const secret = url === null ? undefined : /\/(?:cdp|live)\/([\w-]+)/.exec(url)?.[1];
    if (secret) this.add(secret);
  }

  text(text: string): string {
    let out = text;
    for (const value of [...this.#values].sort((a, b) => b.length - a.length)) {
      out = out.split(value).join('[secret]');
    }
    return out;
  }

  /** A JSON value with every string (keys too) redacted. */
  deep(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((item) => this.deep(item));
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [this.text(key), this.deep(item)]),
      );
    }
    return value;
  }
}

/** Runs in the page: what has the focus. Plain script text, as this code has no DOM types. */
const FOCUS_CHECK = `(() => {
  const el = document.activeElement;
  if (!el || el === document.body || el === document.documentElement) return 'none';
  if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') return 'frame';
  if (el.isContentEditable) return 'editable';
  const textual = ['text', 'password', 'email', 'tel', 'number', 'search', 'url'];
  const editable = el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' && textual.includes(el.type));
  return editable && !el.disabled && !el.readOnly ? 'editable' : 'none';
})()`;

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function hostOf(url: string): string | null {
  try {
    const { hostname } = new URL(url);
    return hostname === '' ? null : hostname;
  } catch {
    return null;
  }
}
