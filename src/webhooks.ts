import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { ConfigurationError, WebhookVerificationError } from './errors.js';
import { canonicalJson, type JsonNode, parseJson, toValue } from './internal/canonical-json.js';

/** The kinds of webhook deliveries known; the service adds more over time. */
export type WebhookEventType = 'session.status.update' | (string & Record<never, never>);

/** A verified webhook delivery: the envelope the service signed. */
export interface WebhookEvent {
  type: WebhookEventType;
  /** When the event happened, as the service wrote it (an ISO 8601 date-time). */
  timestamp: string;
  /** The event's fields, such as `session_id`, `status` and `output` of a session update. */
  payload: Record<string, unknown>;
}

/** The headers of a request: a fetch `Headers`, or Node's `req.headers` (any name case). */
export type WebhookHeaders =
  | { get(name: string): string | null }
  | Record<string, string | readonly string[] | undefined>;

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /**
   * The body exactly as it arrived, as text or bytes: not a parsed object, which has lost what the
   * signature covers (key order aside, number spellings such as `1.0`).
   */
  rawBody: string | Uint8Array;
  headers: WebhookHeaders;
  /** The signing secret; several are tried in turn while one is being rotated. */
  secret: string | readonly string[];
  /** How far the signed timestamp may be from now, either way, in seconds. @default 300 */
  toleranceSec?: number;
  /** The current time, for tests and replays. @default new Date() */
  now?: Date;
  /** The header with the lower-case hex HMAC-SHA256. Any case. @default 'X-Service-Signature' */
  signatureHeader?: string;
  /** The header with the Unix-seconds timestamp. Any case. @default 'X-Service-Timestamp' */
  timestampHeader?: string;
}

const DEFAULT_TOLERANCE_SEC = 300;

/**
 * Checks a webhook delivery and returns its event. The signature is HMAC-SHA256 over
 * `<timestamp>.<canonical body>`, where the canonical body is the envelope re-serialised from the
 * raw text: keys sorted by Unicode code point, no spaces, every non-ASCII character escaped as
 * `\uXXXX` (surrogate pairs above U+FFFF), numbers exactly as written. It is compared in constant
 * time, and the timestamp must be within `toleranceSec` of now.
 *
 * @throws {WebhookVerificationError} with `code` saying why: `missing_signature`,
 * `missing_timestamp`, `malformed_signature`, `malformed_timestamp`, `malformed_body`,
 * `bad_signature`, `stale_timestamp` or `future_timestamp`.
 *
 * @example
 * app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
 *   const event = verifyWebhook({ rawBody: req.body, headers: req.headers, secret });
 *   if (event.type === 'session.status.update') console.log(event.payload.status);
 *   res.sendStatus(204);
 * });
 */
export function verifyWebhook(options: VerifyWebhookOptions): WebhookEvent {
  const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
  if (secrets.length === 0 || secrets.some((s) => typeof s !== 'string' || s === '')) {
    throw new ConfigurationError('verifyWebhook: secret must be a non-empty string (or a list of them)');
  }
  const tolerance = options.toleranceSec ?? DEFAULT_TOLERANCE_SEC;
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new ConfigurationError('verifyWebhook: toleranceSec must be a number of seconds, 0 or more');
  }
  const signatureHeader = options.signatureHeader ?? 'X-Service-Signature';
  const timestampHeader = options.timestampHeader ?? 'X-Service-Timestamp';

  const signature = header(options.headers, signatureHeader);
  if (signature === undefined) {
    throw new WebhookVerificationError('missing_signature', `no ${signatureHeader} header`);
  }
  const timestamp = header(options.headers, timestampHeader);
  if (timestamp === undefined) {
    throw new WebhookVerificationError('missing_timestamp', `no ${timestampHeader} header`);
  }
  if (!/^\d{1,12}$/.test(timestamp)) {
    throw new WebhookVerificationError(
      'malformed_timestamp',
      `the ${timestampHeader} header is not a Unix time in seconds`,
    );
  }
  if (!/^[0-9a-fA-F]+$/.test(signature)) {
    throw new WebhookVerificationError(
      'malformed_signature',
      `the ${signatureHeader} header is not a hex HMAC-SHA256`,
    );
  }

  let root: JsonNode;
  try {
    root = parseJson(decodeBody(options.rawBody));
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new WebhookVerificationError('malformed_body', `the body is not valid JSON: ${error.message}`);
  }
  const signed = `${timestamp}.${canonicalJson(root)}`;
  const given = signature.toLowerCase();
  const matches = secrets.map((secret) => constantTimeEqual(given, hmacHex(secret, signed)));
  if (!matches.includes(true)) {
    throw new WebhookVerificationError(
      'bad_signature',
      `the ${signatureHeader} header does not match the body and timestamp`,
    );
  }

  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const age = now - Number(timestamp);
  if (age > tolerance) {
    throw new WebhookVerificationError(
      'stale_timestamp',
      `the delivery was signed ${age} s ago, more than the tolerance of ${tolerance} s`,
    );
  }
  if (-age > tolerance) {
    throw new WebhookVerificationError(
      'future_timestamp',
      `the delivery is signed ${-age} s in the future, more than the tolerance of ${tolerance} s`,
    );
  }
  return toEvent(root);
}

/** Reads a header by name in any case; a repeated header is ambiguous and reads as malformed. */
function header(headers: WebhookHeaders, name: string): string | undefined {
  let value: unknown;
  if (typeof headers.get === 'function') {
    value = (headers as { get(name: string): string | null }).get(name);
  } else {
    const wanted = name.toLowerCase();
    const record = headers as Record<string, string | readonly string[] | undefined>;
    const found = Object.keys(record).filter((key) => key.toLowerCase() === wanted);
    value = found.length > 1 ? found.map((key) => String(record[key])) : record[found[0] ?? ''];
  }
  if (Array.isArray(value)) {
    // Sent more than once: joined, it fails the format checks, as a fetch Headers' join does.
    if (value.length !== 1) return value.join(', ');
    value = value[0];
  }
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

function decodeBody(rawBody: unknown): string {
  if (typeof rawBody === 'string') return rawBody;
  if (rawBody instanceof Uint8Array) {
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(rawBody);
    } catch {
      throw new WebhookVerificationError('malformed_body', 'the body is not valid UTF-8');
    }
  }
  throw new WebhookVerificationError(
    'malformed_body',
    'rawBody must be the body as it arrived (a string or bytes); a parsed object cannot be verified',
  );
}

function hmacHex(secret: string, text: string): string {
  return createHmac('sha256', secret).update(text, 'utf8').digest('hex');
}

/** Equal strings in time that depends on neither their content nor whether their lengths differ. */
function constantTimeEqual(a: string, b: string): boolean {
  const key = randomBytes(32);
  const digest = (text: string) => createHmac('sha256', key).update(text, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

function toEvent(root: JsonNode): WebhookEvent {
  const envelope = toValue(root);
  const isObject = (value: unknown): value is Record<string, unknown> =>
    typeof value === 'object' && value !== null && !Array.isArray(value);
  if (
    !isObject(envelope) ||
    typeof envelope.type !== 'string' ||
    typeof envelope.timestamp !== 'string' ||
    !isObject(envelope.payload)
  ) {
    throw new WebhookVerificationError(
      'malformed_body',
      'the signed body is not an envelope {type: string, timestamp: string, payload: object}',
    );
  }
  return { type: envelope.type, timestamp: envelope.timestamp, payload: envelope.payload };
}
