import { type HarEntry, observeNetwork } from 'cloudbrowser';
import { describe, expect, test } from 'vitest';
import { HarSchema } from '../support/har-schema.js';
import { useLocalService } from '../support/local-service.js';
import { startNetworkSite } from '../support/network-site.js';
import { entryWhere, openBrowser, pathOf } from '../support/observed-browser.js';
import { useSite } from '../support/site.js';

const site = useSite(startNetworkSite);

const local = useLocalService();

/** Resource type names Chrome DevTools knows (`Common.ResourceType`); its HAR import maps them back. */
const DEVTOOLS_TYPES = new Set([
  'document',
  'stylesheet',
  'image',
  'media',
  'font',
  'script',
  'texttrack',
  'xhr',
  'fetch',
  'prefetch',
  'eventsource',
  'websocket',
  'manifest',
  'signed-exchange',
  'ping',
  'csp-violation-report',
  'preflight',
  'fedcm',
  'other',
]);

describe('toHar', () => {
  test('gives a HAR 1.2 document that the schema accepts, with one entry per hop and DevTools’ own fields', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, { headers: true });
    const { page } = driven;
    await page.goto(`${site.url}/with-iframe`);
    await page.goto(`${site.url}/cached`);
    await page.goto(`${site.url}/cached`);
    await page.evaluate(
      ([closed]) =>
        Promise.all([
          fetch('/redirect/301').then((r) => r.text()),
          fetch(`http://127.0.0.1:${closed}/refused`, { mode: 'no-cors' }).catch(() => 'refused'),
        ]),
      [site.closedPort],
    );
    await entryWhere(network, (e) => pathOf(e.url) === '/redirect/final');
    await entryWhere(network, (e) => pathOf(e.url) === '/refused');
    await entryWhere(network, (e) => pathOf(e.url) === '/img/in-frame.png');

    const har = network.toHar();
    const parsed = HarSchema.safeParse(har);
    expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    // Plain data: it survives being written to a file and read back.
    expect(JSON.parse(JSON.stringify(har))).toEqual(har);

    const { log } = har;
    expect(log.creator.name).toBe('cloudbrowser');
    expect(log.browser?.name).toMatch(/Chrome/);
    const pageIds = new Set(log.pages.map((p) => p.id));
    expect(pageIds.size).toBe(log.pages.length);
    const byPath = (path: string) => log.entries.filter((e) => pathOf(e.request.url) === path);

    for (const entry of log.entries) {
      // The spec: `time` is the sum of the timings that are not -1; `ssl` is part of `connect`.
      const { blocked, dns, connect, send, wait, receive, ssl } = entry.timings;
      const sum = [blocked, dns, connect, send, wait, receive].reduce((a, b) => a + Math.max(b, 0), 0);
      expect(Math.abs(entry.time - sum)).toBeLessThan(0.01);
      if (ssl >= 0) expect(connect).toBeGreaterThanOrEqual(ssl);
      if (entry.pageref !== undefined) expect(pageIds).toContain(entry.pageref);
      expect(DEVTOOLS_TYPES).toContain(entry._resourceType);
    }
    const sorted = [...log.entries].sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime));
    expect(log.entries).toEqual(sorted);

    const hops: HarEntry[] = ['/redirect/301', '/redirect/302', '/redirect/final'].map(
      (p) => byPath(p)[0] as HarEntry,
    );
    expect(hops.map((h) => h.response.status)).toEqual([301, 302, 200]);
    expect(hops[0]?.response.redirectURL).toBe(`${site.url}/redirect/302?token=[redacted]`);
    expect(hops[1]?.response.redirectURL).toBe(`${site.url}/redirect/final`);
    expect(hops[2]?.response.redirectURL).toBe('');
    expect(hops[0]?.response.headers).toContainEqual({
      name: 'location',
      value: '/redirect/302?token=[redacted]',
    });
    expect(hops[1]?.request.queryString).toEqual([{ name: 'token', value: '[redacted]' }]);

    const refused = byPath('/refused')[0];
    expect(refused?.response).toMatchObject({ status: 0, _error: 'net::ERR_CONNECTION_REFUSED' });
    expect(refused?.serverIPAddress).toBeUndefined();

    const [fresh, cached] = byPath('/cached.png');
    expect(fresh?.serverIPAddress).toBe('127.0.0.1');
    expect(fresh?._fromCache).toBeUndefined();
    expect(cached?._fromCache).toMatch(/^(memory|disk)$/);

    const document = byPath('/with-iframe')[0];
    const frameImage = byPath('/img/in-frame.png')[0];
    expect(document?._resourceType).toBe('document');
    expect(document?.request.headers.length).toBeGreaterThan(3);
    expect(frameImage?.pageref).toBe(document?.pageref);
    expect(log.pages.find((p) => p.id === document?.pageref)?.title).not.toBe('');
  });

  test('an observer with nothing recorded gives an empty but valid HAR', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    const har = network.toHar();
    expect(HarSchema.safeParse(har).success).toBe(true);
    expect(har.log.entries).toEqual([]);
    expect(har.log.pages).toEqual([]);
  });
});

describe('the HAR 1.2 schema of these tests', () => {
  test('refuses what the spec forbids, so a pass above means something', () => {
    const valid = {
      log: {
        version: '1.2',
        creator: { name: 'x', version: '1' },
        entries: [
          {
            startedDateTime: '2024-01-01T00:00:00.000Z',
            time: 1,
            request: {
              method: 'GET',
              url: 'https://a.test/',
              httpVersion: 'HTTP/1.1',
              cookies: [],
              headers: [],
              queryString: [],
              headersSize: -1,
              bodySize: 0,
            },
            response: {
              status: 200,
              statusText: 'OK',
              httpVersion: 'HTTP/1.1',
              cookies: [],
              headers: [],
              content: { size: 0, mimeType: 'text/html' },
              redirectURL: '',
              headersSize: -1,
              bodySize: -1,
            },
            cache: {},
            timings: { send: 0, wait: 1, receive: 0 },
            _custom: true,
          },
        ],
      },
    };
    expect(HarSchema.safeParse(valid).success).toBe(true);
    type Entry = (typeof valid)['log']['entries'][number];
    const broken = (change: (entry: Entry) => void) => {
      const copy = structuredClone(valid);
      change(copy.log.entries[0] as Entry);
      return HarSchema.safeParse(copy).success;
    };
    expect(broken((e) => Reflect.deleteProperty(e.request, 'cookies'))).toBe(false);
    expect(broken((e) => Object.assign(e.timings, { send: -1 }))).toBe(false);
    expect(broken((e) => Object.assign(e.timings, { dns: -2 }))).toBe(false);
    expect(broken((e) => Object.assign(e, { startedDateTime: 'yesterday' }))).toBe(false);
    expect(broken((e) => Object.assign(e, { custom: 1 }))).toBe(false);
    expect(broken((e) => Object.assign(e, { serverIPAddress: 'localhost' }))).toBe(false);
    expect(broken((e) => Object.assign(e.response.content, { size: 1.5 }))).toBe(false);
  });
});
