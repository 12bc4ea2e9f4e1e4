import {
  APIUserAbortError,
  BrowserConnectError,
  ConfigurationError,
  RequestValidationError,
} from 'cloudbrowser';
import { attachCloudBrowser, connectCloudBrowser } from 'cloudbrowser/playwright';
import { type Browser, type ConnectOverCDPOptions, chromium } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startSite, useSite } from '../support/site.js';

const local = useLocalService();
const site = useSite(startSite);

/** Options every test uses: the test's local service, no managed proxy. */
const base = () => ({ client: local.client, proxyCountryCode: null });

const { statusOf, activeIds } = local;

describe('connectCloudBrowser (Playwright)', () => {
  test('gives a handle whose default context and page browse, and stop() ends billing', async () => {
    const cb = await connectCloudBrowser({ ...base(), metadata: { suite: 'playwright' } });
    expect(cb.owns).toBe(true);
    expect(cb.session).toMatchObject({ id: cb.id, status: 'active', metadata: { suite: 'playwright' } });
    expect(cb.liveUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/live\//);
    expect(cb.browser.isConnected()).toBe(true);
    expect(cb.context).toBe(cb.browser.contexts()[0]);
    await cb.page.goto(site.url);
    expect(await cb.page.title()).toBe('Local test site');

    const stopped = await cb.stop();
    expect(stopped).toMatchObject({ id: cb.id, status: 'stopped' });
    expect(cb.session).toBe(stopped);
    expect(cb.browser.isConnected()).toBe(false);
    expect(await statusOf(cb.id)).toBe('stopped');
  });

  test('stop() is memoised: concurrent and later calls share one stop', async () => {
    const cb = await connectCloudBrowser(base());
    const first = cb.stop();
    expect(cb.stop()).toBe(first);
    const [a, b] = await Promise.all([first, cb.stop()]);
    expect(a).toBe(b);
    expect(await cb.stop()).toBe(a);
    expect(local.logs.filter((line) => line.startsWith(`browser ${cb.id} stopped`))).toHaveLength(1);
  });

  test('await using stops the browser when the block ends', async () => {
    let id = '';
    {
      await using cb = await connectCloudBrowser(base());
      id = cb.id;
      await cb.page.goto(site.url);
    }
    expect(await statusOf(id)).toBe('stopped');
  });

  test('await using stops the browser when the block throws', async () => {
    let id = '';
    const run = async () => {
      await using cb = await connectCloudBrowser(base());
      id = cb.id;
      throw new Error('the test body failed');
    };
    await expect(run()).rejects.toThrow('the test body failed');
    expect(await statusOf(id)).toBe('stopped');
  });

  test('a disconnect alone leaves the browser active; stop() still stops it', async () => {
    const cb = await connectCloudBrowser(base());
    await cb.browser.close();
    expect(await statusOf(cb.id)).toBe('active');
    expect((await cb.stop()).status).toBe('stopped');
  });

  test('a connect that times out after the create stops the browser before it throws', async () => {
    const error = await connectCloudBrowser({ ...base(), connectTimeoutMs: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrowserConnectError);
    expect(error).toMatchObject({ code: 'browser_connect_failed', reason: 'timeout' });
    expect((error as Error).message).toMatch(/within 1 ms .*; the browser was stopped$/);
    expect(await statusOf((error as BrowserConnectError).browserId)).toBe('stopped');
    expect(await activeIds()).toEqual([]);
  });

  test('a connect that fails on a bad connect option stops the browser before it throws', async () => {
    const error = await connectCloudBrowser({
      ...base(),
      connectOptions: { headers: { 'not a header name': 'x' } },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'failed' });
    expect((error as Error).message).toMatch(
      /^connectCloudBrowser: Playwright could not connect to browser \S+: .*invalid header name.*; the browser was stopped$/,
    );
    expect(await activeIds()).toEqual([]);
  });

  test('an abort during the create leaves nothing active', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const error = await connectCloudBrowser({ ...base(), signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    // Aborted mid-request, the client finds and stops what the create made; aborted later, the adapter does.
    expect(error instanceof APIUserAbortError || error instanceof BrowserConnectError).toBe(true);
    expect(await activeIds()).toEqual([]);
  });

  test('an abort during the connect stops the browser, and a late connection is closed', async () => {
    const controller = new AbortController();
    let attempt: Promise<Browser> | undefined;
    const error = await connectCloudBrowser({
      ...base(),
      signal: controller.signal,
      // The real Playwright, aborted the moment it starts connecting: it goes on after the caller gave up.
      playwright: {
        chromium: {
          connectOverCDP: (url: string, options?: ConnectOverCDPOptions) => {
            controller.abort();
            attempt = chromium.connectOverCDP(url, options);
            return attempt;
          },
        },
      },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'BrowserConnectError', reason: 'aborted' });
    expect((error as Error).message).toMatch(/was aborted; the browser was stopped$/);
    expect(await activeIds()).toEqual([]);
    // Either the stop beat it (the connect failed), or it connected late and was disconnected.
    const late = await attempt?.catch(() => undefined);
    if (late) await expect.poll(() => late.isConnected()).toBe(false);
  });

  test('an already aborted signal creates nothing', async () => {
    const error = await connectCloudBrowser({ ...base(), signal: AbortSignal.abort() }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(APIUserAbortError);
    expect(await local.client.browsers.list().toArray()).not.toContainEqual(
      expect.objectContaining({ status: 'active' }),
    );
  });

  test('bad options are refused before a browser is created', async () => {
    const before = (await local.client.browsers.list().toArray()).length;
    await expect(connectCloudBrowser({ ...base(), connectTimeoutMs: -1 })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(connectCloudBrowser({ ...base(), proxyCountryCode: 'DE' })).rejects.toThrow(
      RequestValidationError,
    );
    expect((await local.client.browsers.list().toArray()).length).toBe(before);
  });

  test('reconnect() connects again to the same browser, with fresh framework objects', async () => {
    await using cb = await connectCloudBrowser(base());
    await cb.page.goto(`${site.url}/login?user=ada`);
    const { browser, page } = cb;
    await cb.reconnect();
    expect(browser.isConnected()).toBe(false);
    expect(cb.browser).not.toBe(browser);
    expect(cb.page).not.toBe(page);
    expect(cb.page.url()).toBe(`${site.url}/login?user=ada`);
    await cb.page.goto(`${site.url}/account`);
    expect(await cb.page.textContent('#status')).toBe('logged in as ada');
  });

  test('autoReconnect connects again after a disconnect the handle did not ask for', async () => {
    await using cb = await connectCloudBrowser({ ...base(), autoReconnect: { delayMs: 0 } });
    const first = cb.browser;
    await first.close();
    await expect.poll(() => cb.browser !== first && cb.browser.isConnected()).toBe(true);
    expect(await cb.page.evaluate('1 + 1')).toBe(2);
    expect(await activeIds()).toEqual([cb.id]);
  });

  test('reconnect() after stop() is refused', async () => {
    const cb = await connectCloudBrowser(base());
    await cb.stop();
    await expect(cb.reconnect()).rejects.toMatchObject({ reason: 'not_active' });
  });

  test('the process guards are installed only while an owned handle is live', async () => {
    const before = process.listenerCount('SIGTERM');
    const cb = await connectCloudBrowser(base());
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    await cb.stop();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});

describe('attachCloudBrowser (Playwright)', () => {
  test('does not own the browser: disposing the handle only disconnects', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    const before = process.listenerCount('SIGINT');
    {
      await using cb = await attachCloudBrowser(session.id, { client: local.client });
      expect(cb.owns).toBe(false);
      expect(process.listenerCount('SIGINT')).toBe(before);
      await cb.page.goto(site.url);
      expect((await cb.stop()).status).toBe('active');
      expect(cb.browser.isConnected()).toBe(false);
    }
    expect(await statusOf(session.id)).toBe('active');
    await local.client.browsers.stop(session.id);
  });

  test('with own: true, disposing the handle stops the browser', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    {
      await using cb = await attachCloudBrowser(session.id, { client: local.client, own: true });
      expect(cb.owns).toBe(true);
      await cb.page.goto(site.url);
    }
    expect(await statusOf(session.id)).toBe('stopped');
  });

  test('refuses a stopped browser with a BrowserConnectError', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    await local.client.browsers.stop(session.id);
    await expect(attachCloudBrowser(session.id, { client: local.client })).rejects.toMatchObject({
      name: 'BrowserConnectError',
      reason: 'not_active',
      message: `attachCloudBrowser: browser ${session.id} is stopped; there is nothing to connect to`,
    });
  });
});

describe('profiles with the Playwright adapter', () => {
  test('a login in one handle is there in the next handle with the same profile', async () => {
    const profile = await local.client.profiles.create({ name: 'adapter user' });
    {
      await using first = await connectCloudBrowser({ ...base(), profileId: profile.id });
      await first.page.goto(`${site.url}/account`);
      expect(await first.page.textContent('#status')).toBe('anonymous');
      await first.page.goto(`${site.url}/login?user=grace`);
    }
    await using second = await connectCloudBrowser({ ...base(), profileId: profile.id });
    await second.page.goto(`${site.url}/account`);
    expect(await second.page.textContent('#status')).toBe('logged in as grace');
  });
});
