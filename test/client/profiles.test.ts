import { NotFoundError } from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { API_KEY, clientFor } from '../support/client.js';
import { json, profileBody, startServer } from '../support/http-server.js';

describe('profiles', () => {
  it('profiles.create sends POST {name, userId} and returns the profile', async () => {
    const created = profileBody({ name: 'alice', userId: 'u-1' });
    const server = await startServer((_req, res) => json(res, 201, created));
    const profile = await clientFor(server).profiles.create({ name: 'alice', userId: 'u-1' });
    expect(profile).toEqual(created);
    expect(server.requests.map((r) => [r.method, r.url, r.body, r.headers['x-service-api-key']])).toEqual([
      ['POST', '/api/v4/profiles', { name: 'alice', userId: 'u-1' }, API_KEY],
    ]);
  });

  it('profiles.create without params sends an empty object', async () => {
    const server = await startServer((_req, res) => json(res, 201, profileBody({ name: null })));
    const profile = await clientFor(server).profiles.create();
    expect(profile.name).toBeNull();
    expect(server.requests[0]?.body).toEqual({});
  });

  it('profiles.get reads one profile', async () => {
    const body = profileBody({ cookieDomains: ['example.com'] });
    const server = await startServer((_req, res) => json(res, 200, body));
    const profile = await clientFor(server).profiles.get(body.id as string);
    expect(profile.cookieDomains).toEqual(['example.com']);
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([`GET /api/v4/profiles/${body.id}`]);
  });

  it('profiles.list walks every page and passes query and pageSize', async () => {
    const all = Array.from({ length: 7 }, (_, i) => profileBody({ name: `user ${i}` }));
    const server = await startServer((req, res) => {
      const pageNumber = Number(req.query.get('pageNumber'));
      const pageSize = Number(req.query.get('pageSize'));
      const items = all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize);
      json(res, 200, { items, totalItems: all.length, pageNumber, pageSize });
    });
    const profiles = await clientFor(server).profiles.list({ pageSize: 3, query: 'user & co' }).toArray();
    expect(profiles.map((p) => p.name)).toEqual(all.map((p) => p.name));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v4/profiles?pageNumber=1&pageSize=3&query=user+%26+co',
      '/api/v4/profiles?pageNumber=2&pageSize=3&query=user+%26+co',
      '/api/v4/profiles?pageNumber=3&pageSize=3&query=user+%26+co',
    ]);
  });

  it('profiles.update sends PATCH with only the given fields', async () => {
    const body = profileBody({ name: 'bob' });
    const server = await startServer((_req, res) => json(res, 200, body));
    const profile = await clientFor(server).profiles.update(body.id as string, { name: 'bob' });
    expect(profile.name).toBe('bob');
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['PATCH', `/api/v4/profiles/${body.id}`, { name: 'bob' }],
    ]);
  });

  it('profiles.delete sends DELETE, and a 204 resolves to undefined', async () => {
    const server = await startServer((_req, res) => json(res, 204, null));
    const result = await clientFor(server).profiles.delete('p 1');
    expect(result).toBeUndefined();
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['DELETE', '/api/v4/profiles/p%201', undefined],
    ]);
    expect(server.requests[0]?.headers['content-type']).toBeUndefined();
  });

  it('profiles.delete of a missing profile rejects with NotFoundError', async () => {
    const server = await startServer((_req, res) => json(res, 404, { detail: 'Profile not found' }));
    const error = await clientFor(server)
      .profiles.delete('p1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as Error).message).toBe(
      'profiles.delete (DELETE /api/v4/profiles/p1) → 404: Profile not found',
    );
  });
});
