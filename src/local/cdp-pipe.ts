import type { Socket } from 'node:net';
import { ChromiumProtocolError } from '../errors.js';

/** A listener for events on the private control channel. */
export type CdpListener = (method: string, params: unknown, sessionId?: string) => void;

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export interface CdpPipeOptions {
  /** Chromium's fd 3: it reads commands here. */
  writer: Socket;
  /** Chromium's fd 4: it writes answers and events here. */
  reader: Socket;
  /** Called with +1 when a command is sent and -1 when it settles, so the owner can hold Node meanwhile. */
  busy(delta: number): void;
  /** Why the channel is gone, for the commands it fails. */
  goneReason(): string;
}

/**
 * The CDP channel Chromium opens with `--remote-debugging-pipe`: JSON messages, each ended by a NUL
 * byte, which no client of the debugging port sees.
 */
export class CdpPipe {
  readonly #writer: Socket;
  readonly #options: CdpPipeOptions;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Set<CdpListener>();
  #readBuffer: Buffer[] = [];
  #nextId = 0;
  #closed = false;

  constructor(options: CdpPipeOptions) {
    this.#options = options;
    this.#writer = options.writer;
    options.reader.on('data', (chunk: Buffer) => this.#onData(chunk));
    options.reader.on('close', () => this.close());
  }

  send<T = unknown>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new ChromiumProtocolError(method, this.#options.goneReason()));
    }
    const id = ++this.#nextId;
    const message = sessionId === undefined ? { id, method, params } : { id, method, params, sessionId };
    const { busy } = this.#options;
    busy(+1);
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { method, resolve: resolve as (value: unknown) => void, reject });
      this.#writer.write(`${JSON.stringify(message)}\0`);
    }).finally(() => busy(-1));
  }

  on(listener: CdpListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** The channel has ended (its pipe closed, or Chromium exited): every command waiting fails with why. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const reason = this.#options.goneReason();
    for (const pending of this.#pending.values()) {
      pending.reject(new ChromiumProtocolError(pending.method, reason));
    }
    this.#pending.clear();
  }

  /** NUL never occurs inside a UTF-8 character, so it can split the byte stream before decoding. */
  #onData(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(0); end !== -1; end = chunk.indexOf(0, start)) {
      const tail = chunk.subarray(start, end);
      const message = this.#readBuffer.length > 0 ? Buffer.concat([...this.#readBuffer, tail]) : tail;
      this.#readBuffer = [];
      start = end + 1;
      this.#dispatch(message.toString('utf8'));
    }
    if (start < chunk.length) this.#readBuffer.push(chunk.subarray(start));
  }

  #dispatch(text: string): void {
    let message: {
      id?: number;
      result?: unknown;
      error?: { code?: number; message?: string };
      method?: string;
      params?: unknown;
      sessionId?: string;
    };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof message.id === 'number') {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.error) {
        const { code, message: reason } = message.error;
        pending.reject(
          new ChromiumProtocolError(pending.method, `${reason ?? 'failed'} (${code ?? 'no code'})`),
        );
      } else {
        pending.resolve(message.result);
      }
    } else if (typeof message.method === 'string') {
      for (const listener of [...this.#listeners]) {
        try {
          listener(message.method, message.params, message.sessionId);
        } catch (error) {
          // A listener's bug must not break the channel; surface it like an uncaught exception.
          queueMicrotask(() => {
            throw error;
          });
        }
      }
    }
  }
}
