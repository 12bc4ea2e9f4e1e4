import { inspect } from 'node:util';
import { CloudBrowserClient, CloudBrowserError } from 'cloudbrowser';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { API_KEY, clientFor } from '../support/client.js';
import { json, type ReceivedRequest, startServer } from '../support/http-server.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Every text form an error can take in a log line, a report or a crash dump. */
function renderings(error: unknown): string[] {
  const out = [
    inspect(error, { depth: 10, showHidden: true }),
    inspect(error, { depth: 10, showHidden: true, getters: true }),
    inspect(error, { depth: 10, showHidden: true, customInspect: false }),
    JSON.stringify(error) ?? '',
    String(error),
  ];
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 10; depth++) {
    out.push(String(e));
    if (e instanceof Error) {
      out.push(e.message, e.stack ?? '', inspect(e, { depth: 10, showHidden: true }));
      e = e.cause;
    } else {
      out.push(inspect(e, { depth: 10, showHidden: true }));
      e = undefined;
    }
  }
  return out;
}

/** A service that puts the key it received into everything it answers with. */
async function echoingService() {
  return startServer((req: ReceivedRequest, res) => {
    const key = String(req.headers['x-service-api-key']);
    const headers = { 'x-echo-key': key, 'x-request-id': `req-${key}` };
    const last = req.path.slice(req.path.lastIndexOf('/') + 1);
    if (last === 'hang') return;
    if (last === 'reset') return void res.socket?.destroy();
    if (last === 'not-json') return void res.writeHead(200, headers).end(`<p>${key}</p>`);
    if (last === 'no-id') return json(res, 200, { status: 'active', note: key }, headers);
    if (req.method === 'POST') {
      return json(res, 429, { detail: `Too many concurrent active sessions for ${key}` }, headers);
    }
    const status = Number(/^status-(\d+)$/.exec(last)?.[1] ?? 599);
    const bodies: Record<number, unknown> = {
      402: { detail: { reason: 'spending cap', key } },
      422: { detail: [{ loc: ['header', key], msg: `bad key ${key}`, type: key }] },
      429: { error: 'rate_limited', retry_after_seconds: 120, key },
    };
    json(res, status, bodies[status] ?? { detail: `invalid key ${key}` }, {
      ...headers,
      ...(status === 429 ? { 'retry-after': '120' } : {}),
    });
  });
}

describe('the API key never shows', () => {
  it('in any error, its cause chain, the client, or anything written to the console', async () => {
    const written: string[] = [];
    const record = (...args: unknown[]) => {
      written.push(args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 10 }))).join(' '));
    };
    for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
      vi.spyOn(console, method).mockImplementation(record);
    }
    const stdout = vi.spyOn(process.stdout, 'write');
    const stderr = vi.spyOn(process.stderr, 'write');
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(inspect(warning));
    process.on('warning', onWarning);

    const server = await echoingService();
    const client = clientFor(server, { maxRetries: 0 });
    const closed = { url: 'http://127.0.0.1:1' };
    const attempts: { name: string; run: () => Promise<unknown> | unknown }[] = [
      ...[400, 401, 403, 404, 409, 422, 429, 402, 500, 503].map((status) => ({
        name: `status ${status}`,
        run: () => client.browsers.get(`status-${status}`),
      })),
      { name: 'concurrency 429', run: () => client.browsers.create() },
      { name: 'timeout', run: () => client.browsers.get('hang', { timeoutMs: 50 }) },
      {
        name: 'abort',
        run: () => {
          const controller = new AbortController();
          setTimeout(() => controller.abort(), 20);
          return client.browsers.get('hang', { signal: controller.signal });
        },
      },
      { name: 'reset', run: () => client.browsers.get('reset') },
      { name: 'refused', run: () => clientFor(closed, { maxRetries: 0 }).browsers.get('b1') },
      { name: 'create timeout with a failed reconciliation', run: createThatHangs },
      { name: 'request validation', run: () => client.browsers.create({ proxyCountryCode: 'DE' }) },
      { name: 'path validation', run: () => client.browsers.get('../x') },
      { name: 'response validation, no id', run: () => client.browsers.get('no-id') },
      { name: 'response validation, not JSON', run: () => client.browsers.get('not-json') },
      { name: 'no base URL', run: () => new CloudBrowserClient({ apiKey: API_KEY, baseUrl: '' }) },
      { name: 'bad base URL', run: () => new CloudBrowserClient({ apiKey: API_KEY, baseUrl: 'ftp://x' }) },
      {
        name: 'bad header name',
        run: () => new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, apiKeyHeader: 'a b' }),
      },
    ];

    const errors: { name: string; error: unknown }[] = [];
    for (const { name, run } of attempts) {
      try {
        await run();
        errors.push({ name, error: new Error(`${name}: expected a failure`) });
      } catch (error) {
        errors.push({ name, error });
      }
    }
    process.off('warning', onWarning);

    // Each attempt failed the way it was meant to, so the scan below covers every kind.
    const kinds = errors.map(({ name, error }) => `${name}: ${(error as { name?: string }).name}`);
    expect(kinds).toEqual([
      'status 400: BadRequestError',
      'status 401: AuthenticationError',
      'status 403: PermissionDeniedError',
      'status 404: NotFoundError',
      'status 409: ConflictError',
      'status 422: UnprocessableEntityError',
      'status 429: RateLimitError',
      'status 402: APIError',
      'status 500: InternalServerError',
      'status 503: InternalServerError',
      'concurrency 429: RateLimitError',
      'timeout: APITimeoutError',
      'abort: APIUserAbortError',
      'reset: APIConnectionError',
      'refused: APIConnectionError',
      'create timeout with a failed reconciliation: APITimeoutError',
      'request validation: RequestValidationError',
      'path validation: RequestValidationError',
      'response validation, no id: ResponseValidationError',
      'response validation, not JSON: ResponseValidationError',
      'no base URL: ConfigurationError',
      'bad base URL: ConfigurationError',
      'bad header name: ConfigurationError',
    ]);
    for (const { error } of errors) expect(error).toBeInstanceOf(CloudBrowserError);
    // The service really did echo the key: otherwise this test would prove nothing.
    expect(server.requests.every((r) => r.headers['x-service-api-key'] === API_KEY)).toBe(true);
    expect(server.requests.length).toBeGreaterThan(10);

    const leaks: string[] = [];
    for (const { name, error } of errors) {
      renderings(error).forEach((text, i) => {
        if (text.includes(API_KEY)) leaks.push(`${name} (rendering ${i}): ${text.slice(0, 300)}`);
      });
    }
    for (const [name, text] of [
      ['inspect(client)', inspect(client, { depth: 10, showHidden: true })],
      ['inspect(client) raw', inspect(client, { depth: 10, showHidden: true, customInspect: false })],
      ['Object.values(client)', inspect(Object.values(client), { depth: 10, customInspect: false })],
      ['JSON.stringify(client)', JSON.stringify(client)],
      ['String(client)', String(client)],
      ['inspect(client.browsers)', inspect(client.browsers, { depth: 10, showHidden: true })],
      ['inspect(client.profiles)', inspect(client.profiles, { depth: 10, showHidden: true })],
      ['JSON.stringify(client.browsers)', JSON.stringify(client.browsers)],
      ['console', written.join('\n')],
      ['stdout', stdout.mock.calls.map((c) => String(c[0])).join('')],
      ['stderr', stderr.mock.calls.map((c) => String(c[0])).join('')],
      ['warnings', warnings.join('\n')],
    ] as const) {
      if (text.includes(API_KEY)) leaks.push(`${name}: ${text.slice(0, 300)}`);
    }
    expect(leaks).toEqual([]);
  });
});

/** A create that never answers, whose reconciliation lookup then fails with the key in its body. */
async function createThatHangs() {
  const server = await startServer((req, res) => {
    if (req.method === 'POST') return;
    json(res, 503, { detail: `lookup refused for ${String(req.headers['x-service-api-key'])}` });
  });
  return clientFor(server, { maxRetries: 0 }).browsers.create({}, { timeoutMs: 50 });
}
