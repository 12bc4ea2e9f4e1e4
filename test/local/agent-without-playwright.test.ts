import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./fixtures/run-without-playwright.ts', import.meta.url));

test('without playwright-core installed, a run fails with an error that says how to install it', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', FIXTURE], { timeout: 30_000 });
  expect(JSON.parse(stdout)).toEqual({
    status: 'failed',
    error:
      'playwright-core is not installed: the local service drives agent runs with it; install it (npm install playwright-core) or playwright',
    browsers: 0,
  });
});
