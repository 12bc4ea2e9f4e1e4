/**
 * `cloudbrowser/playwright`: a cloud browser driven by Playwright, with a handle that always stops
 * billing. Works with `playwright-core` or `playwright` (optional peer dependencies), loaded only
 * when a browser is connected.
 *
 * @example
 * import { connectCloudBrowser } from 'cloudbrowser/playwright';
 *
 * await using cb = await connectCloudBrowser({ profileId, proxyCountryCode: 'de' });
 * await cb.page.goto('https://example.com');
 * // leaving the block disconnects Playwright and stops the browser: billing ends, the profile is saved
 */

import type { ObserveNetworkOptions } from 'cloudbrowser';
import type { Browser, BrowserContext, ConnectOverCDPOptions, Page } from 'playwright-core';
import { type Driver, importFirst } from './internal/connect.js';
import {
  CloudBrowserHandle,
  type HandleInit,
  openAttached,
  openCreated,
  type WithNetwork,
} from './internal/handle.js';
import type { AttachOptions, ConnectOptions } from './internal/options.js';

export type { AutoReconnectOptions } from './internal/options.js';

/** The part of a Playwright module the adapter uses: `import * as playwright from 'playwright'`. */
export interface PlaywrightModule {
  chromium: { connectOverCDP(endpointURL: string, options?: ConnectOverCDPOptions): Promise<Browser> };
}

/** Options only the Playwright adapter takes. */
export interface PlaywrightOptions {
  /**
   * The Playwright to connect with, such as `import * as playwright from 'playwright'`, or
   * `{ chromium }` from `@playwright/test`.
   * @default `playwright-core` if it is installed, else `playwright`
   */
  playwright?: PlaywrightModule;
  /**
   * More options for `chromium.connectOverCDP` (`headers`, `slowMo`, ...). Its `timeout` is
   * `connectTimeoutMs`.
   * @default {}
   */
  connectOptions?: Omit<ConnectOverCDPOptions, 'timeout' | 'endpointURL'>;
}

/** Options of {@link connectCloudBrowser}: the browser create fields, the client and the connect settings. */
export interface PlaywrightConnectOptions extends ConnectOptions, PlaywrightOptions {}

/** Options of {@link attachCloudBrowser}. */
export interface PlaywrightAttachOptions extends AttachOptions, PlaywrightOptions {}

interface Connection {
  browser: Browser;
  context: BrowserContext;
  page: Page;
}

/**
 * A cloud browser connected with Playwright. `stop()` (or leaving an `await using` block)
 * disconnects and stops it; a dropped connection, or `browser.close()`, does not.
 */
export class PlaywrightCloudBrowser extends CloudBrowserHandle<Connection> {
  /** The Playwright browser, connected over CDP. */
  get browser(): Browser {
    return this.connection.browser;
  }

  /** The browser's default context: the one a profile's cookies live in. */
  get context(): BrowserContext {
    return this.connection.context;
  }

  /** The first page of the default context, opened if there was none. */
  get page(): Page {
    return this.connection.page;
  }
}

/**
 * Creates a cloud browser and connects Playwright to it. If the connect fails, times out or is
 * aborted, the browser is stopped before the error is thrown.
 *
 * @example
 * await using cb = await connectCloudBrowser({ proxyCountryCode: 'de', timeout: 10 });
 * await cb.page.goto('https://example.com');
 */
export async function connectCloudBrowser(
  options: PlaywrightConnectOptions & { network: true | ObserveNetworkOptions },
): Promise<WithNetwork<PlaywrightCloudBrowser>>;
export async function connectCloudBrowser(
  options?: PlaywrightConnectOptions,
): Promise<PlaywrightCloudBrowser>;
export async function connectCloudBrowser(
  options: PlaywrightConnectOptions = {},
): Promise<PlaywrightCloudBrowser> {
  const { playwright, connectOptions, ...rest } = options;
  // Loaded before anything is created: a missing framework costs no browser.
  const framework = playwright ?? (await loadPlaywright());
  return openCreated(driver(framework, connectOptions), rest, (init) => new PlaywrightCloudBrowser(init));
}

/**
 * Connects Playwright to a browser that already runs. The handle does not own it, so `stop()`
 * only disconnects, unless `own: true`.
 *
 * @example
 * await using cb = await attachCloudBrowser(browserId);
 */
export async function attachCloudBrowser(
  browserId: string,
  options: PlaywrightAttachOptions & { network: true | ObserveNetworkOptions },
): Promise<WithNetwork<PlaywrightCloudBrowser>>;
export async function attachCloudBrowser(
  browserId: string,
  options?: PlaywrightAttachOptions,
): Promise<PlaywrightCloudBrowser>;
export async function attachCloudBrowser(
  browserId: string,
  options: PlaywrightAttachOptions = {},
): Promise<PlaywrightCloudBrowser> {
  const { playwright, connectOptions, ...rest } = options;
  const framework = playwright ?? (await loadPlaywright());
  return openAttached(
    driver(framework, connectOptions),
    browserId,
    rest,
    (init: HandleInit<Connection>) => new PlaywrightCloudBrowser(init),
  );
}

function driver(
  { chromium }: PlaywrightModule,
  connectOptions: PlaywrightOptions['connectOptions'],
): Driver<Connection> {
  return {
    name: 'Playwright',
    enforcesDeadline: true,
    headers: connectOptions?.headers,
    async connect(webSocketUrl, { deadline }) {
      const timeout = Math.max(1, deadline - Date.now());
      const browser = await chromium.connectOverCDP(webSocketUrl, { ...connectOptions, timeout });
      try {
        const context = browser.contexts()[0] ?? (await browser.newContext());
        const page = context.pages()[0] ?? (await context.newPage());
        return { browser, context, page };
      } catch (error) {
        await browser.close().catch(() => {});
        throw error;
      }
    },
    async disconnect({ browser }) {
      // Over CDP, close() only disconnects; the service's stop action is what stops the browser.
      await browser.close();
    },
    onDisconnected({ browser }, listener) {
      browser.once('disconnected', listener);
    },
  };
}

/** `playwright-core`, else `playwright`: whichever the project installed. */
function loadPlaywright(): Promise<PlaywrightModule> {
  return importFirst<PlaywrightModule>(
    ['playwright-core', 'playwright'],
    'cloudbrowser/playwright needs Playwright: npm install playwright-core (or playwright), or pass { playwright }',
  );
}
