import { constants } from 'node:os';
import { inspect } from 'node:util';

/** A billed browser that this process must stop before it ends. */
export interface Stoppable {
  readonly id: string;
  stop(): Promise<unknown>;
}

/** How long the guards spend stopping browsers before the process ends anyway. */
const STOP_BUDGET_MS = 5_000;
/** Signals whose default action ends the process; the guards stop browsers first, then re-raise them. */
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * The process guards: while a browser this process owns is live, SIGINT, SIGTERM, SIGHUP, an
 * uncaught exception (an unhandled rejection becomes one, unless Node is told otherwise) and the
 * event loop running dry stop every such browser, bounded to a few seconds, before the process ends
 * as it would have without them: re-raising the signal (exit status 128 + its number), printing the
 * error and exiting with 1, or exiting normally.
 *
 * The listeners are installed when the first browser is added and removed when the last one goes,
 * so a program with none behaves exactly as if this module were not loaded. A program that listens
 * for a signal or for uncaught exceptions itself has decided what they mean: the guards then leave
 * the process alone (its own handler ends it, or not).
 */
export class ProcessGuards {
  readonly #live = new Set<Stoppable>();
  #installed = false;
  #ending = false;

  /** Browsers currently guarded. */
  get size(): number {
    return this.#live.size;
  }

  add(browser: Stoppable): void {
    this.#live.add(browser);
    if (!this.#installed) this.#install();
  }

  delete(browser: Stoppable): void {
    this.#live.delete(browser);
    if (this.#live.size === 0 && !this.#ending) this.#uninstall();
  }

  /** Stops every guarded browser, giving up after `budgetMs`; failures are reported on stderr. */
  async stopEverything(budgetMs = STOP_BUDGET_MS): Promise<void> {
    const browsers = [...this.#live];
    if (browsers.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), budgetMs);
    });
    const settled = Promise.allSettled(browsers.map((browser) => browser.stop()));
    const outcome = await Promise.race([settled, outOfTime]);
    clearTimeout(timer);
    const results = outcome === 'timeout' ? undefined : outcome;
    browsers.forEach((browser, i) => {
      const result = results?.[i];
      if (result?.status === 'fulfilled') return;
      const reason = result === undefined ? `not stopped within ${budgetMs} ms` : message(result.reason);
      process.stderr.write(
        `cloudbrowser: could not stop browser ${browser.id} before exit (${reason}); it stays active and billed until stopped or timed out\n`,
      );
    });
  }

  #install(): void {
    this.#installed = true;
    for (const signal of SIGNALS) process.on(signal, this.#onSignal);
    process.on('uncaughtException', this.#onUncaught);
    process.on('beforeExit', this.#onBeforeExit);
    process.on('exit', this.#onExit);
  }

  #uninstall(): void {
    if (!this.#installed) return;
    this.#installed = false;
    for (const signal of SIGNALS) process.off(signal, this.#onSignal);
    process.off('uncaughtException', this.#onUncaught);
    process.off('beforeExit', this.#onBeforeExit);
    process.off('exit', this.#onExit);
  }

  readonly #onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 1) return;
    // A second Ctrl-C while stopping means: now.
    if (this.#ending) {
      this.#reraise(signal);
      return;
    }
    void this.#end().then(() => this.#reraise(signal));
  };

  readonly #onUncaught = (error: unknown): void => {
    if (process.listenerCount('uncaughtException') > 1 || this.#ending) return;
    // What Node would have printed, then what it would have done, once the browsers are stopped.
    process.stderr.write(`${inspect(error)}\n\nNode.js ${process.version}\n`);
    void this.#end().then(() => process.exit(1));
  };

  readonly #onBeforeExit = (): void => {
    // The loop ran dry with browsers still live (their connection was closed, never stopped). Stopping
    // them keeps the loop busy a little longer; then it runs dry again, and the process exits as it would.
    if (this.#live.size > 0 && !this.#ending) void this.stopEverything();
  };

  readonly #onExit = (): void => {
    // `process.exit()` leaves no time for requests; say what is left, so it can be stopped by hand.
    const left = [...this.#live].map((browser) => browser.id);
    if (left.length === 0 || this.#ending) return;
    process.stderr.write(
      `cloudbrowser: the process exited with browser(s) ${left.join(', ')} still active and billed; call stop() before exiting, or pass supervise: true\n`,
    );
  };

  async #end(): Promise<void> {
    this.#ending = true;
    await this.stopEverything();
  }

  #reraise(signal: NodeJS.Signals): void {
    this.#uninstall();
    // Without a listener the signal does what it does by default: end the process with 128 + its number.
    process.exitCode = 128 + (constants.signals[signal] ?? 0);
    process.kill(process.pid, signal);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The one set of guards of this process. Two copies of cloudbrowser loaded in one process (a
 * bundled and an installed one) share it through a global symbol, so they never race each other.
 */
export function processGuards(): ProcessGuards {
  const key = Symbol.for('cloudbrowser.processGuards');
  const global = globalThis as { [key]?: ProcessGuards };
  global[key] ??= new ProcessGuards();
  return global[key];
}
