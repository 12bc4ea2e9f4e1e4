import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium as playwright } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { ChromiumLaunchError, ChromiumNotFoundError, ChromiumProtocolError } from '../../src/errors.js';
import { type ChromiumProcess, chromiumArgs, launchChromium } from '../../src/local/chromium.js';
import { findChromium } from '../../src/local/chromium-path.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/launch-chromium.ts', import.meta.url));

let executablePath: string;
let site: Server;
let siteUrl: string;
beforeAll(async () => {
  executablePath = await findChromium();
  site = createServer((_req, res) => {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<title>Local page</title><p id="text">served locally</p>');
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => site.close(resolve));
});

// Every test ends with no Chromium of its own alive, found by its user-data dir, and its folders removed.
const dirs: string[] = [];
const launched: ChromiumProcess[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const chromium of launched.splice(0)) chromium.kill();
  for (const dir of dirs.splice(0)) {
    expect(await waitForNoChromium(dir), `Chromium left running for ${dir}`).toEqual([]);
    await rm(dir, { recursive: true, force: true });
  }
});

async function tempDir(kind = 'profile'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `cloudbrowser-chromium-test-${kind}-`));
  dirs.push(dir);
  return dir;
}

async function launch(options: { userDataDir?: string } = {}): Promise<ChromiumProcess> {
  const chromium = await launchChromium({
    executablePath,
    userDataDir: options.userDataDir ?? (await tempDir()),
  });
  launched.push(chromium);
  return chromium;
}

/** Live (not zombie) processes whose command line names this user-data dir. */
function chromiumPids(userDataDir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2)[0];
      if (cmdline.includes(`--user-data-dir=${userDataDir}`) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // Ended while we looked.
    }
  }
  return pids;
}

async function waitForNoChromium(userDataDir: string, ms = 5_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const pids = chromiumPids(userDataDir);
    if (pids.length === 0 || Date.now() > deadline) return pids;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs the fixture in a child Node process; resolves with what it printed once Chromium is up. */
async function launchInChild(
  userDataDir: string,
  mode: 'hold' | 'unref' | 'close',
): Promise<{ child: ChildProcess; pid: number; wsEndpoint: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, executablePath, userDataDir, mode], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the fixture exited (${code}) before printing`)));
  });
  return { child, ...(JSON.parse(first) as { pid: number; wsEndpoint: string }) };
}

function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

async function fakeExecutable(dir: string, name: string, script = 'exit 0'): Promise<string> {
  const path = join(dir, name);
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, `#!/bin/sh\n${script}\n`);
  await chmod(path, 0o755);
  return path;
}

describe('findChromium', () => {
  test('an explicit path beats CHROME_PATH, which beats the system locations', async () => {
    const dir = await tempDir('bin');
    const [option, fromEnv, system] = await Promise.all(
      ['option', 'env', 'system'].map((name) => fakeExecutable(dir, name)),
    );
    const search = { env: { CHROME_PATH: fromEnv }, systemPaths: [join(dir, 'missing'), system as string] };
    expect(await findChromium(option, search)).toBe(option);
    expect(await findChromium(undefined, search)).toBe(fromEnv);
    expect(await findChromium(undefined, { ...search, env: {} })).toBe(system);
  });

  test('a system Chromium on PATH comes before the fixed locations', async () => {
    const dir = await tempDir('bin');
    const onPath = await fakeExecutable(dir, 'chromium');
    expect(await findChromium(undefined, { env: { PATH: dir }, platform: 'linux' })).toBe(onPath);
  });

  test('a chromePath option or CHROME_PATH that is missing is an error naming it, not a fallthrough', async () => {
    const dir = await tempDir('bin');
    const system = await fakeExecutable(dir, 'system');
    const missing = join(dir, 'no-such-chrome');
    const search = { env: {}, systemPaths: [system] };

    const fromOption = await findChromium(missing, search).catch((error: unknown) => error);
    expect(fromOption).toBeInstanceOf(ChromiumNotFoundError);
    expect((fromOption as ChromiumNotFoundError).code).toBe('chromium_not_found');
    expect((fromOption as Error).message).toContain(
      `the chromePath option points at ${missing}, which does not exist`,
    );

    const fromEnv = await findChromium(undefined, { ...search, env: { CHROME_PATH: missing } }).catch(
      (e) => e,
    );
    expect(fromEnv).toBeInstanceOf(ChromiumNotFoundError);
    expect((fromEnv as Error).message).toContain(`CHROME_PATH points at ${missing}, which does not exist`);

    const notExecutable = join(dir, 'plain-file');
    await writeFile(notExecutable, 'not a program');
    await expect(findChromium(notExecutable, search)).rejects.toThrow(/which is not executable/);
    await expect(findChromium(dir, search)).rejects.toThrow(/which is not a file/);
  });

  test('with nothing anywhere, the error lists where it looked and says how to get one', async () => {
    const empty = await tempDir('empty');
    const error = await findChromium(undefined, {
      env: {},
      platform: 'linux',
      arch: 'x64',
      homeDir: empty,
      systemPaths: [join(empty, 'usr/bin/chromium')],
      packageBases: [empty],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChromiumNotFoundError);
    const { message, searched } = error as ChromiumNotFoundError;
    expect(searched).toEqual([
      'CHROME_PATH (not set)',
      join(empty, 'usr/bin/chromium'),
      `Playwright's browser cache: ${join(empty, '.cache/ms-playwright')}/{chromium,chromium_headless_shell}-*`,
      `npm package @sparticuz/chromium, resolved from ${empty}`,
    ]);
    expect(message).toContain('No Chromium found');
    expect(message).toContain('apt-get install chromium');
    expect(message).toContain('set CHROME_PATH=/path/to/chrome, or pass the chromePath option');
    expect(message).toContain('npm install --save-dev @sparticuz/chromium@143');
  });

  test("Playwright's browser cache is searched, full Chromium before headless shell, newest first", async () => {
    const cache = await tempDir('ms-playwright');
    await fakeExecutable(cache, 'chromium-1100/chrome-linux64/chrome');
    const newest = await fakeExecutable(cache, 'chromium-1200/chrome-linux64/chrome');
    await fakeExecutable(
      cache,
      'chromium_headless_shell-1300/chrome-headless-shell-linux64/chrome-headless-shell',
    );
    const search = { env: { PLAYWRIGHT_BROWSERS_PATH: cache }, platform: 'linux' as const, systemPaths: [] };
    expect(await findChromium(undefined, search)).toBe(newest);
    await rm(join(cache, 'chromium-1200'), { recursive: true });
    await rm(join(cache, 'chromium-1100'), { recursive: true });
    expect(await findChromium(undefined, search)).toMatch(
      /chromium_headless_shell-1300\/.*\/chrome-headless-shell$/,
    );
  });

  test('falls back to the Chromium shipped in @sparticuz/chromium, which launches and answers', async () => {
    const cacheDir = await tempDir('cache');
    const home = await tempDir('home');
    const search = { env: {}, systemPaths: [], homeDir: home, cacheDir };
    // Versions unpacked earlier: one another project used yesterday, one nobody has used for two months.
    const day = 24 * 60 * 60 * 1000;
    for (const [name, daysAgo] of [
      ['sparticuz-chromium-1.0.0', 1],
      ['sparticuz-chromium-0.9.0', 60],
    ] as const) {
      await mkdir(join(cacheDir, name));
      const then = new Date(Date.now() - daysAgo * day);
      await utimes(join(cacheDir, name), then, then);
    }
    // Two at once: each unpacks into its own staging folder and one rename wins; both get a whole Chromium.
    const [first, second] = await Promise.all([
      findChromium(undefined, search),
      findChromium(undefined, search),
    ]);
    expect(first).toMatch(/sparticuz-chromium-[\d.]+\/chrome$/);
    expect(second).toBe(first);
    const unpacked = basename(dirname(first as string));
    expect(readdirSync(cacheDir).sort()).toEqual([unpacked, 'sparticuz-chromium-1.0.0'].sort());
    // Finding it again counts as a use, which keeps it from being pruned.
    const old = new Date(Date.now() - 60 * day);
    await utimes(join(cacheDir, unpacked), old, old);
    expect(await findChromium(undefined, search)).toBe(first);
    expect(Date.now() - statSync(join(cacheDir, unpacked)).mtimeMs).toBeLessThan(day);

    const chromium = await launchChromium({ executablePath: first as string, userDataDir: await tempDir() });
    launched.push(chromium);
    expect(chromium.version['User-Agent']).toMatch(/HeadlessChrome\/\d+/);
    const browser = await playwright.connectOverCDP(chromium.wsEndpoint);
    const page = await browser.contexts()[0]?.newPage();
    await page?.goto(siteUrl);
    expect(await page?.textContent('#text')).toBe('served locally');
    await chromium.close();
    expect(browser.isConnected()).toBe(false);
  }, 90_000);
});

describe('chromiumArgs', () => {
  const base = { executablePath: '/bin/chromium', userDataDir: '/tmp/profile' };

  test('has the flags a closed network, root and a loopback-only debugging port need', () => {
    const args = chromiumArgs(base);
    expect(args).toEqual(
      expect.arrayContaining([
        '--headless=new',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
        '--disable-sync',
        '--disable-gpu',
        '--no-default-browser-check',
        '--password-store=basic',
        '--use-mock-keychain',
        '--disable-dev-shm-usage',
        '--remote-debugging-pipe',
        '--remote-debugging-address=127.0.0.1',
        '--remote-debugging-port=0',
        '--user-data-dir=/tmp/profile',
      ]),
    );
    expect(args.includes('--no-sandbox')).toBe(process.getuid?.() === 0);
    expect(args.at(-1)).toBe('about:blank');
    expect(args.some((arg) => arg.startsWith('--proxy'))).toBe(false);
    expect(chromiumArgs({ ...base, headless: false })).not.toContain('--headless=new');
  });

  test('proxy, loopback bypass, window size and extra flags', () => {
    const proxied = chromiumArgs({ ...base, proxyServer: 'http://127.0.0.1:1234' });
    expect(proxied).toContain('--proxy-server=http://127.0.0.1:1234');
    expect(proxied.some((arg) => arg.startsWith('--proxy-bypass-list'))).toBe(false);
    expect(
      chromiumArgs({ ...base, proxyServer: 'http://127.0.0.1:1234', proxyBypassLoopback: false }),
    ).toContain('--proxy-bypass-list=<-loopback>');
    expect(
      chromiumArgs({ ...base, proxyBypassLoopback: false }).some((arg) => arg.startsWith('--proxy')),
    ).toBe(false);
    const sized = chromiumArgs({
      ...base,
      windowSize: { width: 1280, height: 720 },
      extraArgs: ['--lang=de'],
    });
    expect(sized).toContain('--window-size=1280,720');
    expect(sized.slice(-2)).toEqual(['--lang=de', 'about:blank']);
    expect(() => chromiumArgs({ ...base, proxyServer: 'http://user:secret@127.0.0.1:1' })).toThrow(
      /credentials/,
    );
  });
});

describe('launchChromium', () => {
  test('a launched Chromium answers /json/version on loopback and Playwright connects over CDP', async () => {
    const chromium = await launch();
    expect(chromium.wsEndpoint).toMatch(
      new RegExp(`^ws://127\\.0\\.0\\.1:${chromium.port}/devtools/browser/[0-9a-f-]{36}$`),
    );
    expect(listeningAddresses(chromium.port)).toEqual(['127.0.0.1']);
    const version = (await (await fetch(`http://127.0.0.1:${chromium.port}/json/version`)).json()) as Record<
      string,
      string
    >;
    expect(version).toEqual(chromium.version);
    expect(Object.keys(chromium.version)).toEqual(
      expect.arrayContaining([
        'Browser',
        'Protocol-Version',
        'User-Agent',
        'V8-Version',
        'WebKit-Version',
        'webSocketDebuggerUrl',
      ]),
    );

    const browser = await playwright.connectOverCDP(chromium.wsEndpoint);
    const page = await browser.contexts()[0]?.newPage();
    await page?.goto(siteUrl);
    expect(await page?.title()).toBe('Local page');
    // The control channel stays idle; the client over the port must not notice.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await page?.textContent('#text')).toBe('served locally');
    // The control channel works alongside the client.
    expect(
      (await chromium.send<{ targetInfos: unknown[] }>('Target.getTargets')).targetInfos.length,
    ).toBeGreaterThan(0);
    await chromium.close();
    expect(browser.isConnected()).toBe(false);
  });

  test('send talks to Chromium over the private control channel, and on delivers its events', async () => {
    const chromium = await launch();
    const version = await chromium.send<{ product: string; protocolVersion: string }>('Browser.getVersion');
    expect(version.product).toBe(chromium.version.Browser);

    const error = await chromium.send('No.suchMethod').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChromiumProtocolError);
    expect((error as ChromiumProtocolError).method).toBe('No.suchMethod');

    const events: string[] = [];
    const off = chromium.on('cdp', (method) => events.push(method));
    await chromium.send('Target.setDiscoverTargets', { discover: true });
    expect(events).toContain('Target.targetCreated');
    off();
    const seen = events.length;
    await chromium.send('Target.createTarget', { url: 'about:blank' });
    expect(events.length).toBe(seen);

    // Sessions: commands for one target, over the same pipe.
    const { targetInfos } = await chromium.send<{ targetInfos: { targetId: string; type: string }[] }>(
      'Target.getTargets',
    );
    const target = targetInfos.find((t) => t.type === 'page');
    const { sessionId } = await chromium.send<{ sessionId: string }>('Target.attachToTarget', {
      targetId: target?.targetId,
      flatten: true,
    });
    const result = await chromium.send<{ result: { value: number } }>(
      'Runtime.evaluate',
      { expression: '6 * 7' },
      sessionId,
    );
    expect(result.result.value).toBe(42);
  });

  test('close is graceful and idempotent', async () => {
    const userDataDir = await tempDir();
    const chromium = await launch({ userDataDir });
    expect(chromiumPids(userDataDir)).toContain(chromium.pid);
    const first = chromium.close();
    const second = chromium.close();
    expect(second).toBe(first);
    await first;
    expect(await chromium.exited).toEqual({ code: 0, signal: null });
    expect(chromiumPids(userDataDir)).toEqual([]);
    await chromium.close();
    await expect(chromium.send('Browser.getVersion')).rejects.toBeInstanceOf(ChromiumProtocolError);
    chromium.kill(); // after exit: nothing to do, no error
  });

  test('a Chromium that ignores the graceful close is killed after graceMs, helpers and all', async () => {
    const userDataDir = await tempDir();
    const chromium = await launch({ userDataDir });
    // Chromium's single-instance socket lives in a temp folder it removes only on a clean exit.
    const singletonDir = dirname(readlinkSync(join(userDataDir, 'SingletonSocket')));
    process.kill(chromium.pid, 'SIGSTOP');
    const started = Date.now();
    await chromium.close({ graceMs: 500 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await chromium.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(chromiumPids(userDataDir)).toEqual([]);
    expect(existsSync(singletonDir)).toBe(false);
  });

  test('Chromium dies with the Node process that launched it, even when that process is SIGKILLed', async () => {
    const userDataDir = await tempDir();
    const { child, pid, wsEndpoint } = await launchInChild(userDataDir, 'hold');
    expect(chromiumPids(userDataDir)).toContain(pid);
    // A client connected over the port does not keep it alive either.
    const browser = await playwright.connectOverCDP(wsEndpoint);
    const disconnected = new Promise((resolve) => browser.once('disconnected', resolve));
    child.kill('SIGKILL');
    const killed = Date.now();
    expect(await waitForNoChromium(userDataDir, 5_000)).toEqual([]);
    expect(Date.now() - killed).toBeLessThan(5_000);
    await disconnected;
  });

  test('an unref-ed Chromium lets Node exit, and goes with it', async () => {
    const userDataDir = await tempDir();
    const { child } = await launchInChild(userDataDir, 'unref');
    expect(await exitOf(child)).toBe(0);
    expect(await waitForNoChromium(userDataDir, 5_000)).toEqual([]);
  });

  test('after close, nothing keeps Node alive', async () => {
    const userDataDir = await tempDir();
    const { child } = await launchInChild(userDataDir, 'close');
    const started = Date.now();
    expect(await exitOf(child)).toBe(0);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(chromiumPids(userDataDir)).toEqual([]);
  });

  test('aborting during launch kills what was started and rejects with the reason', async () => {
    const userDataDir = await tempDir();
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    const launching = launchChromium({ executablePath, userDataDir, signal: controller.signal });
    // Abort as soon as the browser process exists, well before its port is up.
    while (chromiumPids(userDataDir).length === 0) await new Promise((resolve) => setTimeout(resolve, 2));
    controller.abort(reason);
    await expect(launching).rejects.toBe(reason);
    expect(chromiumPids(userDataDir)).toEqual([]);

    await expect(
      launchChromium({ executablePath, userDataDir, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
  });

  test('a launch that does not come up in timeoutMs fails clearly and leaves nothing', async () => {
    const userDataDir = await tempDir();
    const error = await launchChromium({ executablePath, userDataDir, timeoutMs: 1 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChromiumLaunchError);
    expect((error as ChromiumLaunchError).code).toBe('chromium_launch_failed');
    expect((error as Error).message).toMatch(/did not come up within 1 ms/);
    expect(chromiumPids(userDataDir)).toEqual([]);
  });

  test('a Chromium that exits early fails with its exit code and the end of its stderr, without secrets', async () => {
    const dir = await tempDir('bin');
    const broken = await fakeExecutable(
      dir,
      'broken-chrome',
      'echo "starting" >&2; echo "proxy http://user:hunter2@10.0.0.1:8080 refused" >&2; exit 3',
    );
    const error = await launchChromium({ executablePath: broken, userDataDir: await tempDir() }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ChromiumLaunchError);
    const launchError = error as ChromiumLaunchError;
    expect(launchError.exitCode).toBe(3);
    expect(launchError.message).toContain('exited before it was ready (exit code 3)');
    expect(launchError.stderrTail).toContain('proxy http://***@10.0.0.1:8080 refused');
    expect(launchError.message).not.toContain('hunter2');

    const missing = await launchChromium({
      executablePath: join(dir, 'nope'),
      userDataDir: await tempDir(),
    }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ChromiumLaunchError);
    expect((missing as Error).message).toMatch(/could not start it: .*ENOENT/);
  });
});

/** Local addresses listening on a TCP port, from /proc/net (IPv4 and IPv6). */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local?.endsWith(`:${hexPort}`)) continue;
      const hex = local.split(':')[0] ?? '';
      found.push(
        hex.length === 8
          ? (hex.match(/../g) ?? [])
              .reverse()
              .map((byte) => Number.parseInt(byte, 16))
              .join('.')
          : `[${hex}]`,
      );
    }
  }
  return found;
}
