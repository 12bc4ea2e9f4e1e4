import { type CloudBrowserClient, CREATE_TAG, RequestValidationError } from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor, countingDispatcher, settle } from '../support/client.js';
import { browserBody, json, profileBody, startServer } from '../support/http-server.js';

/** A server that would answer anything, a client for it, and a way to prove nothing reached it. */
async function setup() {
  const server = await startServer((req, res) =>
    json(res, 200, req.path.includes('profiles') ? profileBody() : browserBody()),
  );
  const counting = countingDispatcher();
  const client = clientFor(server, { dispatcher: counting.dispatcher });
  const expectNothingSent = async () => {
    await settle();
    expect(counting.dispatched()).toBe(0);
    expect(counting.connects()).toBe(0);
    expect(server.requests).toHaveLength(0);
  };
  return { client, expectNothingSent };
}

async function refusal(promise: Promise<unknown>): Promise<RequestValidationError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the call to be refused');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RequestValidationError);
  expect((error as RequestValidationError).code).toBe('request_validation_error');
  return error as RequestValidationError;
}

const pairs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));

describe('browsers.create refuses a bad request before sending anything', () => {
  const cases: { name: string; params: unknown; field: string; rule: string }[] = [
    {
      name: 'an upper-case country code',
      params: { proxyCountryCode: 'DE' },
      field: 'proxyCountryCode',
      rule: 'must be a lower-case ISO 3166-1 alpha-2 country code',
    },
    {
      name: 'a three-letter country code',
      params: { proxyCountryCode: 'deu' },
      field: 'proxyCountryCode',
      rule: 'must be a lower-case ISO 3166-1 alpha-2 country code',
    },
    {
      name: 'a profileId that is not a UUID',
      params: { profileId: 'alice' },
      field: 'profileId',
      rule: 'must be a UUID',
    },
    {
      name: 'a timeout that is not whole minutes',
      params: { timeout: 1.5 },
      field: 'timeout',
      rule: 'must be a whole number of minutes',
    },
    { name: 'a timeout of 0', params: { timeout: 0 }, field: 'timeout', rule: '>=1' },
    { name: 'a timeout above 240', params: { timeout: 241 }, field: 'timeout', rule: '<=240' },
    {
      name: '11 metadata pairs',
      params: { metadata: pairs(11) },
      field: 'metadata',
      rule: 'must have at most 10 pairs',
    },
    {
      name: '10 metadata pairs, as the client needs one for its create tag',
      params: { metadata: pairs(10) },
      field: 'metadata',
      rule: `must have at most 9 pairs: the client adds ${CREATE_TAG}`,
    },
    {
      name: 'a metadata value that is not a string',
      params: { metadata: { team: 1 } },
      field: 'metadata.team',
      rule: 'expected string',
    },
    {
      name: 'a boolean given as a string',
      params: { allowResizing: 'yes' },
      field: 'allowResizing',
      rule: 'expected boolean',
    },
    {
      name: 'a country code given as a number',
      params: { proxyCountryCode: 1 },
      field: 'proxyCountryCode',
      rule: 'expected string',
    },
    {
      name: 'a screen width below 320',
      params: { browserScreenWidth: 100 },
      field: 'browserScreenWidth',
      rule: '>=320',
    },
    {
      name: 'a customProxy port out of range',
      params: { customProxy: { host: 'proxy.example', port: 70000 } },
      field: 'customProxy.port',
      rule: '<=65535',
    },
    {
      name: 'a customProxy without host',
      params: { customProxy: { port: 8080 } },
      field: 'customProxy.host',
      rule: 'expected string',
    },
    {
      name: 'an unknown key',
      params: { proxyCountry: 'de' },
      field: 'proxyCountry',
      rule: 'Unrecognized key',
    },
  ];

  it.each(cases)('$name', async ({ params, field, rule }) => {
    const { client, expectNothingSent } = await setup();
    const create = client.browsers.create as (
      p: unknown,
    ) => ReturnType<CloudBrowserClient['browsers']['create']>;
    const error = await refusal(create(params));
    expect(error.operation).toBe('browsers.create');
    expect(error.message).toMatch(/^browsers\.create: invalid request: /);
    expect(error.message).toContain(field === 'proxyCountry' ? '"proxyCountry"' : `${field}: `);
    expect(error.message).toContain(rule);
    expect(error.message).toContain('nothing was sent');
    await expectNothingSent();
  });

  it('9 metadata pairs of your own are accepted, and the create tag is added as the tenth', async () => {
    const server = await startServer((_req, res) => json(res, 201, browserBody()));
    const client = clientFor(server);
    await client.browsers.create({ metadata: pairs(9) });
    const sent = server.requests[0]?.body as { metadata: Record<string, string> };
    expect(Object.keys(sent.metadata)).toHaveLength(10);
    expect(sent.metadata[CREATE_TAG]).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('other operations refuse a bad request before sending anything', () => {
  it('browsers.list refuses a pageSize above 100', async () => {
    const { client, expectNothingSent } = await setup();
    expect(() => client.browsers.list({ pageSize: 101 })).toThrow(/pageSize: .*<=100/);
    await expectNothingSent();
  });

  it('browsers.list refuses an unknown filter', async () => {
    const { client, expectNothingSent } = await setup();
    expect(() => client.browsers.list({ filterBy: 'running' as 'active' })).toThrow(RequestValidationError);
    await expectNothingSent();
  });

  it('profiles.create refuses a name that is not a string', async () => {
    const { client, expectNothingSent } = await setup();
    const error = await refusal(client.profiles.create({ name: 5 as unknown as string }));
    expect(error.message).toContain('name: ');
    expect(error.message).toContain('expected string');
    await expectNothingSent();
  });

  it('profiles.update refuses an unknown key', async () => {
    const { client, expectNothingSent } = await setup();
    const error = await refusal(client.profiles.update('p1', { nmae: 'x' } as never));
    expect(error.message).toContain('"nmae"');
    await expectNothingSent();
  });

  it('profiles.list refuses a pageSize of 0', async () => {
    const { client, expectNothingSent } = await setup();
    expect(() => client.profiles.list({ pageSize: 0 })).toThrow(/pageSize: .*>=1/);
    await expectNothingSent();
  });
});

describe('path parameters go through one encoding helper', () => {
  const refused = [
    { id: 'a/b', rule: "must not contain '/', '\\' or '..'" },
    { id: '..', rule: "must not contain '/', '\\' or '..'" },
    { id: 'x..y', rule: "must not contain '/', '\\' or '..'" },
    { id: 'a\\b', rule: "must not contain '/', '\\' or '..'" },
    { id: '.', rule: "must not be '.'" },
    { id: '', rule: 'must not be empty' },
  ];
  const operations: { name: string; call: (client: CloudBrowserClient, id: string) => Promise<unknown> }[] = [
    { name: 'browsers.get', call: (c, id) => c.browsers.get(id) },
    { name: 'browsers.stop', call: (c, id) => c.browsers.stop(id) },
    { name: 'profiles.get', call: (c, id) => c.profiles.get(id) },
    { name: 'profiles.update', call: (c, id) => c.profiles.update(id, { name: 'x' }) },
    { name: 'profiles.delete', call: (c, id) => c.profiles.delete(id) },
  ];

  for (const { name, call } of operations) {
    it.each(refused)(`${name} refuses the id $id and sends nothing`, async ({ id, rule }) => {
      const { client, expectNothingSent } = await setup();
      const error = await refusal(call(client, id));
      expect(error.operation).toBe(name);
      expect(error.issues).toEqual([
        { loc: ['path', 'id'], msg: expect.stringContaining(rule), type: 'path' },
      ]);
      expect(error.message).toContain(`path.id: ${rule}`);
      await expectNothingSent();
    });
  }

  it('an id with special characters is percent-encoded', async () => {
    const server = await startServer((_req, res) => json(res, 200, browserBody()));
    const client = clientFor(server);
    await client.browsers.get('a b?c#d%e&f=ü');
    await client.browsers.stop('a b?c#d%e&f=ü');
    const encoded = '/api/v4/browsers/a%20b%3Fc%23d%25e%26f%3D%C3%BC';
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `GET ${encoded}`,
      `PATCH ${encoded}`,
    ]);
  });
});
