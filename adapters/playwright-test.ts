/**
 * `cloudbrowser/playwright-test`: `test` and `expect` for @playwright/test, where each worker's
 * `browser` is a cloud browser. The standard `context` and `page` fixtures work unchanged, no
 * browser is downloaded, and the cloud browser is stopped in worker teardown, also when tests
 * fail or time out.
 *
 * @example
 * // playwright.config.ts
 * export default defineConfig({ use: { cloudBrowser: { proxyCountryCode: 'de', timeout: 30 } } });
 *
 * // example.spec.ts
 * import { expect, test } from 'cloudbrowser/playwright-test';
 * test('has a title', async ({ page }) => {
 *   await page.goto('https://example.com');
 *   await expect(page).toHaveTitle(/Example/);
 * });
 */
import { test as base, chromium, expect } from '@playwright/test';
import type { ClientOptions } from 'cloudbrowser';
import {
  connectCloudBrowser,
  type PlaywrightCloudBrowser,
  type PlaywrightConnectOptions,
} from './playwright.js';

export { expect };

/**
 * The cloud browser of each worker: the service's browser create fields, the client options and the
 * adapter settings. Set in `playwright.config` under `use: { cloudBrowser: {...} }`; what the config
 * leaves out is read from the environment: `CLOUDBROWSER_PROFILE_ID`, `CLOUDBROWSER_PROXY_COUNTRY`
 * (a country code, or `none` for no managed proxy) and `CLOUDBROWSER_BROWSER_TIMEOUT` (minutes); the
 * client reads `CLOUDBROWSER_API_KEY` and `CLOUDBROWSER_BASE_URL` as usual.
 * @default {} (the environment, then the service's defaults)
 */
export interface CloudBrowserTestOptions
  extends Omit<PlaywrightConnectOptions, 'client' | 'signal' | 'playwright'> {
  /** Options of the client each worker makes. @default the environment */
  client?: ClientOptions;
}

/** The worker-scoped fixtures this `test` adds. */
export interface CloudBrowserWorkerFixtures {
  /** The option: see {@link CloudBrowserTestOptions}. */
  cloudBrowser: CloudBrowserTestOptions;
  /**
   * The worker's cloud browser handle. `browser` is its framework browser; the standard `context`
   * and `page` are fresh contexts in it, isolated per test as usual. A profile's saved state lives in
   * the browser's default context: use `cloudBrowserHandle.context` and `.page` to work in it.
   */
  cloudBrowserHandle: PlaywrightCloudBrowser;
}

/** How long creating, connecting and stopping a worker's browser may take. */
const WORKER_FIXTURE_TIMEOUT_MS = 120_000;

/**
 * Playwright Test's `test`, with the worker's `browser` replaced by a cloud browser. Each test's
 * report carries the browser's id and live URL (an annotation and an attachment).
 */
export const test = base.extend<object, CloudBrowserWorkerFixtures>({
  cloudBrowser: [{}, { scope: 'worker', option: true }],

  cloudBrowserHandle: [
    async ({ cloudBrowser }, use) => {
      const { client, ...options } = { ...optionsFromEnv(), ...cloudBrowser };
      // The chromium of the running @playwright/test, so its instrumentation (traces, artifacts) applies.
      const handle = await connectCloudBrowser({
        ...options,
        ...(client ? { client } : {}),
        playwright: { chromium },
      });
      try {
        await use(handle);
      } finally {
        await handle.stop();
      }
    },
    { scope: 'worker', timeout: WORKER_FIXTURE_TIMEOUT_MS, title: 'cloud browser' },
  ],

  browser: [
    async ({ cloudBrowserHandle }, use) => {
      await use(cloudBrowserHandle.browser);
    },
    { scope: 'worker' },
  ],

  context: async ({ context, cloudBrowserHandle }, use, testInfo) => {
    const { id, liveUrl } = cloudBrowserHandle;
    testInfo.annotations.push({ type: 'cloudbrowser.browserId', description: id });
    if (liveUrl) testInfo.annotations.push({ type: 'cloudbrowser.liveUrl', description: liveUrl });
    await testInfo.attach('cloud browser', {
      contentType: 'application/json',
      body: JSON.stringify({ browserId: id, liveUrl }, null, 2),
    });
    await use(context);
  },
});

/** The options the environment gives; the config's `cloudBrowser` overrides each of them. */
function optionsFromEnv(): CloudBrowserTestOptions {
  const options: CloudBrowserTestOptions = {};
  const profileId = env('CLOUDBROWSER_PROFILE_ID');
  if (profileId !== undefined) options.profileId = profileId;
  const country = env('CLOUDBROWSER_PROXY_COUNTRY');
  if (country !== undefined) options.proxyCountryCode = country === 'none' ? null : country;
  const timeout = env('CLOUDBROWSER_BROWSER_TIMEOUT');
  if (timeout !== undefined) options.timeout = Number(timeout);
  return options;
}

function env(name: string): string | undefined {
  return process.env[name]?.trim() || undefined;
}
