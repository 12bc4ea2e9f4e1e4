import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface NetworkSite {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The same server as another site: `http://localhost:<port>` (a different host name is a different site). */
  readonly crossSiteUrl: string;
  /** A port on 127.0.0.1 that nothing listens on. */
  readonly closedPort: number;
  /** Request headers of every request, by path. */
  readonly received: Map<string, Record<string, string | string[] | undefined>>;
  /**
   * Answers every request for `/held` made so far (an image each) and ends every `/held-page` (a page
   * whose first half is sent at once); they wait until then.
   */
  releaseHeld(): void;
  close(): Promise<void>;
}

/** A 1×1 transparent PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

const page = (body: string, title = 'test page') =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

/**
 * A local web site for the network observer's tests: pages with subresources, popups, cross-site
 * iframes, redirect chains, cacheable images, a service worker, slow and secret-bearing responses.
 */
export async function startNetworkSite(): Promise<NetworkSite> {
  const received = new Map<string, Record<string, string | string[] | undefined>>();
  const held = new Set<() => void>();
  let url = '';
  let crossSiteUrl = '';
  const server: Server = createServer((req, res) => {
    const requestUrl = new URL(req.url ?? '/', 'http://site');
    const path = requestUrl.pathname;
    received.set(path, req.headers);
    const html = (body: string, headers: Record<string, string> = {}) =>
      res
        .writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          ...headers,
        })
        .end(body);
    const query = (name: string) => requestUrl.searchParams.get(name);

    if (path === '/') return html(page('<h1>Hello</h1>', 'Home'));
    if (path === '/subresources') {
      const count = Number(query('n') ?? '10');
      const images = Array.from({ length: count }, (_, i) => `<img src="/img/${i}.png" alt="">`).join('');
      return html(
        page(
          `<link rel="stylesheet" href="/style.css"><script src="/app.js"></script>${images}`,
          'Subresources',
        ),
      );
    }
    if (path.startsWith('/img/')) {
      return res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' }).end(PNG);
    }
    if (path === '/style.css') {
      return res
        .writeHead(200, { 'content-type': 'text/css', 'cache-control': 'no-store' })
        .end('h1{color:#333}');
    }
    if (path === '/app.js') {
      return res
        .writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' })
        .end('window.appLoaded = true;');
    }
    if (path === '/opener') {
      return html(page(`<button id="open" onclick="window.open('/popup', 'popup')">open</button>`, 'Opener'));
    }
    if (path === '/popup') return html(page('<img src="/img/in-popup.png" alt="">', 'Popup'));
    if (path === '/with-iframe') {
      return html(page(`<iframe id="frame" src="${crossSiteUrl}/framed"></iframe>`, 'With iframe'));
    }
    if (path === '/framed') {
      return html(
        page(`<img src="/img/in-frame.png" alt=""><script>fetch('/framed-data')</script>`, 'Framed'),
      );
    }
    if (path === '/with-held-iframe') {
      return html(page(`<iframe src="${crossSiteUrl}/with-held-image"></iframe>`, 'With held iframe'));
    }
    if (path === '/framed-data') return res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    if (path === '/redirect/301')
      return res.writeHead(301, { location: '/redirect/302?token=hop-secret' }).end();
    if (path === '/redirect/302') return res.writeHead(302, { location: '/redirect/final' }).end();
    if (path === '/redirect/final')
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('arrived');
    if (path === '/cached') return html(page('<img src="/cached.png" alt="">', 'Cached'));
    if (path === '/cached.png') {
      return res
        .writeHead(200, { 'content-type': 'image/png', 'cache-control': 'public, max-age=3600' })
        .end(PNG);
    }
    if (path === '/sw') {
      return html(
        page(
          `<script>
            window.swReady = navigator.serviceWorker.register('/sw.js').then(() => navigator.serviceWorker.ready)
              .then(() => new Promise((resolve) => navigator.serviceWorker.controller ? resolve() :
                navigator.serviceWorker.addEventListener('controllerchange', () => resolve(), { once: true })));
          </script>`,
          'Service worker',
        ),
      );
    }
    if (path === '/sw.js') {
      return res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' }).end(`
        self.addEventListener('install', () => self.skipWaiting());
        self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
        self.addEventListener('fetch', (event) => {
          if (new URL(event.request.url).pathname === '/sw-data') event.respondWith(fetch('/sw-upstream'));
        });`);
    }
    if (path === '/sw-upstream')
      return res.writeHead(200, { 'content-type': 'text/plain' }).end('from upstream');
    if (path === '/slow') {
      const timer = setTimeout(
        () => res.writeHead(200, { 'content-type': 'text/plain' }).end('slow'),
        Number(query('ms') ?? '5000'),
      );
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (path === '/with-held-image') return html(page('<img src="/held" alt="">', 'Held'));
    if (path === '/held-page') {
      const [head, tail] = page('<p>The start</p>|<p>The rest</p>', 'Held page').split('|');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.write(head);
      const answer = () => res.end(tail);
      held.add(answer);
      res.on('close', () => held.delete(answer));
      return;
    }
    if (path === '/held') {
      const answer = () =>
        res.writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' }).end(PNG);
      held.add(answer);
      res.on('close', () => held.delete(answer));
      return;
    }
    if (path === '/secrets') {
      return res
        .writeHead(200, {
          'content-type': 'application/json',
          'set-cookie': 'sid=cookie-secret-value; Path=/',
          'x-session-token': 'response-secret-value',
          location: '/next?access_token=location-secret-value&page=2',
          'x-plain': 'visible',
        })
        .end('{}');
    }
    if (path === '/form') {
      return html(
        page(
          `<a id="link" href="/clicked?from=link">go</a>
           <button id="load" onclick="fetch('/api/click').then(r => r.text()).then(t => document.getElementById('out').textContent = t)">load</button>
           <p id="out"></p>`,
          'Form',
        ),
      );
    }
    if (path === '/clicked')
      return html(page('<p id="landed">landed</p><img src="/img/landed.png" alt="">', 'Clicked'));
    if (path === '/api/click') return res.writeHead(200, { 'content-type': 'text/plain' }).end('clicked ok');
    if (path === '/csp') {
      return html(page(`<img src="${crossSiteUrl}/img/blocked.png" alt="">`, 'CSP'), {
        'content-security-policy': "img-src 'self'",
      });
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  url = `http://127.0.0.1:${port}`;
  crossSiteUrl = `http://localhost:${port}`;
  const closedPort = await freePort();
  return {
    url,
    crossSiteUrl,
    closedPort,
    received,
    releaseHeld() {
      for (const answer of held) answer();
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A port that was free a moment ago and that nothing listens on now. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
