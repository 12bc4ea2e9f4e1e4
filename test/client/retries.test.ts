import type { ServerResponse } from 'node:http';
import {
  APIConnectionError,
  type APIError,
  APIUserAbortError,
  CloudBrowserClient,
  InternalServerError,
  RateLimitError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { API_KEY, clientFor, recordingClock } from '../support/client.js';
import { browserBody, json, type ReceivedRequest, startServer } from '../support/http-server.js';

const BROWSER_ID = 'b6a1c1f4-2f07-4d7e-9a51-7a0f1f3b2c11';

type Failure = (res: ServerResponse) => void;

/** Fails the first `failures.length` requests in turn, then answers with a browser. */
async function failingThenOk(...failures: Failure[]) {
  let count = 0;
  return startServer((req: ReceivedRequest, res) => {
    const fail = failures[count++];
    if (fail) return fail(res);
    json(res, req.method === 'POST' ? 201 : 200, browserBody({ id: BROWSER_ID, status: 'stopped' }));
  });
}

const status =
  (
    code: number,
    body: unknown = { detail: `status ${code}` },
    headers: Record<string, string> = {},
  ): Failure =>
  (res) =>
    json(res, code, body, headers);
const reset: Failure = (res) => res.socket?.destroy();
const rateLimited = (retryAfter: string): Failure =>
  status(
    429,
    { error: 'rate_limited', retry_after_seconds: Number(retryAfter) || 1 },
    { 'retry-after': retryAfter },
  );
const concurrencyLimited = status(429, { detail: 'Too many concurrent active sessions' });

describe('safe requests are retried', () => {
  it.each([
    { name: '500', fail: status(500) },
    { name: '502', fail: status(502) },
    { name: '503', fail: status(503) },
    { name: '408', fail: status(408) },
    { name: 'a rate-limit 429', fail: rateLimited('1') },
    { name: 'a connection reset', fail: reset },
  ])('browsers.get is retried after $name', async ({ fail }) => {
    const server = await failingThenOk(fail);
    const client = clientFor(server);
    const browser = await client.browsers.get(BROWSER_ID);
    expect(browser.id).toBe(BROWSER_ID);
    expect(server.requests.map((r) => r.method)).toEqual(['GET', 'GET']);
    expect(client.sleeps).toHaveLength(1);
  });

  it('browsers.stop (PATCH) is retried, as stopping twice is harmless', async () => {
    const server = await failingThenOk(status(503), reset);
    const client = clientFor(server);
    const browser = await client.browsers.stop(BROWSER_ID);
    expect(browser.status).toBe('stopped');
    expect(server.requests.map((r) => `${r.method} ${JSON.stringify(r.body)}`)).toEqual([
      'PATCH {"action":"stop"}',
      'PATCH {"action":"stop"}',
      'PATCH {"action":"stop"}',
    ]);
  });

  it('a list page is retried', async () => {
    let count = 0;
    const server = await startServer((_req, res) =>
      count++ === 0
        ? json(res, 500, { detail: 'boom' })
        : json(res, 200, { items: [], totalItems: 0, pageNumber: 1, pageSize: 10 }),
    );
    const client = clientFor(server);
    await expect(client.browsers.list().toArray()).resolves.toEqual([]);
    expect(server.requests).toHaveLength(2);
  });
});

describe('unsafe or hopeless requests are not retried', () => {
  it.each([
    { name: 'a 500', fail: status(500), error: InternalServerError },
    { name: 'a rate-limit 429', fail: rateLimited('1'), error: RateLimitError },
  ])('browsers.create (POST) is never retried after $name', async ({ fail, error }) => {
    const server = await failingThenOk(fail);
    const client = clientFor(server);
    await expect(client.browsers.create()).rejects.toBeInstanceOf(error);
    expect(server.requests.map((r) => r.method)).toEqual(['POST']);
    expect(client.sleeps).toEqual([]);
  });

  it('profiles.create and profiles.update are not retried', async () => {
    const server = await failingThenOk(status(503), status(503));
    const client = clientFor(server);
    await expect(client.profiles.create({ name: 'a' })).rejects.toBeInstanceOf(InternalServerError);
    await expect(client.profiles.update('p1', { name: 'b' })).rejects.toBeInstanceOf(InternalServerError);
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'PATCH']);
  });

  it('a concurrency-limit 429 is not retried: waiting does not free a slot', async () => {
    const server = await failingThenOk(concurrencyLimited);
    const client = clientFor(server);
    const error = await client.browsers.get(BROWSER_ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).limit).toBe('concurrency');
    expect(server.requests).toHaveLength(1);
    expect(client.sleeps).toEqual([]);
  });

  it.each([400, 401, 403, 404, 409, 422])('a %i is not retried', async (code) => {
    const server = await failingThenOk(status(code));
    const client = clientFor(server);
    await expect(client.browsers.get(BROWSER_ID)).rejects.toMatchObject({ status: code });
    expect(server.requests).toHaveLength(1);
  });
});

describe('how often', () => {
  it('maxRetries defaults to 2: three attempts, then the last error', async () => {
    const server = await failingThenOk(status(500), status(502), status(503), status(500));
    const client = clientFor(server);
    const error = await client.browsers.get(BROWSER_ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as APIError).status).toBe(503);
    expect(server.requests).toHaveLength(3);
    expect(client.sleeps).toHaveLength(2);
  });

  it('the client maxRetries option changes it', async () => {
    const server = await failingThenOk(status(500), status(500), status(500), status(500));
    const client = clientFor(server, { maxRetries: 4 });
    await expect(client.browsers.get(BROWSER_ID)).resolves.toMatchObject({ id: BROWSER_ID });
    expect(server.requests).toHaveLength(5);
    expect(client.sleeps).toHaveLength(4);
  });

  it('a per-call maxRetries overrides the client', async () => {
    const server = await failingThenOk(status(500), status(500), status(500));
    const client = clientFor(server, { maxRetries: 5 });
    await expect(client.browsers.get(BROWSER_ID, { maxRetries: 0 })).rejects.toBeInstanceOf(
      InternalServerError,
    );
    expect(server.requests).toHaveLength(1);
    await expect(client.browsers.get(BROWSER_ID, { maxRetries: 1 })).rejects.toBeInstanceOf(
      InternalServerError,
    );
    expect(server.requests).toHaveLength(3);
  });
});

describe('how long to wait', () => {
  it('Retry-After in seconds is honoured', async () => {
    const server = await failingThenOk(rateLimited('7'), rateLimited('2'));
    const client = clientFor(server);
    await client.browsers.get(BROWSER_ID);
    expect(client.sleeps).toEqual([7000, 2000]);
  });

  it.each([429, 503])('Retry-After as an HTTP date is honoured on a %i', async (code) => {
    const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 30_000).toUTCString();
    const server = await failingThenOk(status(code, { detail: 'come back later' }, { 'retry-after': at }));
    const client = clientFor(server);
    await client.browsers.get(BROWSER_ID);
    expect(client.sleeps).toHaveLength(1);
    expect(client.sleeps[0]).toBeGreaterThan(28_000);
    expect(client.sleeps[0]).toBeLessThanOrEqual(31_000);
  });

  it('Retry-After in seconds is honoured on a 503', async () => {
    const server = await failingThenOk(status(503, { detail: 'maintenance' }, { 'retry-after': '5' }));
    const client = clientFor(server);
    await client.browsers.get(BROWSER_ID);
    expect(client.sleeps).toEqual([5000]);
  });

  it('a 503 whose Retry-After is above the cap surfaces at once', async () => {
    const server = await failingThenOk(status(503, { detail: 'maintenance' }, { 'retry-after': '3600' }));
    const client = clientFor(server);
    await expect(client.browsers.get(BROWSER_ID)).rejects.toBeInstanceOf(InternalServerError);
    expect(server.requests).toHaveLength(1);
    expect(client.sleeps).toEqual([]);
  });

  it('a Retry-After above the 60 s cap is not waited for: the error surfaces at once', async () => {
    const server = await failingThenOk(rateLimited('61'));
    const client = clientFor(server);
    const error = await client.browsers.get(BROWSER_ID).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfterMs).toBe(61_000);
    expect(server.requests).toHaveLength(1);
    expect(client.sleeps).toEqual([]);
  });

  it('a Retry-After of exactly 60 s is waited for', async () => {
    const server = await failingThenOk(rateLimited('60'));
    const client = clientFor(server);
    await client.browsers.get(BROWSER_ID);
    expect(client.sleeps).toEqual([60_000]);
  });

  it.each([
    { random: 0.999, expected: [499.5, 999, 1998, 3996] },
    { random: 0, expected: [0, 0, 0, 0] },
  ])(
    'backoff is full jitter within [0, 500·2^attempt] (random() = $random)',
    async ({ random, expected }) => {
      const server = await failingThenOk(status(500), status(500), status(500), status(500));
      const { clock, sleeps } = recordingClock({ random: () => random });
      const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, clock, maxRetries: 4 });
      await client.browsers.get(BROWSER_ID);
      expect(sleeps).toHaveLength(4);
      sleeps.forEach((delay, attempt) => {
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(500 * 2 ** attempt);
        expect(delay).toBeCloseTo(expected[attempt] ?? Number.NaN, 6);
      });
    },
  );

  it('backoff stops growing at 8 s', async () => {
    const failures = Array.from({ length: 7 }, () => status(500));
    const server = await failingThenOk(...failures);
    const { clock, sleeps } = recordingClock({ random: () => 0.999 });
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, clock, maxRetries: 7 });
    await client.browsers.get(BROWSER_ID);
    expect(Math.max(...sleeps)).toBeCloseTo(7992, 6);
    expect(sleeps.slice(-3)).toEqual([7992, 7992, 7992]);
  });

  it('a 429 without Retry-After backs off with jitter', async () => {
    const server = await failingThenOk(status(429, { detail: 'slow down' }));
    const { clock, sleeps } = recordingClock({ random: () => 0.5 });
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, clock });
    await client.browsers.get(BROWSER_ID);
    expect(sleeps).toEqual([250]);
  });
});

describe('abort during a retry sleep', () => {
  it('rejects with APIUserAbortError and makes no further attempt', async () => {
    const server = await failingThenOk(status(503), status(503));
    const controller = new AbortController();
    const { clock, sleeps } = recordingClock({
      // The caller gives up while the client is waiting to retry.
      onSleep: async () => controller.abort(),
    });
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, clock });
    const error = await client.browsers
      .get(BROWSER_ID, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as APIUserAbortError).code).toBe('user_abort');
    expect((error as Error).cause).toBeInstanceOf(InternalServerError);
    expect(sleeps).toHaveLength(1);
    expect(server.requests).toHaveLength(1);
  });

  it('the real clock stops a long Retry-After wait as soon as the signal aborts', async () => {
    const controller = new AbortController();
    const server = await startServer((_req, res) => {
      // Abort once the client has had the 429 for a while, so it is inside its 30 s sleep.
      res.on('finish', () => setTimeout(() => controller.abort(), 150));
      rateLimited('30')(res);
    });
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url });
    const started = performance.now();
    const error = await client.browsers
      .get(BROWSER_ID, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as Error).cause).toBeInstanceOf(RateLimitError);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it('a reset that keeps happening ends as APIConnectionError after the retries', async () => {
    const server = await failingThenOk(reset, reset, reset);
    const client = clientFor(server);
    await expect(client.browsers.get(BROWSER_ID)).rejects.toBeInstanceOf(APIConnectionError);
    expect(server.requests).toHaveLength(3);
    expect(client.sleeps).toHaveLength(2);
  });
});
