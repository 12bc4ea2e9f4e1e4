import { APIConnectionError, APITimeoutError, APIUserAbortError, CloudBrowserError } from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor, countingDispatcher, settle } from '../support/client.js';
import { browserBody, json, startServer } from '../support/http-server.js';

const BROWSER_ID = '0b8e2f0e-6c1a-4f4e-8f61-3d1f7b9a2c55';

/** A server that receives requests and never answers them. */
const silentServer = () => startServer(() => undefined);

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CloudBrowserError);
  return error as Error;
}

describe('timeouts', () => {
  it('a server that never answers ends in APITimeoutError after timeoutMs', async () => {
    const server = await silentServer();
    const client = clientFor(server, { timeoutMs: 100, maxRetries: 0 });
    const started = performance.now();
    const error = await rejection(client.browsers.get(BROWSER_ID));
    expect(error).toBeInstanceOf(APITimeoutError);
    expect(error).toBeInstanceOf(APIConnectionError);
    expect((error as APITimeoutError).code).toBe('timeout');
    expect(error.message).toBe(`browsers.get (GET /api/v4/browsers/${BROWSER_ID}): timed out after 100 ms`);
    expect(performance.now() - started).toBeGreaterThanOrEqual(95);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it('a per-call timeoutMs overrides the client', async () => {
    const server = await silentServer();
    const client = clientFor(server, { timeoutMs: 60_000, maxRetries: 0 });
    const error = await rejection(client.profiles.get('p1', { timeoutMs: 50 }));
    expect(error).toBeInstanceOf(APITimeoutError);
    expect(error.message).toContain('timed out after 50 ms');
  });

  it('a timed-out GET is retried, each attempt with its own time limit', async () => {
    let count = 0;
    const server = await startServer((_req, res) => {
      if (count++ > 0) json(res, 200, browserBody({ id: BROWSER_ID }));
    });
    const client = clientFor(server, { timeoutMs: 100 });
    await expect(client.browsers.get(BROWSER_ID)).resolves.toMatchObject({ id: BROWSER_ID });
    expect(server.requests).toHaveLength(2);
    expect(client.sleeps).toHaveLength(1);
  });
});

describe('abort', () => {
  it('aborting mid-request rejects promptly with APIUserAbortError', async () => {
    const controller = new AbortController();
    const server = await startServer(() => controller.abort(new Error('caller gave up')));
    const client = clientFor(server, { timeoutMs: 30_000 });
    const started = performance.now();
    const error = await rejection(client.browsers.get(BROWSER_ID, { signal: controller.signal }));
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as APIUserAbortError).code).toBe('user_abort');
    expect(error.message).toBe(`browsers.get (GET /api/v4/browsers/${BROWSER_ID}): aborted by the caller`);
    expect(error.cause).toEqual(new Error('caller gave up'));
    expect(performance.now() - started).toBeLessThan(1_000);
    // An aborted call is not retried.
    await settle();
    expect(server.requests).toHaveLength(1);
    expect(client.sleeps).toEqual([]);
  });

  it('an already-aborted signal sends nothing', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const counting = countingDispatcher();
    const client = clientFor(server, { dispatcher: counting.dispatcher });
    const error = await rejection(client.browsers.get(BROWSER_ID, { signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(APIUserAbortError);
    await settle();
    expect(counting.dispatched()).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  it('an already-aborted signal on create sends nothing and looks for nothing', async () => {
    const server = await startServer((_req, res) => json(res, 201, browserBody()));
    const counting = countingDispatcher();
    const client = clientFor(server, { dispatcher: counting.dispatcher });
    const error = await rejection(client.browsers.create({}, { signal: AbortSignal.abort() }));
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(error.message).toBe('browsers.create (POST /api/v4/browsers): aborted by the caller');
    await settle();
    expect(counting.dispatched()).toBe(0);
    expect(server.requests).toHaveLength(0);
  });
});

describe('connection failures', () => {
  it('a server that destroys the socket gives APIConnectionError', async () => {
    const server = await startServer((_req, res) => res.socket?.destroy());
    const client = clientFor(server, { maxRetries: 0 });
    const error = await rejection(client.browsers.get(BROWSER_ID));
    expect(error.constructor).toBe(APIConnectionError);
    expect((error as APIConnectionError).code).toBe('connection_error');
    expect(error.message).toMatch(
      new RegExp(`^browsers\\.get \\(GET /api/v4/browsers/${BROWSER_ID}\\): connection failed`),
    );
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('a refused connection gives APIConnectionError naming ECONNREFUSED', async () => {
    const server = await startServer(() => undefined);
    await server.close();
    const client = clientFor(server, { maxRetries: 0 });
    const error = await rejection(client.profiles.list().toArray());
    expect(error.constructor).toBe(APIConnectionError);
    expect(error.message).toBe(
      'profiles.list (GET /api/v4/profiles?pageNumber=1): connection failed (ECONNREFUSED)',
    );
  });

  it('a refused connection is retried like any connection failure of a safe request', async () => {
    const server = await startServer(() => undefined);
    await server.close();
    const client = clientFor(server);
    await expect(client.browsers.get(BROWSER_ID)).rejects.toBeInstanceOf(APIConnectionError);
    expect(client.sleeps).toHaveLength(2);
  });
});
