/**
 * Connecting a framework to a cloud browser, framework-free: the WebSocket lookup under `cdpUrl`,
 * the deadline and abort, a late connection closed, and framework errors turned into
 * {@link BrowserConnectError}s with their secrets cut out.
 */
import {
  BrowserConnectError,
  type BrowserConnectFailure,
  CloudBrowserError,
  ConfigurationError,
} from 'cloudbrowser';
import { describe, type Redactor } from './redact.js';

/**
 * How one framework connects. `connect` resolves to whatever the adapter's handle exposes (the
 * browser and its first page); `signal` aborts what the framework lets us abort, and a connection
 * that completes anyway after the caller gave up is disconnected by the shared code.
 */
export interface Driver<C> {
  /** `Playwright` or `Puppeteer`, named in error messages. */
  readonly name: string;
  /**
   * Whether the framework enforces the deadline itself (Playwright's `timeout`). The shared timer then
   * waits a little longer, so that the framework's own error, whose call log says where it was stuck,
   * is the one the caller sees.
   */
  readonly enforcesDeadline: boolean;
  /** Headers for the CDP endpoint, also sent when its WebSocket URL is looked up. */
  readonly headers?: Record<string, string> | undefined;
  /**
   * Connects to the browser's WebSocket, as `<cdpUrl>/json/version` gives it; a framework that has a
   * timeout of its own is given the time left until `deadline` (a `Date.now()` value).
   */
  connect(webSocketUrl: string, init: { deadline: number; signal: AbortSignal }): Promise<C>;
  disconnect(connection: C): Promise<void>;
  /** Calls `listener` when `connection` is lost, whoever ended it. */
  onDisconnected(connection: C, listener: () => void): void;
}

/** How much later than `connectTimeoutMs` the shared timer gives up when the framework has a timeout of its own. */
const BACKSTOP_GRACE_MS = 1_000;

/** A failed connect, before the transaction has said what became of the browser. */
export class ConnectFailure extends Error {
  readonly reason: BrowserConnectFailure;

  constructor(reason: BrowserConnectFailure, detail: string, options?: ErrorOptions) {
    super(detail, options);
    this.reason = reason;
  }
}

/**
 * Connects `driver` to `cdpUrl` within `timeoutMs`, or until `signal` aborts. A connection the
 * framework completes after that is closed as soon as it opens.
 */
export async function connectWithin<C>(
  driver: Driver<C>,
  cdpUrl: string,
  init: { timeoutMs: number; signal: AbortSignal | undefined; redactor: Redactor },
): Promise<C> {
  const { timeoutMs, signal, redactor } = init;
  const deadline = Date.now() + timeoutMs;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(
    () => {
      timedOut = true;
      controller.abort();
    },
    timeoutMs + (driver.enforcesDeadline ? BACKSTOP_GRACE_MS : 0),
  );
  const onAbort = () => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) controller.abort();
  const gaveUp = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  gaveUp.catch(() => {});
  const lookup = AbortSignal.any([controller.signal, AbortSignal.timeout(timeoutMs)]);
  const attempt = webSocketUrl(cdpUrl, driver.headers, lookup).then((url) => {
    // The WebSocket URL may carry a credential of its own, and frameworks echo it.
    redactor.addUrl(url);
    return driver.connect(url, { deadline, signal: controller.signal });
  });
  try {
    const connection = await Promise.race([attempt, gaveUp]);
    if (signal?.aborted) {
      await driver.disconnect(connection).catch(() => {});
      throw new ConnectFailure('aborted', 'aborted by the caller');
    }
    return connection;
  } catch (error) {
    if (error instanceof ConnectFailure) throw error;
    attempt.then((late) => driver.disconnect(late)).catch(() => {});
    if (signal?.aborted) throw new ConnectFailure('aborted', 'aborted by the caller');
    if (timedOut || (error instanceof Error && error.name === 'TimeoutError')) {
      // Our own timer says nothing the message does not; the framework's timeout error has its call log.
      const ours = error === controller.signal.reason;
      throw new ConnectFailure(
        'timeout',
        `no connection within ${timeoutMs} ms (connectTimeoutMs)`,
        ours ? undefined : { cause: redactor.error(error) },
      );
    }
    const detail = redactor.text(describe(error)).trim();
    throw new ConnectFailure('failed', detail, { cause: redactor.error(error) });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The browser's WebSocket from `<cdpUrl>/json/version`, looked up here for every framework: the
 * URL may hold a credential to cut from errors, and Puppeteer's own `browserURL` would resolve
 * `/json/version` from the host root, dropping the path that holds the browser's secret.
 */
async function webSocketUrl(
  cdpUrl: string,
  headers: Record<string, string> | undefined,
  signal: AbortSignal,
): Promise<string> {
  const url = new URL(cdpUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/json/version`;
  const response = await fetch(url, { signal, ...(headers ? { headers } : {}) });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`GET ${url.href} answered ${response.status}`);
  }
  const version = (await response.json()) as { webSocketDebuggerUrl?: unknown };
  if (typeof version.webSocketDebuggerUrl !== 'string') {
    throw new Error(`GET ${url.href} gave no webSocketDebuggerUrl`);
  }
  return version.webSocketDebuggerUrl;
}

/**
 * The error the caller sees for a failed setup step: connect failures become
 * {@link BrowserConnectError}, anything else is redacted in place; `outcome` says what became of the
 * browser.
 */
export function setupError(
  operation: string,
  driver: Driver<unknown>,
  browserId: string,
  error: unknown,
  outcome: string,
  redactor: Redactor,
): Error {
  if (error instanceof ConnectFailure) {
    const what =
      error.reason === 'aborted'
        ? `connecting ${driver.name} to browser ${browserId} was aborted`
        : `${driver.name} could not connect to browser ${browserId}: ${error.message}`;
    return new BrowserConnectError(
      { message: `${operation}: ${what}; ${outcome}`, reason: error.reason, browserId },
      error.cause === undefined ? undefined : { cause: error.cause },
    );
  }
  if (error instanceof CloudBrowserError) {
    error.message = `${redactor.text(error.message)}; ${outcome}`;
    if (error.stack) error.stack = redactor.text(error.stack);
    return error;
  }
  const copy = redactor.error(error);
  copy.message = `${operation}: ${copy.message}; ${outcome}`;
  return copy;
}

/** Imports the first of `names` that is installed; `missing` is the message when none is. */
export async function importFirst<T>(names: readonly string[], missing: string): Promise<T> {
  for (const name of names) {
    try {
      return (await import(name)) as T;
    } catch (error) {
      // Only the package itself being absent moves on; a broken install surfaces as it is.
      const code = (error as { code?: unknown } | null)?.code;
      const absent =
        (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
        error instanceof Error &&
        error.message.includes(`'${name}'`);
      if (!absent) throw error;
    }
  }
  throw new ConfigurationError(missing);
}
