import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Pids of live Chromium processes started by a local service of this test run, found through /proc
 * by their user-data dir, which the service makes under the run's own TMPDIR (see global-setup.ts).
 */
export function ourChromiumPids(): number[] {
  const marker = `--user-data-dir=${join(tmpdir(), 'cloudbrowser-')}`;
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (cmdline.includes(marker) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** Waits up to `ms` for every Chromium of ours to be gone; returns those still alive. */
export async function waitForNoChromium(ms = 10_000): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const pids = ourChromiumPids();
    if (pids.length === 0 || Date.now() > deadline) return pids;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
