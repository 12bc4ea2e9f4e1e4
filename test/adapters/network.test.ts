import { connectCloudBrowser as connectPlaywright } from 'cloudbrowser/playwright';
import { connectCloudBrowser as connectPuppeteer } from 'cloudbrowser/puppeteer';
import { expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
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
