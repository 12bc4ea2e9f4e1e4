import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { afterAll, describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startSite, useSite } from '../support/site.js';
import { startUpstreamProxy, type UpstreamProxy } from '../support/upstream-proxy.js';

const site = useSite(startSite);
let upstream: UpstreamProxy;
afterAll(async () => {
  await upstream?.close();
});

// A "minute" of 400 ms lets a test watch a browser time out; billing counts the same short minutes.
const MINUTE_MS = 400;
const local = useLocalService(async () => {
  upstream = await startUpstreamProxy({ username: 'proxy-user', password: 'proxy-pass' });
  return { proxies: { de: upstream.url }, minuteMs: MINUTE_MS, hourlyRate: '0.60' };
});

describe('connecting', () => {
  test('Playwright connectOverCDP works with cdpUrl as given', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const browser = await chromium.connectOverCDP(session.cdpUrl ?? '');
      const page = browser.contexts()[0]?.pages()[0] ?? (await browser.contexts()[0]?.newPage());
      await page?.goto(`${site.url}/`);
      expect(await page?.title()).toBe('Local test site');
      await browser.close();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  // Puppeteer's `browserURL` resolves `/json/version` from the host root and so drops the secret
  // path; the WebSocket URL that `${cdpUrl}/json/version` gives is what it connects to.
  async function browserWSEndpoint(cdpUrl: string | null): Promise<string> {
    const version = (await (await fetch(`${cdpUrl}/json/version`)).json()) as {
      webSocketDebuggerUrl: string;
    };
    return version.webSocketDebuggerUrl;
  }

  test('Puppeteer connects to the WebSocket of cdpUrl, and its browser.close() is not a stop', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const browser = await puppeteer.connect({ browserWSEndpoint: await browserWSEndpoint(session.cdpUrl) });
      const page = await browser.newPage();
      await page.goto(`${site.url}/`);
      expect(await page.title()).toBe('Local test site');
      await browser.close();
      expect((await local.client.browsers.get(session.id)).status).toBe('active');
      // Still there to be driven again.
      const again = await puppeteer.connect({ browserWSEndpoint: await browserWSEndpoint(session.cdpUrl) });
      expect((await again.pages()).length).toBeGreaterThan(0);
      await again.disconnect();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test("Chromium's own debugging port is not in anything the service hands out", async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const version = (await (await fetch(`${session.cdpUrl}/json/version`)).json()) as Record<
        string,
        string
      >;
      const servicePort = new URL(local.service.baseUrl).port;
      expect(new URL(version.webSocketDebuggerUrl ?? '').port).toBe(servicePort);
      expect(JSON.stringify(session)).not.toMatch(/devtools\/browser/);
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test('a cdpUrl with a wrong secret, or of a stopped browser, is refused', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    const cdpUrl = session.cdpUrl ?? '';
    expect((await fetch(`${cdpUrl}x/json/version`)).status).toBe(404);
    await local.client.browsers.stop(session.id);
    expect((await fetch(`${cdpUrl}/json/version`)).status).toBe(404);
    await expect(chromium.connectOverCDP(cdpUrl, { timeout: 5_000 })).rejects.toThrow();
  });
});

describe('live view', () => {
  test('liveUrl shows the browser live as a page of screenshots, until it is stopped', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    const liveUrl = session.liveUrl ?? '';
    try {
      const page = await fetch(liveUrl);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await page.text()).toContain(session.id);
      const shot = await fetch(`${liveUrl}/screenshot`);
      expect(shot.headers.get('content-type')).toBe('image/png');
      // PNG signature: the screenshot is a real image of the browser's page.
      expect(
        Buffer.from(await shot.arrayBuffer())
          .subarray(0, 8)
          .toString('hex'),
      ).toBe('89504e470d0a1a0a');
    } finally {
      await local.client.browsers.stop(session.id);
    }
    expect((await fetch(liveUrl)).status).toBe(404);
  });
});

describe('lifecycle and billing', () => {
  test('a dropped connection leaves the browser active and billed; stop ends it and refunds', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null, timeout: 60 });
    // Charged up front for the whole timeout: 60 minutes at 0.60 an hour.
    expect(session.browserCost).toBe('0.60');
    const browser = await chromium.connectOverCDP(session.cdpUrl ?? '');
    await browser.close();
    const after = await local.client.browsers.get(session.id);
    expect(after.status).toBe('active');
    expect(after.finishedAt).toBeNull();
    expect(local.logs.some((l) => l.includes(`browser ${session.id} disconnected`))).toBe(true);
    const stopped = await local.client.browsers.stop(session.id);
    expect(stopped.status).toBe('stopped');
    expect(stopped.finishedAt).not.toBeNull();
    // Billed per started minute of use (0.01 each), the rest of the 60 refunded.
    const used = Math.max(
      1,
      Math.ceil((Date.parse(stopped.finishedAt ?? '') - Date.parse(stopped.startedAt ?? '')) / MINUTE_MS),
    );
    expect(used).toBeLessThan(60);
    expect(stopped.browserCost).toBe(`0.${String(used).padStart(2, '0')}`);
    expect(local.logs.some((l) => l.includes(`browser ${session.id} stopped (stop action`))).toBe(true);
  });

  test('a browser reaching timeoutAt is stopped like the stop action', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null, timeout: 1 });
    const deadline = Date.now() + 10 * MINUTE_MS;
    let current = session;
    while (current.status === 'active' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      current = await local.client.browsers.get(session.id);
    }
    expect(current.status).toBe('stopped');
    expect(current.browserCost).toBe('0.01');
    expect(current.stopReason).toBe('timeout');
  });
});

describe('profiles', () => {
  test('log in once, stop, and the next browser with the profile is already logged in', async () => {
    const profile = await local.client.profiles.create({ name: 'login-story' });
    const first = await local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null });
    const pw1 = await chromium.connectOverCDP(first.cdpUrl ?? '');
    const page1 = pw1.contexts()[0]?.pages()[0];
    await page1?.goto(`${site.url}/account`);
    expect(await page1?.textContent('#status')).toBe('anonymous');
    await page1?.goto(`${site.url}/login?user=alice`);
    await pw1.close();
    await local.client.browsers.stop(first.id);

    expect((await local.client.profiles.get(profile.id)).cookieDomains).toEqual(['127.0.0.1']);

    const second = await local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null });
    try {
      const pw2 = await chromium.connectOverCDP(second.cdpUrl ?? '');
      const page2 = pw2.contexts()[0]?.pages()[0];
      await page2?.goto(`${site.url}/account`);
      expect(await page2?.textContent('#status')).toBe('logged in as alice');
      await pw2.close();
    } finally {
      await local.client.browsers.stop(second.id);
    }
  });

  test('two browsers may share a profile at once, and the one stopped last wins', async () => {
    const profile = await local.client.profiles.create({ name: 'shared' });
    const [a, b] = await Promise.all([
      local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null }),
      local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null }),
    ]);
    for (const [session, user] of [
      [a, 'alice'],
      [b, 'bob'],
    ] as const) {
      const pw = await chromium.connectOverCDP(session.cdpUrl ?? '');
      await pw.contexts()[0]?.pages()[0]?.goto(`${site.url}/login?user=${user}`);
      await pw.close();
    }
    await local.client.browsers.stop(a.id);
    await local.client.browsers.stop(b.id);
    const next = await local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null });
    try {
      const pw = await chromium.connectOverCDP(next.cdpUrl ?? '');
      const page = pw.contexts()[0]?.pages()[0];
      await page?.goto(`${site.url}/account`);
      expect(await page?.textContent('#status')).toBe('logged in as bob');
      await pw.close();
    } finally {
      await local.client.browsers.stop(next.id);
    }
  });

  test('what a site keeps in localStorage and IndexedDB comes back with the profile, and only with it', async () => {
    const profile = await local.client.profiles.create({ name: 'spa-login' });
    // Run in the page (this project's TypeScript has no DOM types): open the app's database.
    const openApp = `new Promise((resolve, reject) => {
      const open = indexedDB.open('app', 1);
      open.onupgradeneeded = () => open.result.createObjectStore('auth');
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(open.error);
    })`;
    const done = (request: string) =>
      `new Promise((resolve, reject) => { const r = ${request}; r.onsuccess = r.oncomplete = () => resolve(r.result ?? null); r.onerror = () => reject(r.error); })`;
    const inPage = async (cdpUrl: string | null, script: string) => {
      const pw = await chromium.connectOverCDP(cdpUrl ?? '');
      const page = pw.contexts()[0]?.pages()[0];
      await page?.goto(`${site.url}/`);
      const result = await page?.evaluate(script);
      await pw.close();
      return result;
    };
    const write = (cdpUrl: string | null) =>
      inPage(
        cdpUrl,
        `(async () => {
          localStorage.setItem('token', 'jwt-for-alice');
          const db = await ${openApp};
          const tx = db.transaction('auth', 'readwrite');
          tx.objectStore('auth').put({ user: 'alice' }, 'session');
          await ${done('tx')};
          db.close();
        })()`,
      );
    const read = (cdpUrl: string | null) =>
      inPage(
        cdpUrl,
        `(async () => {
          const db = await ${openApp};
          const session = await ${done("db.transaction('auth').objectStore('auth').get('session')")};
          db.close();
          return { token: localStorage.getItem('token'), session };
        })()`,
      );

    const first = await local.client.browsers.create({ profileId: profile.id, proxyCountryCode: null });
    await write(first.cdpUrl);
    await local.client.browsers.stop(first.id);
    expect(
      local.logs.some(
        (line) => line.includes(`browser ${first.id} stopped`) && line.includes('web storage saved'),
      ),
    ).toBe(true);

    for (const profileId of [profile.id, undefined]) {
      const next = await local.client.browsers.create({ profileId, proxyCountryCode: null });
      try {
        expect(await read(next.cdpUrl)).toEqual(
          profileId ? { token: 'jwt-for-alice', session: { user: 'alice' } } : { token: null, session: null },
        );
      } finally {
        await local.client.browsers.stop(next.id);
      }
    }

    // Deleting the profile deletes what was saved for it.
    const saved = () =>
      readdir(join(local.dataDir, 'profiles')).then((names) => names.filter((n) => n.startsWith(profile.id)));
    expect(await saved()).not.toEqual([]);
    await local.client.profiles.delete(profile.id);
    expect(await saved()).toEqual([]);
  });

  test('a browser without the profile starts logged out', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      const pw = await chromium.connectOverCDP(session.cdpUrl ?? '');
      const page = pw.contexts()[0]?.pages()[0];
      await page?.goto(`${site.url}/account`);
      expect(await page?.textContent('#status')).toBe('anonymous');
      await pw.close();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test('a browser with an unknown profile is a 404 and starts nothing', async () => {
    await expect(
      local.client.browsers.create({ profileId: '00000000-0000-4000-8000-000000000000' }),
    ).rejects.toMatchObject({ status: 404 });
  });
});

describe('proxies', () => {
  async function visit(cdpUrl: string | null, path: string): Promise<string | null | undefined> {
    const pw = await chromium.connectOverCDP(cdpUrl ?? '');
    const page = pw.contexts()[0]?.pages()[0];
    const response = await page?.goto(`${site.url}${path}`);
    const via = await response?.headerValue('x-via-test-proxy');
    await pw.close();
    return via;
  }

  test('a country with a configured upstream routes through it, with its credentials', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: 'de' });
    try {
      expect(session).toMatchObject({ proxyCountryCode: 'de', proxyRoute: 'managed', proxyNote: null });
      expect(await visit(session.cdpUrl, '/?via=de')).toBe('1');
      expect(upstream.forwarded).toContain(`${site.url}/?via=de`);
      expect(JSON.stringify(session)).not.toContain('proxy-pass');
    } finally {
      const stopped = await local.client.browsers.stop(session.id);
      expect(Number(stopped.proxyUsedMb)).toBeGreaterThan(0);
    }
  });

  test('a country without an upstream goes direct, and the browser and the log say so', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: 'jp' });
    try {
      expect(session).toMatchObject({ proxyRoute: 'direct', proxyNote: expect.stringContaining('"jp"') });
      expect(
        local.logs.some((l) => l.includes(session.id) && l.includes('no upstream proxy configured for "jp"')),
      ).toBe(true);
      expect(await visit(session.cdpUrl, '/?via=jp')).toBeNull();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test('proxyCountryCode null goes direct', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    try {
      expect(session).toMatchObject({ proxyRoute: 'direct', proxyNote: null });
      expect(await visit(session.cdpUrl, '/?via=none')).toBeNull();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test('customProxy is honoured with its credentials', async () => {
    const session = await local.client.browsers.create({
      customProxy: {
        host: upstream.host,
        port: upstream.port,
        username: 'proxy-user',
        password: 'proxy-pass',
      },
    });
    try {
      expect(session.proxyRoute).toBe('custom');
      expect(await visit(session.cdpUrl, '/?via=custom')).toBe('1');
      expect(upstream.forwarded).toContain(`${site.url}/?via=custom`);
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });

  test('customProxy with wrong credentials is refused by the upstream, not bypassed', async () => {
    const before = upstream.refused();
    const session = await local.client.browsers.create({
      customProxy: { host: upstream.host, port: upstream.port, username: 'proxy-user', password: 'wrong' },
    });
    try {
      const pw = await chromium.connectOverCDP(session.cdpUrl ?? '');
      const page = pw.contexts()[0]?.pages()[0];
      const response = await page?.goto(`${site.url}/?via=wrong`).catch(() => null);
      expect(response?.status() ?? 407).toBe(407);
      expect(upstream.refused()).toBeGreaterThan(before);
      await pw.close();
    } finally {
      await local.client.browsers.stop(session.id);
    }
  });
});

describe('logs', () => {
  test('lifecycle lines carry no API key and no cdpUrl secret', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    const secret = new URL(session.cdpUrl ?? '').pathname.split('/')[2] ?? '';
    const pw = await chromium.connectOverCDP(session.cdpUrl ?? '');
    await pw.close();
    await local.client.browsers.stop(session.id);
    const text = local.logs.join('\n');
    expect(text).toContain(`browser ${session.id} created`);
    expect(text).toContain(`browser ${session.id} connected`);
    expect(text).not.toContain(local.service.apiKey);
    expect(secret.length).toBeGreaterThan(20);
    expect(text).not.toContain(secret);
    expect(text).not.toContain('proxy-pass');
  });
});
