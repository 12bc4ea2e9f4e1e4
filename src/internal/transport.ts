import { type Dispatcher, request } from 'undici';
import type { z } from 'zod';
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  type ErrorBody,
  RateLimitError,
  type RequestInfo,
  ResponseValidationError,
  retryAfterHeaderMs,
} from '../errors.js';
import type { Clock } from './clock.js';
import { encodePath } from './path.js';
import { toValidationIssues } from './validation.js';

/** Per-call options, accepted by every method; they override the client's. */
export interface RequestOptions {
  /** Aborts the call: it rejects with `APIUserAbortError`. */
  signal?: AbortSignal;
  /** Time limit of one attempt, in milliseconds. @default the client's `timeoutMs` */
  timeoutMs?: number;
  /** How many times a failed safe request is repeated. @default the client's `maxRetries` */
  maxRetries?: number;
}

export interface TransportConfig {
  /** The service host without a trailing slash; resolved lazily, as `CLOUDBROWSER_BASE_URL=local` starts a service on first use. */
  baseUrl: () => Promise<string>;
  apiKey: () => Promise<string>;
  apiKeyHeader: string;
  timeoutMs: number;
  maxRetries: number;
  dispatcher: Dispatcher | undefined;
  clock: Clock;
  userAgent: string;
}

export interface RequestSpec<S extends z.ZodType | undefined> {
  /** The library operation, such as `browsers.create`: named in every error. */
  operation: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** A route template; `{name}` is filled from `params` through {@link encodePath}. */
  path: string;
  params?: Record<string, string>;
  query?: URLSearchParams;
  body?: unknown;
  /** Parses the 2xx body; without one the body is ignored. */
  response?: S;
  /** Safe to repeat (GET, the stop action): only these are retried. */
  idempotent?: boolean;
}

/** The longest `Retry-After` we wait for; a longer one surfaces as the error. */
const MAX_RETRY_AFTER_MS = 60_000;
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;
/** Connect failures where the request certainly never left this machine. */
const NOT_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type Output<S> = S extends z.ZodType ? z.output<S> : undefined;

/** Sends requests with undici: auth, timeouts, abort, safe retries, and the mapping to the error tree. */
export class Transport {
  readonly #config: TransportConfig;

  constructor(config: TransportConfig) {
    this.#config = config;
  }

  get clock(): Clock {
    return this.#config.clock;
  }

  async request<S extends z.ZodType | undefined = undefined>(
    spec: RequestSpec<S>,
    options: RequestOptions = {},
  ): Promise<Output<S>> {
    const path = encodePath(spec.operation, spec.path, spec.params);
    const query = spec.query?.toString();
    const info: RequestInfo = {
      operation: spec.operation,
      method: spec.method,
      path: query ? `${path}?${query}` : path,
    };
    const maxRetries = spec.idempotent ? (options.maxRetries ?? this.#config.maxRetries) : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#attempt(spec, info, options);
      } catch (error) {
        const delay = attempt < maxRetries ? this.#retryDelay(error, attempt) : undefined;
        if (delay === undefined) throw error;
        try {
          await this.#config.clock.sleep(delay, options.signal);
        } catch {
          throw new APIUserAbortError(info, { cause: error });
        }
      }
    }
  }

  /** How long to wait before the next attempt, or undefined when the error is not worth retrying. */
  #retryDelay(error: unknown, attempt: number): number | undefined {
    const backoff = () => this.#config.clock.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
    if (error instanceof RateLimitError) {
      // A concurrency limit lifts only when something stops: repeating the request cannot help.
      if (error.limit === 'concurrency') return undefined;
      if (error.retryAfterMs === undefined) return backoff();
      return error.retryAfterMs <= MAX_RETRY_AFTER_MS ? error.retryAfterMs : undefined;
    }
    if (error instanceof APIError) {
      if (error.status !== 408 && error.status < 500) return undefined;
      // A 503 or 408 may say when to come back, as a 429 does.
      const after = retryAfterHeaderMs(error.headers);
      if (after === undefined) return backoff();
      return after <= MAX_RETRY_AFTER_MS ? after : undefined;
    }
    return error instanceof APIConnectionError ? backoff() : undefined;
  }

  async #attempt<S extends z.ZodType | undefined>(
    spec: RequestSpec<S>,
    info: RequestInfo,
    options: RequestOptions,
  ): Promise<Output<S>> {
    const { signal } = options;
    const apiKey = await this.#config.apiKey();
    const url = `${await this.#config.baseUrl()}${info.path}`;
    if (signal?.aborted) throw notSentYet(new APIUserAbortError(info, { cause: signal.reason }));
    const timeoutMs = options.timeoutMs ?? this.#config.timeoutMs;
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const headers: Record<string, string> = {
        accept: 'application/json',
        'user-agent': this.#config.userAgent,
        [this.#config.apiKeyHeader]: apiKey,
      };
      if (spec.body !== undefined) headers['content-type'] = 'application/json';
      const response = await request(url, {
        method: spec.method,
        headers,
        body: spec.body === undefined ? null : JSON.stringify(spec.body),
        signal: controller.signal,
        ...(this.#config.dispatcher ? { dispatcher: this.#config.dispatcher } : {}),
      });
      // A key echoed back by the service must not reach an error, so it is cut from body and headers.
      const text = (await response.body.text()).replaceAll(apiKey, '[redacted]');
      const responseHeaders = normaliseHeaders(response.headers, apiKey);
      if (response.statusCode >= 300) {
        throw APIError.from({
          request: info,
          status: response.statusCode,
          headers: responseHeaders,
          body: parseErrorBody(text),
        });
      }
      if (!spec.response) return undefined as Output<S>;
      return parseResponse(spec.response, info, response.statusCode, text) as Output<S>;
    } catch (error) {
      if (error instanceof APIError || error instanceof ResponseValidationError) throw error;
      if (signal?.aborted) throw new APIUserAbortError(info, { cause: signal.reason });
      if (timedOut) throw new APITimeoutError(info, `timed out after ${timeoutMs} ms`, { cause: error });
      const code = errorCode(error);
      const connectionError = new APIConnectionError(info, `connection failed${code ? ` (${code})` : ''}`, {
        cause: error,
      });
      throw code !== undefined && NOT_SENT.has(code) ? notSentYet(connectionError) : connectionError;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** Errors known to have happened before the request left this machine. */
const notSent = new WeakSet<Error>();

function notSentYet<E extends Error>(error: E): E {
  notSent.add(error);
  return error;
}

/**
 * Whether a failed request may have reached the service: a timeout, a reset after sending or an
 * abort mid-flight all may have; a refused connection has not. A create that fails this way must be
 * reconciled.
 */
export function mayHaveReachedService(error: unknown): boolean {
  return (error instanceof APIConnectionError || error instanceof APIUserAbortError) && !notSent.has(error);
}

function parseResponse(schema: z.ZodType, info: RequestInfo, status: number, text: string): unknown {
  let json: unknown;
  try {
    json = text === '' ? {} : JSON.parse(text);
  } catch {
    throw new ResponseValidationError(info, status, [{ loc: [], msg: 'body is not JSON', type: 'json' }]);
  }
  const result = schema.safeParse(json);
  if (!result.success)
    throw new ResponseValidationError(info, status, toValidationIssues(result.error, ['body']));
  return result.data;
}

function parseErrorBody(text: string): ErrorBody {
  if (text === '') return null;
  try {
    const json: unknown = JSON.parse(text);
    return typeof json === 'object' && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : text;
  } catch {
    return text;
  }
}

function normaliseHeaders(
  headers: Record<string, string | string[] | undefined>,
  apiKey: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = (Array.isArray(value) ? value.join(', ') : value).replaceAll(
      apiKey,
      '[redacted]',
    );
  }
  return out;
}

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    if (typeof code === 'string' && !(e.cause instanceof Error)) return code;
  }
  return undefined;
}
