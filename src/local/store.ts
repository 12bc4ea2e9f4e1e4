import { randomBytes } from 'node:crypto';
import { cp, mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What the local service keeps on disk: its records in `state.json`, each profile's cookies in
 * `profiles/<id>.json`, and each profile's web storage in `profiles/<id>.storage-<n>/`, the one that
 * counts being named by `profiles/<id>.storage.json`. Every write goes to a temporary file (or
 * folder) that is synced and then renamed into place, so a crash mid-save leaves the previous
 * version whole.
 */

/**
 * The folders of a Chromium profile (`<user-data-dir>/Default/`) where sites keep what they store
 * themselves: `localStorage`, IndexedDB, and the storage buckets beside them. Cookies are saved
 * through CDP instead, session cookies included.
 */
export const WEB_STORAGE_DIRS = ['Local Storage', 'IndexedDB', 'WebStorage'] as const;

export interface BrowserRecord {
  id: string;
  status: 'active' | 'stopped';
  startedAt: string;
  timeoutAt: string;
  finishedAt: string | null;
  timeoutMinutes: number;
  metadata: Record<string, string>;
  profileId: string | null;
  proxyCountryCode: string | null;
  /** How traffic leaves the browser: `direct`, through the `managed` upstream of its country, or a `custom` proxy. */
  proxyRoute: 'direct' | 'managed' | 'custom';
  /** Why the route is what it is, when it is not what was asked for. */
  proxyNote: string | null;
  proxyBytes: number;
  /** Charged up front for the whole timeout, in millionths of the currency unit. */
  chargedMicros: number;
  /** What the browser finally cost, set on stop. */
  costMicros: number | null;
  stopReason: string | null;
  /** The Chromium process and its user-data dir while active, so a restart can clean up after a crash. */
  pid: number | null;
  userDataDir: string | null;
}

export interface ProfileRecord {
  id: string;
  name: string | null;
  userId: string | null;
  lastUsedAt: string | null;
  createdAt: string;
  updatedAt: string;
  cookieDomains: string[];
}

interface State {
  browsers: BrowserRecord[];
  profiles: ProfileRecord[];
}

/** Stopped browsers kept for `GET`; older ones are forgotten. */
const STOPPED_KEPT = 1000;

export class Store {
  readonly browsers = new Map<string, BrowserRecord>();
  readonly profiles = new Map<string, ProfileRecord>();
  readonly #dir: string;
  #writing: Promise<void> = Promise.resolve();
  /** Storage folders being copied into a browser about to start, with how many copies are under way. */
  readonly #reading = new Map<string, number>();
  /** Folders replaced or forgotten while being copied: removed when their last copy ends. */
  readonly #retired = new Set<string>();

  private constructor(dir: string) {
    this.#dir = dir;
  }

  static async open(dir: string): Promise<Store> {
    const store = new Store(dir);
    await mkdir(join(dir, 'profiles'), { recursive: true });
    // Temporary files of saves a crash interrupted: the versions they would have replaced are whole.
    for (const folder of [dir, join(dir, 'profiles')]) {
      for (const name of await readdir(folder)) {
        if (name.endsWith('.tmp')) await rm(join(folder, name), { recursive: true, force: true });
      }
    }
    const state = await readJson<State>(join(dir, 'state.json'));
    for (const browser of state?.browsers ?? []) store.browsers.set(browser.id, browser);
    for (const profile of state?.profiles ?? []) store.profiles.set(profile.id, profile);
    await store.#removeUnnamedStorage();
    return store;
  }

  /** Writes the records; writes are queued so they land in order. */
  save(): Promise<void> {
    const stopped = [...this.browsers.values()].filter((b) => b.status === 'stopped');
    for (const old of stopped.slice(0, Math.max(0, stopped.length - STOPPED_KEPT)))
      this.browsers.delete(old.id);
    const state: State = { browsers: [...this.browsers.values()], profiles: [...this.profiles.values()] };
    return this.#queue(() => writeAtomic(join(this.#dir, 'state.json'), JSON.stringify(state)));
  }

  readCookies(profileId: string): Promise<unknown[]> {
    return readJson<unknown[]>(this.#cookiePath(profileId)).then((cookies) => cookies ?? []);
  }

  writeCookies(profileId: string, cookies: unknown[]): Promise<void> {
    return this.#queue(() => writeAtomic(this.#cookiePath(profileId), JSON.stringify(cookies)));
  }

  /**
   * Keeps a copy of a stopped browser's web storage (see {@link WEB_STORAGE_DIRS}) as the profile's.
   * `profileDir` is `<user-data-dir>/Default` of a Chromium that has exited. The copy is made aside
   * and then named in one rename, so a browser started meanwhile, or a crash, sees the old or the
   * new storage, never a mixture.
   */
  async writeStorage(profileId: string, profileDir: string): Promise<void> {
    const folder = `${profileId}.storage-${randomBytes(6).toString('hex')}`;
    const temporary = join(this.#dir, 'profiles', `${folder}.tmp`);
    await mkdir(temporary, { recursive: true });
    try {
      for (const name of WEB_STORAGE_DIRS) {
        await cp(join(profileDir, name), join(temporary, name), { recursive: true }).catch(ignoreMissing);
      }
      await rename(temporary, join(this.#dir, 'profiles', folder));
    } catch (error) {
      await rm(temporary, { recursive: true, force: true });
      throw error;
    }
    await this.#queue(async () => {
      const previous = await this.#storageFolder(profileId);
      await writeAtomic(this.#storagePointer(profileId), JSON.stringify({ folder }));
      if (previous !== undefined) await this.#retire(previous);
    });
  }

  /**
   * Puts a profile's saved web storage into `profileDir` (`<user-data-dir>/Default` of a Chromium
   * not started yet). Returns whether the profile had any.
   */
  async readStorage(profileId: string, profileDir: string): Promise<boolean> {
    // Only looking the folder up waits for the writes queued before; the copy, however large, holds
    // no later write back, and a save that replaces the folder meanwhile leaves its removal to us.
    const folder = await this.#queue(async () => {
      const named = await this.#storageFolder(profileId);
      if (named !== undefined) this.#reading.set(named, (this.#reading.get(named) ?? 0) + 1);
      return named;
    });
    if (folder === undefined) return false;
    try {
      await cp(join(this.#dir, 'profiles', folder), profileDir, { recursive: true });
      return true;
    } finally {
      const copies = (this.#reading.get(folder) ?? 1) - 1;
      if (copies > 0) this.#reading.set(folder, copies);
      else {
        this.#reading.delete(folder);
        if (this.#retired.delete(folder)) await this.#retire(folder);
      }
    }
  }

  /** Forgets a profile's saved state: its cookies and its web storage. */
  deleteProfileState(profileId: string): Promise<void> {
    return this.#queue(async () => {
      const folder = await this.#storageFolder(profileId);
      await rm(this.#cookiePath(profileId), { force: true });
      await rm(this.#storagePointer(profileId), { force: true });
      if (folder !== undefined) await this.#retire(folder);
    });
  }

  /** Resolves when every queued write has landed. */
  flush(): Promise<void> {
    return this.#writing;
  }

  /** Removes a storage folder no pointer names any more, or, while it is being copied, once it is not. */
  async #retire(folder: string): Promise<void> {
    if (this.#reading.has(folder)) this.#retired.add(folder);
    else await rm(join(this.#dir, 'profiles', folder), { recursive: true, force: true });
  }

  #cookiePath(profileId: string): string {
    return join(this.#dir, 'profiles', `${profileId}.json`);
  }

  #storagePointer(profileId: string): string {
    return join(this.#dir, 'profiles', `${profileId}.storage.json`);
  }

  async #storageFolder(profileId: string): Promise<string | undefined> {
    return (await readJson<{ folder: string }>(this.#storagePointer(profileId)))?.folder;
  }

  /** Storage folders no pointer names: what a crash left between naming a copy and pointing at it. */
  async #removeUnnamedStorage(): Promise<void> {
    const profiles = join(this.#dir, 'profiles');
    const names = await readdir(profiles);
    const named = new Set<string>();
    for (const name of names) {
      if (!name.endsWith('.storage.json')) continue;
      const folder = (await readJson<{ folder: string }>(join(profiles, name)))?.folder;
      if (folder !== undefined) named.add(folder);
    }
    for (const name of names) {
      if (/\.storage-[0-9a-f]+$/.test(name) && !named.has(name)) {
        await rm(join(profiles, name), { recursive: true, force: true });
      }
    }
  }

  #queue<T>(write: () => Promise<T>): Promise<T> {
    const next = this.#writing.then(write);
    this.#writing = next.then(
      () => {},
      () => {},
    );
    return next;
  }
}

export async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
}

export async function writeAtomic(path: string, data: string): Promise<void> {
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const file = await open(temporary, 'w', 0o600);
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
}
