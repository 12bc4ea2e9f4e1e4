import { z } from 'zod';
import { APIUserAbortError, BadRequestError, ConflictError, type RequestInfo } from '../errors.js';
import { encodePath } from '../internal/path.js';
import { pollUntil, WaitOptionsSchema } from '../internal/polling.js';
import { countryCode, hostName, id, intParam, nullable } from '../internal/schemas.js';
import type { RequestOptions, Transport } from '../internal/transport.js';
import { parseRequest } from '../internal/validation.js';

/**
 * A model identifier. `gpt-5.6-luna` is the recommended v4 model and `grok-4.5` is also accepted;
 * any other string is sent as it is, as new models reach the service before this list knows them.
 */
export type RunModel = 'gpt-5.6-luna' | 'grok-4.5' | (string & Record<never, never>);

/** Where a run is: `queued`, `dispatching`, `running`, then one of `completed`, `failed`, `cancelled`. */
export type RunStatus =
  | 'queued'
  | 'dispatching'
  | 'running'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | (string & Record<never, never>);

/**
 * What a run event reports. The service adds kinds over time; these are the ones known, and the
 * ones the local service sends.
 */
export type RunEventType =
  | 'run.started'
  | 'browser.ready'
  | 'step'
  | 'secret.typed'
  | 'secret.refused'
  | 'run.completed'
  | 'run.failed'
  | 'run.cancelled'
  | (string & Record<never, never>);

/** The statuses a run never leaves. */
export const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);
/** The events that end a run's event stream. */
export const TERMINAL_RUN_EVENTS: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
]);

/** Vault fields plus explicit bindings a run may use. */
export const MAX_SECRET_BINDINGS = 10;

/** The field ids of a password-manager item a binding may name: ids, not labels. */
export const SecretFieldIdSchema = z.enum(['username', 'password', 'one-time-password'], {
  error: 'must be one of username, password, one-time-password (the field id, not its label)',
});

/** Where a bound secret lives: one field of one item in a connected password manager. */
export const SecretSourceSchema = z.strictObject({
  type: z.literal('passwordmanager', { error: 'must be "passwordmanager"' }),
  /** The connected password-manager integration, from the Secrets tab of the settings. */
  integrationId: z.string().min(1, 'must not be empty'),
  /** UUID of the vault, copied from the password manager. */
  vaultId: id,
  /** UUID of the item, copied from the password manager. */
  itemId: id,
  /** `one-time-password` is a TOTP field: it resolves to the current code. */
  fieldId: SecretFieldIdSchema,
});

/** One field of a password manager made available to a run under an alias. */
export const SecretBindingSchema = z.strictObject({
  /** The name the agent asks for when it needs the secret. */
  alias: z.string().min(1, 'must not be empty'),
  source: SecretSourceSchema,
  /** Bare host names where the value may be typed; a host also covers its subdomains. */
  allowedDomains: z.array(hostName).min(1, 'must name at least one host'),
});

/** The browser a run works in. `proxyCountryCode` is sent as `us` when left out, as the spec asks. */
export const RunBrowserSettingsSchema = z
  .strictObject({
    /** Start from this profile's saved state: one profile per end user. */
    profileId: id.nullable().optional(),
    /** Country of the managed proxy, lower case; `null` disables it. @default 'us' */
    proxyCountryCode: countryCode.nullable().optional(),
  })
  .transform((settings) => ({
    ...settings,
    proxyCountryCode: settings.proxyCountryCode === undefined ? 'us' : settings.proxyCountryCode,
  }));

export const RunCreateParamsSchema = z
  .strictObject({
    /** The natural-language goal. */
    task: z.string().trim().min(1, 'must not be empty'),
    model: z.string().min(1, 'must not be empty').optional(),
    /** Model parameters, sent as they are. */
    modelParams: z.record(z.string(), z.unknown()).optional(),
    browserSettings: RunBrowserSettingsSchema.optional(),
    /** A whole vault: every supported username, password and TOTP field of it becomes an alias. */
    opVaultId: z.string().min(1, 'must not be empty').optional(),
    /** Bare host names where vault values may be typed; required with `opVaultId`. */
    opVaultAllowedDomains: z.array(hostName).min(1, 'must name at least one host').optional(),
    /** Single fields; run-scoped, so a follow-up run that needs the same login sends them again. */
    secretBindings: z
      .array(SecretBindingSchema)
      .max(
        MAX_SECRET_BINDINGS,
        `must have at most ${MAX_SECRET_BINDINGS} bindings (vault fields count towards the same limit)`,
      )
      .optional(),
  })
  .superRefine((params, ctx) => {
    if (params.opVaultId !== undefined && params.opVaultAllowedDomains === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['opVaultAllowedDomains'],
        message: 'is required when opVaultId is sent',
      });
    }
    if (params.opVaultId === undefined && params.opVaultAllowedDomains !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['opVaultAllowedDomains'],
        message: 'is only used with opVaultId',
      });
    }
    const seen = new Map<string, number>();
    params.secretBindings?.forEach((binding, index) => {
      const first = seen.get(binding.alias);
      if (first === undefined) seen.set(binding.alias, index);
      else
        ctx.addIssue({
          code: 'custom',
          path: ['secretBindings', index, 'alias'],
          message: `repeats the alias of secretBindings.${first}`,
        });
    });
  });

const RunStatusSchema = z.string().transform((status): RunStatus => status);

export const RunSchema = z.looseObject({
  id: z.string(),
  status: RunStatusSchema,
  sessionId: nullable(z.string()),
  /** The agent's answer, once the run completed. */
  result: nullable(z.string()),
  /** Why the run failed, when it did. */
  error: nullable(z.union([z.string(), z.record(z.string(), z.unknown())])),
});

export const RunStatusResponseSchema = z.looseObject({ status: RunStatusSchema });

export const RunEventSchema = z.looseObject({
  runId: z.string(),
  /** Increasing within a run: pass the last one seen as `after` to resume. */
  id: z.number().int(),
  ts: z.union([z.string(), z.number()]),
  type: z.string().transform((type): RunEventType => type),
  /** `browser.ready` carries `live_view_url`; `secret.typed` the `alias`, never the value. */
  data: z.record(z.string(), z.unknown()).default({}),
});

export const RunEventPageSchema = z.looseObject({
  events: z.array(RunEventSchema),
  nextAfter: nullable(z.number().int()),
  hasMore: z.boolean(),
});

/** The query of `GET /runs/{id}/events`. */
export const RunEventsQuerySchema = z.strictObject({
  after: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: intParam(1, 1000).optional(),
});

const EventsOptionsSchema = z.strictObject({
  after: z.number().int('must be a whole number').min(0).optional(),
  limit: z.number().int('must be a whole number').min(1).max(1000).optional(),
  pollIntervalMs: z.number().int('must be a whole number of ms').positive().optional(),
});

export type RunCreateParams = Omit<z.input<typeof RunCreateParamsSchema>, 'model'> & {
  /** The model; an open string with the known values offered as hints. */
  model?: RunModel | undefined;
};
export type SecretBinding = z.input<typeof SecretBindingSchema>;
export type SecretFieldId = z.output<typeof SecretFieldIdSchema>;
export type RunBrowserSettings = z.input<typeof RunBrowserSettingsSchema>;
export type Run = z.output<typeof RunSchema>;
export type RunStatusResponse = z.output<typeof RunStatusResponseSchema>;
export type RunEvent = z.output<typeof RunEventSchema>;

/** Options of {@link Runs.events}; `signal`, `timeoutMs` and `maxRetries` apply to each request. */
export interface RunEventsOptions extends RequestOptions {
  /** Start after this event id: the last one you saw. @default the start of the run */
  after?: number;
  /** Events per request, 1 to 1000. @default the service's page size */
  limit?: number;
  /** How long to wait between polls while the run is quiet, in ms. @default 1_000 */
  pollIntervalMs?: number;
}

/** Options of {@link Runs.wait}. */
export interface RunWaitOptions {
  /** Stops waiting: rejects with `APIUserAbortError`. The run is not cancelled. */
  signal?: AbortSignal;
  /**
   * The longest wait, in ms; then a `WaitTimeoutError`. The run is NOT cancelled by it.
   * @default no limit
   */
  timeoutMs?: number;
  /** How long to wait between status polls, in ms. @default 2_000 */
  pollIntervalMs?: number;
}

const DEFAULT_EVENTS_INTERVAL_MS = 1_000;
const DEFAULT_WAIT_INTERVAL_MS = 2_000;

/** `/api/v4/runs`: Agent runs that carry out a natural-language task in a cloud browser. */
export class Runs {
  readonly #transport: Transport;

  /** @internal */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Starts a run. Refused before sending: a vault without `opVaultAllowedDomains`, allowed domains
   * that are not bare host names, a malformed binding, or more than 10 bindings. When
   * `browserSettings` is given without `proxyCountryCode`, `"us"` is sent. Never retried.
   *
   * @example
   * const run = await client.runs.create({
   *   task: 'Log in and download the latest invoice',
   *   model: 'gpt-5.6-luna',
   *   browserSettings: { profileId },
   *   opVaultId, opVaultAllowedDomains: ['example.com'],
   * });
   * const done = await client.runs.wait(run.id, { timeoutMs: 600_000 });
   */
  async create(params: RunCreateParams, options?: RequestOptions): Promise<Run> {
    const operation = 'runs.create';
    return this.#transport.request(
      {
        operation,
        method: 'POST',
        path: '/api/v4/runs',
        body: parseRequest(operation, RunCreateParamsSchema, params),
        response: RunSchema,
      },
      options,
    );
  }

  /** Reads a run, with its `result` once it is complete. */
  get(runId: string, options?: RequestOptions): Promise<Run> {
    return this.#transport.request(
      {
        operation: 'runs.get',
        method: 'GET',
        path: '/api/v4/runs/{id}',
        params: { id: runId },
        response: RunSchema,
        idempotent: true,
      },
      options,
    );
  }

  /** The cheap poll: only the status. */
  status(runId: string, options?: RequestOptions): Promise<RunStatusResponse> {
    return this.#transport.request(
      {
        operation: 'runs.status',
        method: 'GET',
        path: '/api/v4/runs/{id}/status',
        params: { id: runId },
        response: RunStatusResponseSchema,
        idempotent: true,
      },
      options,
    );
  }

  /**
   * Cancels a run. Idempotent, so it is retried like a read; cancelling a run that already ended
   * resolves too (a service that refuses that with 400 or 409 is asked for the status).
   */
  async cancel(runId: string, options?: RequestOptions): Promise<void> {
    try {
      await this.#transport.request(
        {
          operation: 'runs.cancel',
          method: 'POST',
          path: '/api/v4/runs/{id}/cancel',
          params: { id: runId },
          idempotent: true,
        },
        options,
      );
    } catch (error) {
      if (!(error instanceof ConflictError || error instanceof BadRequestError)) throw error;
      const { status } = await this.status(runId, options);
      if (!TERMINAL_RUN_STATUSES.has(status)) throw error;
    }
  }

  /**
   * The run's events in order, as they happen: polls while the run is quiet, resumes after the
   * last event it yielded, and once the run has ended reads on until the service has no more.
   * Break out of the loop to stop early.
   *
   * @example
   * for await (const event of client.runs.events(run.id)) {
   *   if (event.type === 'browser.ready') console.log('watch live:', event.data.live_view_url);
   * }
   */
  events(runId: string, options: RunEventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const operation = 'runs.events';
    const { signal, timeoutMs, maxRetries, ...rest } = options;
    const parsed = parseRequest(operation, EventsOptionsSchema, rest);
    const path = encodePath(operation, '/api/v4/runs/{id}/events', { id: runId });
    const request: RequestOptions = {
      ...(signal ? { signal } : {}),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
      ...(maxRetries === undefined ? {} : { maxRetries }),
    };
    return this.#events({
      runId,
      after: parsed.after,
      limit: parsed.limit,
      intervalMs: parsed.pollIntervalMs ?? DEFAULT_EVENTS_INTERVAL_MS,
      info: { operation, method: 'GET', path },
      request,
    });
  }

  async *#events(spec: {
    runId: string;
    after: number | undefined;
    limit: number | undefined;
    intervalMs: number;
    info: RequestInfo;
    request: RequestOptions;
  }): AsyncGenerator<RunEvent, void, undefined> {
    let { after } = spec;
    let ended = false;
    for (;;) {
      const query = new URLSearchParams();
      if (after !== undefined) query.set('after', String(after));
      if (spec.limit !== undefined) query.set('limit', String(spec.limit));
      const page = await this.#transport.request(
        {
          operation: spec.info.operation,
          method: 'GET',
          path: '/api/v4/runs/{id}/events',
          params: { id: spec.runId },
          query,
          response: RunEventPageSchema,
          idempotent: true,
        },
        spec.request,
      );
      const before = after;
      for (const event of page.events) {
        // A page that overlaps what was already yielded (a retried read) yields nothing twice.
        if (after !== undefined && event.id <= after) continue;
        after = event.id;
        if (TERMINAL_RUN_EVENTS.has(event.type)) ended = true;
        yield event;
      }
      if (page.nextAfter !== null && (after === undefined || page.nextAfter > after)) after = page.nextAfter;
      // More is waiting: read on at once, unless the service says so without moving forward.
      if (page.hasMore && after !== before) continue;
      if (ended) return;
      if (page.events.length === 0) {
        // Quiet: a run can end without an event we know; the status says so, then one more read drains.
        const { status } = await this.status(spec.runId, spec.request);
        if (TERMINAL_RUN_STATUSES.has(status)) {
          ended = true;
          continue;
        }
      }
      try {
        await this.#transport.clock.sleep(spec.intervalMs, spec.request.signal);
      } catch (error) {
        throw new APIUserAbortError(spec.info, { cause: error });
      }
    }
  }

  /**
   * Waits for a run to end: polls the cheap status, then reads the run once. Resolves with the run
   * whatever way it ended (`completed`, `failed` or `cancelled`: check `status`).
   *
   * @throws {WaitTimeoutError} after `timeoutMs`. The run is NOT cancelled: it goes on running.
   * @throws {APIUserAbortError} when `signal` aborts. The run is not cancelled either.
   */
  async wait(runId: string, options: RunWaitOptions = {}): Promise<Run> {
    const operation = 'runs.wait';
    const { signal, ...rest } = options;
    const { timeoutMs, pollIntervalMs } = parseRequest(operation, WaitOptionsSchema, rest);
    const path = encodePath(operation, '/api/v4/runs/{id}/status', { id: runId });
    return pollUntil({
      operation,
      what: 'run',
      id: runId,
      info: { operation, method: 'GET', path },
      clock: this.#transport.clock,
      signal,
      timeoutMs,
      intervalMs: pollIntervalMs ?? DEFAULT_WAIT_INTERVAL_MS,
      check: async (inner) => {
        const { status } = await this.status(runId, { signal: inner });
        if (!TERMINAL_RUN_STATUSES.has(status)) return { done: false, status };
        return { done: true, value: await this.get(runId, { signal: inner }) };
      },
    });
  }
}
