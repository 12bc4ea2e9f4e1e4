import { z } from 'zod';
import { encodePath } from '../internal/path.js';
import { pollUntil, WaitOptionsSchema } from '../internal/polling.js';
import { domainPattern, nullable } from '../internal/schemas.js';
import type { RequestOptions, Transport } from '../internal/transport.js';
import { parseRequest } from '../internal/validation.js';

/** How much the agent deliberates before acting. */
export const ThinkingLevelSchema = z.enum(['disabled', 'low', 'medium', 'high'], {
  error: 'must be one of disabled, low, medium, high',
});

/**
 * A v3 task. The vault options keep their client names on the wire (`opVaultId`, `allowedDomains`),
 * as the spec does not show other names for v2 and v3 requests.
 */
export const SessionCreateParamsSchema = z
  .strictObject({
    /** The natural-language goal. */
    task: z.string().trim().min(1, 'must not be empty'),
    thinkingLevel: ThinkingLevelSchema.optional(),
    /** A whole vault: its username, password and TOTP fields become available to the task. */
    opVaultId: z.string().min(1, 'must not be empty').optional(),
    /**
     * Where vault values may be typed: `example.com` (the host and its subdomains) or `*.example.com`
     * (only its subdomains). List every domain SSO or OAuth redirects pass through. Required with
     * `opVaultId`.
     */
    allowedDomains: z.array(domainPattern).min(1, 'must name at least one domain').optional(),
  })
  .superRefine((params, ctx) => {
    if (params.opVaultId !== undefined && params.allowedDomains === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['allowedDomains'],
        message: 'is required when opVaultId is sent',
      });
    }
    if (params.opVaultId === undefined && params.allowedDomains !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['allowedDomains'], message: 'is only used with opVaultId' });
    }
  });

/** Where a v3 session is; `idle` once its task is done. */
export type SessionStatus =
  | 'created'
  | 'idle'
  | 'running'
  | 'stopped'
  | 'timed_out'
  | 'error'
  | (string & Record<never, never>);

/** The statuses in which a session's task is over. */
export const SETTLED_SESSION_STATUSES: ReadonlySet<string> = new Set([
  'idle',
  'stopped',
  'timed_out',
  'error',
]);

export const SessionSchema = z.looseObject({
  id: z.string(),
  status: z.string().transform((status): SessionStatus => status),
  /** The task's result, once there is one; its shape is the service's. */
  output: nullable(z.unknown()),
});

export type ThinkingLevel = z.output<typeof ThinkingLevelSchema>;
export type SessionCreateParams = z.input<typeof SessionCreateParamsSchema>;
export type Session = z.output<typeof SessionSchema>;

/** Options of {@link Sessions.wait}. */
export interface SessionWaitOptions {
  /** Stops waiting: rejects with `APIUserAbortError`. The session is not stopped. */
  signal?: AbortSignal;
  /** The longest wait, in ms; then a `WaitTimeoutError`. The session is NOT stopped by it. @default no limit */
  timeoutMs?: number;
  /** How long to wait between polls, in ms. @default 2_000 */
  pollIntervalMs?: number;
}

const DEFAULT_WAIT_INTERVAL_MS = 2_000;

/** `/api/v3/sessions`: v3 Agent tasks with thinking levels. */
export class Sessions {
  readonly #transport: Transport;

  /** @internal */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Starts a v3 task. Never retried.
   *
   * @example
   * const session = await client.sessions.create({ task: 'Find the opening hours', thinkingLevel: 'low' });
   * const done = await client.sessions.wait(session.id);
   */
  async create(params: SessionCreateParams, options?: RequestOptions): Promise<Session> {
    const operation = 'sessions.create';
    return this.#transport.request(
      {
        operation,
        method: 'POST',
        path: '/api/v3/sessions',
        body: parseRequest(operation, SessionCreateParamsSchema, params),
        response: SessionSchema,
      },
      options,
    );
  }

  /** Reads a session with its result. */
  get(sessionId: string, options?: RequestOptions): Promise<Session> {
    return this.#transport.request(
      {
        operation: 'sessions.get',
        method: 'GET',
        path: '/api/v3/sessions/{id}',
        params: { id: sessionId },
        response: SessionSchema,
        idempotent: true,
      },
      options,
    );
  }

  /**
   * Polls a session until its task is over (`idle`, `stopped`, `timed_out` or `error`) and
   * resolves with it.
   *
   * @throws {WaitTimeoutError} after `timeoutMs`. The session is NOT stopped: it goes on.
   * @throws {APIUserAbortError} when `signal` aborts.
   */
  async wait(sessionId: string, options: SessionWaitOptions = {}): Promise<Session> {
    const operation = 'sessions.wait';
    const { signal, ...rest } = options;
    const { timeoutMs, pollIntervalMs } = parseRequest(operation, WaitOptionsSchema, rest);
    const path = encodePath(operation, '/api/v3/sessions/{id}', { id: sessionId });
    return pollUntil({
      operation,
      what: 'session',
      id: sessionId,
      info: { operation, method: 'GET', path },
      clock: this.#transport.clock,
      signal,
      timeoutMs,
      intervalMs: pollIntervalMs ?? DEFAULT_WAIT_INTERVAL_MS,
      check: async (inner) => {
        const session = await this.get(sessionId, { signal: inner });
        return SETTLED_SESSION_STATUSES.has(session.status)
          ? { done: true, value: session }
          : { done: false, status: session.status };
      },
    });
  }
}
