import { z } from 'zod';
import { APIUserAbortError, type RequestInfo, WaitTimeoutError } from '../errors.js';
import type { Clock } from './clock.js';

/** What one look at a run or session found: done with a value, or still going in some status. */
export type PollResult<T> = { done: true; value: T } | { done: false; status: string };

export interface PollSpec<T> {
  /** The library operation, such as `runs.wait`: named in errors. */
  operation: string;
  /** `run` or `session`: named in the timeout error. */
  what: string;
  id: string;
  /** Where the polling goes, for the abort error. */
  info: RequestInfo;
  clock: Clock;
  signal: AbortSignal | undefined;
  /** The whole wait, in ms; undefined waits as long as it takes. */
  timeoutMs: number | undefined;
  intervalMs: number;
  /** One look; `signal` aborts when the caller aborts or the wait times out. */
  check(signal: AbortSignal): Promise<PollResult<T>>;
}

/**
 * Looks, sleeps `intervalMs` on the client's clock, and looks again until `check` says done. The
 * time limit is a sleep on the same clock raced against the looking, so a test clock controls both
 * and nothing really waits; when it wins, the look in flight is aborted and a
 * {@link WaitTimeoutError} says that nothing was cancelled on the service.
 */
export async function pollUntil<T>(spec: PollSpec<T>): Promise<T> {
  const { clock, signal } = spec;
  if (signal?.aborted) throw new APIUserAbortError(spec.info, { cause: signal.reason });
  const inner = new AbortController();
  const onAbort = () => inner.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = new AbortController();
  let lastStatus: string | undefined;

  const looking = (async () => {
    for (;;) {
      const result = await spec.check(inner.signal);
      if (result.done) return result.value;
      lastStatus = result.status;
      await clock.sleep(spec.intervalMs, inner.signal);
    }
  })();
  const TIMED_OUT = Symbol('timed out');
  const limit =
    spec.timeoutMs === undefined
      ? new Promise<never>(() => {})
      : clock.sleep(spec.timeoutMs, timer.signal).then(
          () => TIMED_OUT,
          // Aborted because the looking ended first: this side never wins then.
          () => new Promise<never>(() => {}),
        );
  try {
    const winner = await Promise.race([looking, limit]);
    if (winner === TIMED_OUT) {
      inner.abort(new Error('wait timed out'));
      looking.catch(() => {});
      throw new WaitTimeoutError({
        operation: spec.operation,
        what: spec.what,
        id: spec.id,
        timeoutMs: spec.timeoutMs ?? 0,
        ...(lastStatus === undefined ? {} : { lastStatus }),
      });
    }
    return winner as T;
  } catch (error) {
    // Named as the wait, whichever request or sleep the abort happened to interrupt.
    if (signal?.aborted) throw new APIUserAbortError(spec.info, { cause: error });
    throw error;
  } finally {
    timer.abort();
    inner.abort();
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The options of a `wait()`, validated once. */
export const WaitOptionsSchema = z.strictObject({
  timeoutMs: z.number().int('must be a whole number of ms').positive().optional(),
  pollIntervalMs: z.number().int('must be a whole number of ms').positive().optional(),
});
