import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The repository root, with a trailing slash. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const run = promisify(execFile);
/** One lock per checkout, outside it, so `node_modules` shared between checkouts does not matter. */
const LOCK = join(
  tmpdir(),
  `cloudbrowser-build-${createHash('sha1').update(ROOT).digest('hex').slice(0, 12)}.lock`,
);

/** Runs a command in the repository (or `cwd`), failing with its output when it fails. */
export async function sh(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(command, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? process.env,
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout}\n${stderr}`, { cause: error });
  }
}

/**
 * Builds `dist/` with `npm run build` while holding a lock shared by every test process, so that
 * no test reads `dist/` while another rewrites it. Returns the release; call it once you no longer
 * read `dist/` (in `afterAll` at the latest).
 */
export async function buildPackage(): Promise<() => Promise<void>> {
  await acquire();
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await rm(LOCK, { recursive: true, force: true });
  };
  try {
    await sh('npm', ['run', 'build']);
  } catch (error) {
    await release();
    throw error;
  }
  return release;
}

/** Takes the lock: a directory holding the holder's pid, renamed into place so it is never seen empty. */
async function acquire(): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const mine = await mkdtemp(`${LOCK}.`);
    await writeFile(join(mine, 'pid'), String(process.pid));
    try {
      await rename(mine, LOCK);
      return;
    } catch (error) {
      await rm(mine, { recursive: true, force: true });
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    }
    // A lock whose holder died (a killed test run) is taken over.
    // (No pid to read means the lock was just released: simply try again.)
    const holder = Number(await readFile(join(LOCK, 'pid'), 'utf8').catch(() => ''));
    if (holder > 0 && !alive(holder)) await rm(LOCK, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`timed out waiting for the build lock ${LOCK}`);
    await delay(100);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
