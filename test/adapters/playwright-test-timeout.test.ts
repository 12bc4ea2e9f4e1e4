import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLocalService } from 'cloudbrowser/local';
import { expect, test } from 'vitest';
import { waitForNoChromium } from '../support/chromium-processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

test('the Playwright Test fixture stops the worker browser when a test times out', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'cb-pw-timeout-'));
  const outputDir = await mkdtemp(join(tmpdir(), 'cb-pw-timeout-results-'));
  try {
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = execFile(
        process.execPath,
        [
          join('node_modules', '@playwright', 'test', 'cli.js'),
          'test',
          '-c',
          'test/adapters/fixtures/pw-timeout',
        ],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            CLOUDBROWSER_BASE_URL: 'local',
            CLOUDBROWSER_LOCAL_DATA_DIR: dataDir,
            EXAMPLE_OUTPUT_DIR: outputDir,
            CI: '1',
          },
          timeout: 90_000,
        },
        (error, stdout, stderr) =>
          resolve({ code: error ? (child.exitCode ?? 1) : 0, output: stdout + stderr }),
      );
    });
    expect(code, output).toBe(1);
    expect(output).toContain('Test timeout of 3000ms exceeded');
    expect(output).toContain('cloud browsers left active after the run: 0');
    await using service = await startLocalService({ dataDir, log: false });
    const browsers = await service.client().browsers.list({ pageSize: 100 }).toArray();
    expect(browsers.length).toBeGreaterThanOrEqual(1);
    // Stopped by the fixture's stop action in worker teardown, not by the service closing.
    expect(browsers.map((b) => [b.status, b.stopReason])).toEqual(
      browsers.map(() => ['stopped', 'stop action']),
    );
  } finally {
    expect(await waitForNoChromium()).toEqual([]);
    await rm(dataDir, { recursive: true, force: true });
    await rm(outputDir, { recursive: true, force: true });
  }
}, 120_000);
