import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  ConfigurationError,
  type NetworkEntry,
  type NetworkObserverClose,
  NetworkObserverError,
  observeNetwork,
} from 'cloudbrowser';
import { WebSocket } from 'undici';
import { describe, expect, test } from 'vitest';
import { launchChromium } from '../../src/local/chromium.js';
import { findChromium } from '../../src/local/chromium-path.js';
import { useLocalService } from '../support/local-service.js';
import { startNetworkSite } from '../support/network-site.js';
import { byPath, entryWhere, openBrowser, pathOf, requestStarted } from '../support/observed-browser.js';
import { startRelay } from '../support/relay.js';
import { useSite } from '../support/site.js';

const run = promisify(execFile);
const OBSERVE_AND_RETURN = fileURLToPath(new URL('./fixtures/observe-and-return.ts', import.meta.url));

const site = useSite(startNetworkSite);

const local = useLocalService();

describe('living alongside the user’s automation', () => {
  test('Playwright keeps working while observed: clicks, navigation, fetches, new pages and its own events', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    const { page, context } = driven;
    const seenByPlaywright: string[] = [];
    page.on('requestfinished', (request) => seenByPlaywright.push(pathOf(request.url())));

    await page.goto(`${site.url}/form`);
    await page.click('#load');
    await page.waitForFunction("document.getElementById('out')?.textContent === 'clicked ok'");
    await Promise.all([page.waitForURL('**/clicked?from=link'), page.click('#link')]);
    expect(await page.textContent('#landed')).toBe('landed');
    const second = await context.newPage();
    await second.goto(`${site.url}/subresources?n=3`);
    expect(await second.evaluate('window.appLoaded')).toBe(true);
    await second.close();

    expect(seenByPlaywright).toEqual(
      expect.arrayContaining(['/form', '/api/click', '/clicked', '/img/landed.png']),
    );
    await entryWhere(network, (e) => pathOf(e.url) === '/img/2.png');
    const paths = network.entries().map((e) => pathOf(e.url));
    expect(paths).toEqual(expect.arrayContaining(['/form', '/api/click', '/clicked', '/img/landed.png']));
    const click = byPath(network, '/api/click')[0];
    expect(click).toMatchObject({ resourceType: 'Fetch', status: 200, initiator: { type: 'script' } });
    const landed = byPath(network, '/clicked')[0];
    expect(landed?.url).toBe(`${site.url}/clicked?from=link`);
    // The second page is a page of its own.
    expect(byPath(network, '/img/2.png')[0]?.pageId).not.toBe(landed?.pageId);
  });

  test('pages and out-of-process iframes that existed before the observer started are observed', async () => {
    await using driven = await openBrowser(local.client);
    await driven.page.goto(`${site.url}/with-iframe`);
    const other = await driven.context.newPage();
    await other.goto(`${site.url}/`);
    await using network = await observeNetwork(driven.session);

    await other.evaluate(() => fetch('/api/click').then((r) => r.text()));
    const frame = driven.page.frames().find((f) => f.url().endsWith('/framed'));
    await frame?.evaluate(() => fetch('/framed-data').then((r) => r.text()));
    const fromOther = await entryWhere(network, (e) => pathOf(e.url) === '/api/click');
    const fromFrame = await entryWhere(network, (e) => pathOf(e.url) === '/framed-data');
    expect(fromOther.targetType).toBe('page');
    expect(fromFrame.targetType).toBe('iframe');
    expect(fromFrame.pageId).not.toBe(fromOther.pageId);
    // Nothing was counted twice, though the iframe is reachable both from its page and from the browser.
    expect(byPath(network, '/framed-data')).toHaveLength(1);
    // What they loaded before the observer started is not its to record, not even read back.
    for (const path of ['/with-iframe', '/framed', '/']) expect(byPath(network, path)).toEqual([]);
  });

  test('a page that closes and a page that crashes end their requests as incomplete, and observing goes on', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    const doomed = await driven.context.newPage();
    await doomed.goto(`${site.url}/`);
    const closing = requestStarted(network, (e) => e.url.endsWith('which=closed'));
    await doomed.evaluate(() => {
      void fetch('/slow?ms=20000&which=closed');
    });
    await closing;
    await doomed.close();
    const closed = await entryWhere(network, (e) => e.url.endsWith('which=closed'));
    expect(['incomplete', 'failed']).toContain(closed.state);

    const crashing = await driven.context.newPage();
    await crashing.goto(`${site.url}/`);
    const crashingRequest = requestStarted(network, (e) => e.url.endsWith('which=crashed'));
    await crashing.evaluate(() => {
      void fetch('/slow?ms=20000&which=crashed');
    });
    await crashingRequest;
    const cdp = await driven.context.newCDPSession(crashing);
    // Chromium never answers a command that crashes the page.
    void cdp.send('Page.crash').catch(() => {});
    const crashed = await entryWhere(network, (e) => e.url.endsWith('which=crashed'));
    expect(['incomplete', 'failed']).toContain(crashed.state);

    expect(network.stopped).toBe(false);
    await driven.page.goto(`${site.url}/subresources?n=2`);
    await entryWhere(network, (e) => pathOf(e.url) === '/img/1.png');
    expect(network.summary().inFlight).toBe(0);
  });
});

describe('reading and stopping', () => {
  test('on() delivers typed events in order, and each subscription returns its own unsubscribe', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    const events: string[] = [];
    const track = (name: string) => (entry: NetworkEntry) => {
      if (pathOf(entry.url) === '/redirect/final' || pathOf(entry.url).startsWith('/redirect/')) {
        events.push(`${name}:${entry.state}:${pathOf(entry.url)}:${entry.redirects.length}`);
      }
    };
    const offRequest = network.on('request', track('request'));
    const offResponse = network.on('response', track('response'));
    const offFinished = network.on('finished', track('finished'));
    const extra: string[] = [];
    const offExtra = network.on('finished', (entry) => extra.push(entry.url));
    offExtra();

    await driven.page.goto(`${site.url}/`);
    await driven.page.evaluate(() => fetch('/redirect/301').then((r) => r.text()));
    await entryWhere(network, (e) => pathOf(e.url) === '/redirect/final');
    expect(events).toEqual([
      'request:pending:/redirect/301:0',
      'request:pending:/redirect/302:1',
      'request:pending:/redirect/final:2',
      'response:responded:/redirect/final:2',
      'finished:finished:/redirect/final:2',
    ]);
    expect(extra).toEqual([]);

    offRequest();
    offResponse();
    offFinished();
    events.length = 0;
    await driven.page.evaluate(() => fetch('/redirect/final').then((r) => r.text()));
    await entryWhere(network, (e) => pathOf(e.url) === '/redirect/final' && e.redirects.length === 0);
    expect(events).toEqual([]);
  });

  test('for await streams entries as they end and finishes when the observer stops', async () => {
    await using driven = await openBrowser(local.client);
    const network = await observeNetwork(driven.session);
    const streamed: string[] = [];
    const consumed = (async () => {
      for await (const entry of network) streamed.push(pathOf(entry.url));
    })();
    await driven.page.goto(`${site.url}/subresources?n=3`);
    await entryWhere(network, (e) => pathOf(e.url) === '/img/2.png');
    const closes: NetworkObserverClose[] = [];
    network.on('close', (close) => closes.push(close));
    await Promise.all([network.stop(), network.stop()]);
    await consumed;

    expect(streamed).toEqual(
      expect.arrayContaining(['/subresources', '/img/0.png', '/img/1.png', '/img/2.png']),
    );
    expect(closes).toEqual([{ reason: 'stopped' }]);
    expect(network.stopped).toBe(true);
    // What was recorded stays readable; nothing more is recorded.
    const held = network.entries().length;
    expect(held).toBeGreaterThanOrEqual(6);
    await driven.page.reload();
    expect(network.entries()).toHaveLength(held);
    // A loop started after the stop ends at once.
    for await (const _ of network) throw new Error('no entry after stop');
  });

  test('a loop that breaks unsubscribes; a slow loop loses the oldest entries and counts them', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, { streamBufferSize: 2 });
    const stream = network[Symbol.asyncIterator]();
    await driven.page.goto(`${site.url}/subresources?n=8`);
    await entryWhere(network, (e) => pathOf(e.url) === '/img/7.png');
    const first = await stream.next();
    const second = await stream.next();
    expect(first.done).toBe(false);
    expect(second.done).toBe(false);
    expect(stream.dropped).toBeGreaterThanOrEqual(8);
    await stream.return?.();
    expect((await stream.next()).done).toBe(true);

    // Leaving the loop early (here by `return`) unsubscribes it.
    const found = (async () => {
      for await (const entry of network) if (pathOf(entry.url) === '/api/click') return entry;
    })();
    await driven.page.evaluate(() => fetch('/api/click'));
    expect((await found)?.status).toBe(200);
  });

  test('stopping the browser ends the observer as disconnected, with requests in flight incomplete', async () => {
    const driven = await openBrowser(local.client);
    const network = await observeNetwork(driven.session);
    const closes: NetworkObserverClose[] = [];
    network.on('close', (close) => closes.push(close));
    await driven.page.goto(`${site.url}/`);
    const slowStarted = requestStarted(network, (e) => e.url.endsWith('which=stopped'));
    await driven.page.evaluate(() => {
      void fetch('/slow?ms=20000&which=stopped');
    });
    await slowStarted;
    await driven[Symbol.asyncDispose]();
    await expect.poll(() => network.stopped, { timeout: 10_000 }).toBe(true);

    expect(closes).toEqual([{ reason: 'disconnected' }]);
    const slow = byPath(network, '/slow')[0];
    expect(slow?.state).toBe('incomplete');
    await network.stop();
  });

  test('an observer left running does not keep the process alive', async () => {
    await using driven = await openBrowser(local.client);
    const started = Date.now();
    const { stdout } = await run(process.execPath, ['--import', 'tsx', OBSERVE_AND_RETURN], {
      env: { ...process.env, CB_TEST_CDP_URL: driven.cdpUrl },
      timeout: 20_000,
    });
    expect(stdout).toContain('attached, stopped=false');
    expect(Date.now() - started).toBeLessThan(15_000);
    // The browser is untouched and still usable.
    await driven.page.goto(`${site.url}/`);
    expect(await driven.page.title()).toBe('Home');
  });
});

describe('what observeNetwork accepts', () => {
  test('a cdpUrl string, a browser, a handle with a session, and the WebSocket URL itself', async () => {
    await using driven = await openBrowser(local.client);
    const version = (await (await fetch(`${driven.cdpUrl}/json/version`)).json()) as {
      webSocketDebuggerUrl: string;
    };
    const targets = [
      driven.cdpUrl,
      driven.session,
      { session: driven.session },
      { cdpUrl: `${driven.cdpUrl}/` },
      version.webSocketDebuggerUrl,
    ];
    await driven.page.goto(`${site.url}/`);
    for (const target of targets) {
      await using network = await observeNetwork(target);
      await driven.page.evaluate(() => fetch('/api/click'));
      await entryWhere(network, (e) => pathOf(e.url) === '/api/click');
    }
  }, 60_000);

  test('errors say what failed and never contain the secret of a cdpUrl', async () => {
    const driven = await openBrowser(local.client);
    const secret = new URL(driven.cdpUrl).pathname;
    await driven[Symbol.asyncDispose]();

    const stopped = await observeNetwork(driven.cdpUrl).catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(NetworkObserverError);
    const error = stopped as NetworkObserverError;
    expect(error.code).toBe('network_observer_error');
    expect(error.message).toMatch(/answered 404/);
    expect(error.message).toContain(new URL(driven.cdpUrl).host);
    expect(`${error.message} ${error.stack}`).not.toContain(secret.slice(5));

    const refused = await observeNetwork(`http://127.0.0.1:${site.closedPort}/cdp/very-secret-path`).catch(
      (e: unknown) => e as Error,
    );
    expect(refused).toBeInstanceOf(NetworkObserverError);
    expect((refused as Error).message).not.toContain('very-secret-path');

    await expect(observeNetwork({ cdpUrl: null })).rejects.toThrow(/no cdpUrl/);
    await expect(observeNetwork({ session: { cdpUrl: null } })).rejects.toBeInstanceOf(NetworkObserverError);
    await expect(observeNetwork('ftp://example.test/x')).rejects.toThrow(/http\(s\) or ws\(s\)/);
    await expect(observeNetwork(driven.cdpUrl, { maxEntries: 0 })).rejects.toBeInstanceOf(ConfigurationError);
    await expect(observeNetwork(driven.cdpUrl, { maxEntries: 1.5 })).rejects.toThrow(/maxEntries/);

    const aborted = AbortSignal.abort(new Error('caller gave up'));
    await expect(observeNetwork(driven.cdpUrl, { signal: aborted })).rejects.toThrow('caller gave up');
  });
});

describe('on the wire', () => {
  test('offers no permessage-deflate, which Chromium’s own endpoint would accept, so events cross uncompressed', async () => {
    const userDataDir = await mkdtemp(join(tmpdir(), 'cloudbrowser-deflate-'));
    await using chromium = await launchChromium({ executablePath: await findChromium(), userDataDir });
    await using relay = await startRelay(chromium.port);
    const endpoint = `ws://127.0.0.1:${relay.port}${new URL(chromium.wsEndpoint).pathname}`;

    // A plain undici WebSocket offers it and Chromium takes it: the check below is not vacuous.
    const plain = new WebSocket(endpoint);
    await new Promise((resolve, reject) => {
      plain.addEventListener('open', resolve, { once: true });
      plain.addEventListener('error', reject, { once: true });
    });
    expect(plain.extensions).toMatch(/permessage-deflate/);
    plain.close();

    {
      await using network = await observeNetwork(endpoint);
      // Driven on Chromium's private pipe, so the relay carries the observer's connection alone.
      const { targetId } = await chromium.send<{ targetId: string }>('Target.createTarget', {
        url: 'about:blank',
      });
      const { sessionId } = await chromium.send<{ sessionId: string }>('Target.attachToTarget', {
        targetId,
        flatten: true,
      });
      await chromium.send('Page.navigate', { url: `${site.url}/` }, sessionId);
      expect((await entryWhere(network, (e) => pathOf(e.url) === '/')).status).toBe(200);
    }
    const [, observer] = relay.upgrades;
    expect(observer?.request).toMatch(/^GET \/devtools\/browser\//);
    expect(observer?.request).not.toMatch(/sec-websocket-extensions/i);
    expect(observer?.response).toMatch(/^HTTP\/1\.1 101/);
    expect(observer?.response).not.toMatch(/permessage-deflate/i);
    await chromium.close();
    await rm(userDataDir, { recursive: true, force: true });
  });
});
