import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

export interface Site {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Requests seen, as `METHOD path`. */
  readonly hits: string[];
  close(): Promise<void>;
}

/**
 * A small local web site for browser tests. `/login?user=NAME` sets a session cookie (no expiry,
 * so only a saved profile can carry it into a new browser); `/account` says who is logged in;
 * `/` is a page with a title.
 */
export async function startSite(): Promise<Site> {
  const sessions = new Map<string, string>();
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://site');
    hits.push(`${req.method} ${url.pathname}`);
    const sid = /(?:^|;\s*)sid=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const html = (body: string, headers: Record<string, string> = {}) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers })
        .end(`<!doctype html>${body}`);
    if (url.pathname === '/login') {
      const token = randomBytes(12).toString('hex');
      sessions.set(token, url.searchParams.get('user') ?? 'someone');
      return html('<title>Logged in</title><p id="status">logged in</p>', {
        'set-cookie': `sid=${token}; Path=/; HttpOnly; SameSite=Lax`,
      });
    }
    if (url.pathname === '/account') {
      const user = sid === undefined ? undefined : sessions.get(sid);
      return html(`<title>Account</title><p id="status">${user ? `logged in as ${user}` : 'anonymous'}</p>`);
    }
    if (url.pathname === '/') return html('<title>Local test site</title><h1>Hello</h1>');
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Starts a site for the file's tests before they run and closes it after them. The value returned
 * stands for the site: read its properties only inside tests and hooks, once it has started.
 *
 * @example
 * const site = useSite(startSite);
 * test('…', async () => page.goto(site.url));
 */
export function useSite<T extends { close(): Promise<void> }>(start: () => Promise<T>): T {
  let site: T | undefined;
  beforeAll(async () => {
    site = await start();
  });
  afterAll(async () => {
    await site?.close();
  });
  return new Proxy({} as T, {
    get(_, key) {
      if (site === undefined) throw new Error(`useSite: read .${String(key)} before the site started`);
      return Reflect.get(site, key, site);
    },
  });
}
