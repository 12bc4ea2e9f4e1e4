import type { Socket } from 'node:net';
import { Agent, buildConnector, type Dispatcher, WebSocket } from 'undici';
import { NetworkObserverError } from '../errors.js';
import { safeEndpoint } from './endpoint.js';

/** A CDP event: its method, its parameters and, for a flattened session, the session it came from. */
export type CdpEventListener = (method: string, params: unknown, sessionId: string | undefined) => void;

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface CdpMessage {
  id?: number;
  result?: unknown;
  error?: { message?: string; code?: number };
  method?: string;
  params?: unknown;
  sessionId?: string;
}

export interface CdpConnectionOptions {
  /** Gives up connecting after this long, in milliseconds. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /**
   * Events whose raw text starts with one of these are dropped before they are parsed. Chromium
   * writes `method` first, so `{"method":"Network.dataReceived"` is a cheap exact test; a proxy that
   * reorders keys only makes the filter miss, never drop something else.
   */
  skipPrefixes?: readonly string[];
}

/**
 * One CDP WebSocket (undici's) to a browser endpoint, with flattened sessions: every command and
 * event carries its `sessionId`. The socket holds the process open only while a command awaits
 * its answer, so an idle connection never keeps Node alive.
 */
export class CdpConnection {
  readonly #ws: WebSocket;
  readonly #agent: Agent;
  readonly #endpoint: string;
  readonly #pending = new Map<number, Pending>();
  readonly #skipPrefixes: readonly string[];
  #socket: Socket | undefined;
  #nextId = 0;
  #listener: CdpEventListener = () => {};
  #closedReason: string | undefined;
  readonly #closed: Promise<void>;
  #onClose: (() => void) | undefined;

  private constructor(url: string, agent: Agent, skipPrefixes: readonly string[]) {
    this.#endpoint = safeEndpoint(url);
    this.#agent = agent;
    this.#skipPrefixes = skipPrefixes;
    this.#ws = new WebSocket(url, { dispatcher: agent.compose(withoutCompressionOffer) });
    this.#ws.binaryType = 'arraybuffer';
    this.#closed = new Promise((resolve) => {
      this.#ws.addEventListener('close', () => {
        this.#finish('the CDP connection closed');
        this.#agent.destroy().catch(() => {});
        resolve();
      });
    });
    this.#ws.addEventListener('message', (event) => this.#receive(event.data));
  }

  /**
   * Opens a connection to a `ws://` or `wss://` CDP endpoint.
   * @throws {NetworkObserverError} when it cannot be opened in time; the message names the host only.
   */
  static async open(url: string, options: CdpConnectionOptions): Promise<CdpConnection> {
    options.signal?.throwIfAborted();
    let connection: CdpConnection | undefined;
    const connector = buildConnector({});
    const agent = new Agent({
      connect: (connectOptions, callback) =>
        connector(connectOptions, (error, socket) => {
          if (error !== null) return callback(error, null);
          if (connection) connection.#socket = socket;
          callback(null, socket);
        }),
    });
    connection = new CdpConnection(url, agent, options.skipPrefixes ?? []);
    const opened = connection;
    const ws = opened.#ws;
    try {
      await new Promise<void>((resolve, reject) => {
        const done = (error?: unknown) => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          ws.removeEventListener('open', onOpen);
          ws.removeEventListener('error', onError);
          if (error === undefined) resolve();
          else reject(error);
        };
        const onOpen = () => done();
        const onError = () =>
          done(new NetworkObserverError(`could not open the CDP WebSocket at ${opened.#endpoint}`));
        const onAbort = () => done(options.signal?.reason);
        const timer = setTimeout(
          () =>
            done(
              new NetworkObserverError(
                `the CDP WebSocket at ${opened.#endpoint} did not open within ${options.timeoutMs} ms`,
              ),
            ),
          options.timeoutMs,
        );
        ws.addEventListener('open', onOpen);
        ws.addEventListener('error', onError);
        options.signal?.addEventListener('abort', onAbort, { once: true });
      });
    } catch (error) {
      await opened.close();
      throw error;
    }
    opened.#updateRef();
    return opened;
  }

  /** `host:port` of the endpoint, for messages: never its path, which may hold a secret. */
  get endpoint(): string {
    return this.#endpoint;
  }

  /** Whether the connection has closed (by `close()` or from the other end). */
  get closed(): boolean {
    return this.#closedReason !== undefined;
  }

  /** Settles once the connection has closed, for whatever reason. */
  whenClosed(): Promise<void> {
    return this.#closed;
  }

  /** Sets the one receiver of events. */
  onEvent(listener: CdpEventListener): void {
    this.#listener = listener;
  }

  /** Called once when the connection closes, whoever closed it. */
  onClose(listener: () => void): void {
    this.#onClose = listener;
  }

  /**
   * Sends a command and resolves with its result.
   * @throws {NetworkObserverError} when Chromium answers with an error or the connection closes first.
   */
  send<T = unknown>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    if (this.#closedReason !== undefined) {
      return Promise.reject(new NetworkObserverError(`CDP ${method}: ${this.#closedReason}`));
    }
    const id = ++this.#nextId;
    const message = JSON.stringify(
      sessionId === undefined ? { id, method, params } : { id, method, params, sessionId },
    );
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject });
      this.#updateRef();
      this.#ws.send(message);
    });
  }

  /** Closes the connection and waits (briefly) until it has closed. Idempotent. */
  async close(): Promise<void> {
    this.#finish('the network observer stopped');
    if (this.#ws.readyState === WebSocket.CONNECTING || this.#ws.readyState === WebSocket.OPEN) {
      this.#ws.close();
    }
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, 2_000);
      timer.unref();
    });
    if (this.#ws.readyState !== WebSocket.CONNECTING) await Promise.race([this.#closed, gaveUp]);
    clearTimeout(timer);
    this.#socket?.destroy();
    await this.#agent.destroy().catch(() => {});
  }

  #receive(data: unknown): void {
    // After `close()`, what is still on the wire belongs to nobody.
    if (this.#closedReason !== undefined) return;
    const text = typeof data === 'string' ? data : Buffer.from(data as ArrayBuffer).toString('utf8');
    for (const prefix of this.#skipPrefixes) if (text.startsWith(prefix)) return;
    let message: CdpMessage;
    try {
      message = JSON.parse(text) as CdpMessage;
    } catch {
      return;
    }
    if (typeof message.id === 'number') {
      const pending = this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id);
      this.#updateRef();
      if (message.error) {
        const reason = message.error.message ?? 'failed';
        pending.reject(new NetworkObserverError(`CDP ${pending.method}: ${reason}`));
      } else {
        pending.resolve(message.result);
      }
      return;
    }
    if (typeof message.method === 'string') this.#listener(message.method, message.params, message.sessionId);
  }

  #finish(reason: string): void {
    if (this.#closedReason !== undefined) return;
    this.#closedReason = reason;
    for (const pending of this.#pending.values()) {
      pending.reject(new NetworkObserverError(`CDP ${pending.method}: ${reason}`));
    }
    this.#pending.clear();
    this.#updateRef();
    const onClose = this.#onClose;
    this.#onClose = undefined;
    onClose?.();
  }

  /** The socket holds the process only while an answer is awaited. */
  #updateRef(): void {
    const socket = this.#socket;
    if (socket === undefined || socket.destroyed) return;
    if (this.#pending.size > 0 && this.#closedReason === undefined) socket.ref();
    else socket.unref();
  }
}

/**
 * undici's WebSocket always offers `permessage-deflate`, and Chromium's own DevTools endpoint
 * accepts it: then Chromium compresses every event and this process inflates it, several times the
 * CPU of reading it plain, for messages that cross a socket once. Playwright and Puppeteer turn it
 * off too. This drops the offer from the upgrade request, so no endpoint can accept it.
 */
const withoutCompressionOffer: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) => {
  const { headers } = options;
  // undici passes an upgrade's headers as a plain object; any other request or shape goes as it is.
  const plain = typeof headers === 'object' && headers !== null && !(Symbol.iterator in headers);
  if (options.upgrade === undefined || !plain) return dispatch(options, handler);
  const kept = Object.fromEntries(
    Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'sec-websocket-extensions'),
  );
  return dispatch({ ...options, headers: kept }, handler);
};
