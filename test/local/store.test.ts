import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { Store } from '../../src/local/store.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

test('a crash in the middle of saving a profile loses nothing already saved', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'cb-store-'));
  try {
    for (const delayMs of [150, 400, 700]) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/local/fixtures/save-loop.ts', dataDir],
        {
          cwd: root,
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      await new Promise((resolve) => child.stdout.once('data', resolve));
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      // Whatever moment the kill hit, the saved file is one whole version, never a torn one.
      const store = await Store.open(dataDir);
      const cookies = (await store.readCookies('profile')) as { value: string }[];
      expect(cookies).toHaveLength(2_000);
      expect(new Set(cookies.map((c) => c.value)).size).toBe(1);
      expect((await readdir(join(dataDir, 'profiles'))).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
