import { readFileSync } from 'node:fs';
import { CloudBrowserClient, ConfigurationError, VERSION } from 'cloudbrowser';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { API_KEY, countingDispatcher } from '../support/client.js';
import { browserBody, json, startServer } from '../support/http-server.js';

const ENV_NAMES = ['CLOUDBROWSER_API_KEY', 'CLOUDBROWSER_BASE_URL', 'CLOUDBROWSER_API_KEY_HEADER'] as const;

beforeEach(() => {
  // Whatever the machine has set must not leak into these tests.
  for (const name of ENV_NAMES) vi.stubEnv(name, undefined);
});

afterEach(() => {
  vi.unstubAllEnvs();
});

function configurationError(make: () => unknown): ConfigurationError {
  let thrown: unknown;
  try {
    make();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigurationError);
  expect((thrown as ConfigurationError).code).toBe('configuration_error');
  return thrown as ConfigurationError;
}

describe('new CloudBrowserClient()', () => {
  it('without an API key throws ConfigurationError naming the option and CLOUDBROWSER_API_KEY', () => {
    const error = configurationError(() => new CloudBrowserClient({ baseUrl: 'http://127.0.0.1:1' }));
    expect(error.message).toContain('apiKey');
    expect(error.message).toContain('CLOUDBROWSER_API_KEY');
  });

  it('without a base URL throws ConfigurationError naming the option and CLOUDBROWSER_BASE_URL', () => {
    const error = configurationError(() => new CloudBrowserClient({ apiKey: API_KEY }));
    expect(error.message).toContain('baseUrl');
    expect(error.message).toContain('CLOUDBROWSER_BASE_URL');
  });

  it('a blank environment variable counts as unset', () => {
    vi.stubEnv('CLOUDBROWSER_API_KEY', '   ');
    const error = configurationError(() => new CloudBrowserClient({ baseUrl: 'http://127.0.0.1:1' }));
    expect(error.message).toContain('CLOUDBROWSER_API_KEY');
  });

  it.each([
    { name: 'a baseUrl without scheme', options: { baseUrl: 'service.example' }, field: 'baseUrl' },
    {
      name: 'a baseUrl with a query',
      options: { baseUrl: 'https://service.example/?x=1' },
      field: 'baseUrl',
    },
    { name: 'an empty API key', options: { apiKey: '' }, field: 'apiKey' },
    { name: 'a header name with a space', options: { apiKeyHeader: 'X Key' }, field: 'apiKeyHeader' },
    { name: 'a timeoutMs of 0', options: { timeoutMs: 0 }, field: 'timeoutMs' },
    { name: 'a fractional maxRetries', options: { maxRetries: 1.5 }, field: 'maxRetries' },
    { name: 'a negative maxRetries', options: { maxRetries: -1 }, field: 'maxRetries' },
  ])('refuses $name', ({ options, field }) => {
    vi.stubEnv('CLOUDBROWSER_API_KEY', API_KEY);
    vi.stubEnv('CLOUDBROWSER_BASE_URL', 'https://service.example');
    const error = configurationError(() => new CloudBrowserClient(options));
    expect(error.message).toMatch(new RegExp(`^CloudBrowserClient: invalid options: ${field} `));
  });

  it('falls back to CLOUDBROWSER_API_KEY, CLOUDBROWSER_BASE_URL and CLOUDBROWSER_API_KEY_HEADER', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    vi.stubEnv('CLOUDBROWSER_API_KEY', API_KEY);
    vi.stubEnv('CLOUDBROWSER_BASE_URL', `${server.url}/`);
    vi.stubEnv('CLOUDBROWSER_API_KEY_HEADER', 'X-Env-Key');
    const client = new CloudBrowserClient();
    expect(client.baseUrl).toBe(server.url);
    expect(client.apiKeyHeader).toBe('X-Env-Key');
    await client.browsers.get('b1');
    expect(server.requests[0]?.headers['x-env-key']).toBe(API_KEY);
    expect(server.requests[0]?.headers['x-service-api-key']).toBeUndefined();
  });

  it('options win over the environment', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    vi.stubEnv('CLOUDBROWSER_API_KEY', 'sk_env_key');
    vi.stubEnv('CLOUDBROWSER_BASE_URL', 'http://127.0.0.1:1');
    vi.stubEnv('CLOUDBROWSER_API_KEY_HEADER', 'X-Env-Key');
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, apiKeyHeader: 'X-Mine' });
    await client.browsers.get('b1');
    expect(server.requests[0]?.headers['x-mine']).toBe(API_KEY);
    expect(server.requests[0]?.headers['x-env-key']).toBeUndefined();
  });

  it('sends the key in X-Service-API-Key by default', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url });
    expect(client.apiKeyHeader).toBe('X-Service-API-Key');
    await client.browsers.get('b1');
    expect(server.requests[0]?.headers['x-service-api-key']).toBe(API_KEY);
  });

  it('a custom apiKeyHeader carries the key instead', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const client = new CloudBrowserClient({
      apiKey: API_KEY,
      baseUrl: server.url,
      apiKeyHeader: 'Authorization-Key',
    });
    await client.browsers.get('b1');
    expect(server.requests[0]?.headers['authorization-key']).toBe(API_KEY);
    expect(server.requests[0]?.headers['x-service-api-key']).toBeUndefined();
  });

  it('keeps a base URL path and drops its trailing slashes', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: `${server.url}/proxy//` });
    await client.browsers.get('b1');
    expect(server.requests[0]?.url).toBe('/proxy/api/v4/browsers/b1');
  });

  it('sends through the given dispatcher', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const counting = countingDispatcher();
    const client = new CloudBrowserClient({
      apiKey: API_KEY,
      baseUrl: server.url,
      dispatcher: counting.dispatcher,
    });
    await client.browsers.get('b1');
    await client.browsers.get('b2');
    expect(counting.dispatched()).toBe(2);
    // Every connection the server saw was opened by that dispatcher.
    expect(counting.connects()).toBeGreaterThan(0);
    expect(counting.connects()).toBe(server.connections());
    // A client without it does not use it.
    await new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url }).browsers.get('b3');
    expect(counting.dispatched()).toBe(2);
    expect(server.requests).toHaveLength(3);
  });

  it('timeoutMs and maxRetries default to 60 s and 2', () => {
    const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: 'https://service.example' });
    expect(client.timeoutMs).toBe(60_000);
    expect(client.maxRetries).toBe(2);
  });
});

describe('VERSION', () => {
  it('equals the version in package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });

  it('is sent in the user agent', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    await new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url }).browsers.get('b1');
    expect(server.requests[0]?.headers['user-agent']).toBe(
      `cloudbrowser/${VERSION} node/${process.versions.node}`,
    );
  });
});
