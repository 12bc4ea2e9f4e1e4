import { type ClientOptions, type Clock, CloudBrowserClient } from 'cloudbrowser';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { afterEach } from 'vitest';
import type { TestServer } from './http-server.js';

/** The key every test client sends; the redaction test searches for it. */
export const API_KEY = 'sk_test_0123456789abcdefSECRET';

export interface RecordingClock {
  clock: Clock;
  /** Every delay asked for, in order, in milliseconds. */
  sleeps: number[];
}

/**
 * A clock that records each sleep and returns at once, so retry delays are measured, never waited.
 * `onSleep` may make a sleep do something (abort a signal, hang until aborted).
 */
export function recordingClock(
  options: { random?: () => number; onSleep?: (ms: number, signal?: AbortSignal) => Promise<void> } = {},
): RecordingClock {
  const sleeps: number[] = [];
  return {
    sleeps,
    clock: {
      async sleep(ms, signal) {
        sleeps.push(ms);
        if (options.onSleep) await options.onSleep(ms, signal);
        if (signal?.aborted) throw signal.reason;
      },
      random: options.random ?? (() => 0.5),
    },
  };
}

/** A client for `server` with the test key and a recording clock. */
export function clientFor(
  server: TestServer | { url: string },
  options: ClientOptions = {},
): CloudBrowserClient & { sleeps: number[] } {
  const { clock, sleeps } = recordingClock();
  const client = new CloudBrowserClient({ apiKey: API_KEY, baseUrl: server.url, clock, ...options });
  return Object.assign(client, { sleeps });
}

const agents = new Set<Agent>();

afterEach(async () => {
  const open = [...agents];
  agents.clear();
  await Promise.all(open.map((agent) => agent.destroy()));
});

export interface CountingDispatcher {
  dispatcher: Dispatcher;
  /** Requests handed to the dispatcher so far. */
  dispatched: () => number;
  /** TCP connections it opened (or tried to). */
  connects: () => number;
}

/** An undici Agent that counts what goes through it; destroyed after the current test. */
export function countingDispatcher(): CountingDispatcher {
  let dispatched = 0;
  let connects = 0;
  const connector = buildConnector({});
  const agent = new Agent({
    connect: (options, callback) => {
      connects++;
      return connector(options, callback);
    },
  });
  agents.add(agent);
  const dispatcher = agent.compose((dispatch) => (options, handler) => {
    dispatched++;
    return dispatch(options, handler);
  });
  return { dispatcher, dispatched: () => dispatched, connects: () => connects };
}

/** Lets every queued microtask and immediate run, so a request that was going to be sent has been. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
