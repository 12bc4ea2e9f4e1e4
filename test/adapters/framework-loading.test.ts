import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const local = useLocalService();

/** Runs the fixture with `hidden` packages made to look not installed; returns what it printed. */
async function connectWithout(adapter: 'playwright' | 'puppeteer', hidden: string[]): Promise<unknown> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', 'test/adapters/fixtures/connect-without.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ADAPTER: adapter,
        HIDE_PACKAGES: hidden.join(','),
        HOLD_BASE_URL: local.service.baseUrl,
        HOLD_API_KEY: local.service.apiKey,
      },
      timeout: 60_000,
    },
  );
  return JSON.parse(stdout);
}

const browsersCreated = async () => (await local.client.browsers.list().toArray()).length;

describe('loading the framework', () => {
  test('without playwright-core, the Playwright adapter uses playwright', async () => {
    expect(await connectWithout('playwright', ['playwright-core'])).toEqual({ connected: true, answer: 42 });
  });

  test('without playwright-core or playwright, the error says how to install it, and no browser is created', async () => {
    const before = await browsersCreated();
    expect(await connectWithout('playwright', ['playwright-core', 'playwright'])).toEqual({
      connected: false,
      name: 'ConfigurationError',
      message:
        'cloudbrowser/playwright needs Playwright: npm install playwright-core (or playwright), or pass { playwright }',
    });
    expect(await browsersCreated()).toBe(before);
  });

  test('without puppeteer-core or puppeteer, the error says how to install it, and no browser is created', async () => {
    const before = await browsersCreated();
    expect(await connectWithout('puppeteer', ['puppeteer-core', 'puppeteer'])).toEqual({
      connected: false,
      name: 'ConfigurationError',
      message:
        'cloudbrowser/puppeteer needs Puppeteer: npm install puppeteer-core (or puppeteer), or pass { puppeteer }',
    });
    expect(await browsersCreated()).toBe(before);
  });
});
