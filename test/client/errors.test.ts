import {
  APIError,
  AuthenticationError,
  BadRequestError,
  CloudBrowserError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor } from '../support/client.js';
import { json, startServer } from '../support/http-server.js';

const BROWSER_ID = '3f0c6a52-8d0e-4a53-9c51-0f3a4a1d2b7e';

/** Answers every request with `status` and `body`, and a request id. */
async function answering(status: number, body: unknown, headers: Record<string, string> = {}) {
  const server = await startServer((_req, res) =>
    json(res, status, body, { 'x-request-id': 'req_42', ...headers }),
  );
  // No retries: each status is seen exactly as the service sent it.
  return { server, client: clientFor(server, { maxRetries: 0 }) };
}

async function failure(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

describe('a non-2xx answer becomes the APIError subclass of its status', () => {
  const cases = [
    {
      status: 400,
      type: BadRequestError,
      code: 'bad_request',
      detail: 'Cannot rollback a public skill. Please make the skill private first.',
    },
    { status: 401, type: AuthenticationError, code: 'authentication_error', detail: 'Invalid API key' },
    { status: 403, type: PermissionDeniedError, code: 'permission_denied', detail: 'Not allowed' },
    { status: 404, type: NotFoundError, code: 'not_found', detail: 'Skill not found' },
    {
      status: 409,
      type: ConflictError,
      code: 'conflict',
      detail: 'Session already has an active run',
    },
    { status: 500, type: InternalServerError, code: 'internal_server_error', detail: 'boom' },
    { status: 502, type: InternalServerError, code: 'internal_server_error', detail: 'bad gateway' },
    { status: 503, type: InternalServerError, code: 'internal_server_error', detail: 'unavailable' },
  ] as const;

  it.each(cases)('$status is $type.name with code $code', async ({ status, type, code, detail }) => {
    const { client } = await answering(status, { detail });
    const error = await failure(client.browsers.get(BROWSER_ID));
    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(CloudBrowserError);
    expect(error.constructor).toBe(type);
    expect(error.code).toBe(code);
    expect(error.name).toBe(type.name);
    expect(error.status).toBe(status);
    expect(error.detail).toBe(detail);
    expect(error.body).toEqual({ detail });
    expect(error.requestId).toBe('req_42');
    expect(error.headers['x-request-id']).toBe('req_42');
    expect(error.request).toEqual({
      operation: 'browsers.get',
      method: 'GET',
      path: `/api/v4/browsers/${BROWSER_ID}`,
    });
    expect(error.message).toBe(`browsers.get (GET /api/v4/browsers/${BROWSER_ID}) → ${status}: ${detail}`);
  });

  it('422 is UnprocessableEntityError with the typed errors of the HTTPValidationError body', async () => {
    const detail = [
      {
        loc: ['body', 'proxyCountryCode'],
        msg: 'String should match pattern',
        type: 'string_pattern_mismatch',
      },
      { loc: ['body', 'timeout', 0], msg: 'Input should be a valid integer', type: 'int_parsing' },
    ];
    const { server, client } = await answering(422, { detail });
    const error = await failure(client.profiles.create({ name: 'x' }));
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect(error.code).toBe('unprocessable_entity');
    expect((error as UnprocessableEntityError).errors).toEqual(detail);
    expect(error.message).toBe(
      'profiles.create (POST /api/v4/profiles) → 422: body.proxyCountryCode: String should match pattern; ' +
        'body.timeout.0: Input should be a valid integer',
    );
    expect(server.requests).toHaveLength(1);
  });

  it('422 with a detail that is not a validation list has no typed errors', async () => {
    const { client } = await answering(422, { detail: 'bad' });
    const error = await failure(client.profiles.create({ name: 'x' }));
    expect((error as UnprocessableEntityError).errors).toEqual([]);
  });

  it('429 with error rate_limited is a rate limit with retryAfterMs from Retry-After', async () => {
    const { client } = await answering(
      429,
      { error: 'rate_limited', retry_after_seconds: 7 },
      { 'retry-after': '3' },
    );
    const error = await failure(client.browsers.get(BROWSER_ID));
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.code).toBe('rate_limit');
    expect((error as RateLimitError).limit).toBe('rate');
    expect((error as RateLimitError).retryAfterMs).toBe(3000);
    expect(error.message).toContain(`browsers.get (GET /api/v4/browsers/${BROWSER_ID}) → 429`);
  });

  it('429 without Retry-After takes retryAfterMs from retry_after_seconds', async () => {
    const { client } = await answering(429, { error: 'rate_limited', retry_after_seconds: 4 });
    const error = (await failure(client.browsers.get(BROWSER_ID))) as RateLimitError;
    expect(error.retryAfterMs).toBe(4000);
  });

  it('429 whose detail says too many concurrent active sessions is a concurrency limit', async () => {
    const { client } = await answering(429, {
      detail: 'Too many concurrent active sessions. Stop a session or upgrade your plan.',
    });
    const error = (await failure(client.browsers.create())) as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.limit).toBe('concurrency');
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.message).toContain('browsers.create (POST /api/v4/browsers) → 429: Too many concurrent');
  });

  it('402 with an object detail is a plain APIError that keeps the object', async () => {
    const detail = { reason: 'spending_cap', capUsd: '50.00' };
    const { client } = await answering(402, { detail });
    const error = await failure(client.browsers.get(BROWSER_ID));
    expect(error.constructor).toBe(APIError);
    expect(error.code).toBe('api_error');
    expect(error.status).toBe(402);
    expect(error.detail).toEqual(detail);
    expect(error.message).toBe(
      `browsers.get (GET /api/v4/browsers/${BROWSER_ID}) → 402: {"reason":"spending_cap","capUsd":"50.00"}`,
    );
  });

  it('a non-JSON error body is kept as text', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>');
    });
    const client = clientFor(server, { maxRetries: 0 });
    const error = await failure(client.browsers.get(BROWSER_ID));
    expect(error).toBeInstanceOf(InternalServerError);
    expect(error.body).toBe('<h1>Bad Gateway</h1>');
    expect(error.message).toContain('→ 502: <h1>Bad Gateway</h1>');
    expect(error.requestId).toBeUndefined();
  });
});
