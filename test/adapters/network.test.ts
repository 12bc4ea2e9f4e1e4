import { CloudBrowserClient } from 'cloudbrowser';
import { connectCloudBrowser as connectPlaywright } from 'cloudbrowser/playwright';
import { connectCloudBrowser as connectPuppeteer } from 'cloudbrowser/puppeteer';
import { expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startRelay } from '../support/relay.js';
import { startSite, useSite } from '../support/site.js';

const local = useLocalService();
const site = useSite(startSite);

test('connectCloudBrowser({ network: true }) records what the page loads as cb.network, and stops it with the handle', async () => {
  const cb = await connectPlaywright({ client: local.client, proxyCountryCode: null, network: true });
  try {
    await cb.page.goto(`${site.url}/account?token=abc123`);
    // The observer has its own connection: its last events may land just after the page's.
    const account = () => cb.network.entries().find((e) => e.url.startsWith(`${site.url}/account`));
    await expect.poll(() => account()?.status).toBe(200);
    const entry = account();
    expect(entry?.method).toBe('GET');
    // The observer's defaults hold: secret-looking query values are redacted.
    expect(entry?.url).not.toContain('abc123');
    expect(cb.network.summary().byStatusClass['2xx']).toBeGreaterThan(0);
    expect(cb.network.stopped).toBe(false);
  } finally {
    expect((await cb.stop()).status).toBe('stopped');
  }
  expect(cb.network.stopped).toBe(true);
});

test('the Puppeteer adapter takes the same network option', async () => {
  await using cb = await connectPuppeteer({
    client: local.client,
    proxyCountryCode: null,
    network: { headers: true },
  });
  await cb.page.goto(`${site.url}/`);
  await expect.poll(() => cb.network.entries().find((e) => e.url === `${site.url}/`)?.status).toBe(200);
});

test('without the option there is no observer', async () => {
  await using cb = await connectPlaywright({ client: local.client, proxyCountryCode: null });
  expect(cb.network).toBeUndefined();
});

test('when the connection is lost, autoReconnect brings cb.network back, carrying on with what it had recorded', async () => {
  // Everything goes through a relay that can fail like a network: the REST calls, the framework's
  // connection and the observer's (the service answers with URLs of the address it was called at).
  await using relay = await startRelay(Number(new URL(local.service.baseUrl).port));
  const client = new CloudBrowserClient({ baseUrl: relay.url, apiKey: local.service.apiKey });
  await using cb = await connectPlaywright({
    client,
    proxyCountryCode: null,
    network: true,
    autoReconnect: { delayMs: 0 },
  });
  const paths = () => cb.network.entries().map((e) => new URL(e.url).pathname);
  await cb.page.goto(`${site.url}/`);
  await expect.poll(paths).toContain('/');
  const before = cb.network;
  const closed = new Promise((resolve) => before.on('close', resolve));

  relay.cut();
  expect(await closed).toEqual({ reason: 'disconnected' });
  await expect
    .poll(() => cb.network !== before && !cb.network.stopped && cb.browser.isConnected())
    .toBe(true);
  await cb.page.goto(`${site.url}/account`);
  await expect.poll(paths).toContain('/account');
  expect(paths()).toContain('/');
  expect(before.stopped).toBe(true);
});

test('a manual reconnect() keeps an observer whose connection is fine', async () => {
  await using cb = await connectPlaywright({ client: local.client, proxyCountryCode: null, network: true });
  const observer = cb.network;
  await cb.reconnect();
  expect(cb.network).toBe(observer);
  expect(observer.stopped).toBe(false);
  await cb.page.goto(`${site.url}/`);
  await expect.poll(() => observer.entries().some((e) => e.url === `${site.url}/`)).toBe(true);
});
