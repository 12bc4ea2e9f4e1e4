import { randomUUID } from 'node:crypto';
import { APIError, ConflictError, CREATE_TAG, ResponseValidationError } from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { API_KEY, clientFor } from '../support/client.js';
import { browserBody, json, startServer } from '../support/http-server.js';

/** A list endpoint over `total` browsers, paged as the service pages (pageSize default 10). */
async function listing(total: number) {
  const all = Array.from({ length: total }, (_, i) => browserBody({ metadata: { n: String(i) } }));
  const server = await startServer((req, res) => {
    const pageNumber = Number(req.query.get('pageNumber') ?? 1);
    const pageSize = Number(req.query.get('pageSize') ?? 10);
    const items = all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize);
    json(res, 200, { items, totalItems: total, pageNumber, pageSize });
  });
  return { server, all };
}

describe('browsers.create', () => {
  it('sends the params as JSON with the key, and returns the browser', async () => {
    const created = browserBody();
    const server = await startServer((_req, res) => json(res, 201, created));
    const client = clientFor(server);
    const profileId = randomUUID();
    const browser = await client.browsers.create({
      profileId,
      proxyCountryCode: 'de',
      timeout: 30,
      browserScreenWidth: 1280,
      browserScreenHeight: 800,
      customProxy: { host: 'proxy.example', port: 8080, username: 'u', password: 'p' },
      solveCaptchas: true,
    });
    expect(browser).toEqual(created);
    const [req] = server.requests;
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/api/v4/browsers');
    expect(req?.headers['x-service-api-key']).toBe(API_KEY);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.headers.accept).toBe('application/json');
    expect(req?.headers['user-agent']).toMatch(/^cloudbrowser\/\d+\.\d+\.\d+/);
    expect(req?.body).toEqual({
      profileId,
      proxyCountryCode: 'de',
      timeout: 30,
      browserScreenWidth: 1280,
      browserScreenHeight: 800,
      customProxy: { host: 'proxy.example', port: 8080, username: 'u', password: 'p' },
      solveCaptchas: true,
      metadata: { [CREATE_TAG]: expect.any(String) },
    });
  });

  it('sends null to disable the managed proxy', async () => {
    const server = await startServer((_req, res) => json(res, 201, browserBody()));
    const client = clientFor(server);
    await client.browsers.create({ proxyCountryCode: null });
    expect(server.requests[0]?.body).toMatchObject({ proxyCountryCode: null });
  });
});

describe('responses', () => {
  it('fields the client does not know are tolerated and kept', async () => {
    const body = browserBody({ region: 'eu-west', gpu: { model: 'none' } });
    const server = await startServer((_req, res) => json(res, 200, body));
    const client = clientFor(server);
    const browser = await client.browsers.get(body.id as string);
    expect(browser).toMatchObject({ region: 'eu-west', gpu: { model: 'none' } });
  });

  it('a minimal browser ({id, status}) reads missing optional fields as null', async () => {
    const server = await startServer((_req, res) => json(res, 201, { id: 'b1', status: 'active' }));
    const client = clientFor(server);
    const browser = await client.browsers.create();
    expect(browser).toMatchObject({
      id: 'b1',
      status: 'active',
      cdpUrl: null,
      finishedAt: null,
      metadata: {},
    });
  });

  it('money arrives as strings and stays a string; a number is kept as written', async () => {
    const server = await startServer((_req, res) =>
      json(res, 200, browserBody({ browserCost: '0.10', proxyCost: 0.5 })),
    );
    const browser = await clientFor(server).browsers.get('b1');
    expect(browser.browserCost).toBe('0.10');
    expect(browser.proxyCost).toBe('0.5');
  });

  it('a 2xx body without id is a ResponseValidationError naming the field', async () => {
    const body = browserBody();
    delete body.id;
    const server = await startServer((_req, res) => json(res, 200, body));
    const client = clientFor(server);
    const error = await client.browsers.get('b1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).code).toBe('response_validation_error');
    expect((error as ResponseValidationError).issues[0]?.loc).toEqual(['body', 'id']);
    expect((error as Error).message).toMatch(
      /^browsers\.get \(GET \/api\/v4\/browsers\/b1\) → 200: unexpected response body: body\.id: /,
    );
    // A malformed answer is not a transient failure.
    expect(server.requests).toHaveLength(1);
  });

  it('a 2xx body that is not JSON is a ResponseValidationError', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
    });
    const error = await clientFor(server)
      .browsers.get('b1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as Error).message).toContain('→ 200: unexpected response body: (root): body is not JSON');
  });

  it('a 3xx answer is not followed and surfaces as APIError', async () => {
    const server = await startServer((_req, res) => {
      res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
    });
    const error = await clientFor(server)
      .browsers.get('b1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(302);
    expect(server.requests).toHaveLength(1);
  });
});

describe('browsers.list', () => {
  it('walks every page: 25 browsers in pages of 10 take 3 requests', async () => {
    const { server, all } = await listing(25);
    const client = clientFor(server);
    const seen: string[] = [];
    for await (const browser of client.browsers.list()) seen.push(browser.id);
    expect(seen).toEqual(all.map((b) => b.id));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v4/browsers?pageNumber=1',
      '/api/v4/browsers?pageNumber=2',
      '/api/v4/browsers?pageNumber=3',
    ]);
  });

  it('pages() yields whole pages', async () => {
    const { server } = await listing(25);
    const client = clientFor(server);
    const pages = [];
    for await (const page of client.browsers.list({ pageSize: 10 }).pages()) pages.push(page);
    expect(pages.map((p) => [p.pageNumber, p.items.length, p.totalItems])).toEqual([
      [1, 10, 25],
      [2, 10, 25],
      [3, 5, 25],
    ]);
    expect(server.requests.map((r) => r.query.get('pageSize'))).toEqual(['10', '10', '10']);
  });

  it('toArray() collects every item; pageNumber starts the walk later', async () => {
    const { server, all } = await listing(25);
    const client = clientFor(server);
    expect(await client.browsers.list().toArray()).toHaveLength(25);
    const fromTwo = await client.browsers.list({ pageNumber: 2 }).toArray();
    expect(fromTwo.map((b) => b.id)).toEqual(all.slice(10).map((b) => b.id));
  });

  it('an exact multiple of the page size needs no extra request', async () => {
    const { server } = await listing(20);
    await clientFor(server).browsers.list().toArray();
    expect(server.requests).toHaveLength(2);
  });

  it('an empty list takes one request', async () => {
    const { server } = await listing(0);
    expect(await clientFor(server).browsers.list().toArray()).toEqual([]);
    expect(server.requests).toHaveLength(1);
  });

  it('pages are fetched lazily: breaking out early fetches no more', async () => {
    const { server } = await listing(25);
    for await (const _ of clientFor(server).browsers.list()) break;
    expect(server.requests).toHaveLength(1);
  });

  it('filterBy and metadata go into the query, metadata as repeated key=value pairs', async () => {
    const { server } = await listing(0);
    const client = clientFor(server);
    await client.browsers
      .list({ filterBy: 'stopped', metadata: { team: 'qa', 'run id': 'a=b&c' } })
      .toArray();
    const [req] = server.requests;
    expect(req?.url).toBe(
      '/api/v4/browsers?pageNumber=1&filterBy=stopped&metadata=team%3Dqa&metadata=run+id%3Da%3Db%26c',
    );
    expect(req?.query.getAll('metadata')).toEqual(['team=qa', 'run id=a=b&c']);
  });
});

describe('browsers.stop is idempotent', () => {
  it('sends PATCH {action: "stop"} and returns the stopped browser', async () => {
    const id = randomUUID();
    const server = await startServer((_req, res) => json(res, 200, browserBody({ id, status: 'stopped' })));
    const browser = await clientFor(server).browsers.stop(id);
    expect(browser).toMatchObject({ id, status: 'stopped' });
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['PATCH', `/api/v4/browsers/${id}`, { action: 'stop' }],
    ]);
  });

  it('stopping a browser that is already stopped returns it (service answers 200)', async () => {
    const id = randomUUID();
    const server = await startServer((_req, res) => json(res, 200, browserBody({ id, status: 'stopped' })));
    const client = clientFor(server);
    await client.browsers.stop(id);
    await expect(client.browsers.stop(id)).resolves.toMatchObject({ id, status: 'stopped' });
  });

  it('a 409 "already stopped" for a stopped browser returns the browser', async () => {
    const id = randomUUID();
    const server = await startServer((req, res) =>
      req.method === 'PATCH'
        ? json(res, 409, { detail: 'Browser session is already stopped' })
        : json(res, 200, browserBody({ id, status: 'stopped' })),
    );
    const browser = await clientFor(server).browsers.stop(id);
    expect(browser).toMatchObject({ id, status: 'stopped' });
    expect(server.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `PATCH /api/v4/browsers/${id}`,
      `GET /api/v4/browsers/${id}`,
    ]);
  });

  it('a 409 for a browser that is still active is rethrown', async () => {
    const id = randomUUID();
    const server = await startServer((req, res) =>
      req.method === 'PATCH'
        ? json(res, 409, { detail: 'Browser is busy' })
        : json(res, 200, browserBody({ id, status: 'active' })),
    );
    const error = await clientFor(server)
      .browsers.stop(id)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as Error).message).toBe(
      `browsers.stop (PATCH /api/v4/browsers/${id}) → 409: Browser is busy`,
    );
  });

  it('a 404 is not swallowed: a browser that does not exist was not stopped by us', async () => {
    const server = await startServer((_req, res) => json(res, 404, { detail: 'Not found' }));
    await expect(clientFor(server).browsers.stop(randomUUID())).rejects.toMatchObject({ status: 404 });
    expect(server.requests).toHaveLength(1);
  });
});
