import { randomUUID } from 'node:crypto';
import {
  APIUserAbortError,
  RequestValidationError,
  type RunCreateParams,
  type RunEvent,
  type SecretBinding,
  WaitTimeoutError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor, countingDispatcher, recordingClock, settle } from '../support/client.js';
import { json, type ReceivedRequest, startServer } from '../support/http-server.js';

const RUN_ID = '6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b';
const VAULT_ID = '0b1c2d3e-4f50-4a61-8b72-c3d4e5f60718';
const ITEM_ID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

function runBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: RUN_ID, status: 'queued', sessionId: randomUUID(), result: null, error: null, ...overrides };
}

function binding(overrides: Record<string, unknown> = {}, source: Record<string, unknown> = {}) {
  return {
    alias: 'Example_password',
    source: {
      type: 'passwordmanager',
      integrationId: 'int-1',
      vaultId: VAULT_ID,
      itemId: ITEM_ID,
      fieldId: 'password',
      ...source,
    },
    allowedDomains: ['example.com'],
    ...overrides,
  };
}

async function refusal(promise: Promise<unknown>): Promise<RequestValidationError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RequestValidationError);
  return error as RequestValidationError;
}

describe('runs.create refuses a bad request before sending anything', () => {
  const cases: { name: string; params: unknown; loc: (string | number)[]; rule: string }[] = [
    { name: 'a missing task', params: {}, loc: ['task'], rule: 'expected string' },
    { name: 'a blank task', params: { task: '  ' }, loc: ['task'], rule: 'must not be empty' },
    {
      name: 'opVaultId without opVaultAllowedDomains',
      params: { task: 't', opVaultId: VAULT_ID },
      loc: ['opVaultAllowedDomains'],
      rule: 'is required when opVaultId is sent',
    },
    {
      name: 'opVaultAllowedDomains without opVaultId',
      params: { task: 't', opVaultAllowedDomains: ['example.com'] },
      loc: ['opVaultAllowedDomains'],
      rule: 'is only used with opVaultId',
    },
    {
      name: 'an empty opVaultAllowedDomains',
      params: { task: 't', opVaultId: VAULT_ID, opVaultAllowedDomains: [] },
      loc: ['opVaultAllowedDomains'],
      rule: 'must name at least one host',
    },
    ...[
      ['a scheme', 'https://example.com'],
      ['a port', 'example.com:443'],
      ['a path', 'example.com/login'],
      ['a wildcard', '*.example.com'],
      ['a trailing dot', 'example.com.'],
      ['a space', 'example .com'],
    ].map(([what, host]) => ({
      name: `an allowed domain with ${what} (${host})`,
      params: { task: 't', opVaultId: VAULT_ID, opVaultAllowedDomains: ['ok.example', host] },
      loc: ['opVaultAllowedDomains', 1],
      rule: 'must be a bare host name such as example.com: no scheme, port, path or wildcard',
    })),
    {
      name: 'a binding whose allowed domain is a wildcard',
      params: { task: 't', secretBindings: [binding({ allowedDomains: ['*.example.com'] })] },
      loc: ['secretBindings', 0, 'allowedDomains', 0],
      rule: 'must be a bare host name',
    },
    {
      name: 'a binding without allowed domains',
      params: { task: 't', secretBindings: [binding({ allowedDomains: [] })] },
      loc: ['secretBindings', 0, 'allowedDomains'],
      rule: 'must name at least one host',
    },
    {
      name: 'a binding without an alias',
      params: { task: 't', secretBindings: [binding({ alias: '' })] },
      loc: ['secretBindings', 0, 'alias'],
      rule: 'must not be empty',
    },
    {
      name: 'a source of another type',
      params: { task: 't', secretBindings: [binding({}, { type: 'vault' })] },
      loc: ['secretBindings', 0, 'source', 'type'],
      rule: 'must be "passwordmanager"',
    },
    {
      name: 'a source without integrationId',
      params: { task: 't', secretBindings: [binding({}, { integrationId: undefined })] },
      loc: ['secretBindings', 0, 'source', 'integrationId'],
      rule: 'expected string',
    },
    {
      name: 'a vaultId that is not a UUID',
      params: { task: 't', secretBindings: [binding({}, { vaultId: 'Private' })] },
      loc: ['secretBindings', 0, 'source', 'vaultId'],
      rule: 'must be a UUID',
    },
    {
      name: 'an itemId that is not a UUID',
      params: { task: 't', secretBindings: [binding({}, { itemId: 'github' })] },
      loc: ['secretBindings', 0, 'source', 'itemId'],
      rule: 'must be a UUID',
    },
    {
      name: 'a field label instead of a field id',
      params: { task: 't', secretBindings: [binding({}, { fieldId: 'Password' })] },
      loc: ['secretBindings', 0, 'source', 'fieldId'],
      rule: 'must be one of username, password, one-time-password (the field id, not its label)',
    },
    {
      name: 'an unknown field in a binding',
      params: { task: 't', secretBindings: [binding({ value: 'hunter2' })] },
      loc: ['secretBindings', 0],
      rule: 'Unrecognized key',
    },
    {
      name: '11 explicit bindings',
      params: {
        task: 't',
        secretBindings: Array.from({ length: 11 }, (_, i) => binding({ alias: `alias_${i}` })),
      },
      loc: ['secretBindings'],
      rule: 'must have at most 10 bindings (vault fields count towards the same limit)',
    },
    {
      name: 'two bindings with one alias',
      params: { task: 't', secretBindings: [binding(), binding()] },
      loc: ['secretBindings', 1, 'alias'],
      rule: 'repeats the alias of secretBindings.0',
    },
    {
      name: 'a profileId that is not a UUID',
      params: { task: 't', browserSettings: { profileId: 'alice' } },
      loc: ['browserSettings', 'profileId'],
      rule: 'must be a UUID',
    },
    {
      name: 'an upper-case proxy country',
      params: { task: 't', browserSettings: { proxyCountryCode: 'US' } },
      loc: ['browserSettings', 'proxyCountryCode'],
      rule: 'lower-case ISO 3166-1 alpha-2',
    },
    {
      name: 'a misspelt field',
      params: { task: 't', opVaultId: VAULT_ID, opVaultAllowedDomain: ['example.com'] },
      loc: [],
      rule: 'Unrecognized key',
    },
    {
      name: 'modelParams that are not an object',
      params: { task: 't', modelParams: ['temperature'] },
      loc: ['modelParams'],
      rule: 'expected record',
    },
  ];

  it.each(cases)('$name', async ({ params, loc, rule }) => {
    const server = await startServer((_req, res) => json(res, 201, runBody()));
    const counting = countingDispatcher();
    const client = clientFor(server, { dispatcher: counting.dispatcher });
    const error = await refusal(client.runs.create(params as RunCreateParams));
    expect(error.issues).toContainEqual(expect.objectContaining({ loc, msg: expect.stringContaining(rule) }));
    expect(error.message).toMatch(/^runs\.create: invalid request: .*; nothing was sent$/);
    await settle();
    expect(counting.dispatched()).toBe(0);
    expect(server.requests).toHaveLength(0);
  });
});

describe('runs.create sends the request the spec describes', () => {
  async function sent(params: RunCreateParams): Promise<ReceivedRequest> {
    const server = await startServer((_req, res) => json(res, 201, runBody()));
    await clientFor(server).runs.create(params);
    expect(server.requests).toHaveLength(1);
    return server.requests[0] as ReceivedRequest;
  }

  it('runs.create sends POST /api/v4/runs with only the given fields and returns the run', async () => {
    const server = await startServer((_req, res) => json(res, 201, runBody({ extra: 1 })));
    const run = await clientFor(server).runs.create({ task: 'Find the price', model: 'gpt-5.6-luna' });
    expect(run).toMatchObject({ id: RUN_ID, status: 'queued', result: null, extra: 1 });
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', '/api/v4/runs', { task: 'Find the price', model: 'gpt-5.6-luna' }],
    ]);
  });

  it('browserSettings without proxyCountryCode is sent with "us"', async () => {
    const profileId = randomUUID();
    const request = await sent({ task: 't', browserSettings: { profileId } });
    expect(request.body).toEqual({ task: 't', browserSettings: { profileId, proxyCountryCode: 'us' } });
  });

  it('an empty browserSettings is sent with "us", and null keeps the managed proxy off', async () => {
    expect((await sent({ task: 't', browserSettings: {} })).body).toEqual({
      task: 't',
      browserSettings: { proxyCountryCode: 'us' },
    });
    expect((await sent({ task: 't', browserSettings: { proxyCountryCode: null } })).body).toEqual({
      task: 't',
      browserSettings: { proxyCountryCode: null },
    });
  });

  it('without browserSettings no proxyCountryCode is added', async () => {
    expect((await sent({ task: 't' })).body).toEqual({ task: 't' });
  });

  it('a model the client does not know yet and modelParams are sent as they are', async () => {
    const request = await sent({ task: 't', model: 'next-model-7', modelParams: { temperature: 0.2 } });
    expect(request.body).toEqual({ task: 't', model: 'next-model-7', modelParams: { temperature: 0.2 } });
  });

  it('a whole vault and 10 bindings are sent, host names in lower case', async () => {
    const bindings = Array.from({ length: 10 }, (_, i) =>
      binding({ alias: `a${i}`, allowedDomains: ['Login.Example.COM'] }),
    );
    const request = await sent({
      task: 't',
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.com', 'sso.example.net', 'localhost', '127.0.0.1'],
      secretBindings: bindings as SecretBinding[],
    });
    const body = request.body as Record<string, unknown>;
    expect(body.opVaultAllowedDomains).toEqual(['example.com', 'sso.example.net', 'localhost', '127.0.0.1']);
    expect(body.secretBindings).toEqual(
      bindings.map((b) => ({ ...b, allowedDomains: ['login.example.com'] })),
    );
  });

  it('runs.create is never retried', async () => {
    const server = await startServer((_req, res) => json(res, 503, { detail: 'busy' }));
    const client = clientFor(server, { maxRetries: 3 });
    await expect(client.runs.create({ task: 't' })).rejects.toMatchObject({ status: 503 });
    expect(server.requests).toHaveLength(1);
  });
});

describe('runs.get, status and cancel', () => {
  it('runs.get reads the run with its result', async () => {
    const server = await startServer((_req, res) =>
      json(res, 200, runBody({ status: 'completed', result: 'The price is 42' })),
    );
    const run = await clientFor(server).runs.get(RUN_ID);
    expect(run.result).toBe('The price is 42');
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET /api/v4/runs/${RUN_ID}`]);
  });

  it('a run without result and error reads them as null', async () => {
    const server = await startServer((_req, res) => json(res, 200, { id: RUN_ID, status: 'running' }));
    const run = await clientFor(server).runs.get(RUN_ID);
    expect(run).toMatchObject({ result: null, error: null, sessionId: null });
  });

  it('runs.status reads GET /runs/{id}/status', async () => {
    const server = await startServer((_req, res) => json(res, 200, { status: 'running' }));
    expect(await clientFor(server).runs.status(RUN_ID)).toEqual({ status: 'running' });
    expect(server.requests[0]?.url).toBe(`/api/v4/runs/${RUN_ID}/status`);
  });

  it('runs.cancel sends POST /runs/{id}/cancel and is retried as it is idempotent', async () => {
    let calls = 0;
    const server = await startServer((_req, res) =>
      ++calls === 1
        ? json(res, 503, { detail: 'try again' })
        : json(res, 200, runBody({ status: 'cancelled' })),
    );
    const client = clientFor(server);
    await expect(client.runs.cancel(RUN_ID)).resolves.toBeUndefined();
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `POST /api/v4/runs/${RUN_ID}/cancel`,
      `POST /api/v4/runs/${RUN_ID}/cancel`,
    ]);
    expect(client.sleeps).toHaveLength(1);
  });

  it('runs.cancel of a run that already ended resolves when the service refuses it with 409', async () => {
    const server = await startServer((req, res) =>
      req.method === 'POST'
        ? json(res, 409, { detail: 'Run already completed' })
        : json(res, 200, { status: 'completed' }),
    );
    await expect(clientFor(server).runs.cancel(RUN_ID)).resolves.toBeUndefined();
  });

  it('runs.cancel rethrows a 409 while the run is still going', async () => {
    const server = await startServer((req, res) =>
      req.method === 'POST' ? json(res, 409, { detail: 'busy' }) : json(res, 200, { status: 'running' }),
    );
    await expect(clientFor(server).runs.cancel(RUN_ID)).rejects.toMatchObject({ status: 409 });
  });

  it('a run id that could change the route is refused', async () => {
    const server = await startServer((_req, res) => json(res, 200, runBody()));
    await expect(clientFor(server).runs.get('../browsers')).rejects.toBeInstanceOf(RequestValidationError);
    expect(server.requests).toHaveLength(0);
  });
});

/** An event as the service sends it. */
function event(id: number, type = 'step', data: Record<string, unknown> = {}) {
  return { runId: RUN_ID, id, ts: `2030-01-01T00:00:${String(id).padStart(2, '0')}Z`, type, data };
}

/**
 * A service whose run emits `script` one poll at a time: the n-th events request sees the events
 * of the first n entries. Status is `running` until every entry is out, then `status`.
 */
async function eventServer(options: {
  script: ReturnType<typeof event>[][];
  pageSize?: number;
  status?: string;
}) {
  let polls = 0;
  const server = await startServer((req, res) => {
    const visible = options.script.slice(0, polls).flat();
    if (req.path.endsWith('/status')) {
      return json(res, 200, {
        status: polls >= options.script.length ? (options.status ?? 'completed') : 'running',
      });
    }
    if (req.query.get('after') === null || Number(req.query.get('after')) >= (visible.at(-1)?.id ?? 0))
      polls++;
    const now = options.script.slice(0, polls).flat();
    const after = Number(req.query.get('after') ?? 0);
    const newer = now.filter((e) => e.id > after);
    const page = newer.slice(0, Number(req.query.get('limit') ?? options.pageSize ?? 100));
    json(res, 200, {
      events: page,
      nextAfter: page.at(-1)?.id ?? after,
      hasMore: newer.length > page.length,
    });
  });
  return server;
}

async function collect(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const seen: RunEvent[] = [];
  for await (const e of events) seen.push(e);
  return seen;
}

describe('runs.events', () => {
  it('yields every event once, in order, polling while the run is quiet and stopping after the terminal one', async () => {
    const server = await eventServer({
      script: [
        [event(1, 'run.started'), event(2, 'browser.ready', { live_view_url: 'https://live.example/1' })],
        [],
        [event(3), event(4, 'secret.typed', { alias: 'Example_password' })],
        [event(5, 'run.completed')],
      ],
    });
    const client = clientFor(server);
    const seen = await collect(client.runs.events(RUN_ID, { pollIntervalMs: 250 }));
    expect(seen.map((e) => [e.id, e.type])).toEqual([
      [1, 'run.started'],
      [2, 'browser.ready'],
      [3, 'step'],
      [4, 'secret.typed'],
      [5, 'run.completed'],
    ]);
    expect(seen[1]?.data.live_view_url).toBe('https://live.example/1');
    const eventUrls = server.requests.filter((r) => r.path.endsWith('/events')).map((r) => r.url);
    expect(eventUrls[0]).toBe(`/api/v4/runs/${RUN_ID}/events`);
    // Each poll resumes from the last id seen.
    expect(eventUrls.slice(1).map((u) => new URL(u, 'http://x').searchParams.get('after'))).toEqual(
      expect.arrayContaining(['2', '4']),
    );
    expect(client.sleeps.every((ms) => ms === 250)).toBe(true);
    expect(client.sleeps.length).toBeGreaterThan(0);
  });

  it('after the terminal event, reads on until hasMore is false', async () => {
    const all = [
      event(1, 'run.started'),
      event(2, 'run.completed'),
      event(3, 'run.summary'),
      event(4, 'log'),
    ];
    const server = await eventServer({ script: [all], pageSize: 1 });
    const client = clientFor(server);
    const seen = await collect(client.runs.events(RUN_ID));
    expect(seen.map((e) => e.id)).toEqual([1, 2, 3, 4]);
    expect(server.requests.map((r) => r.url)).toEqual([
      `/api/v4/runs/${RUN_ID}/events`,
      `/api/v4/runs/${RUN_ID}/events?after=1`,
      `/api/v4/runs/${RUN_ID}/events?after=2`,
      `/api/v4/runs/${RUN_ID}/events?after=3`,
    ]);
    expect(client.sleeps).toEqual([]);
  });

  it('resumes after a given id and passes limit', async () => {
    const server = await eventServer({ script: [[event(1), event(2), event(3), event(4, 'run.failed')]] });
    const seen = await collect(clientFor(server).runs.events(RUN_ID, { after: 2, limit: 50 }));
    expect(seen.map((e) => e.id)).toEqual([3, 4]);
    expect(server.requests[0]?.url).toBe(`/api/v4/runs/${RUN_ID}/events?after=2&limit=50`);
  });

  it('ends when the status is terminal even without a terminal event, after one more read', async () => {
    const server = await eventServer({ script: [[event(1)], [event(2)]], status: 'cancelled' });
    const seen = await collect(clientFor(server).runs.events(RUN_ID));
    expect(seen.map((e) => e.id)).toEqual([1, 2]);
    const last = server.requests.at(-1);
    expect(last?.url).toBe(`/api/v4/runs/${RUN_ID}/events?after=2`);
  });

  it('never yields an event twice when a page repeats what was seen', async () => {
    const server = await startServer((req, res) => {
      const all = [event(1), event(2), event(3, 'run.completed')];
      // A service that ignores `after`: every page starts again from the first event.
      json(res, 200, {
        events: all.slice(0, req.query.get('after') ? 3 : 2),
        nextAfter: null,
        hasMore: !req.query.get('after'),
      });
    });
    const seen = await collect(clientFor(server).runs.events(RUN_ID));
    expect(seen.map((e) => e.id)).toEqual([1, 2, 3]);
  });

  it('stops with APIUserAbortError when the signal aborts while it waits between polls', async () => {
    const controller = new AbortController();
    const { clock } = recordingClock({
      onSleep: async () => {
        controller.abort();
      },
    });
    const server = await eventServer({ script: [[event(1)], [event(2, 'run.completed')]] });
    const client = clientFor(server, { clock });
    const seen: RunEvent[] = [];
    const error = await (async () => {
      for await (const e of client.runs.events(RUN_ID, { signal: controller.signal })) seen.push(e);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(seen.map((e) => e.id)).toEqual([1]);
  });

  it('refuses bad options at once', () => {
    const client = clientFor({ url: 'http://127.0.0.1:9' });
    expect(() => client.runs.events(RUN_ID, { after: -1 })).toThrow(RequestValidationError);
    expect(() => client.runs.events(RUN_ID, { limit: 0 })).toThrow(RequestValidationError);
    expect(() => client.runs.events(RUN_ID, { pollIntervalMs: 1.5 })).toThrow(RequestValidationError);
  });
});

describe('runs.wait', () => {
  it('polls the status until the run ends, then reads the run once', async () => {
    let polls = 0;
    const server = await startServer((req, res) => {
      if (req.path.endsWith('/status')) {
        polls++;
        return json(res, 200, { status: ['queued', 'dispatching', 'running', 'completed'][polls - 1] });
      }
      json(res, 200, runBody({ status: 'completed', result: 'done' }));
    });
    const client = clientFor(server);
    const run = await client.runs.wait(RUN_ID, { pollIntervalMs: 500 });
    expect(run).toMatchObject({ status: 'completed', result: 'done' });
    expect(server.requests.map((r) => r.path)).toEqual([
      ...Array.from({ length: 4 }, () => `/api/v4/runs/${RUN_ID}/status`),
      `/api/v4/runs/${RUN_ID}`,
    ]);
    expect(client.sleeps).toEqual([500, 500, 500]);
  });

  it('resolves with a failed run too, with its error', async () => {
    const server = await startServer((req, res) =>
      req.path.endsWith('/status')
        ? json(res, 200, { status: 'failed' })
        : json(res, 200, runBody({ status: 'failed', error: 'the site was down' })),
    );
    const run = await clientFor(server).runs.wait(RUN_ID);
    expect(run).toMatchObject({ status: 'failed', error: 'the site was down' });
  });

  it('a local timeout throws WaitTimeoutError that says the run was NOT cancelled, and cancels nothing', async () => {
    const TIMEOUT_MS = 90_000;
    let fire: () => void = () => {};
    const timeoutFired = new Promise<void>((resolve) => {
      fire = resolve;
    });
    const { clock, sleeps } = recordingClock({
      onSleep: (ms) => (ms === TIMEOUT_MS ? timeoutFired : Promise.resolve()),
    });
    let polls = 0;
    const server = await startServer((_req, res) => {
      if (++polls === 3) fire();
      json(res, 200, { status: 'running' });
    });
    const client = clientFor(server, { clock });
    const error = await client.runs.wait(RUN_ID, { timeoutMs: TIMEOUT_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({
      code: 'wait_timeout',
      id: RUN_ID,
      timeoutMs: TIMEOUT_MS,
      lastStatus: 'running',
    });
    expect((error as Error).message).toBe(
      `runs.wait: run ${RUN_ID} did not finish within 90000 ms (last status: running); the run was NOT cancelled and keeps running on the service: wait again, or cancel it`,
    );
    expect(sleeps[0]).toBe(TIMEOUT_MS);
    expect(sleeps.slice(1).every((ms) => ms === 2_000)).toBe(true);
    expect(server.requests.every((r) => r.method === 'GET' && r.path.endsWith('/status'))).toBe(true);
  });

  it('an abort rejects with APIUserAbortError and cancels nothing', async () => {
    const controller = new AbortController();
    let polls = 0;
    const server = await startServer((_req, res) => {
      if (++polls === 2) controller.abort();
      json(res, 200, { status: 'running' });
    });
    const error = await clientFor(server)
      .runs.wait(RUN_ID, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect((error as Error).message).toBe(
      `runs.wait (GET /api/v4/runs/${RUN_ID}/status): aborted by the caller`,
    );
    expect(server.requests.every((r) => r.method === 'GET')).toBe(true);
  });

  it('an already aborted signal sends nothing', async () => {
    const server = await startServer((_req, res) => json(res, 200, { status: 'running' }));
    await expect(clientFor(server).runs.wait(RUN_ID, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      APIUserAbortError,
    );
    expect(server.requests).toHaveLength(0);
  });

  it('refuses a timeout that is not a positive whole number of ms', async () => {
    const client = clientFor({ url: 'http://127.0.0.1:9' });
    await expect(client.runs.wait(RUN_ID, { timeoutMs: 0 })).rejects.toBeInstanceOf(RequestValidationError);
    await expect(client.runs.wait(RUN_ID, { pollIntervalMs: -5 })).rejects.toBeInstanceOf(
      RequestValidationError,
    );
  });
});
