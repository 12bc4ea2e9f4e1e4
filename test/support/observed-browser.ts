import type { BrowserSession, CloudBrowserClient, NetworkEntry, NetworkObserver } from 'cloudbrowser';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/** A browser of the local service, driven by Playwright; disposing it disconnects and stops it. */
export interface DrivenBrowser extends AsyncDisposable {
  readonly session: BrowserSession;
  readonly cdpUrl: string;
  readonly browser: Browser;
  readonly context: BrowserContext;
  readonly page: Page;
}

/** Creates a browser and connects Playwright to it; the browser is stopped even if connecting fails. */
export async function openBrowser(client: CloudBrowserClient): Promise<DrivenBrowser> {
  const session = await client.browsers.create({ proxyCountryCode: null });
  try {
    const cdpUrl = session.cdpUrl ?? '';
    const browser = await chromium.connectOverCDP(cdpUrl);
    const context = browser.contexts()[0] ?? (await browser.newContext());
    const page = context.pages()[0] ?? (await context.newPage());
    return {
      session,
      cdpUrl,
      browser,
      context,
      page,
      async [Symbol.asyncDispose]() {
        try {
          await browser.close();
        } finally {
          await client.browsers.stop(session.id);
        }
      },
    };
  } catch (error) {
    await client.browsers.stop(session.id);
    throw error;
  }
}

/**
 * The first ended entry (held, or ending within `timeoutMs`) that matches; fails with what it saw
 * instead, so a failing test says which requests there were.
 */
export async function entryWhere(
  observer: NetworkObserver,
  predicate: (entry: NetworkEntry) => boolean,
  timeoutMs = 10_000,
): Promise<NetworkEntry> {
  const held = observer.entries().find(predicate);
  if (held) return held;
  return new Promise((resolve, reject) => {
    const unsubscribe = [
      observer.on('finished', check),
      observer.on('failed', check),
      observer.on('close', () => done(new Error('the observer stopped'))),
    ];
    const timer = setTimeout(() => done(new Error(`no such entry within ${timeoutMs} ms`)), timeoutMs);
    function check(entry: NetworkEntry) {
      if (predicate(entry)) done(undefined, entry);
    }
    function done(error?: Error, entry?: NetworkEntry) {
      clearTimeout(timer);
      for (const off of unsubscribe) off();
      if (entry) return resolve(entry);
      const seen = observer.entries().map((e) => `${e.state} ${e.status ?? '-'} ${e.url}`);
      const { inFlight } = observer.summary();
      reject(new Error(`${error?.message}; ${inFlight} in flight; entries:\n${seen.join('\n')}`));
    }
  });
}

/** Resolves when the observer sees a matching request start; subscribe before causing it. */
export function requestStarted(
  observer: NetworkObserver,
  predicate: (entry: NetworkEntry) => boolean,
  timeoutMs = 10_000,
): Promise<NetworkEntry> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`no such request started within ${timeoutMs} ms`));
    }, timeoutMs);
    const off = observer.on('request', (entry) => {
      if (!predicate(entry)) return;
      clearTimeout(timer);
      off();
      resolve(entry);
    });
  });
}

/** Entries whose URL path (without the query) is `path`. */
export function byPath(observer: NetworkObserver, path: string): NetworkEntry[] {
  return observer.entries().filter((e) => pathOf(e.url) === path);
}

export function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
