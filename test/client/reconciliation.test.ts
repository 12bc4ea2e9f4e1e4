import {
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  CREATE_TAG,
  UnprocessableEntityError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor, countingDispatcher } from '../support/client.js';
import { browserBody, json, type ReceivedRequest, startServer } from '../support/http-server.js';

/**
 * A service whose create starts a browser (tagged with the client's create tag) but whose answer
 * never arrives or arrives broken; `onCreate` decides what the client sees. It lists and stops
 * browsers like the real one.
 */
async function serviceThatLosesCreates(onCreate: (req: ReceivedRequest) => 'hang' | 'reset' | undefined) {
  const browsers = new Map<string, Record<string, unknown>>();
  const server = await startServer((req, res) => {
    if (req.method === 'POST' && req.path === '/api/v4/browsers') {
      const { metadata } = req.body as { metadata: Record<string, string> };
      const browser = browserBody({ metadata });
      browsers.set(browser.id as string, browser);
      const outcome = onCreate(req);
      if (outcome === 'reset') res.socket?.destroy();
      if (outcome === undefined) json(res, 201, browser);
      return;
    }
    if (req.method === 'GET' && req.path === '/api/v4/browsers') {
      const [key, value] = (req.query.get('metadata') ?? '').split('=');
      const items = [...browsers.values()].filter(
        (b) =>
          (req.query.get('filterBy') === null || b.status === req.query.get('filterBy')) &&
          (key === undefined || (b.metadata as Record<string, string>)[key] === value),
      );
      return json(res, 200, { items, totalItems: items.length, pageNumber: 1, pageSize: 10 });
    }
    const stop = /^\/api\/v4\/browsers\/([^/]+)$/.exec(req.path);
    if (req.method === 'PATCH' && stop?.[1] && browsers.has(stop[1])) {
      const browser = { ...browsers.get(stop[1]), status: 'stopped', finishedAt: '2030-01-01T00:05:00Z' };
      browsers.set(stop[1], browser);
      return json(res, 200, browser);
    }
    json(res, 404, { detail: 'Not found' });
  });
  return { server, browsers };
}

const createdTag = (req: ReceivedRequest | undefined) =>
  (req?.body as { metadata?: Record<string, string> } | undefined)?.metadata?.[CREATE_TAG];

describe('browsers.create never leaves a billed browser behind', () => {
  it('a create that times out after reaching the service stops the browser it made, then throws', async () => {
    const { server, browsers } = await serviceThatLosesCreates(() => 'hang');
    const client = clientFor(server);
    const error = await client.browsers
      .create({ proxyCountryCode: 'de' }, { timeoutMs: 100 })
      .catch((e) => e);

    expect(error).toBeInstanceOf(APITimeoutError);
    const [browser] = [...browsers.values()];
    expect(browser?.status).toBe('stopped');
    const tag = createdTag(server.requests[0]);
    expect(tag).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      'POST /api/v4/browsers',
      `GET /api/v4/browsers?pageNumber=1&filterBy=active&metadata=${encodeURIComponent(`${CREATE_TAG}=${tag}`)}`,
      `PATCH /api/v4/browsers/${browser?.id}`,
    ]);
    expect(server.requests[2]?.body).toEqual({ action: 'stop' });
    expect(error.message).toBe(
      'browsers.create (POST /api/v4/browsers): timed out after 100 ms; ' +
        `the browser it had started (${browser?.id}) was stopped`,
    );
  });

  it('the create tag carries the caller metadata along with it', async () => {
    const { server } = await serviceThatLosesCreates(() => undefined);
    const client = clientFor(server);
    const browser = await client.browsers.create({ metadata: { team: 'qa' } });
    expect(server.requests[0]?.body).toEqual({
      metadata: { team: 'qa', [CREATE_TAG]: expect.stringMatching(/^[0-9a-f-]{36}$/) },
    });
    expect(browser.metadata.team).toBe('qa');
    // Every create gets a fresh tag.
    await client.browsers.create();
    expect(createdTag(server.requests[1])).not.toBe(createdTag(server.requests[0]));
  });

  it('a create aborted by the caller after it was sent is reconciled too', async () => {
    const controller = new AbortController();
    const { server, browsers } = await serviceThatLosesCreates(() => {
      controller.abort();
      return 'hang';
    });
    const client = clientFor(server);
    const error = await client.browsers.create({}, { signal: controller.signal }).catch((e) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    const [browser] = [...browsers.values()];
    expect(browser?.status).toBe('stopped');
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'GET', 'PATCH']);
    expect(error.message).toContain(`the browser it had started (${browser?.id}) was stopped`);
  });

  it('a create whose connection is reset after sending is reconciled', async () => {
    const { server, browsers } = await serviceThatLosesCreates(() => 'reset');
    const client = clientFor(server);
    const error = await client.browsers.create().catch((e) => e);
    expect(error.constructor).toBe(APIConnectionError);
    expect([...browsers.values()].map((b) => b.status)).toEqual(['stopped']);
    expect(error.message).toContain('was stopped');
  });

  it('when no browser turns up, it looks three times, a second apart, and says none was left', async () => {
    const server = await startServer((req, res) => {
      if (req.method === 'GET')
        return json(res, 200, { items: [], totalItems: 0, pageNumber: 1, pageSize: 10 });
      // The create never answers and never makes a browser.
    });
    const client = clientFor(server);
    const error = await client.browsers.create({}, { timeoutMs: 50 }).catch((e) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    expect(server.requests.map((r) => r.method)).toEqual(['POST', 'GET', 'GET', 'GET']);
    expect(client.sleeps).toEqual([1000, 1000]);
    expect(error.message).toBe(
      'browsers.create (POST /api/v4/browsers): timed out after 50 ms; no browser was left running',
    );
  });

  it('when the lookup itself fails, the error says it could not confirm, with the tag to search for', async () => {
    const server = await startServer((req, res) => {
      if (req.method === 'GET') return json(res, 503, { detail: 'unavailable' });
    });
    const client = clientFor(server, { maxRetries: 0 });
    const error = await client.browsers.create({}, { timeoutMs: 50 }).catch((e) => e);
    expect(error).toBeInstanceOf(APITimeoutError);
    const tag = createdTag(server.requests[0]);
    expect(error.message).toContain(
      `could not confirm that no browser was left running (${CREATE_TAG}=${tag}): browsers.list`,
    );
  });

  it('a refused connection never reached the service: no reconciliation is attempted', async () => {
    const server = await startServer(() => undefined);
    await server.close();
    const counting = countingDispatcher();
    const client = clientFor(server, { dispatcher: counting.dispatcher });
    const error = await client.browsers.create().catch((e) => e);
    expect(error.constructor).toBe(APIConnectionError);
    expect(error.message).toBe('browsers.create (POST /api/v4/browsers): connection failed (ECONNREFUSED)');
    expect(counting.dispatched()).toBe(1);
    expect(client.sleeps).toEqual([]);
  });

  it('a refusal from the service is not ambiguous: a 422 on create is not reconciled', async () => {
    const server = await startServer((_req, res) =>
      json(res, 422, { detail: [{ loc: ['body', 'timeout'], msg: 'too long', type: 'less_than_equal' }] }),
    );
    const client = clientFor(server);
    await expect(client.browsers.create()).rejects.toBeInstanceOf(UnprocessableEntityError);
    expect(server.requests.map((r) => r.method)).toEqual(['POST']);
  });
});
