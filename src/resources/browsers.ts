import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { BadRequestError, ConflictError, RequestValidationError } from '../errors.js';
import { PageIterator } from '../internal/pagination.js';
import { countryCode, decimal, id, intParam, metadata, nullable, pageOf } from '../internal/schemas.js';
import { mayHaveReachedService, type RequestOptions, type Transport } from '../internal/transport.js';
import { parseRequest } from '../internal/validation.js';

/** A proxy of your own; it overrides the managed proxy. */
export const CustomProxySchema = z.strictObject({
  host: z.string().min(1, 'must not be empty'),
  port: z.number().int('must be a whole number').min(1).max(65535),
  username: z.string().optional(),
  password: z.string().optional(),
  ignoreCertErrors: z.boolean().optional(),
});

export const BrowserCreateParamsSchema = z.strictObject({
  /** Start from this profile's saved state (cookies, storage). */
  profileId: id.nullable().optional(),
  /** Country of the managed proxy, lower case; `null` disables it. @default 'us' */
  proxyCountryCode: countryCode.nullable().optional(),
  /** Minutes until the browser stops by itself (and is billed up front). @default 60 */
  timeout: z.number().int('must be a whole number of minutes').min(1).max(240).optional(),
  browserScreenWidth: z.number().int('must be a whole number').min(320).max(6144).optional(),
  browserScreenHeight: z.number().int('must be a whole number').min(320).max(3456).optional(),
  allowResizing: z.boolean().optional(),
  customProxy: CustomProxySchema.nullable().optional(),
  enableRecording: z.boolean().optional(),
  solveCaptchas: z.boolean().optional(),
  /** Up to 10 string pairs, findable with `list({ metadata })`. The client uses one, see {@link CREATE_TAG}. */
  metadata: metadata.optional(),
});

export const BrowserStatusSchema = z.union([z.enum(['active', 'stopped']), z.string()]);

export const BrowserSessionSchema = z.looseObject({
  id: z.string(),
  status: BrowserStatusSchema,
  /** An http(s) URL whose `/json/version` gives the WebSocket. It can change: re-read before reconnecting. */
  cdpUrl: nullable(z.string()),
  /** A page that shows the browser live. Treat it as a secret. */
  liveUrl: nullable(z.string()),
  timeoutAt: nullable(z.string()),
  startedAt: nullable(z.string()),
  finishedAt: nullable(z.string()),
  proxyUsedMb: nullable(decimal),
  proxyCost: nullable(decimal),
  browserCost: nullable(decimal),
  agentSessionId: nullable(z.string()),
  recordingUrl: nullable(z.string()),
  metadata: z.record(z.string(), z.string()).default({}),
});

export const BrowserListParamsSchema = z.strictObject({
  pageSize: intParam(1, 100).optional(),
  pageNumber: intParam(1, Number.MAX_SAFE_INTEGER).optional(),
  filterBy: z.enum(['active', 'stopped']).optional(),
  /** Only browsers carrying every one of these pairs. */
  metadata: metadata.optional(),
});

export const BrowserStopAllParamsSchema = z.strictObject({
  /** Stops only active browsers carrying every one of these pairs; at least one pair, so it never sweeps everything. */
  metadata: metadata.refine((pairs) => Object.keys(pairs).length > 0, 'must have at least one pair'),
});

export const BrowserStopBodySchema = z.strictObject({ action: z.literal('stop') });

export const BrowserPageSchema = pageOf(BrowserSessionSchema);

export type BrowserCreateParams = z.input<typeof BrowserCreateParamsSchema>;
export type BrowserListParams = z.input<typeof BrowserListParamsSchema>;
export type BrowserSession = z.output<typeof BrowserSessionSchema>;
export type CustomProxy = z.input<typeof CustomProxySchema>;
export type BrowserStopAllParams = z.input<typeof BrowserStopAllParamsSchema>;

/**
 * The metadata key the client puts on every create, with a fresh value, so that a browser whose
 * create failed ambiguously (timeout, reset, abort after sending) can be found and stopped.
 */
export const CREATE_TAG = 'cloudbrowser.createId';

/** How many stop actions `stopAll` has in flight at once. */
const STOP_ALL_CONCURRENCY = 5;

/** How often, and how far apart, an ambiguous create looks for the browser it may have made. */
const RECONCILE_ATTEMPTS = 3;
const RECONCILE_INTERVAL_MS = 1_000;

/** `/api/v4/browsers`: cloud browsers that your own code drives over CDP. */
export class Browsers {
  readonly #transport: Transport;

  /** @internal */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Starts a browser; it is billed until stopped or until `timeout` minutes pass. If the request
   * fails after it may have reached the service, the browser it may have made is found and stopped
   * before the error is thrown, so an ambiguous failure never leaves a billed browser behind.
   */
  async create(params: BrowserCreateParams = {}, options?: RequestOptions): Promise<BrowserSession> {
    const operation = 'browsers.create';
    const body = parseRequest(operation, BrowserCreateParamsSchema, params);
    if (body.metadata && Object.keys(body.metadata).length >= 10) {
      throw new RequestValidationError(operation, [
        {
          loc: ['metadata'],
          msg: `must have at most 9 pairs: the client adds ${CREATE_TAG}`,
          type: 'too_big',
        },
      ]);
    }
    const tag = randomUUID();
    try {
      return await this.#transport.request(
        {
          operation,
          method: 'POST',
          path: '/api/v4/browsers',
          body: { ...body, metadata: { ...body.metadata, [CREATE_TAG]: tag } },
          response: BrowserSessionSchema,
        },
        options,
      );
    } catch (error) {
      if (mayHaveReachedService(error) && error instanceof Error) await this.#reconcile(tag, error);
      throw error;
    }
  }

  /** Stops whatever browser the create tagged `tag` made, and says so on the error. */
  async #reconcile(tag: string, error: Error): Promise<void> {
    const { clock } = this.#transport;
    try {
      for (let attempt = 1; attempt <= RECONCILE_ATTEMPTS; attempt++) {
        const found = await this.list({ filterBy: 'active', metadata: { [CREATE_TAG]: tag } }).toArray();
        if (found.length > 0) {
          await Promise.all(found.map((browser) => this.stop(browser.id)));
          error.message += `; the browser it had started (${found.map((b) => b.id).join(', ')}) was stopped`;
          return;
        }
        if (attempt < RECONCILE_ATTEMPTS) await clock.sleep(RECONCILE_INTERVAL_MS);
      }
      error.message += '; no browser was left running';
    } catch (reconcileError) {
      const reason = reconcileError instanceof Error ? reconcileError.message : String(reconcileError);
      error.message += `; could not confirm that no browser was left running (${CREATE_TAG}=${tag}): ${reason}`;
    }
  }

  /** Reads one browser. */
  get(browserId: string, options?: RequestOptions): Promise<BrowserSession> {
    return this.#transport.request(
      {
        operation: 'browsers.get',
        method: 'GET',
        path: '/api/v4/browsers/{id}',
        params: { id: browserId },
        response: BrowserSessionSchema,
        idempotent: true,
      },
      options,
    );
  }

  /** Every browser, page by page; `filterBy` and `metadata` narrow it. */
  list(params: BrowserListParams = {}, options?: RequestOptions): PageIterator<BrowserSession> {
    const operation = 'browsers.list';
    const {
      pageNumber = 1,
      pageSize,
      filterBy,
      metadata,
    } = parseRequest(operation, BrowserListParamsSchema, params);
    return new PageIterator((page) => {
      const query = new URLSearchParams({ pageNumber: String(page) });
      if (pageSize !== undefined) query.set('pageSize', String(pageSize));
      if (filterBy !== undefined) query.set('filterBy', filterBy);
      for (const [key, value] of Object.entries(metadata ?? {})) query.append('metadata', `${key}=${value}`);
      return this.#transport.request(
        {
          operation,
          method: 'GET',
          path: '/api/v4/browsers',
          query,
          response: BrowserPageSchema,
          idempotent: true,
        },
        options,
      );
    }, pageNumber);
  }

  /**
   * Stops a browser: billing ends, unused time is refunded and its profile is saved. Idempotent:
   * stopping a stopped browser returns it. A dropped CDP connection is not a stop; this is.
   */
  async stop(browserId: string, options?: RequestOptions): Promise<BrowserSession> {
    try {
      return await this.#transport.request(
        {
          operation: 'browsers.stop',
          method: 'PATCH',
          path: '/api/v4/browsers/{id}',
          params: { id: browserId },
          body: { action: 'stop' },
          response: BrowserSessionSchema,
          idempotent: true,
        },
        options,
      );
    } catch (error) {
      // A service that refuses to stop what is already stopped still leaves us where we wanted to be.
      if (!(error instanceof ConflictError || error instanceof BadRequestError)) throw error;
      const browser = await this.get(browserId, options);
      if (browser.status !== 'stopped') throw error;
      return browser;
    }
  }

  /**
   * Stops every active browser that carries all of `metadata`'s pairs, and returns them stopped.
   * A CI job tags its browsers with its run id (`create({ metadata: { ci: runId } })`) and sweeps
   * them at the end, whatever its tests left behind. Browsers are looked up once, then stopped a
   * few at a time; if some stops fail, the others are still stopped and the first failure is
   * thrown, its message naming what was and was not stopped.
   *
   * @example
   * const swept = await client.browsers.stopAll({ metadata: { ci: process.env.GITHUB_RUN_ID ?? 'local' } });
   */
  async stopAll(params: BrowserStopAllParams, options?: RequestOptions): Promise<BrowserSession[]> {
    const { metadata } = parseRequest('browsers.stopAll', BrowserStopAllParamsSchema, params);
    const active = await this.list({ filterBy: 'active', metadata, pageSize: 100 }, options).toArray();
    const results: PromiseSettledResult<BrowserSession>[] = [];
    for (let start = 0; start < active.length; start += STOP_ALL_CONCURRENCY) {
      const batch = active.slice(start, start + STOP_ALL_CONCURRENCY);
      results.push(...(await Promise.allSettled(batch.map((browser) => this.stop(browser.id, options)))));
    }
    const stopped = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const failed = active.filter((_, i) => results[i]?.status === 'rejected').map((b) => b.id);
    const firstFailure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (firstFailure === undefined) return stopped;
    const error: unknown = firstFailure.reason;
    if (error instanceof Error) {
      error.message += `; browsers.stopAll stopped ${stopped.length} of ${active.length}, not: ${failed.join(', ')}`;
    }
    throw error;
  }
}
