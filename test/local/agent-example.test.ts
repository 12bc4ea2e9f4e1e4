import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { waitForNoChromium } from '../support/chromium-processes.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('examples/agent-login.ts logs in through a scripted driver and prints no secret', async () => {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/agent-login.ts'], {
    cwd: ROOT,
    timeout: 60_000,
  });
  const lines = stdout.trim().split('\n');
  expect(lines.at(-1)).toBe('run completed: Welcome');
  expect(lines.filter((line) => line.includes('secret.typed'))).toEqual([
    expect.stringContaining('{"alias":"Demo_username"}'),
    expect.stringContaining('{"alias":"Demo_password"}'),
    expect.stringContaining('{"alias":"Demo_svc_2fa_code"}'),
  ]);
  expect(stdout).not.toContain('correct horse battery staple');
  expect(stdout).not.toContain('demo@example.test');
  expect(await waitForNoChromium()).toEqual([]);
}, 90_000);
