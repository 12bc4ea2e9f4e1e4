/**
 * The one error tree of cloudbrowser. Every error the library throws is a {@link CloudBrowserError}
 * with a stable `code`; messages name the operation, method, path and status, never a secret.
 */

/** Where a failed request was going: used in messages and kept on the error. */
export interface RequestInfo {
  /** The library operation, such as `browsers.create`. */
  readonly operation: string;
  readonly method: string;
  /** The path with its query, without the host. */
  readonly path: string;
}

/** One entry of a 422 `HTTPValidationError` body. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** The base of every error cloudbrowser throws. */
export class CloudBrowserError extends Error {
  /** A stable machine-readable name for the failure. */
  readonly code: string = 'cloudbrowser_error';
  override readonly name: string = 'CloudBrowserError';
}

/** The client was constructed without something it needs (an API key, a base URL). */
export class ConfigurationError extends CloudBrowserError {
  override readonly code = 'configuration_error';
  override readonly name = 'ConfigurationError';
}

/** A request failed client-side validation: nothing was sent. */
export class RequestValidationError extends CloudBrowserError {
  override readonly code = 'request_validation_error';
  override readonly name = 'RequestValidationError';
  /** Each failed rule, with the path of the field it applies to. */
  readonly issues: readonly ValidationIssue[];
  readonly operation: string;

  constructor(operation: string, issues: readonly ValidationIssue[]) {
    super(`${operation}: invalid request: ${formatIssues(issues)}; nothing was sent`);
    this.operation = operation;
    this.issues = issues;
  }
}

/** The service answered 2xx with a body that does not hold the fields the client relies on. */
export class ResponseValidationError extends CloudBrowserError {
  override readonly code = 'response_validation_error';
  override readonly name = 'ResponseValidationError';
  readonly request: RequestInfo;
  readonly issues: readonly ValidationIssue[];

  constructor(request: RequestInfo, status: number, issues: readonly ValidationIssue[]) {
    super(`${describeRequest(request)} → ${status}: unexpected response body: ${formatIssues(issues)}`);
    this.request = request;
    this.issues = issues;
  }
}

/** The body of an error response, as far as it could be parsed. */
export type ErrorBody = { detail?: unknown; [key: string]: unknown } | string | null;

interface APIErrorInit {
  request: RequestInfo;
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/** The service answered with a non-2xx status. Subclasses by status are chosen in {@link APIError.from}. */
export class APIError extends CloudBrowserError {
  override readonly code: string = 'api_error';
  override readonly name: string = 'APIError';
  readonly status: number;
  /** Response headers, lower-case names. */
  readonly headers: Record<string, string>;
  /** The parsed body: usually `{detail}` where detail is a string, a validation array or an object. */
  readonly body: ErrorBody;
  /** The `detail` of the body when there is one. */
  readonly detail: unknown;
  /** The service's request id (`x-request-id`), when it sends one. */
  readonly requestId: string | undefined;
  readonly request: RequestInfo;

  constructor(init: APIErrorInit) {
    super(`${describeRequest(init.request)} → ${init.status}${summarise(init.body)}`);
    this.status = init.status;
    this.headers = init.headers;
    this.body = init.body;
    this.detail = typeof init.body === 'object' && init.body !== null ? init.body.detail : init.body;
    this.requestId = init.headers['x-request-id'] ?? init.headers['request-id'];
    this.request = init.request;
  }

  /** The error class for a status. */
  static from(init: APIErrorInit): APIError {
    const { status } = init;
    if (status === 400) return new BadRequestError(init);
    if (status === 401) return new AuthenticationError(init);
    if (status === 403) return new PermissionDeniedError(init);
    if (status === 404) return new NotFoundError(init);
    if (status === 409) return new ConflictError(init);
    if (status === 422) return new UnprocessableEntityError(init);
    if (status === 429) return new RateLimitError(init);
    if (status >= 500) return new InternalServerError(init);
    return new APIError(init);
  }
}

export class BadRequestError extends APIError {
  override readonly code = 'bad_request';
  override readonly name = 'BadRequestError';
}
export class AuthenticationError extends APIError {
  override readonly code = 'authentication_error';
  override readonly name = 'AuthenticationError';
}
export class PermissionDeniedError extends APIError {
  override readonly code = 'permission_denied';
  override readonly name = 'PermissionDeniedError';
}
export class NotFoundError extends APIError {
  override readonly code = 'not_found';
  override readonly name = 'NotFoundError';
}
export class ConflictError extends APIError {
  override readonly code = 'conflict';
  override readonly name = 'ConflictError';
}

/** 422: the service refused the request's content. `errors` is the `HTTPValidationError` list. */
export class UnprocessableEntityError extends APIError {
  override readonly code = 'unprocessable_entity';
  override readonly name = 'UnprocessableEntityError';
  readonly errors: readonly ValidationIssue[];

  constructor(init: APIErrorInit) {
    super(init);
    this.errors = Array.isArray(this.detail) ? this.detail.filter(isValidationIssue) : [];
  }
}

/**
 * 429. `limit` tells the two apart: `rate` (too many requests; retried after `retryAfterMs`) and
 * `concurrency` (too many active browsers or sessions; retrying does not help until some stop).
 */
export class RateLimitError extends APIError {
  override readonly code = 'rate_limit';
  override readonly name = 'RateLimitError';
  readonly limit: 'rate' | 'concurrency';
  /** How long the service asked us to wait, from `Retry-After` or the body; undefined if it did not say. */
  readonly retryAfterMs: number | undefined;

  constructor(init: APIErrorInit) {
    super(init);
    const body = typeof init.body === 'object' && init.body !== null ? init.body : {};
    const detail = typeof body.detail === 'string' ? body.detail : '';
    this.limit =
      body.error !== 'rate_limited' && /concurren|active (browser|session)/i.test(detail)
        ? 'concurrency'
        : 'rate';
    this.retryAfterMs = retryAfterMs(init.headers, body);
  }
}

export class InternalServerError extends APIError {
  override readonly code = 'internal_server_error';
  override readonly name = 'InternalServerError';
}

/** The service could not be reached, or the connection broke before a response arrived. */
export class APIConnectionError extends CloudBrowserError {
  override readonly code: string = 'connection_error';
  override readonly name: string = 'APIConnectionError';
  readonly request: RequestInfo;

  constructor(request: RequestInfo, reason: string, options?: ErrorOptions) {
    super(`${describeRequest(request)}: ${reason}`, options);
    this.request = request;
  }
}

/** The request took longer than its `timeoutMs`. */
export class APITimeoutError extends APIConnectionError {
  override readonly code = 'timeout';
  override readonly name = 'APITimeoutError';
}

/** The caller's `signal` aborted the request. */
export class APIUserAbortError extends CloudBrowserError {
  override readonly code = 'user_abort';
  override readonly name = 'APIUserAbortError';
  readonly request: RequestInfo;

  constructor(request: RequestInfo, options?: ErrorOptions) {
    super(`${describeRequest(request)}: aborted by the caller`, options);
    this.request = request;
  }
}

/**
 * The local service found no Chromium to launch, or `chromePath` / `CHROME_PATH` points at
 * something that is not an executable file. The message lists where it looked and how to get one.
 */
export class ChromiumNotFoundError extends CloudBrowserError {
  override readonly code = 'chromium_not_found';
  override readonly name = 'ChromiumNotFoundError';
  /** Every place that was looked at, in the order it was looked at. */
  readonly searched: readonly string[];

  constructor(message: string, searched: readonly string[]) {
    super(message);
    this.searched = searched;
  }
}

interface ChromiumLaunchErrorInit {
  executablePath: string;
  exitCode?: number | null;
  signal?: string | null;
  /** The last lines Chromium wrote to stderr, already stripped of anything secret. */
  stderrTail?: string;
}

/** Chromium could not be started, exited before it was ready, or did not come up in time. */
export class ChromiumLaunchError extends CloudBrowserError {
  override readonly code = 'chromium_launch_failed';
  override readonly name = 'ChromiumLaunchError';
  readonly executablePath: string;
  /** The exit code, when Chromium exited before it was ready. */
  readonly exitCode: number | null;
  /** The signal that ended Chromium, when one did. */
  readonly signal: string | null;
  /** The last lines Chromium wrote to stderr (also at the end of the message). */
  readonly stderrTail: string;

  constructor(reason: string, init: ChromiumLaunchErrorInit, options?: ErrorOptions) {
    const tail = init.stderrTail ? `\nlast lines of its stderr:\n${init.stderrTail}` : '';
    super(`launching Chromium (${init.executablePath}): ${reason}${tail}`, options);
    this.executablePath = init.executablePath;
    this.exitCode = init.exitCode ?? null;
    this.signal = init.signal ?? null;
    this.stderrTail = init.stderrTail ?? '';
  }
}

/** A command on a local Chromium's private control channel failed, or Chromium exited before it answered. */
export class ChromiumProtocolError extends CloudBrowserError {
  override readonly code = 'chromium_protocol_error';
  override readonly name = 'ChromiumProtocolError';
  /** The CDP method that was sent. */
  readonly method: string;

  constructor(method: string, reason: string) {
    super(`Chromium control channel: ${method}: ${reason}`);
    this.method = method;
  }
}

/** Why {@link BrowserConnectError} was thrown. */
export type BrowserConnectFailure = 'failed' | 'timeout' | 'aborted' | 'not_active';

/**
 * A browser framework (Playwright, Puppeteer) could not be connected to a cloud browser: the
 * connect failed (`failed`), took longer than `connectTimeoutMs` (`timeout`), was aborted by the
 * caller's signal (`aborted`), or the browser has no CDP endpoint to connect to (`not_active`).
 * The message says what happened to the browser (stopped, or left as it was). Frameworks echo
 * URLs in their errors: the API key and the secret parts of `cdpUrl` are cut out of the message
 * and of the `cause` chain, which holds redacted copies of the framework's errors.
 */
export class BrowserConnectError extends CloudBrowserError {
  override readonly code = 'browser_connect_failed';
  override readonly name = 'BrowserConnectError';
  readonly reason: BrowserConnectFailure;
  /** The browser that was being connected to. */
  readonly browserId: string;

  constructor(
    init: { message: string; reason: BrowserConnectFailure; browserId: string },
    options?: ErrorOptions,
  ) {
    super(init.message, options);
    this.reason = init.reason;
    this.browserId = init.browserId;
  }
}

function describeRequest({ operation, method, path }: RequestInfo): string {
  return `${operation} (${method} ${path})`;
}

function formatIssues(issues: readonly ValidationIssue[]): string {
  return issues.map((i) => `${i.loc.join('.') || '(root)'}: ${i.msg}`).join('; ');
}

function isValidationIssue(value: unknown): value is ValidationIssue {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return Array.isArray(v.loc) && typeof v.msg === 'string' && typeof v.type === 'string';
}

function summarise(body: ErrorBody): string {
  const detail = typeof body === 'object' && body !== null ? body.detail : body;
  let text: string;
  if (detail === undefined || detail === null || detail === '') return '';
  if (typeof detail === 'string') text = detail;
  else if (Array.isArray(detail) && detail.every(isValidationIssue)) text = formatIssues(detail);
  else text = JSON.stringify(detail);
  return `: ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`;
}

const MAX_SECONDS = 24 * 60 * 60;

/** Parses a `Retry-After` header (seconds or an HTTP date) into milliseconds. Not public. */
export function retryAfterHeaderMs(headers: Record<string, string>): number | undefined {
  const header = headers['retry-after'];
  if (header === undefined || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds, MAX_SECONDS) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Parses `Retry-After` (seconds or an HTTP date), then `retry_after_seconds`, then `X-RateLimit-Reset`. */
function retryAfterMs(headers: Record<string, string>, body: Record<string, unknown>): number | undefined {
  const fromHeader = retryAfterHeaderMs(headers);
  if (fromHeader !== undefined) return fromHeader;
  const fromBody = body.retry_after_seconds;
  if (typeof fromBody === 'number' && fromBody >= 0) return Math.min(fromBody, MAX_SECONDS) * 1000;
  const reset = Number(headers['x-ratelimit-reset']);
  if (headers['x-ratelimit-reset'] !== undefined && Number.isFinite(reset) && reset >= 0) {
    return Math.min(reset, MAX_SECONDS) * 1000;
  }
  return undefined;
}

/**
 * `runs.wait` or `sessions.wait` gave up after its `timeoutMs`. Only the waiting stopped: the run or
 * session was NOT cancelled and goes on (and is billed) on the service until it ends or is cancelled.
 */
export class WaitTimeoutError extends CloudBrowserError {
  override readonly code = 'wait_timeout';
  override readonly name = 'WaitTimeoutError';
  /** The library operation, such as `runs.wait`. */
  readonly operation: string;
  /** The id of the run or session waited for. */
  readonly id: string;
  readonly timeoutMs: number;
  /** The last status seen before giving up, if one was read. */
  readonly lastStatus: string | undefined;

  constructor(init: { operation: string; what: string; id: string; timeoutMs: number; lastStatus?: string }) {
    const seen = init.lastStatus === undefined ? 'no status was read' : `last status: ${init.lastStatus}`;
    super(
      `${init.operation}: ${init.what} ${init.id} did not finish within ${init.timeoutMs} ms (${seen}); ` +
        `the ${init.what} was NOT cancelled and keeps running on the service: wait again, or cancel it`,
    );
    this.operation = init.operation;
    this.id = init.id;
    this.timeoutMs = init.timeoutMs;
    this.lastStatus = init.lastStatus;
  }
}

/** Why {@link WebhookVerificationError} refused a delivery. */
export type WebhookFailure =
  | 'missing_signature'
  | 'missing_timestamp'
  | 'malformed_signature'
  | 'malformed_timestamp'
  | 'malformed_body'
  | 'bad_signature'
  | 'stale_timestamp'
  | 'future_timestamp';

/**
 * `verifyWebhook` refused a delivery: `code` says why. Never trust the body of a refused delivery;
 * the message names headers and limits, never the secret or the expected signature.
 */
export class WebhookVerificationError extends CloudBrowserError {
  override readonly code: WebhookFailure;
  override readonly name = 'WebhookVerificationError';

  constructor(code: WebhookFailure, message: string) {
    super(`verifyWebhook: ${message}`);
    this.code = code;
  }
}

/**
 * The network observer (`observeNetwork`) could not connect to a browser, could not attach to it, or
 * was given something that is not a live browser. Messages name the host, never the `cdpUrl`'s path,
 * which holds the browser's secret.
 */
export class NetworkObserverError extends CloudBrowserError {
  override readonly code = 'network_observer_error';
  override readonly name = 'NetworkObserverError';
}
