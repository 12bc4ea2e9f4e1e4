import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserCreateParams, BrowserSession } from '../resources/browsers.js';
import type { CdpConnection } from './cdp-proxy.js';
import { type ChromiumProcess, launchChromium } from './chromium.js';
import { ForwardProxy, type Upstream } from './forward-proxy.js';
import { HttpError } from './http.js';
import { fromMicros } from './money.js';
import type { BrowserRecord, Store } from './store.js';

/** The Chromium profile inside a user-data dir: the one every browser of the service uses. */
const PROFILE_DIR = 'Default';

export interface PoolOptions {
  store: Store;
  chromePath: () => Promise<string>;
  maxBrowsers: number;
  /** Country code → upstream proxy. */
  proxies: Record<string, Upstream>;
  hourlyRateMicros: number;
  /** How long a minute of `timeout` and billing lasts; shortened by tests. */
  minuteMs: number;
  /** How long a graceful Chromium close may take before the process is killed. */
  closeGraceMs: number;
  /** False: Chromium processes do not keep this process alive. */
  keepAlive: boolean;
  log: (line: string) => void;
}

/** What only the running service holds for an active browser. */
interface Live {
  chromium: ChromiumProcess;
  /** The per-browser secret in `cdpUrl`'s path; never the API key. */
  secret: string;
  forwarder: ForwardProxy | undefined;
  connections: Set<CdpConnection>;
  timer: NodeJS.Timeout;
  stopping: Promise<BrowserRecord> | undefined;
}

type CreateBody = Omit<BrowserCreateParams, 'metadata'> & { metadata?: Record<string, string> | undefined };

/** The browsers of the local service: one Chromium each, billed from create to stop. */
export class BrowserPool {
  readonly #options: PoolOptions;
  readonly #live = new Map<string, Live>();
  readonly #bySecret = new Map<string, string>();
  #launching = 0;

  constructor(options: PoolOptions) {
    this.#options = options;
  }

  get store(): Store {
    return this.#options.store;
  }

  /** The browser an unguessable `cdpUrl` secret belongs to, if it is active. */
  bySecret(secret: string): { record: BrowserRecord; chromium: ChromiumProcess } | undefined {
    const id = this.#bySecret.get(secret);
    const live = id === undefined ? undefined : this.#live.get(id);
    const record = id === undefined ? undefined : this.store.browsers.get(id);
    return live && record && !live.stopping ? { record, chromium: live.chromium } : undefined;
  }

  /** Counts a proxied CDP connection, and logs its coming and going. */
  connected(id: string, connection: CdpConnection): () => void {
    const live = this.#live.get(id);
    live?.connections.add(connection);
    this.#options.log(`browser ${id} connected (${live?.connections.size ?? 0} CDP connection(s))`);
    return () => {
      live?.connections.delete(connection);
      if (!live?.stopping) {
        this.#options.log(
          `browser ${id} disconnected; it stays active and billed until stopped or timed out`,
        );
      }
    };
  }

  async create(body: CreateBody, gaveUp: AbortSignal): Promise<BrowserRecord> {
    const { store, log } = this.#options;
    if (this.#live.size + this.#launching >= this.#options.maxBrowsers) {
      throw new HttpError(
        429,
        `Too many concurrent active sessions: the limit is ${this.#options.maxBrowsers}; stop a browser first`,
      );
    }
    const profileId = body.profileId ?? null;
    if (profileId !== null && !store.profiles.has(profileId)) throw new HttpError(404, 'Profile not found');
    this.#launching++;
    let userDataDir: string | undefined;
    let forwarder: ForwardProxy | undefined;
    let chromium: ChromiumProcess | undefined;
    try {
      const route = this.#route(body);
      if (route.upstream) forwarder = await ForwardProxy.start(route.upstream);
      userDataDir = await mkdtemp(join(tmpdir(), 'cloudbrowser-'));
      if (profileId !== null) await store.readStorage(profileId, join(userDataDir, PROFILE_DIR));
      chromium = await launchChromium({
        executablePath: await this.#options.chromePath(),
        userDataDir,
        ...(forwarder ? { proxyServer: forwarder.url, proxyBypassLoopback: false } : {}),
        ...(body.browserScreenWidth && body.browserScreenHeight
          ? { windowSize: { width: body.browserScreenWidth, height: body.browserScreenHeight } }
          : {}),
        ...(body.customProxy?.ignoreCertErrors ? { extraArgs: ['--ignore-certificate-errors'] } : {}),
        signal: gaveUp,
      });
      if (profileId !== null) {
        const cookies = await store.readCookies(profileId);
        if (cookies.length > 0) await chromium.send('Storage.setCookies', { cookies });
      }
      if (gaveUp.aborted) throw new HttpError(499, 'the client went away during create');
      const now = Date.now();
      const timeoutMinutes = body.timeout ?? 60;
      const record: BrowserRecord = {
        id: randomUUID(),
        status: 'active',
        startedAt: new Date(now).toISOString(),
        timeoutAt: new Date(now + timeoutMinutes * this.#options.minuteMs).toISOString(),
        finishedAt: null,
        timeoutMinutes,
        metadata: body.metadata ?? {},
        profileId,
        proxyCountryCode: route.countryCode,
        proxyRoute: route.kind,
        proxyNote: route.note,
        proxyBytes: 0,
        chargedMicros: Math.round((timeoutMinutes * this.#options.hourlyRateMicros) / 60),
        costMicros: null,
        stopReason: null,
        pid: chromium.pid,
        userDataDir,
      };
      const secret = randomBytes(24).toString('base64url');
      const live: Live = {
        chromium,
        secret,
        forwarder,
        connections: new Set(),
        timer: setTimeout(
          () => void this.stop(record.id, 'timeout'),
          timeoutMinutes * this.#options.minuteMs,
        ),
        stopping: undefined,
      };
      live.timer.unref();
      if (!this.#options.keepAlive) chromium.unref();
      this.#live.set(record.id, live);
      this.#bySecret.set(secret, record.id);
      store.browsers.set(record.id, record);
      void chromium.exited.then(() => {
        if (!live.stopping) void this.stop(record.id, 'Chromium exited on its own');
      });
      await store.save();
      log(
        `browser ${record.id} created (pid ${chromium.pid}, profile ${profileId ?? 'none'}, proxy ${route.kind}` +
          `${route.note ? `: ${route.note}` : ''}, timeout ${timeoutMinutes} min)`,
      );
      return record;
    } catch (error) {
      // Nothing of a failed create may outlive it: no Chromium, no forwarder, no user-data dir.
      await chromium?.close({ graceMs: 0 }).catch(() => {});
      await forwarder?.close().catch(() => {});
      if (userDataDir) await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
      throw error;
    } finally {
      this.#launching--;
    }
  }

  /** Stops a browser: saves its profile, closes Chromium, ends billing. Idempotent and shared by concurrent callers. */
  stop(id: string, reason: string): Promise<BrowserRecord> {
    const record = this.store.browsers.get(id);
    if (!record) return Promise.reject(new HttpError(404, 'Browser not found'));
    const live = this.#live.get(id);
    if (!live) return Promise.resolve(record);
    live.stopping ??= this.#stop(record, live, reason);
    return live.stopping;
  }

  async #stop(record: BrowserRecord, live: Live, reason: string): Promise<BrowserRecord> {
    const { store, log } = this.#options;
    clearTimeout(live.timer);
    this.#bySecret.delete(live.secret);
    for (const connection of live.connections) connection.close();
    // A profile deleted meanwhile is not brought back.
    const profileId =
      record.profileId !== null && store.profiles.has(record.profileId) ? record.profileId : null;
    let saved = '';
    if (profileId !== null) {
      saved = await this.#saveCookies(profileId, live.chromium).catch(
        (error: Error) => `; profile cookies not saved: ${error.message}`,
      );
    }
    await live.chromium.close({ graceMs: this.#options.closeGraceMs });
    if (profileId !== null && store.profiles.has(profileId) && record.userDataDir) {
      // Only once Chromium has exited are its storage files whole.
      saved += await store.writeStorage(profileId, join(record.userDataDir, PROFILE_DIR)).then(
        () => '; its web storage saved',
        (error: Error) => `; web storage not saved: ${error.message}`,
      );
    }
    record.proxyBytes = live.forwarder?.bytes ?? 0;
    await live.forwarder?.close();
    if (record.userDataDir) await rm(record.userDataDir, { recursive: true, force: true }).catch(() => {});
    const finished = Date.now();
    const usedMinutes = Math.min(
      record.timeoutMinutes,
      Math.max(1, Math.ceil((finished - Date.parse(record.startedAt)) / this.#options.minuteMs)),
    );
    record.costMicros = Math.round((usedMinutes * this.#options.hourlyRateMicros) / 60);
    record.status = 'stopped';
    record.finishedAt = new Date(finished).toISOString();
    record.stopReason = reason;
    record.pid = null;
    record.userDataDir = null;
    this.#live.delete(record.id);
    await store.save();
    log(
      `browser ${record.id} stopped (${reason}; billed ${usedMinutes} min, refunded ${fromMicros(record.chargedMicros - record.costMicros)})${saved}`,
    );
    return record;
  }

  async #saveCookies(profileId: string, chromium: ChromiumProcess): Promise<string> {
    const { cookies } = await chromium.send<{ cookies: { domain: string; [key: string]: unknown }[] }>(
      'Storage.getCookies',
    );
    await this.store.writeCookies(profileId, cookies.map(toCookieParam));
    const profile = this.store.profiles.get(profileId);
    if (profile) {
      profile.cookieDomains = [...new Set(cookies.map((c) => c.domain.replace(/^\./, '')))].sort();
      profile.lastUsedAt = new Date().toISOString();
    }
    return `; profile ${profileId} saved (${cookies.length} cookies)`;
  }

  /** Stops every active browser; used when the service closes. */
  async stopAll(reason: string): Promise<void> {
    await Promise.all([...this.#live.keys()].map((id) => this.stop(id, reason).catch(() => {})));
  }

  /** Where a new browser's traffic goes. */
  #route(body: CreateBody): {
    kind: BrowserRecord['proxyRoute'];
    countryCode: string | null;
    upstream: Upstream | undefined;
    note: string | null;
  } {
    if (body.customProxy) {
      const { host, port, username, password } = body.customProxy;
      return { kind: 'custom', countryCode: null, upstream: { host, port, username, password }, note: null };
    }
    const countryCode = body.proxyCountryCode === undefined ? 'us' : body.proxyCountryCode;
    if (countryCode === null) return { kind: 'direct', countryCode, upstream: undefined, note: null };
    const upstream = this.#options.proxies[countryCode];
    if (upstream) return { kind: 'managed', countryCode, upstream, note: null };
    return {
      kind: 'direct',
      countryCode,
      upstream: undefined,
      note: `no upstream proxy configured for "${countryCode}"; traffic goes direct`,
    };
  }

  /** The wire form of a browser, with URLs on the host the request came to. */
  toWire(record: BrowserRecord, origin: string): BrowserSession & Record<string, unknown> {
    const live = this.#live.get(record.id);
    const active = record.status === 'active' && live !== undefined;
    const proxyMb = record.status === 'active' ? (live?.forwarder?.bytes ?? 0) : record.proxyBytes;
    return {
      id: record.id,
      status: record.status,
      cdpUrl: active ? `${origin}/cdp/${live.secret}` : null,
      liveUrl: active ? `${origin}/live/${live.secret}` : null,
      timeoutAt: record.timeoutAt,
      startedAt: record.startedAt,
      finishedAt: record.finishedAt,
      proxyUsedMb: (proxyMb / (1024 * 1024)).toFixed(3),
      proxyCost: '0.00',
      browserCost: fromMicros(record.costMicros ?? record.chargedMicros),
      agentSessionId: null,
      recordingUrl: null,
      metadata: record.metadata,
      profileId: record.profileId,
      proxyCountryCode: record.proxyCountryCode,
      proxyRoute: record.proxyRoute,
      proxyNote: record.proxyNote,
      stopReason: record.stopReason,
    };
  }
}

/** A cookie from `Storage.getCookies` as `Storage.setCookies` takes it back. */
function toCookieParam(cookie: Record<string, unknown>): Record<string, unknown> {
  const { size: _size, session, expires, ...param } = cookie;
  return session === true || typeof expires !== 'number' || expires < 0 ? param : { ...param, expires };
}
