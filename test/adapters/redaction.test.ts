import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { inspect } from 'node:util';
import { CloudBrowserClient } from 'cloudbrowser';
import * as playwright from 'cloudbrowser/playwright';
import * as puppeteer from 'cloudbrowser/puppeteer';
import { afterEach, describe, expect, test } from 'vitest';
import { API_KEY } from '../support/client.js';
import { browserBody } from '../support/http-server.js';
import { useLocalService } from '../support/local-service.js';

const local = useLocalService();

/** Credentials a cdpUrl and a WebSocket URL may carry: none may reach an error. */
const PATH_SECRET = 'pathSecret0123456789abcdef';
const QUERY_TOKEN = 'queryToken0123456789abcdef';
const WS_SECRET = 'wsSecret0123456789abcdefgh';
const MOVED_SECRET = 'movedSecret0123456789abcde';

/** Every text form an error can take in a log line, a report or a crash dump, its causes included. */
function renderings(error: unknown): string {
  const out = [
    inspect(error, { depth: 10, showHidden: true }),
    inspect(error, { depth: 10, showHidden: true, getters: true }),
    JSON.stringify(error) ?? '',
    String(error),
  ];
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 10; depth++, e = e.cause) {
    out.push(e.message, e.stack ?? '', JSON.stringify(e) ?? '', String(e));
  }
  return out.join('\n');
}

function expectNoSecrets(error: unknown, also: readonly string[] = []): void {
  expect(error).toBeInstanceOf(Error);
  const text = renderings(error);
  for (const secret of [API_KEY, PATH_SECRET, QUERY_TOKEN, WS_SECRET, MOVED_SECRET, ...also]) {
    expect(text, `an error shows ${secret}:\n${text}`).not.toContain(secret);
  }
}

/** How the fake service's CDP endpoint misbehaves. */
type Endpoint =
  | 'version 404' // `<cdpUrl>/json/version` answers 404
  | 'version hangs' // it never answers
  | 'ws refused' // it names a WebSocket whose upgrade is refused
  | 'ws hangs'; // it names a WebSocket whose upgrade never completes

interface FakeService {
  readonly url: string;
  readonly client: CloudBrowserClient;
}

const servers: { close(): void }[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

/**
 * A careless service on `node:http`: it echoes the URL and the key of each request in its answers,
 * and its browsers' CDP endpoints misbehave as `endpoint` says. With `backing`, its browsers are
 * real ones of that (local) service, whose `cdpUrl` has moved to the broken endpoint once created.
 */
async function fakeService(options: {
  endpoint: Endpoint;
  stop?: 'ok' | 'fails';
  backing?: CloudBrowserClient;
}): Promise<FakeService> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    answer(req, res).catch((error: unknown) => {
      res.writeHead(599).end(String(error));
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('upgrade', (_req, socket: Socket) => {
    if (options.endpoint === 'ws refused') socket.end(`HTTP/1.1 403 Forbidden\r\n\r\nnot for ${WS_SECRET}`);
    // 'ws hangs': never answered.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push({
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  });

  const cdpUrl = `${url}/cdp/${PATH_SECRET}?token=${QUERY_TOKEN}`;
  const browser = browserBody({ cdpUrl, liveUrl: `${url}/live/${PATH_SECRET}` });
  const send = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const echo = (req: IncomingMessage) => `${req.url} (key ${String(req.headers['x-service-api-key'])})`;

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', url).pathname;
    const id = /^\/api\/v4\/browsers\/([\w-]+)$/.exec(path)?.[1];
    if (options.backing && path.startsWith('/api/')) {
      const { browsers } = options.backing;
      if (req.method === 'POST') return send(res, 201, await browsers.create(await jsonBody(req)));
      if (req.method === 'PATCH' && id) return send(res, 200, await browsers.stop(id));
      if (req.method === 'GET' && id) return send(res, 200, { ...(await browsers.get(id)), cdpUrl });
    }
    if (req.method === 'POST' && path === '/api/v4/browsers') return send(res, 201, browser);
    if (req.method === 'PATCH') {
      if (options.stop === 'fails') return send(res, 500, { detail: `cannot stop ${cdpUrl}: ${echo(req)}` });
      return send(res, 200, { ...browser, status: 'stopped', cdpUrl: null, liveUrl: null });
    }
    if (req.method === 'GET' && id) return send(res, 200, { ...browser, id });
    if (path === `/cdp/${PATH_SECRET}/json/version`) {
      if (options.endpoint === 'version 404') return send(res, 404, { detail: `no browser at ${echo(req)}` });
      if (options.endpoint === 'version hangs') return;
      return send(res, 200, {
        Browser: 'Chrome/140.0.0.0',
        webSocketDebuggerUrl: `ws://127.0.0.1:${new URL(url).port}/devtools/browser/${WS_SECRET}`,
      });
    }
    send(res, 404, { detail: `not found: ${echo(req)}` });
  }

  return { url, client: new CloudBrowserClient({ apiKey: API_KEY, baseUrl: url, maxRetries: 0 }) };
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const { metadata: _tag, ...body } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<
    string,
    unknown
  >;
  return body;
}

/** What the two adapters share, so one test body can run against either. */
interface Adapter {
  connectCloudBrowser(
    options: playwright.PlaywrightConnectOptions & puppeteer.PuppeteerConnectOptions,
  ): Promise<playwright.PlaywrightCloudBrowser | puppeteer.PuppeteerCloudBrowser>;
  attachCloudBrowser(
    browserId: string,
    options: playwright.PlaywrightAttachOptions & puppeteer.PuppeteerAttachOptions,
  ): Promise<playwright.PlaywrightCloudBrowser | puppeteer.PuppeteerCloudBrowser>;
}

const adapters: readonly (readonly [string, Adapter])[] = [
  ['Playwright', playwright],
  ['Puppeteer', puppeteer],
];

describe.each(adapters)('%s adapter errors hold no API key and no cdpUrl secret', (name, adapter) => {
  test.each(['version 404', 'ws refused'] as const)('when the CDP endpoint fails (%s)', async (endpoint) => {
    const fake = await fakeService({ endpoint });
    const error = await adapter.connectCloudBrowser({ client: fake.client }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'failed' });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^connectCloudBrowser: ${name} could not connect to browser \\S+: .+; the browser was stopped$`,
        's',
      ),
    );
    // The URL is named, with its credentials cut out (Puppeteer does not name the WebSocket it was refused).
    if (endpoint === 'version 404' || name === 'Playwright')
      expect((error as Error).message).toContain('[redacted]');
    expectNoSecrets(error);
  });

  test.each(['version hangs', 'ws hangs'] as const)('when the connect times out (%s)', async (endpoint) => {
    const fake = await fakeService({ endpoint });
    const error = await adapter
      .connectCloudBrowser({ client: fake.client, connectTimeoutMs: 300 })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'timeout' });
    expectNoSecrets(error);
  });

  test('when the connect is aborted', async () => {
    const fake = await fakeService({ endpoint: 'ws hangs' });
    const error = await adapter
      .connectCloudBrowser({ client: fake.client, signal: AbortSignal.timeout(200) })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'aborted' });
    expectNoSecrets(error);
  });

  test('when stopping the browser after a failed connect fails too, and the service echoes the key and URL', async () => {
    const fake = await fakeService({ endpoint: 'version 404', stop: 'fails' });
    const error = await adapter.connectCloudBrowser({ client: fake.client }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /; stopping the browser failed too \(.*500.*\): it may still be active/s,
    );
    expectNoSecrets(error);
  });

  test('when the service refuses the key', async () => {
    const error = await adapter
      .connectCloudBrowser({ client: { apiKey: API_KEY, baseUrl: local.service.baseUrl } })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'AuthenticationError', status: 401 });
    expectNoSecrets(error);
  });

  test('when attaching to a browser whose endpoint fails', async () => {
    const fake = await fakeService({ endpoint: 'version 404' });
    const error = await adapter
      .attachCloudBrowser('0b6c3f52-5d4c-4f5e-9a57-8a7c0c1e2d3f', { client: fake.client })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'failed' });
    expect((error as Error).message).toMatch(/; the browser was left as it was$/);
    expectNoSecrets(error);
  });

  test('when supervise cannot learn the API key of a client instance', async () => {
    const saved = process.env.CLOUDBROWSER_API_KEY;
    delete process.env.CLOUDBROWSER_API_KEY;
    try {
      const error = await adapter
        .connectCloudBrowser({ client: local.client, supervise: true })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'ConfigurationError' });
      expect((error as Error).message).toContain('supervise needs the API key');
      expectNoSecrets(error, [local.service.apiKey]);
    } finally {
      if (saved !== undefined) process.env.CLOUDBROWSER_API_KEY = saved;
    }
  });

  test('when reconnect() finds the cdpUrl moved to an endpoint that fails', async () => {
    const fake = await fakeService({ endpoint: 'version 404', backing: local.client });
    const cb = await adapter.connectCloudBrowser({ client: fake.client, proxyCountryCode: null });
    // The browser is real: the create gave the local service's own cdpUrl, with its own secret.
    const localSecret = new URL(cb.session.cdpUrl ?? '').pathname.split('/')[2] ?? '';
    expect(localSecret.length).toBeGreaterThan(20);
    const error = await cb.reconnect().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'failed' });
    expect((error as Error).message).toMatch(
      /^reconnect: .*; the browser is still active: stop\(\) stops it$/s,
    );
    expectNoSecrets(error, [localSecret]);
    expect((await cb.stop()).status).toBe('stopped');
  });
});
