import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalService } from 'cloudbrowser/local';
import { expect, test } from 'vitest';
import { waitForNoChromium } from '../support/chromium-processes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('CLOUDBROWSER_BASE_URL=local starts a service on first use and stops its browsers at exit', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'cb-embedded-'));
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/local/fixtures/embedded-client.ts'], {
      cwd: root,
      env: {
        ...process.env,
        CLOUDBROWSER_BASE_URL: 'local',
        CLOUDBROWSER_LOCAL_DATA_DIR: dataDir,
        CLOUDBROWSER_API_KEY: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const started = Date.now();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    // The embedded service neither keeps the process alive nor needs a keep-alive timeout to pass.
    expect(Date.now() - started).toBeLessThan(15_000);
    const printed = JSON.parse(stdout) as { id: string; status: string; cdp: number };
    expect(printed).toMatchObject({ status: 'active', cdp: 200 });
    expect(await waitForNoChromium(5_000)).toEqual([]);

    await using service = await startLocalService({ dataDir, log: false });
    expect(await service.client().browsers.get(printed.id)).toMatchObject({
      status: 'stopped',
      stopReason: 'service closed',
    });
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
