import { randomUUID } from 'node:crypto';
import { NotFoundError, RateLimitError } from 'cloudbrowser';
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';

const local = useLocalService({ maxBrowsers: 2 });

/** A raw request, bypassing the client's own validation, to see what the service itself answers. */
async function raw(
  method: string,
  path: string,
  init: { body?: string; key?: string | null; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...init.headers };
  const key = init.key === undefined ? local.service.apiKey : init.key;
  if (key !== null) headers['x-service-api-key'] = key;
  const response = await request(`${local.service.baseUrl}${path}`, {
    method: method as 'GET',
    headers,
    body: init.body ?? null,
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text ? JSON.parse(text) : undefined };
}

describe('authentication', () => {
  test('a request without the key is 401 with a detail', async () => {
    const { status, body } = await raw('GET', '/api/v4/browsers', { key: null });
    expect(status).toBe(401);
    expect(body.detail).toMatch(/API key/);
  });

  test('a wrong key is 401 and is not echoed', async () => {
    const { status, body } = await raw('GET', '/api/v4/profiles', { key: 'cb_wrong-key-123' });
    expect(status).toBe(401);
    expect(JSON.stringify(body)).not.toContain('wrong-key');
  });

  test('the generated key has the form prefix_random', () => {
    expect(local.service.apiKey).toMatch(/^cb_[\w-]{20,}$/);
  });
});

describe('validation', () => {
  test('an upper-case country code is a 422 HTTPValidationError', async () => {
    const { status, body } = await raw('POST', '/api/v4/browsers', {
      body: JSON.stringify({ proxyCountryCode: 'DE' }),
    });
    expect(status).toBe(422);
    expect(body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'proxyCountryCode'],
        msg: expect.any(String),
        type: expect.any(String),
      }),
    ]);
  });

  test('a timeout that is not a whole number of minutes in range is a 422', async () => {
    for (const timeout of [0, 1.5, 241, '5']) {
      const { status, body } = await raw('POST', '/api/v4/browsers', { body: JSON.stringify({ timeout }) });
      expect(status).toBe(422);
      expect(body.detail[0].loc).toEqual(['body', 'timeout']);
    }
  });

  test('more than 10 metadata pairs is a 422', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
    const { status, body } = await raw('POST', '/api/v4/browsers', { body: JSON.stringify({ metadata }) });
    expect(status).toBe(422);
    expect(body.detail[0].loc).toEqual(['body', 'metadata']);
  });

  test('a malformed JSON body is a 422 and the service keeps serving', async () => {
    const { status, body } = await raw('POST', '/api/v4/profiles', { body: '{"name": ' });
    expect(status).toBe(422);
    expect(body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    expect((await raw('GET', '/api/v4/profiles')).status).toBe(200);
  });

  test('an oversized body is a 413 and the service keeps serving', async () => {
    const { status } = await raw('POST', '/api/v4/profiles', {
      body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expect(status).toBe(413);
    expect((await raw('GET', '/api/v4/profiles')).status).toBe(200);
  });

  test('a stop body other than {action: "stop"} is a 422 and stops nothing', async () => {
    const browser = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const { status, body } = await raw('PATCH', `/api/v4/browsers/${browser.id}`, {
        body: JSON.stringify({ action: 'pause' }),
      });
      expect(status).toBe(422);
      expect(body.detail[0].loc).toEqual(['body', 'action']);
      expect((await local.client.browsers.get(browser.id)).status).toBe('active');
    } finally {
      await local.client.browsers.stop(browser.id);
    }
  });

  test('a profile update with a wrong type is a 422 naming the field', async () => {
    const profile = await local.client.profiles.create({ name: 'typed' });
    const { status, body } = await raw('PATCH', `/api/v4/profiles/${profile.id}`, {
      body: JSON.stringify({ name: 5 }),
    });
    expect(status).toBe(422);
    expect(body.detail[0].loc).toEqual(['body', 'name']);
  });

  test('a page size out of range is a 422 on the query', async () => {
    const { status, body } = await raw('GET', '/api/v4/browsers?pageSize=500');
    expect(status).toBe(422);
    expect(body.detail[0].loc).toEqual(['query', 'pageSize']);
  });

  test('a malformed id is a 422 on the path', async () => {
    const { status, body } = await raw('GET', '/api/v4/profiles/not-a-uuid');
    expect(status).toBe(422);
    expect(body.detail[0].loc).toEqual(['path', 'id']);
  });
});

describe('routes', () => {
  test('an unknown route is a 404 and a wrong method a 405', async () => {
    expect((await raw('GET', '/api/v4/nothing-here')).status).toBe(404);
    expect((await raw('DELETE', '/api/v4/browsers')).status).toBe(405);
  });

  test('/json/version at the root explains that it lives under each cdpUrl', async () => {
    const { status, body } = await raw('GET', '/json/version', { key: null });
    expect(status).toBe(404);
    expect(body.detail).toMatch(/<cdpUrl>\/json\/version.*browserWSEndpoint/);
  });

  test('unknown browser and profile ids are 404 with a detail', async () => {
    await expect(local.client.browsers.get(randomUUID())).rejects.toThrow(NotFoundError);
    await expect(local.client.browsers.stop(randomUUID())).rejects.toThrow(NotFoundError);
    const missing = await raw('GET', `/api/v4/profiles/${randomUUID()}`);
    expect(missing).toEqual({ status: 404, body: { detail: 'Profile not found' } });
  });

  test('profiles: create, get, list, update, delete', async () => {
    const { client } = local;
    const created = await client.profiles.create({ name: 'alice', userId: 'user-1' });
    expect(created).toMatchObject({ name: 'alice', userId: 'user-1', cookieDomains: [], lastUsedAt: null });
    expect(await client.profiles.get(created.id)).toEqual(created);
    const updated = await client.profiles.update(created.id, { name: 'alice2' });
    expect(updated.name).toBe('alice2');
    expect((await client.profiles.list({ query: 'ALICE2' }).toArray()).map((p) => p.id)).toEqual([
      created.id,
    ]);
    await client.profiles.delete(created.id);
    await expect(client.profiles.get(created.id)).rejects.toThrow(NotFoundError);
  });

  test('profiles list walks every page', async () => {
    const tag = randomUUID().slice(0, 8);
    for (let i = 0; i < 5; i++) await local.client.profiles.create({ name: `${tag}-${i}` });
    const pages = [];
    for await (const page of local.client.profiles.list({ query: tag, pageSize: 2 }).pages())
      pages.push(page.items.length);
    expect(pages).toEqual([2, 2, 1]);
  });

  test('the v2 and v3 paths are aliases of v4', async () => {
    const created = await raw('POST', '/api/v3/profiles', { body: JSON.stringify({ name: 'alias' }) });
    expect(created.status).toBe(201);
    expect((await raw('GET', `/api/v2/profiles/${created.body.id}`)).body.name).toBe('alias');
    expect((await raw('GET', `/api/v4/profiles/${created.body.id}`)).status).toBe(200);
  });
});

describe('browsers', () => {
  test('create answers 201 with the browser object of the service notes', async () => {
    const created = await raw('POST', '/api/v4/browsers', {
      body: JSON.stringify({ proxyCountryCode: null, metadata: { suite: 'rest' } }),
    });
    try {
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        status: 'active',
        cdpUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/cdp\/[\w-]+$/),
        liveUrl: expect.any(String),
        finishedAt: null,
        agentSessionId: null,
        recordingUrl: null,
        metadata: { suite: 'rest' },
        browserCost: expect.stringMatching(/^\d+\.\d+$/),
      });
      expect(created.body.cdpUrl).not.toContain(local.service.apiKey);
    } finally {
      await local.client.browsers.stop(created.body.id);
    }
  });

  test('the concurrency cap answers 429 and the client reads it as a concurrency limit', async () => {
    const a = await local.client.browsers.create({ proxyCountryCode: null });
    const b = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const error = await local.client.browsers.create({ proxyCountryCode: null }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RateLimitError);
      expect((error as RateLimitError).limit).toBe('concurrency');
      expect((error as RateLimitError).message).toMatch(/concurrent/);
    } finally {
      await Promise.all([local.client.browsers.stop(a.id), local.client.browsers.stop(b.id)]);
    }
  });

  test('list filters by status and metadata, across pages', async () => {
    const run = randomUUID();
    const made = [];
    for (let i = 0; i < 2; i++)
      made.push(await local.client.browsers.create({ proxyCountryCode: null, metadata: { run } }));
    await local.client.browsers.stop(made[0]?.id ?? '');
    const active = await local.client.browsers.list({ filterBy: 'active', metadata: { run } }).toArray();
    const all = await local.client.browsers.list({ metadata: { run }, pageSize: 1 }).toArray();
    await local.client.browsers.stop(made[1]?.id ?? '');
    expect(active.map((b) => b.id)).toEqual([made[1]?.id]);
    expect(all.map((b) => b.id).sort()).toEqual(made.map((b) => b.id).sort());
  });

  test('browsers.stop is idempotent and final', async () => {
    const browser = await local.client.browsers.create({ proxyCountryCode: null });
    const first = await local.client.browsers.stop(browser.id);
    const second = await local.client.browsers.stop(browser.id);
    expect(first.status).toBe('stopped');
    expect(second).toEqual(first);
    expect(first.cdpUrl).toBeNull();
  });
});
