import { observeNetwork } from 'cloudbrowser';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { PNG, startNetworkSite } from '../support/network-site.js';
import { byPath, entryWhere, openBrowser, pathOf, requestStarted } from '../support/observed-browser.js';
import { useSite } from '../support/site.js';

const site = useSite(startNetworkSite);

const local = useLocalService();

describe('what observeNetwork records', () => {
  test('a page and its subresources, each with status, type, sizes, address and timings', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/subresources?n=5`);
    await entryWhere(network, (e) => pathOf(e.url) === '/img/4.png');

    const document = byPath(network, '/subresources')[0];
    expect(document).toMatchObject({
      state: 'finished',
      method: 'GET',
      status: 200,
      statusText: 'OK',
      resourceType: 'Document',
      mimeType: 'text/html',
      protocol: 'http/1.1',
      remoteAddress: `127.0.0.1:${new URL(site.url).port}`,
      fromCache: null,
      fromServiceWorker: false,
      failure: null,
      targetType: 'page',
      redirects: [],
    });
    expect(document?.pageId).toBe(document?.targetId);
    expect(document?.frameId).toBe(document?.pageId);
    expect(document?.encodedDataLength).toBeGreaterThan(document?.decodedBodyLength ?? 0);
    expect(document?.decodedBodyLength).toBeGreaterThan(100);

    const images = network.entries().filter((e) => pathOf(e.url).startsWith('/img/'));
    expect(images).toHaveLength(5);
    for (const image of images) {
      expect(image).toMatchObject({
        status: 200,
        resourceType: 'Image',
        mimeType: 'image/png',
        state: 'finished',
      });
      expect(image.initiator.type).toBe('parser');
      expect(image.initiator.url).toBe(`${site.url}/subresources?n=5`);
      expect(image.pageId).toBe(document?.pageId);
      expect(image.decodedBodyLength).toBe(PNG.length);
    }
    expect(byPath(network, '/style.css')[0]?.resourceType).toBe('Stylesheet');
    expect(byPath(network, '/app.js')[0]?.resourceType).toBe('Script');

    // HAR's arithmetic: the phases that happened add up to the total.
    for (const entry of network.entries()) {
      const { start, total, tls: _tls, ...phases } = entry.timings;
      expect(start).toBeGreaterThan(Date.now() - 60_000);
      expect(start).toBeLessThanOrEqual(Date.now());
      const sum = Object.values(phases).reduce((a, b) => a + Math.max(b, 0), 0);
      expect(Math.abs(sum - total)).toBeLessThan(0.01);
      expect(total).toBeGreaterThanOrEqual(0);
    }
    // A fresh connection shows its phases.
    expect(network.entries().some((e) => e.timings.connect >= 0)).toBe(true);
  });

  test('a popup opened with window.open is observed as its own page', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/opener`);
    const [popup] = await Promise.all([driven.page.waitForEvent('popup'), driven.page.click('#open')]);
    await popup.waitForLoadState('load');

    const opener = byPath(network, '/opener')[0];
    const popupDocument = await entryWhere(network, (e) => pathOf(e.url) === '/popup');
    const popupImage = await entryWhere(network, (e) => pathOf(e.url) === '/img/in-popup.png');
    expect(popupDocument.status).toBe(200);
    expect(popupDocument.targetType).toBe('page');
    expect(popupDocument.pageId).not.toBeNull();
    expect(popupDocument.pageId).not.toBe(opener?.pageId);
    expect(popupImage.pageId).toBe(popupDocument.pageId);
  });

  test('a cross-site iframe runs out of process, and its requests are observed in its own target', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/with-iframe`);
    const image = await entryWhere(network, (e) => pathOf(e.url) === '/img/in-frame.png');
    const data = await entryWhere(network, (e) => pathOf(e.url) === '/framed-data');
    const parent = byPath(network, '/with-iframe')[0];

    // An out-of-process iframe is a target of its own; a same-process one would report as the page.
    expect(image.targetType).toBe('iframe');
    expect(image.url).toBe(`${site.crossSiteUrl}/img/in-frame.png`);
    expect(image.targetId).not.toBe(parent?.targetId);
    expect(image.frameId).toBe(image.targetId);
    expect(image.pageId).toBe(parent?.pageId);
    expect(data).toMatchObject({ targetType: 'iframe', resourceType: 'Fetch', status: 200 });
    // The iframe's own document is requested by its parent, and is observed too.
    const frameDocument = byPath(network, '/framed')[0];
    expect(frameDocument).toMatchObject({ status: 200, resourceType: 'Document', frameId: image.frameId });
    // Playwright sees the same frame.
    expect(driven.page.frames().map((f) => f.url())).toContain(`${site.crossSiteUrl}/framed`);
  });

  test('a redirect chain 301 → 302 → 200 is one entry with each hop in order', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/`);
    await driven.page.evaluate(() => fetch('/redirect/301').then((r) => r.text()));
    const entry = await entryWhere(network, (e) => pathOf(e.url) === '/redirect/final');

    expect(entry).toMatchObject({ status: 200, resourceType: 'Fetch', state: 'finished' });
    expect(entry.redirects.map((r) => [r.status, pathOf(r.url)])).toEqual([
      [301, '/redirect/301'],
      [302, '/redirect/302'],
    ]);
    // The hop's URL is redacted like any other.
    expect(entry.redirects[1]?.url).toBe(`${site.url}/redirect/302?token=[redacted]`);
    for (const hop of entry.redirects) {
      expect(hop.method).toBe('GET');
      expect(hop.remoteAddress).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(hop.timings.total).toBeGreaterThanOrEqual(0);
    }
    const first = entry.redirects[0]?.timings.start ?? 0;
    expect(entry.redirects[1]?.timings.start).toBeGreaterThanOrEqual(first);
    expect(entry.timings.start).toBeGreaterThanOrEqual(entry.redirects[1]?.timings.start ?? 0);
    expect(network.summary().byStatusClass['2xx']).toBeGreaterThanOrEqual(2);
  });

  test('a request to a closed port fails with the connection error', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/`);
    const target = `http://127.0.0.1:${site.closedPort}/nothing-here`;
    await driven.page.evaluate((url) => fetch(url, { mode: 'no-cors' }).catch(() => 'failed'), target);
    const entry = await entryWhere(network, (e) => e.url === target);

    expect(entry.state).toBe('failed');
    expect(entry.status).toBeNull();
    expect(entry.failure).toEqual({
      errorText: 'net::ERR_CONNECTION_REFUSED',
      canceled: false,
      blockedReason: null,
      corsError: null,
    });
    const summary = network.summary();
    expect(summary.failures.byReason['net::ERR_CONNECTION_REFUSED']).toBe(1);
    expect(summary.byStatusClass.none).toBeGreaterThanOrEqual(1);
  });

  test('a cancelled request and a request blocked by the page’s CSP say so', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/csp`);
    const blocked = await entryWhere(network, (e) => pathOf(e.url) === '/img/blocked.png');
    expect(blocked.state).toBe('failed');
    expect(blocked.failure?.blockedReason).toBe('csp');

    // Aborted once the request is under way, so there is a request to cancel.
    const started = requestStarted(network, (e) => pathOf(e.url) === '/slow');
    await driven.page.evaluate(
      "window.controller = new AbortController(); window.slow = fetch('/slow?ms=5000', { signal: controller.signal }).catch(() => 'aborted'); 0",
    );
    await started;
    await driven.page.evaluate('controller.abort(); window.slow');
    const cancelled = await entryWhere(network, (e) => pathOf(e.url) === '/slow');
    expect(cancelled.state).toBe('failed');
    expect(cancelled.failure).toMatchObject({ canceled: true, errorText: 'net::ERR_ABORTED' });
    expect(network.summary().failures.byReason['blocked:csp']).toBe(1);
  });

  test('a response with Cache-Control max-age comes from the cache on the second load', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/cached`);
    await entryWhere(network, (e) => pathOf(e.url) === '/cached.png');
    await driven.page.goto(`${site.url}/cached`);
    await entryWhere(network, (e) => pathOf(e.url) === '/cached.png' && e.fromCache !== null);

    const [first, second] = byPath(network, '/cached.png');
    expect(first?.fromCache).toBeNull();
    expect(first?.encodedDataLength).toBeGreaterThan(0);
    expect(second?.status).toBe(200);
    expect(['memory', 'disk']).toContain(second?.fromCache);
    expect(second?.encodedDataLength).toBe(0);
    expect(second?.remoteAddress).toBeNull();
    expect(second?.timings.dns).toBe(-1);
    expect(network.summary().fromCache).toBe(1);
  });

  test('a service worker: the page’s request says it was answered by it, and the worker’s own fetch is observed', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/sw`);
    await driven.page.evaluate('window.swReady');
    await driven.page.evaluate(() => fetch('/sw-data').then((r) => r.text()));

    const answered = await entryWhere(network, (e) => pathOf(e.url) === '/sw-data');
    expect(answered).toMatchObject({ status: 200, fromServiceWorker: true, targetType: 'page' });
    const upstream = await entryWhere(network, (e) => pathOf(e.url) === '/sw-upstream');
    expect(upstream).toMatchObject({ status: 200, targetType: 'service_worker', pageId: null });
    expect(network.summary().fromServiceWorker).toBeGreaterThanOrEqual(1);
  });
});
