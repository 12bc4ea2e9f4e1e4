import { ConfigurationError, NetworkObserverError } from '../errors.js';
import { CdpConnection } from './cdp-connection.js';
import { cdpUrlOf, resolveWebSocketUrl } from './endpoint.js';
import { type Har, toHar } from './har.js';
import { LiveQueue } from './live-queue.js';
import { normaliseOptions, type ObserveNetworkOptions, type ObserverConfig } from './options.js';
import { NetworkRecorder } from './recorder.js';
import { Redactor } from './redact.js';
import { summarise } from './summary.js';
import { TargetTracker } from './targets.js';
import type {
  NetworkEntry,
  NetworkEntryStream,
  NetworkObserverClose,
  NetworkObserverEvents,
  NetworkSummary,
  NetworkTarget,
} from './types.js';

type Listener<K extends keyof NetworkObserverEvents> = (value: NetworkObserverEvents[K]) => void;
type Listeners = { [K in keyof NetworkObserverEvents]: Set<Listener<K>> };

/**
 * Events the observer never reads when headers are off, dropped before they are parsed: the
 * raw-header events are the largest messages Chromium sends about a request.
 */
const SKIPPED_WITHOUT_HEADERS = [
  '{"method":"Network.requestWillBeSentExtraInfo"',
  '{"method":"Network.responseReceivedExtraInfo"',
];
const SKIPPED_ALWAYS = ['{"method":"Network.policyUpdated"', '{"method":"Network.resourceChangedPriority"'];

/**
 * Watches the network traffic of every page, popup, iframe and worker of one browser over a CDP
 * connection of its own, and records one {@link NetworkEntry} per request: metadata only, redacted,
 * in a bounded buffer. Made by {@link observeNetwork}.
 *
 * It never holds the process open, never changes caching, intercepts nothing and never pauses a
 * target for longer than it takes to switch its Network domain on. `stop()` (or `await using`)
 * closes its connection; what it recorded stays readable.
 */
export class NetworkObserver implements AsyncDisposable {
  readonly #connection: CdpConnection;
  readonly #config: ObserverConfig;
  readonly #tracker: TargetTracker;
  readonly #recorder: NetworkRecorder;
  readonly #listeners: Listeners = {
    request: new Set(),
    response: new Set(),
    finished: new Set(),
    failed: new Set(),
    close: new Set(),
  };
  readonly #streams = new Set<LiveQueue>();
  #product: string | undefined;
  #stopRequested = false;
  #closed: NetworkObserverClose | undefined;
  #stopping: Promise<void> | undefined;

  private constructor(connection: CdpConnection, config: ObserverConfig) {
    this.#connection = connection;
    this.#config = config;
    const redactor = new Redactor(config);
    this.#recorder = new NetworkRecorder({
      maxEntries: config.maxEntries,
      maxInFlight: config.maxInFlight,
      headers: config.headers,
      redactor,
      hooks: {
        wants: (event) => this.#listeners[event].size > 0,
        started: (entry) => this.#emit('request', entry),
        responded: (entry) => this.#emit('response', entry),
        ended: (entry) => {
          for (const stream of this.#streams) stream.push(entry);
          this.#emit(entry.state === 'finished' ? 'finished' : 'failed', entry);
        },
        missed: (sessionId) => this.#tracker.missed(sessionId),
      },
    });
    this.#tracker = new TargetTracker(connection, {
      onGone: (sessionId) => this.#recorder.sessionGone(sessionId),
      redactUrl: (url) => redactor.url(url),
      timeline: {
        watch: (target) => this.#recorder.watch(target.targetId),
        read: (target, requests) => this.#recorder.recover(target, requests),
        unwatch: (target) => this.#recorder.unwatch(target.targetId),
      },
    });
    connection.onEvent((method, params, sessionId) => {
      if (method.startsWith('Network.')) {
        const target = this.#tracker.target(sessionId);
        if (target !== undefined) this.#recorder.handle(method, params, target, target.sessionId);
        return;
      }
      this.#tracker.handle(method, params, sessionId);
    });
    connection.onClose(() => this.#onClosed());
  }

  /** @internal Use {@link observeNetwork}. */
  static async open(target: NetworkTarget, options?: ObserveNetworkOptions): Promise<NetworkObserver> {
    // `continueFrom` is used here and not kept: each observer holding the one before would chain
    // every buffer of a long life of reconnects in memory.
    const { continueFrom: previous, ...config } = normaliseOptions(options);
    const { timeoutMs, signal } = config;
    if (previous !== undefined && !(previous instanceof NetworkObserver && previous.stopped)) {
      throw new ConfigurationError('observeNetwork: continueFrom must be an observer that has stopped');
    }
    const cdpUrl = cdpUrlOf(target);
    const started = performance.now();
    const remaining = () => Math.max(1, timeoutMs - (performance.now() - started));
    const wsUrl = await resolveWebSocketUrl(cdpUrl, { timeoutMs, signal });
    const connection = await CdpConnection.open(wsUrl, {
      timeoutMs: remaining(),
      signal,
      skipPrefixes: config.headers ? SKIPPED_ALWAYS : [...SKIPPED_ALWAYS, ...SKIPPED_WITHOUT_HEADERS],
    });
    const observer = new NetworkObserver(connection, config);
    if (previous) observer.#recorder.entries.continueFrom(previous.#recorder.entries);
    try {
      await withDeadline(observer.#start(), {
        ms: remaining(),
        signal,
        what: `attaching to the browser at ${connection.endpoint}`,
      });
    } catch (error) {
      // Nothing half-attached stays behind: closing the connection detaches every session it made.
      await observer.stop();
      if (error instanceof NetworkObserverError || error === signal?.reason) throw error;
      throw new NetworkObserverError(`observeNetwork: attaching failed: ${String(error)}`);
    }
    return observer;
  }

  async #start(): Promise<void> {
    const version = await this.#connection.send<{ product?: string }>('Browser.getVersion');
    this.#product = version.product;
    await this.#tracker.start();
  }

  /** Whether the observer has stopped (`stop()`, or the browser went away). */
  get stopped(): boolean {
    return this.#closed !== undefined;
  }

  /** Entries pushed out of the ring buffer so far (see `maxEntries`). */
  get dropped(): number {
    return this.#recorder.entries.dropped;
  }

  /** The ended requests held, oldest first (at most `maxEntries`). A copy: it does not change later. */
  entries(): NetworkEntry[] {
    return this.#recorder.entries.toArray();
  }

  /**
   * Counts by status class, resource type and host, bytes, failures and the slowest requests, over
   * the entries held now.
   * @param options.slowest How many of the slowest entries to list. @default 10
   */
  summary(options: { slowest?: number } = {}): NetworkSummary {
    return summarise(this.entries(), {
      dropped: this.dropped,
      inFlight: this.#recorder.inFlight,
      slowest: options.slowest ?? 10,
    });
  }

  /**
   * The entries held as a HAR 1.2 document, which Chrome DevTools imports (Network panel, "Import
   * HAR file"). One HAR entry per response, so each redirect hop is its own entry; no bodies.
   *
   * @example
   * await writeFile('run.har', JSON.stringify(observer.toHar()));
   */
  toHar(): Har {
    return toHar({
      entries: this.entries(),
      pageTitle: (pageId) => this.#tracker.page(pageId)?.title,
      product: this.#product,
    });
  }

  /**
   * Subscribes to an event; returns the function that unsubscribes this listener. A listener that
   * throws does not stop the observer: its error is rethrown on its own, like an uncaught exception.
   *
   * @example
   * const off = observer.on('failed', (entry) => console.warn(entry.url, entry.failure?.errorText));
   * off();
   */
  on<K extends keyof NetworkObserverEvents>(event: K, listener: Listener<K>): () => void {
    const listeners = this.#listeners[event] as Set<Listener<K>>;
    // The same function twice is two subscriptions, each with its own unsubscribe.
    const subscription: Listener<K> = (value) => listener(value);
    listeners.add(subscription);
    return () => {
      listeners.delete(subscription);
    };
  }

  /**
   * Streams entries as they end, from now on, until the observer stops. Each loop has its own
   * bounded queue (`streamBufferSize`); `dropped` on the iterator counts what a slow loop missed.
   *
   * @example
   * for await (const entry of observer) if (entry.status === 500) console.log(entry.url);
   */
  [Symbol.asyncIterator](): NetworkEntryStream {
    const stream: LiveQueue = new LiveQueue(this.#config.streamBufferSize, () =>
      this.#streams.delete(stream),
    );
    if (this.#closed === undefined) this.#streams.add(stream);
    else stream.end();
    return stream;
  }

  /**
   * Stops observing: closes the observer's CDP connection (Chromium detaches its sessions, the
   * user's own connection is untouched), records requests still in flight as `incomplete` and ends
   * every stream. Idempotent; the entries stay readable.
   */
  stop(): Promise<void> {
    this.#stopRequested = true;
    this.#stopping ??= this.#connection.close();
    return this.#stopping;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  #onClosed(): void {
    if (this.#closed !== undefined) return;
    this.#tracker.close();
    this.#recorder.endAll();
    this.#closed = { reason: this.#stopRequested ? 'stopped' : 'disconnected' };
    for (const stream of this.#streams) stream.end();
    this.#streams.clear();
    this.#emit('close', this.#closed);
    for (const listeners of Object.values(this.#listeners)) listeners.clear();
  }

  #emit<K extends keyof NetworkObserverEvents>(event: K, value: NetworkObserverEvents[K]): void {
    for (const listener of this.#listeners[event] as Set<Listener<K>>) {
      try {
        listener(value);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

/**
 * Starts recording the network traffic of a live browser: every page, popup, iframe (out-of-process
 * ones included) and worker, present and future, over a CDP connection of its own (Playwright,
 * Puppeteer or anything else can drive the browser meanwhile). Metadata only, redacted, bounded.
 *
 * @param target The browser's `cdpUrl`, a browser resource (`{ cdpUrl }`), or a handle
 *   (`{ session: { cdpUrl } }`). A `ws://` URL is used as is; an http(s) one is resolved through
 *   `<cdpUrl>/json/version`.
 * @throws {NetworkObserverError} when the browser cannot be reached or attached to (the message
 *   names the host, never the secret path of the `cdpUrl`).
 * @throws {ConfigurationError} for invalid options.
 *
 * @example
 * const browser = await client.browsers.create();
 * await using network = await observeNetwork(browser);
 * // ... drive the browser ...
 * console.log(network.summary());
 */
export function observeNetwork(
  target: NetworkTarget,
  options?: ObserveNetworkOptions,
): Promise<NetworkObserver> {
  return NetworkObserver.open(target, options);
}

/** Races a promise against a time limit and an abort signal. */
async function withDeadline<T>(
  promise: Promise<T>,
  options: { ms: number; signal: AbortSignal | undefined; what: string },
): Promise<T> {
  const { signal } = options;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new NetworkObserverError(
                `observeNetwork: ${options.what} took longer than ${Math.round(options.ms)} ms`,
              ),
            ),
          options.ms,
        );
        if (signal) {
          onAbort = () => reject(signal.reason);
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
