import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
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

test('web storage: a save replaces the last one whole, and a crash leaves no stray copies behind', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'cb-store-'));
  const chromiumProfile = await mkdtemp(join(tmpdir(), 'cb-store-profile-'));
  const restored = await mkdtemp(join(tmpdir(), 'cb-store-restored-'));
  try {
    const store = await Store.open(dataDir);
    for (const version of ['one', 'two']) {
      await mkdir(join(chromiumProfile, 'Local Storage', 'leveldb'), { recursive: true });
      await writeFile(join(chromiumProfile, 'Local Storage', 'leveldb', '000003.log'), version);
      await writeFile(join(chromiumProfile, 'History'), 'not web storage');
      await store.writeStorage('p', chromiumProfile);
    }
    const folders = async () =>
      (await readdir(join(dataDir, 'profiles'))).filter((n) => n.includes('.storage-'));
    expect(await folders()).toHaveLength(1);

    // What a crash leaves: a copy being made, and a copy made but not yet pointed at.
    await mkdir(join(dataDir, 'profiles', 'p.storage-0123456789ab.tmp', 'IndexedDB'), { recursive: true });
    await mkdir(join(dataDir, 'profiles', 'p.storage-ba9876543210', 'IndexedDB'), { recursive: true });
    const reopened = await Store.open(dataDir);
    expect(await folders()).toHaveLength(1);

    expect(await reopened.readStorage('p', join(restored, 'Default'))).toBe(true);
    expect(await readFile(join(restored, 'Default', 'Local Storage', 'leveldb', '000003.log'), 'utf8')).toBe(
      'two',
    );
    expect(await readdir(join(restored, 'Default'))).toEqual(['Local Storage']);
    expect(await reopened.readStorage('never-saved', join(restored, 'Other'))).toBe(false);

    await reopened.deleteProfileState('p');
    expect(await readdir(join(dataDir, 'profiles'))).toEqual([]);
  } finally {
    for (const dir of [dataDir, chromiumProfile, restored]) await rm(dir, { recursive: true, force: true });
  }
});

test('web storage: copying a large profile into a browser holds back no save, and a new save meanwhile waits for nothing', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'cb-store-'));
  const large = await mkdtemp(join(tmpdir(), 'cb-store-large-'));
  const small = await mkdtemp(join(tmpdir(), 'cb-store-small-'));
  const restored = await mkdtemp(join(tmpdir(), 'cb-store-restored-'));
  try {
    const store = await Store.open(dataDir);
    const megabyte = Buffer.alloc(1024 * 1024, 7);
    await mkdir(join(large, 'IndexedDB'), { recursive: true });
    for (let i = 0; i < 64; i++) await writeFile(join(large, 'IndexedDB', `${i}.blob`), megabyte);
    await store.writeStorage('p', large);
    await mkdir(join(small, 'Local Storage'), { recursive: true });
    await writeFile(join(small, 'Local Storage', 'LOG'), 'small');

    const order: string[] = [];
    const reading = store.readStorage('p', join(restored, 'Default')).then(() => order.push('copied'));
    await Promise.all([
      store.save().then(() => order.push('saved')),
      store.writeStorage('p', small).then(() => order.push('replaced')),
      reading,
    ]);
    expect(order.indexOf('copied')).toBe(2);
    // The copy is the whole version it began with, although a newer one was saved meanwhile…
    const copied = await readdir(join(restored, 'Default', 'IndexedDB'));
    expect(copied).toHaveLength(64);
    // …and the replaced version is gone once it was copied; the next browser gets the new one.
    expect((await readdir(join(dataDir, 'profiles'))).filter((n) => n.includes('.storage-'))).toHaveLength(1);
    expect(await store.readStorage('p', join(restored, 'Next'))).toBe(true);
    expect(await readdir(join(restored, 'Next'))).toEqual(['Local Storage']);
  } finally {
    for (const dir of [dataDir, large, small, restored]) await rm(dir, { recursive: true, force: true });
  }
});
