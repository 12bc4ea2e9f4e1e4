/**
 * Child process of `bench/network.ts`: the local service and a web site with one page of many
 * subresources (each answered after `CB_BENCH_LATENCY_MS`, 0 by default), in a process of their own,
 * as a cloud service and a web site would be. Sends `{ baseUrl, apiKey, pageUrl, blankUrl }` to the
 * parent; closes everything on 'close' or when the parent goes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalService } from '../src/local/index.js';

const subresources = Number(process.env.CB_BENCH_SUBRESOURCES ?? '200');
/** How long each subresource takes to be answered, as a server across a network would. */
const latencyMs = Number(process.env.CB_BENCH_LATENCY_MS ?? '0');
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

// Three kinds, as a real page has: mostly images, some scripts and style sheets. Nothing cacheable,
// so every load goes to the network and the observer sees every request.
const scripts = Math.round(subresources * 0.1);
const styles = Math.round(subresources * 0.1);
const images = subresources - scripts - styles;
const body = [
  ...Array.from({ length: styles }, (_, i) => `<link rel="stylesheet" href="/s/${i}.css?v=1">`),
  ...Array.from({ length: scripts }, (_, i) => `<script src="/j/${i}.js?v=1"></script>`),
  ...Array.from({ length: images }, (_, i) => `<img src="/i/${i}.png?v=1&token=not-for-logs" alt="">`),
].join('\n');
const pageHtml = `<!doctype html><html><head><meta charset="utf-8"><title>bench</title></head><body>${body}</body></html>`;

/** What the site serves: the page, an empty page, and the page's subresources by kind. */
function resource(path: string): [type: string, body: string | Buffer] | undefined {
  if (path === '/page') return ['text/html', pageHtml];
  if (path === '/blank') return ['text/html', '<!doctype html>'];
  if (path.startsWith('/i/')) return ['image/png', PNG];
  if (path.startsWith('/j/')) return ['text/javascript', 'window.n = (window.n || 0) + 1;'];
  if (path.startsWith('/s/')) return ['text/css', 'p{margin:0}'];
  return undefined;
}

const site = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const found = resource(path);
  const answer = () => {
    if (found === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': found[0], 'cache-control': 'no-store' }).end(found[1]);
  };
  // Only the subresources wait: the page and the empty page before it come at once.
  if (latencyMs > 0 && /^\/[ijs]\//.test(path)) setTimeout(answer, latencyMs);
  else answer();
});
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

const dataDir = await mkdtemp(join(tmpdir(), 'cb-bench-network-'));
const service = await startLocalService({ dataDir, log: false });

let closing: Promise<void> | undefined;
const close = () =>
  (closing ??= (async () => {
    await service.close();
    site.closeAllConnections();
    await new Promise<void>((resolve) => site.close(() => resolve()));
    await rm(dataDir, { recursive: true, force: true });
    process.exit(0);
  })());
process.on('message', (message) => {
  if (message === 'close') void close();
});
process.on('disconnect', () => void close());

process.send?.({
  baseUrl: service.baseUrl,
  apiKey: service.apiKey,
  pageUrl: `${siteUrl}/page`,
  blankUrl: `${siteUrl}/blank`,
});
