/**
 * The handle both adapters return, framework-free: the transactional create → connect, the
 * memoised stop, reconnect and auto-reconnect, and the lease that puts an owned browser under the
 * process guards (and the watchdog). An adapter writes only its {@link Driver}.
 */
import {
  BrowserConnectError,
  type BrowserSession,
  type CloudBrowserClient,
  type NetworkObserver,
  NotFoundError,
  observeNetwork,
} from 'cloudbrowser';
import { ConnectFailure, connectWithin, type Driver, setupError } from './connect.js';
import { processGuards } from './guards.js';
import {
  type AttachOptions,
  type CommonOptions,
  type ConnectOptions,
  clientOf,
  readApiKey,
  type Settings,
  serviceAccess,
  settingsOf,
  split,
} from './options.js';
import { Redactor } from './redact.js';
import { supervisor } from './supervisor.js';

/** What a handle is built from; adapters pass it through to their handle's constructor. */
export interface HandleInit<C> {
  readonly client: CloudBrowserClient;
  readonly session: BrowserSession;
  readonly connection: C;
  readonly driver: Driver<C>;
  readonly lease: Lease | undefined;
  readonly redactor: Redactor;
  readonly settings: Settings;
  readonly network: NetworkObserver | undefined;
  /** The `network` option, to start the observer again after a reconnect if it lost its connection. */
  readonly networkOption: CommonOptions['network'];
}

/** A handle made with `network` set: its observer is there for certain. */
export type WithNetwork<H> = H & { readonly network: NetworkObserver };

/**
 * Connects the framework and, when `network` asks for it, the observer beside it; if the observer
 * cannot start, the framework is disconnected again before the error goes up.
 */
async function connectAll<C>(
  driver: Driver<C>,
  cdpUrl: string,
  options: {
    timeoutMs: number;
    signal: AbortSignal | undefined;
    redactor: Redactor;
    /**
     * The `network` option, asked for once the framework is connected: by then a reconnect knows
     * whether the old observer lost its connection too.
     */
    network: () => CommonOptions['network'];
    /** An observer that lost its connection: the new one continues its entries. */
    previous?: NetworkObserver | undefined;
  },
): Promise<{ connection: C; network: NetworkObserver | undefined }> {
  const { signal, previous } = options;
  const connection = await connectWithin(driver, cdpUrl, options);
  const network = options.network();
  if (!network) return { connection, network: undefined };
  try {
    const observer = await observeNetwork(cdpUrl, {
      ...(signal ? { signal } : {}),
      ...(network === true ? {} : network),
      ...(previous ? { continueFrom: previous } : {}),
    });
    return { connection, network: observer };
  } catch (error) {
    await driver.disconnect(connection).catch(() => {});
    throw error;
  }
}

/** Connects the framework and the observer for a new handle, and makes the handle. */
async function connectNew<C, H>(
  cdpUrl: string,
  signal: AbortSignal | undefined,
  init: Omit<HandleInit<C>, 'connection' | 'network'>,
  make: (init: HandleInit<C>) => H,
): Promise<H> {
  const connected = await connectAll(init.driver, cdpUrl, {
    timeoutMs: init.settings.connectTimeoutMs,
    signal,
    redactor: init.redactor,
    network: () => init.networkOption,
  });
  return make({ ...init, ...connected });
}

/** How long a disconnect may take during stop before the stop action is sent anyway. */
const DISCONNECT_BUDGET_MS = 5_000;

/**
 * The billed browser a handle owns: its stop is memoised, and while it is live the process guards
 * (and the watchdog, when supervised) know it.
 */
export class Lease {
  readonly id: string;
  readonly #client: CloudBrowserClient;
  readonly #supervised: boolean;
  #stopping: Promise<BrowserSession> | undefined;
  #stopped = false;

  constructor(client: CloudBrowserClient, id: string, supervised: boolean) {
    this.#client = client;
    this.id = id;
    this.#supervised = supervised;
    processGuards().add(this);
  }

  /** True once the stop action succeeded. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Issues the stop action once; concurrent callers share it, and a failed one may be tried again. */
  stop(): Promise<BrowserSession> {
    this.#stopping ??= this.#client.browsers.stop(this.id).then(
      (session) => {
        this.#stopped = true;
        this.forget();
        return session;
      },
      (error: unknown) => {
        this.#stopping = undefined;
        throw error;
      },
    );
    return this.#stopping;
  }

  /** Lets go of the browser without stopping it. */
  forget(): void {
    processGuards().delete(this);
    if (this.#supervised) supervisor().release(this.id);
  }
}

function redactorFor(option: CommonOptions['client'], session: BrowserSession): Redactor {
  return new Redactor({
    secrets: [readApiKey(option)],
    urls: [session.cdpUrl, session.liveUrl],
    known: [session.id],
  });
}

/**
 * Creates a browser and connects `driver` to it, as one transaction: if anything after the create
 * fails, times out or is aborted, the browser is stopped before the error is thrown.
 */
export async function openCreated<C, H>(
  driver: Driver<C>,
  options: ConnectOptions,
  make: (init: HandleInit<C>) => H,
): Promise<H> {
  const operation = 'connectCloudBrowser';
  const { common, create } = split(options);
  const { connectTimeoutMs, autoReconnect, supervise } = common;
  const settings = settingsOf(operation, { connectTimeoutMs, autoReconnect, supervise });
  const client = clientOf(common.client);
  const access = settings.supervise ? serviceAccess(operation, common.client, client) : undefined;
  const { signal } = common;

  const session = await client.browsers.create(create, signal ? { signal } : {});
  const redactor = redactorFor(common.client, session);
  const lease = new Lease(client, session.id, access !== undefined);
  try {
    if (access) await supervisor().watch(session.id, access);
    if (signal?.aborted) throw new ConnectFailure('aborted', 'aborted by the caller');
    if (!session.cdpUrl) throw new ConnectFailure('not_active', 'the service gave no cdpUrl for it');
    const init = { client, session, driver, lease, redactor, settings, networkOption: common.network };
    return await connectNew(session.cdpUrl, signal, init, make);
  } catch (error) {
    const outcome = await lease.stop().then(
      () => 'the browser was stopped',
      (stopError: unknown) =>
        `stopping the browser failed too (${redactor.text(String(stopError))}): it may still be active, stop it with client.browsers.stop('${session.id}')`,
    );
    throw setupError(operation, driver, session.id, error, outcome, redactor);
  }
}

/**
 * Connects `driver` to a browser that already runs. The handle owns it only with `own: true`; a
 * failed connect never stops it.
 */
export async function openAttached<C, H>(
  driver: Driver<C>,
  browserId: string,
  options: AttachOptions,
  make: (init: HandleInit<C>) => H,
): Promise<H> {
  const operation = 'attachCloudBrowser';
  const { client: clientOption, signal, own, ...rest } = options;
  const { connectTimeoutMs, autoReconnect, supervise, network: networkOption } = rest;
  const settings = settingsOf(operation, { connectTimeoutMs, autoReconnect, supervise, own });
  const client = clientOf(clientOption);
  const access =
    settings.supervise && settings.own ? serviceAccess(operation, clientOption, client) : undefined;

  const session = await client.browsers.get(browserId, signal ? { signal } : {});
  const redactor = redactorFor(clientOption, session);
  if (session.status !== 'active' || !session.cdpUrl) {
    throw new BrowserConnectError({
      message: `${operation}: browser ${session.id} is ${session.status}; there is nothing to connect to`,
      reason: 'not_active',
      browserId: session.id,
    });
  }
  const lease = settings.own ? new Lease(client, session.id, access !== undefined) : undefined;
  try {
    if (access) await supervisor().watch(session.id, access);
    const init = { client, session, driver, lease, redactor, settings, networkOption };
    return await connectNew(session.cdpUrl, signal, init, make);
  } catch (error) {
    lease?.forget();
    throw setupError(operation, driver, session.id, error, 'the browser was left as it was', redactor);
  }
}

/**
 * A connected cloud browser: the framework objects (in the adapter's subclass), the service's
 * `session`, and a `stop()` that ends billing. Dispose it with `await using`.
 */
export class CloudBrowserHandle<C> implements AsyncDisposable {
  /** The browser's id on the service. */
  readonly id: string;
  /** Whether `stop()` and disposal stop the browser: true unless attached without `own: true`. */
  readonly owns: boolean;
  readonly #client: CloudBrowserClient;
  readonly #driver: Driver<C>;
  readonly #lease: Lease | undefined;
  readonly #redactor: Redactor;
  readonly #settings: Settings;
  readonly #networkOption: CommonOptions['network'];
  #network: NetworkObserver | undefined;
  /** Whether the observer lost its connection (rather than being stopped): a reconnect restarts it. */
  #networkLost = false;
  /** Connections the handle closed itself: their loss is no reason to reconnect. */
  readonly #letGo = new WeakSet<object>();
  #session: BrowserSession;
  #connection: C;
  #stopping: Promise<BrowserSession> | undefined;
  #reconnecting: Promise<void> | undefined;
  #ended = false;

  /** @internal Made by `connectCloudBrowser` and `attachCloudBrowser`. */
  constructor(init: HandleInit<C>) {
    this.id = init.session.id;
    this.owns = init.lease !== undefined;
    this.#client = init.client;
    this.#driver = init.driver;
    this.#lease = init.lease;
    this.#redactor = init.redactor;
    this.#settings = init.settings;
    this.#networkOption = init.networkOption;
    if (init.network) this.#follow(init.network);
    this.#session = init.session;
    this.#connection = init.connection;
    this.#watch(init.connection);
  }

  /** The browser as the service last described it; `stop()` refreshes it with the stopped browser. */
  get session(): BrowserSession {
    return this.#session;
  }

  /**
   * The network observer started by the `network` option (undefined without it): what the browser
   * loaded, `summary()`, `toHar()`. It stops with the handle.
   */
  get network(): NetworkObserver | undefined {
    return this.#network;
  }

  /** A page that shows the browser live, or null. Treat it as a secret: it needs no key. */
  get liveUrl(): string | null {
    return this.#session.liveUrl;
  }

  /** The current framework connection; replaced by `reconnect()`. */
  protected get connection(): C {
    return this.#connection;
  }

  /**
   * Disconnects the framework, then, if the handle owns the browser, issues the service's stop action
   * (billing ends, unused time is refunded, the profile is saved), and resolves to the final session.
   * Idempotent and memoised: concurrent and later calls share one stop; a stop that failed is tried
   * again by the next call. A handle that does not own its browser only disconnects.
   */
  stop(): Promise<BrowserSession> {
    this.#stopping ??= this.#stop().catch((error: unknown) => {
      this.#stopping = undefined;
      throw error;
    });
    return this.#stopping;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Re-reads the browser's current `cdpUrl` (it can change) and connects the framework to the same
   * browser again, replacing `browser`, `context` and `page`. Concurrent calls share one reconnect.
   * Rejects with a {@link BrowserConnectError} when the browser is no longer active.
   */
  reconnect(): Promise<void> {
    if (this.#ended) {
      return Promise.reject(
        new BrowserConnectError({
          message: `reconnect: the handle of browser ${this.id} was stopped`,
          reason: 'not_active',
          browserId: this.id,
        }),
      );
    }
    this.#reconnecting ??= this.#reconnect().finally(() => {
      this.#reconnecting = undefined;
    });
    return this.#reconnecting;
  }

  async #stop(): Promise<BrowserSession> {
    this.#ended = true;
    // Stopped first, so that what it recorded ends with the user's work, not with the shutdown.
    await this.#network?.stop();
    const disconnected = await this.#letGoOf(this.#connection);
    if (this.#lease) {
      // Once the browser is stopped its connection is gone anyway: a failed disconnect does not matter.
      this.#session = await this.#lease.stop();
      return this.#session;
    }
    if (disconnected !== undefined) {
      throw setupError(
        'stop',
        this.#driver,
        this.id,
        disconnected,
        'the browser was left as it was',
        this.#redactor,
      );
    }
    return this.#session;
  }

  /** Disconnects `connection`, bounded in time; resolves to the error if it failed. */
  async #letGoOf(connection: C): Promise<unknown> {
    this.#letGo.add(connection as object);
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<Error>((resolve) => {
      timer = setTimeout(
        () => resolve(new Error(`disconnect took longer than ${DISCONNECT_BUDGET_MS} ms`)),
        DISCONNECT_BUDGET_MS,
      );
    });
    try {
      return await Promise.race([
        this.#driver.disconnect(connection).then(
          () => undefined,
          (e: unknown) => e,
        ),
        outOfTime,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #reconnect(): Promise<void> {
    await this.#letGoOf(this.#connection);
    const session = await this.#client.browsers.get(this.id);
    this.#session = session;
    if (session.status !== 'active' || !session.cdpUrl) {
      throw new BrowserConnectError({
        message: `reconnect: browser ${this.id} is ${session.status}; there is nothing to connect to`,
        reason: 'not_active',
        browserId: this.id,
      });
    }
    this.#redactor.addUrl(session.cdpUrl);
    this.#redactor.addUrl(session.liveUrl);
    let connected: Awaited<ReturnType<typeof connectAll<C>>>;
    try {
      connected = await connectAll(this.#driver, session.cdpUrl, {
        timeoutMs: this.#settings.connectTimeoutMs,
        signal: undefined,
        redactor: this.#redactor,
        // An observer still connected goes on as it is; one that lost its connection starts again.
        network: () => (this.#networkLost ? this.#networkOption : undefined),
        previous: this.#network,
      });
    } catch (error) {
      const outcome = this.owns
        ? 'the browser is still active: stop() stops it'
        : 'the browser was left as it was';
      throw setupError('reconnect', this.#driver, this.id, error, outcome, this.#redactor);
    }
    const { connection, network } = connected;
    if (this.#ended) {
      await network?.stop();
      await this.#letGoOf(connection);
      throw new BrowserConnectError({
        message: `reconnect: the handle of browser ${this.id} was stopped while reconnecting`,
        reason: 'not_active',
        browserId: this.id,
      });
    }
    this.#connection = connection;
    this.#watch(connection);
    if (network) this.#follow(network);
  }

  /** Makes `observer` the handle's `network`, and notes when it loses its connection. */
  #follow(observer: NetworkObserver): void {
    this.#network = observer;
    this.#networkLost = false;
    observer.on('close', ({ reason }) => {
      if (this.#network === observer) this.#networkLost = reason === 'disconnected';
    });
  }

  #watch(connection: C): void {
    this.#driver.onDisconnected(connection, () => {
      const expected = this.#letGo.has(connection as object) || connection !== this.#connection;
      if (expected || this.#ended || this.#lease?.stopped || !this.#settings.autoReconnect) return;
      void this.#autoReconnect(this.#settings.autoReconnect);
    });
  }

  /** Bounded reconnect attempts with doubling delays; stops trying once the browser is gone. */
  async #autoReconnect(policy: { attempts: number; delayMs: number }): Promise<void> {
    let delay = policy.delayMs;
    for (let attempt = 1; attempt <= policy.attempts; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (this.#ended) return;
      try {
        await this.reconnect();
        return;
      } catch (error) {
        const gone =
          (error instanceof BrowserConnectError && error.reason === 'not_active') ||
          error instanceof NotFoundError;
        if (gone) return;
      }
      delay *= 2;
    }
  }
}
