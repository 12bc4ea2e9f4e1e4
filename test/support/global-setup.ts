import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForNoChromium } from './chromium-processes.js';

let runDir: string | undefined;

/**
 * Runs around the whole suite. Every test process gets a TMPDIR of this run's own, so every
 * Chromium a local service starts here has its user-data dir under it, and the run can tell its
 * own Chromium processes from anyone else's. The suite fails if any of them outlives it.
 */
export function setup(): void {
  runDir = mkdtempSync(join(tmpdir(), 'cb-test-run-'));
  process.env.TMPDIR = runDir;
}

export async function teardown(): Promise<void> {
  const left = await waitForNoChromium(10_000);
  if (runDir) rmSync(runDir, { recursive: true, force: true });
  if (left.length > 0) {
    throw new Error(`the tests left Chromium processes of a local service running: ${left.join(', ')}`);
  }
}
