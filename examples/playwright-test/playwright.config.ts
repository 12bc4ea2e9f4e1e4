/**
 * A Playwright Test project whose browser is a cloud browser, through `cloudbrowser/playwright-test`.
 * On the local service, from the repository root:
 *
 *   CLOUDBROWSER_BASE_URL=local npx playwright test -c examples/playwright-test
 *
 * One test in shop.spec.ts fails on purpose, to show that a failing test still stops its browser:
 * the run ends with exit code 1 and "cloud browsers left active after the run: 0".
 */
import { defineConfig } from '@playwright/test';
import type { CloudBrowserWorkerFixtures } from 'cloudbrowser/playwright-test';

export default defineConfig<object, CloudBrowserWorkerFixtures>({
  testDir: '.',
  globalSetup: './global-setup.ts',
  workers: 2,
  fullyParallel: true,
  retries: 0,
  timeout: 15_000,
  reporter: 'list',
  // Reports and traces stay out of the repository.
  outputDir: process.env.EXAMPLE_OUTPUT_DIR ?? 'test-results',
  use: {
    // Each worker's cloud browser: no managed proxy (the shop is on this machine), a 10-minute cap.
    cloudBrowser: { proxyCountryCode: null, timeout: 10 },
  },
});
