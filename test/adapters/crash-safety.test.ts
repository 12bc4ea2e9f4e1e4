import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const local = useLocalService();
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

interface Held {
  child: ChildProcess;
  /** The browser the child holds. */
  id: string;
  /** The rest of the child's `ready` line. */
  extra: string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the fixture in `mode` and waits until it holds a live browser. */
async function hold(mode: string): Promise<Held> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/adapters/fixtures/hold-browser.ts'], {
    cwd: ROOT,
    // The fixture's only way to learn the test's service; the watchdog never gets these.
    env: {
      ...process.env,
      HOLD_MODE: mode,
      HOLD_BASE_URL: local.service.baseUrl,
      HOLD_API_KEY: local.service.apiKey,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = await new Promise<RegExpExecArray>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      const found = /^ready (\S+)(.*)$/m.exec(stdout);
      if (found) resolve(found);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`the fixture exited (${signal ?? code}) before it was ready:\n${stdout}\n${stderr}`)),
    );
  });
  return { child, id: ready[1] as string, extra: ready[2] ?? '', stderr: () => stderr, exited };
}

const { statusOf } = local;

/** Pids of watchdogs started from this checkout's sources. */
function watchdogPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`${ROOT}adapters/internal/watchdog.ts`)) {
        pids.push(Number(entry));
      }
    } catch {
      // It ended while we looked.
    }
  }
  return pids;
}

describe('process guards', () => {
  test.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)(
    '%s to a process holding a live handle stops its browser, then ends the process by that signal',
    async (signal) => {
      const held = await hold('wait');
      held.child.kill(signal);
      // Ended by the signal itself, as without the guards: a shell reports 128 + its number (130, 143, 129).
      expect(await held.exited).toEqual({ code: null, signal });
      expect(await statusOf(held.id)).toBe('stopped');
      expect(held.stderr()).toBe('');
    },
  );

  test('an uncaught exception stops the browser, prints the error and exits with 1', async () => {
    const held = await hold('throw');
    expect(await held.exited).toEqual({ code: 1, signal: null });
    expect(held.stderr()).toContain('Error: boom: an uncaught exception');
    expect(await statusOf(held.id)).toBe('stopped');
  });

  test('an unhandled rejection stops the browser, prints the error and exits with 1', async () => {
    const held = await hold('reject');
    expect(await held.exited).toEqual({ code: 1, signal: null });
    expect(held.stderr()).toContain('Error: boom: an unhandled rejection');
    expect(await statusOf(held.id)).toBe('stopped');
  });

  test('a program that ends with a live browser (its connection closed, never stopped) stops it on the way out', async () => {
    const held = await hold('drop');
    expect(await held.exited).toEqual({ code: 0, signal: null });
    expect(await statusOf(held.id)).toBe('stopped');
  });

  test('once its handles are stopped, a program has no guards left and SIGTERM does what it does by default', async () => {
    const held = await hold('released');
    // The same listeners as before the first connect: none of ours is left.
    const [before, after] = held.extra.trim().split(' → ');
    expect(after).toBe(before);
    expect(after).toMatch(/^SIGINT=0 SIGTERM=0 SIGHUP=0 uncaughtException=0 beforeExit=0/);
    held.child.kill('SIGTERM');
    expect(await held.exited).toEqual({ code: null, signal: 'SIGTERM' });
  });
});

describe('supervise: true', () => {
  test('SIGKILL of the process holding the browser: the watchdog stops it within a few seconds, then exits', async () => {
    const held = await hold('supervise');
    const [watchdog, ...others] = watchdogPids();
    expect(watchdog).toBeDefined();
    expect(others).toEqual([]);
    // It learnt the key over IPC: neither its command line nor its environment holds it.
    for (const file of ['cmdline', 'environ']) {
      expect(readFileSync(`/proc/${watchdog}/${file}`, 'utf8')).not.toContain(local.service.apiKey);
    }
    held.child.kill('SIGKILL');
    await held.exited;
    const killedAt = Date.now();
    await expect.poll(() => statusOf(held.id), { timeout: 10_000, interval: 100 }).toBe('stopped');
    // A few seconds at most; on an idle machine well under one.
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    await expect.poll(() => watchdogPids(), { timeout: 5_000 }).toEqual([]);
    expect(held.stderr()).toContain(`cloudbrowser watchdog: `);
  });

  test('the watchdog exits once nothing is left to watch', async () => {
    const held = await hold('supervise-released');
    expect(await held.exited).toEqual({ code: 0, signal: null });
    expect(await statusOf(held.id)).toBe('stopped');
    await expect.poll(() => watchdogPids(), { timeout: 5_000 }).toEqual([]);
  });
});
