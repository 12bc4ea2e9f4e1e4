/**
 * A fixed-capacity first-in, first-out buffer: pushing onto a full buffer pushes out the oldest item
 * and counts it. Memory is one array of `capacity` slots, whatever goes through it.
 */
export class RingBuffer<T> {
  readonly #slots: (T | undefined)[];
  #start = 0;
  #size = 0;
  #dropped = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.#slots = new Array<T | undefined>(capacity);
  }

  get capacity(): number {
    return this.#slots.length;
  }

  get size(): number {
    return this.#size;
  }

  /** Items pushed out by {@link push} since the buffer was made. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Adds an item; returns the oldest one if it had to make room. */
  push(item: T): T | undefined {
    const capacity = this.#slots.length;
    if (this.#size < capacity) {
      this.#slots[(this.#start + this.#size) % capacity] = item;
      this.#size++;
      return undefined;
    }
    const pushedOut = this.#slots[this.#start];
    this.#slots[this.#start] = item;
    this.#start = (this.#start + 1) % capacity;
    this.#dropped++;
    return pushedOut;
  }

  /**
   * Continues another buffer: pushes its items, oldest first, and adds what it had dropped to this
   * one's count. Meant for an empty buffer that replaces `other`.
   */
  continueFrom(other: RingBuffer<T>): void {
    for (const item of other.toArray()) this.push(item);
    this.#dropped += other.dropped;
  }

  /** Removes and returns the oldest item. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const item = this.#slots[this.#start];
    this.#slots[this.#start] = undefined;
    this.#start = (this.#start + 1) % this.#slots.length;
    this.#size--;
    return item;
  }

  /** The items, oldest first. */
  toArray(): T[] {
    const result = new Array<T>(this.#size);
    for (let i = 0; i < this.#size; i++) {
      result[i] = this.#slots[(this.#start + i) % this.#slots.length] as T;
    }
    return result;
  }
}
