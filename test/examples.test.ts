import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserSession } from 'cloudbrowser';
import { startLocalService } from 'cloudbrowser/local';
import { afterEach, describe, expect, test } from 'vitest';
import { waitForNoChromium } from './support/chromium-processes.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];

afterEach(async () => {
  expect(await waitForNoChromium(), 'Chromium processes left alive').toEqual([]);
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command from the repository root with `CLOUDBROWSER_BASE_URL=local` and a data dir of its own. */
function run(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      args,
      {
        cwd: ROOT,
        env: { ...process.env, CLOUDBROWSER_BASE_URL: 'local', ...env },
        timeout: 90_000,
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => resolve({ code: error ? (child.exitCode ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** Every browser the data dir's service ever had, as a service started on it now reports them. */
async function browsersIn(dataDir: string): Promise<BrowserSession[]> {
  await using service = await startLocalService({ dataDir, log: false });
  return await service.client().browsers.list({ pageSize: 100 }).toArray();
}

const PRODUCTS = {
  title: 'Catalogue',
  products: [
    { name: 'Kettle', price: '24.90' },
    { name: 'Teapot', price: '31.00' },
    { name: 'Mug', price: '7.50' },
  ],
};

describe('examples', () => {
  test.each([['examples/playwright-scrape.ts'], ['examples/puppeteer-scrape.ts']])(
    '%s prints what it scraped and stops its browser',
    async (script) => {
      const dataDir = await tempDir('cb-example-');
      const result = await run(['--import', 'tsx', script], { CLOUDBROWSER_LOCAL_DATA_DIR: dataDir });
      expect(result, result.stderr).toMatchObject({ code: 0 });
      const lines = result.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^browser \S+ connected$/);
      expect(JSON.parse(lines[1] ?? '')).toEqual(PRODUCTS);
      expect(lines[2]).toBe('browser stopped');
      const browsers = await browsersIn(dataDir);
      expect(browsers.map((b) => [b.status, b.stopReason])).toEqual([['stopped', 'stop action']]);
    },
    60_000,
  );

  test('examples/profile-login.ts logs in once and the second browser starts logged in', async () => {
    const dataDir = await tempDir('cb-example-');
    const result = await run(['--import', 'tsx', 'examples/profile-login.ts'], {
      CLOUDBROWSER_LOCAL_DATA_DIR: dataDir,
    });
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(result.stdout).toMatch(
      /^profile \S+ created\nfirst browser: anonymous; logging in\nsecond browser, same profile: logged in\n$/,
    );
    const browsers = await browsersIn(dataDir);
    expect(browsers.map((b) => [b.status, b.stopReason])).toEqual([
      ['stopped', 'stop action'],
      ['stopped', 'stop action'],
    ]);
  }, 60_000);

  test('examples/quickstart.ts (npm start) finds the second browser logged in', async () => {
    const result = await run(['--import', 'tsx', 'examples/quickstart.ts'], {});
    expect(result, result.stderr).toMatchObject({ code: 0 });
    expect(result.stdout).toContain('second browser with the same profile sees: logged in');
  }, 60_000);

  test('the Playwright Test project fails only by its labelled failing test, and leaves no browser active', async () => {
    const dataDir = await tempDir('cb-example-');
    const outputDir = await tempDir('cb-example-results-');
    const result = await run(
      [join('node_modules', '@playwright', 'test', 'cli.js'), 'test', '-c', 'examples/playwright-test'],
      { CLOUDBROWSER_LOCAL_DATA_DIR: dataDir, EXAMPLE_OUTPUT_DIR: outputDir, CI: '1' },
    );
    const output = result.stdout + result.stderr;
    expect(result.code, output).toBe(1);
    expect(output).toContain('Running 4 tests using 2 workers');
    expect(output).toMatch(
      /\n\s+1 failed\n\s+.*INTENTIONALLY FAILING: expects a title the shop does not have/,
    );
    expect(output).toMatch(/\n\s+3 passed/);
    expect(output).toContain('cloud browsers left active after the run: 0');
    // Each worker's browser was stopped by the fixture's stop action, not by the service closing.
    const browsers = await browsersIn(dataDir);
    expect(browsers.length).toBeGreaterThanOrEqual(2);
    expect(browsers.every((b) => b.status === 'stopped' && b.stopReason === 'stop action')).toBe(true);
  }, 120_000);
});
