import { RingBuffer } from './ring-buffer.js';
import type { NetworkEntry, NetworkEntryStream } from './types.js';

/**
 * One `for await` consumer of ended entries. Its queue is bounded: when the consumer falls behind,
 * the oldest queued entries are let go and counted in `dropped`. It ends when the observer stops
 * (after handing out what it still holds) or when the loop is left.
 */
export class LiveQueue implements NetworkEntryStream {
  readonly #queue: RingBuffer<NetworkEntry>;
  readonly #onReturn: () => void;
  /** Consumers' `next()` calls waiting for an entry, first come first served. */
  readonly #waiting: ((result: IteratorResult<NetworkEntry>) => void)[] = [];
  #ended = false;

  constructor(capacity: number, onReturn: () => void) {
    this.#queue = new RingBuffer(capacity);
    this.#onReturn = onReturn;
  }

  get dropped(): number {
    return this.#queue.dropped;
  }

  /** Hands an entry to the waiting consumer, or queues it. */
  push(entry: NetworkEntry): void {
    if (this.#ended) return;
    const waiting = this.#waiting.shift();
    if (waiting !== undefined) waiting({ value: entry, done: false });
    else this.#queue.push(entry);
  }

  /** No more entries will come; the consumer still gets those queued. */
  end(): void {
    this.#ended = true;
    this.#release();
  }

  next(): Promise<IteratorResult<NetworkEntry>> {
    const entry = this.#queue.shift();
    if (entry !== undefined) return Promise.resolve({ value: entry, done: false });
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Leaving the loop (`break`, `return`, a throw) unsubscribes. */
  return(): Promise<IteratorResult<NetworkEntry>> {
    this.#ended = true;
    while (this.#queue.shift() !== undefined) {}
    this.#onReturn();
    this.#release();
    return Promise.resolve({ value: undefined, done: true });
  }

  #release(): void {
    for (const waiting of this.#waiting.splice(0)) waiting({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
