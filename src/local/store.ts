import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What the local service keeps on disk: its records in `state.json`, and each profile's cookies in
 * `profiles/<id>.json`. Every write goes to a temporary file that is synced and then renamed over
 * the old one, so a crash mid-save leaves the previous version whole.
 */

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

  private constructor(dir: string) {
    this.#dir = dir;
  }

  static async open(dir: string): Promise<Store> {
    const store = new Store(dir);
    await mkdir(join(dir, 'profiles'), { recursive: true });
    // Temporary files of saves a crash interrupted: the versions they would have replaced are whole.
    for (const folder of [dir, join(dir, 'profiles')]) {
      for (const name of await readdir(folder)) {
        if (name.endsWith('.tmp')) await rm(join(folder, name), { force: true });
      }
    }
    const state = await readJson<State>(join(dir, 'state.json'));
    for (const browser of state?.browsers ?? []) store.browsers.set(browser.id, browser);
    for (const profile of state?.profiles ?? []) store.profiles.set(profile.id, profile);
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

  deleteCookies(profileId: string): Promise<void> {
    return this.#queue(() => rm(this.#cookiePath(profileId), { force: true }));
  }

  /** Resolves when every queued write has landed. */
  flush(): Promise<void> {
    return this.#writing;
  }

  #cookiePath(profileId: string): string {
    return join(this.#dir, 'profiles', `${profileId}.json`);
  }

  #queue(write: () => Promise<void>): Promise<void> {
    const next = this.#writing.then(write);
    this.#writing = next.catch(() => {});
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
