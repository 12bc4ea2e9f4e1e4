import { BrowserConnectError } from 'cloudbrowser';
import { attachCloudBrowser, connectCloudBrowser } from 'cloudbrowser/puppeteer';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startSite, useSite } from '../support/site.js';

const local = useLocalService();
const site = useSite(startSite);

const base = () => ({ client: local.client, proxyCountryCode: null });
const { statusOf, activeIds } = local;

describe('connectCloudBrowser (Puppeteer)', () => {
  test('gives a handle whose page browses, through the WebSocket under cdpUrl, and stop() ends billing', async () => {
    const cb = await connectCloudBrowser(base());
    expect(cb.session).toMatchObject({ id: cb.id, status: 'active' });
    expect(cb.browser.connected).toBe(true);
    await cb.page.goto(site.url);
    expect(await cb.page.title()).toBe('Local test site');
    // The browser's own window size, not Puppeteer's 800×600 emulation.
    expect(cb.page.viewport()).toBeNull();

    const [a, b] = await Promise.all([cb.stop(), cb.stop()]);
    expect(a).toBe(b);
    expect(a).toMatchObject({ id: cb.id, status: 'stopped' });
    expect(cb.browser.connected).toBe(false);
    expect(await statusOf(cb.id)).toBe('stopped');
  });

  test('await using stops the browser when the block throws', async () => {
    let id = '';
    const run = async () => {
      await using cb = await connectCloudBrowser(base());
      id = cb.id;
      await cb.page.goto(site.url);
      throw new Error('the test body failed');
    };
    await expect(run()).rejects.toThrow('the test body failed');
    expect(await statusOf(id)).toBe('stopped');
  });

  test('a disconnect or close() of the Puppeteer browser leaves the cloud browser active', async () => {
    await using cb = await connectCloudBrowser(base());
    await cb.browser.close();
    expect(await statusOf(cb.id)).toBe('active');
  });

  test('a connect that Puppeteer gives up on stops the browser before it throws', async () => {
    const error = await connectCloudBrowser({ ...base(), connectOptions: { protocolTimeout: 1 } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BrowserConnectError);
    expect((error as Error).message).toMatch(/^connectCloudBrowser: Puppeteer could not connect to browser /);
    expect((error as Error).message).toMatch(/; the browser was stopped$/);
    expect(await activeIds()).toEqual([]);
  });

  test('reconnect() connects again to the same browser', async () => {
    await using cb = await connectCloudBrowser(base());
    await cb.page.goto(`${site.url}/login?user=linus`);
    const first = cb.browser;
    await cb.reconnect();
    expect(first.connected).toBe(false);
    expect(cb.browser).not.toBe(first);
    await cb.page.goto(`${site.url}/account`);
    expect(await cb.page.$eval('#status', (el) => el.textContent)).toBe('logged in as linus');
  });
});

describe('attachCloudBrowser (Puppeteer)', () => {
  test('disconnects without stopping, unless it owns the browser', async () => {
    const session = await local.client.browsers.create({ proxyCountryCode: null });
    {
      await using cb = await attachCloudBrowser(session.id, { client: local.client });
      await cb.page.goto(site.url);
    }
    expect(await statusOf(session.id)).toBe('active');
    {
      await using cb = await attachCloudBrowser(session.id, { client: local.client, own: true });
      expect(await cb.page.title()).toBe('Local test site');
    }
    expect(await statusOf(session.id)).toBe('stopped');
  });
});
