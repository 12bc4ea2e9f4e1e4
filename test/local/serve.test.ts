import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CloudBrowserClient } from 'cloudbrowser';
import { startLocalService } from 'cloudbrowser/local';
import { afterEach, describe, expect, test } from 'vitest';
import { ourChromiumPids, waitForNoChromium } from '../support/chromium-processes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  expect(await waitForNoChromium(), 'Chromium processes left alive').toEqual([]);
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Runs `cloudbrowser serve` (the CLI, from source) and reads the base URL and key it prints. */
async function serve(
  dataDir: string,
): Promise<{ child: ChildProcess; client: CloudBrowserClient; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/local/cli.ts', 'serve', '--data-dir', dataDir],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const env = await new Promise<Record<string, string>>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      const baseUrl = /CLOUDBROWSER_BASE_URL=(\S+)/.exec(stdout)?.[1];
      const apiKey = /CLOUDBROWSER_API_KEY=(\S+)/.exec(stdout)?.[1];
      if (baseUrl && apiKey) resolve({ baseUrl, apiKey });
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${stderr}`)));
  });
  return { child, client: new CloudBrowserClient(env), stderr: () => stderr };
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cb-serve-'));
  dirs.push(dir);
  return dir;
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

describe('cloudbrowser serve', () => {
  test('prints the base URL and key, and SIGTERM stops every browser before it exits', async () => {
    const dataDir = await tempDir();
    const { child, client, stderr } = await serve(dataDir);
    const browser = await client.browsers.create({ proxyCountryCode: null });
    expect(ourChromiumPids().length).toBeGreaterThan(0);
    child.kill('SIGTERM');
    expect(await exited(child)).toBe(0);
    expect(stderr()).toContain(`browser ${browser.id} stopped (service closed`);
    expect(await waitForNoChromium(5_000)).toEqual([]);

    // The stop was recorded: a service started on the same data reports it stopped for that reason.
    await using service = await startLocalService({ dataDir, log: false });
    const after = await service.client().browsers.get(browser.id);
    expect(after).toMatchObject({ status: 'stopped', stopReason: 'service closed' });
  });

  test('a killed service leaves no Chromium behind, and a restart reports its browsers stopped', async () => {
    const dataDir = await tempDir();
    const { child, client } = await serve(dataDir);
    const profile = await client.profiles.create({ name: 'survives' });
    const browser = await client.browsers.create({ proxyCountryCode: null });
    child.kill('SIGKILL');
    await exited(child);
    expect(await waitForNoChromium(10_000)).toEqual([]);

    await using service = await startLocalService({ dataDir, log: false });
    const restarted = service.client();
    expect(await restarted.browsers.get(browser.id)).toMatchObject({
      status: 'stopped',
      cdpUrl: null,
      finishedAt: expect.any(String),
    });
    expect((await restarted.profiles.get(profile.id)).name).toBe('survives');
    expect(await restarted.browsers.list({ filterBy: 'active' }).toArray()).toEqual([]);
  });

  test('two services cannot share a data dir', async () => {
    const dataDir = await tempDir();
    await using _first = await startLocalService({ dataDir, log: false });
    await expect(startLocalService({ dataDir, log: false })).rejects.toThrow(/in use/);
  });

  test('the key header is configurable, for clients that name it differently', async () => {
    await using service = await startLocalService({
      dataDir: await tempDir(),
      log: false,
      apiKeyHeader: 'X-Other-Key',
    });
    const profile = await service.client().profiles.create({ name: 'header' });
    expect(service.client().apiKeyHeader).toBe('X-Other-Key');
    const wrongHeader = new CloudBrowserClient({ baseUrl: service.baseUrl, apiKey: service.apiKey });
    await expect(wrongHeader.profiles.get(profile.id)).rejects.toMatchObject({ status: 401 });
  });

  test('a non-loopback host needs an explicit opt-in', async () => {
    await expect(startLocalService({ host: '0.0.0.0', dataDir: await tempDir() })).rejects.toThrow(
      /allowRemote/,
    );
  });
});
