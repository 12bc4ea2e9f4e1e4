import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import type { NetworkObserver } from './observer.js';

/**
 * Options of `observeNetwork`. Safe by default: no bodies ever, no headers unless asked, and secret
 * header values and query parameters redacted before anything is stored.
 */
export interface ObserveNetworkOptions {
  /**
   * How many ended requests are kept; the oldest are pushed out first and counted in `dropped`,
   * so memory stays flat however long the browser lives.
   * @default 10_000
   */
  maxEntries?: number;
  /**
   * How many requests are tracked while in flight. Beyond it the oldest one (a long poll, a stream
   * that never ends) is recorded as `incomplete` to make room.
   * @default 1_000
   */
  maxInFlight?: number;
  /**
   * Record request and response headers (as sent and received, cookies included), with secret values
   * replaced by `[redacted]`: `authorization`, `proxy-authorization`, `cookie`, `set-cookie`, and
   * names that look like credentials (`x-api-key`, `*-api-key`, `*token*`, `*secret*`, `*session*`,
   * `*password*`, `*signature*`, `*credential*`, `*csrf*`, `x-*auth*`). URLs in `location` and
   * `referer` are redacted like request URLs.
   * @default false
   */
  headers?: boolean;
  /** Header names (case-insensitive) whose values are kept although they look secret. @default [] */
  allowHeaders?: readonly string[];
  /**
   * More header names to redact, on top of the built-in ones: a string is a whole name
   * (case-insensitive), a RegExp is tested against the lower-case name.
   * @default []
   */
  redactHeaders?: readonly (string | RegExp)[];
  /**
   * Query parameter names (case-insensitive) whose values are kept although they look secret.
   * Built-in secret names: `key`, `sig`, `code`, `auth`, `sid`, `pwd`, `pass`, `jwt`, `hash`, `otp`,
   * and names containing `token`, `secret`, `password`, `api_key`/`apikey`, `access_key`,
   * `signature`, `credential`, `session` or `auth`.
   * @default []
   */
  allowQueryParams?: readonly string[];
  /**
   * More query parameter names whose values are redacted in every URL (`?token=[redacted]`), on top
   * of the built-in ones: a string is a whole name (case-insensitive), a RegExp is tested against the
   * lower-case name. Parameters in a URL's fragment (`#access_token=…`) are treated the same.
   * @default []
   */
  redactQueryParams?: readonly (string | RegExp)[];
  /**
   * How many ended entries one `for await` loop may fall behind by before the oldest are let go
   * (counted in the stream's `dropped`).
   * @default 1_000
   */
  streamBufferSize?: number;
  /** Time limit of connecting and attaching to the browser, in milliseconds. @default 30_000 */
  timeoutMs?: number;
  /** Aborts connecting; `observeNetwork` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * A stopped observer (say, one whose connection was lost) to carry on from: the new observer
   * starts with its entries and its count of dropped ones. Its listeners and streams stay with it.
   */
  continueFrom?: NetworkObserver;
}

const nameList = z.array(z.string().min(1, 'must not be empty'));
const patternList = z.array(z.union([z.string().min(1, 'must not be empty'), z.instanceof(RegExp)]));
const count = (max: number) => z.number().int('must be a whole number').min(1).max(max);

const OptionsSchema = z.strictObject({
  maxEntries: count(1_000_000).default(10_000),
  maxInFlight: count(100_000).default(1_000),
  headers: z.boolean().default(false),
  allowHeaders: nameList.default([]),
  redactHeaders: patternList.default([]),
  allowQueryParams: nameList.default([]),
  redactQueryParams: patternList.default([]),
  streamBufferSize: count(1_000_000).default(1_000),
  timeoutMs: z.number().positive().max(600_000).default(30_000),
  signal: z.instanceof(AbortSignal).optional(),
  // Checked where the class is known: `observeNetwork`.
  continueFrom: z.custom<NetworkObserver>().optional(),
});

/** The options as validated, every default filled in. */
type ParsedOptions = z.output<typeof OptionsSchema>;

/** What an observer keeps of its options: `continueFrom` is used once, at the start. */
export type ObserverConfig = Omit<ParsedOptions, 'continueFrom'>;

/**
 * Fills the defaults and validates.
 * @throws {ConfigurationError} naming each bad option and its rule.
 */
export function normaliseOptions(options: ObserveNetworkOptions = {}): ParsedOptions {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${i.path.join('.') || '(options)'} ${i.message}`)
      .join('; ');
    throw new ConfigurationError(`observeNetwork: invalid options: ${problems}`);
  }
  return parsed.data;
}
