/**
 * `cloudbrowser/puppeteer`: a cloud browser driven by Puppeteer, with a handle that always stops
 * billing. Works with `puppeteer-core` or `puppeteer` (optional peer dependencies), loaded only
 * when a browser is connected.
 *
 * @example
 * import { connectCloudBrowser } from 'cloudbrowser/puppeteer';
 *
 * await using cb = await connectCloudBrowser({ proxyCountryCode: 'de' });
 * await cb.page.goto('https://example.com');
 */

import type { ObserveNetworkOptions } from 'cloudbrowser';
import type { Browser, Page, ConnectOptions as PuppeteerLibConnectOptions } from 'puppeteer-core';
import { type Driver, importFirst } from './internal/connect.js';
import { CloudBrowserHandle, openAttached, openCreated, type WithNetwork } from './internal/handle.js';
import type { AttachOptions, ConnectOptions } from './internal/options.js';

export type { AutoReconnectOptions } from './internal/options.js';

/** The part of a Puppeteer module the adapter uses: `import puppeteer from 'puppeteer'` or the module itself. */
export interface PuppeteerModule {
  connect(options: PuppeteerLibConnectOptions): Promise<Browser>;
}

/** Options only the Puppeteer adapter takes. */
export interface PuppeteerOptions {
  /**
   * The Puppeteer to connect with, such as `import puppeteer from 'puppeteer'`.
   * @default `puppeteer-core` if it is installed, else `puppeteer`
   */
  puppeteer?: PuppeteerModule;
  /**
   * More options for `puppeteer.connect` (`slowMo`, `protocolTimeout`, `headers`, ...). The endpoint
   * is always the browser's own WebSocket, and `defaultViewport` defaults to null, so pages keep the
   * cloud browser's window size.
   * @default { defaultViewport: null }
   */
  connectOptions?: Omit<PuppeteerLibConnectOptions, 'browserURL' | 'browserWSEndpoint' | 'transport'>;
}

/** Options of {@link connectCloudBrowser}: the browser create fields, the client and the connect settings. */
export interface PuppeteerConnectOptions extends ConnectOptions, PuppeteerOptions {}

/** Options of {@link attachCloudBrowser}. */
export interface PuppeteerAttachOptions extends AttachOptions, PuppeteerOptions {}

interface Connection {
  browser: Browser;
  page: Page;
}

/**
 * A cloud browser connected with Puppeteer. `stop()` (or leaving an `await using` block)
 * disconnects and stops it; a dropped connection, `browser.disconnect()` or `browser.close()`
 * does not.
 */
export class PuppeteerCloudBrowser extends CloudBrowserHandle<Connection> {
  /** The Puppeteer browser, connected to the cloud browser's WebSocket. */
  get browser(): Browser {
    return this.connection.browser;
  }

  /** The browser's first page, opened if there was none. */
  get page(): Page {
    return this.connection.page;
  }
}

/**
 * Creates a cloud browser and connects Puppeteer to it. If the connect fails, times out or is
 * aborted, the browser is stopped before the error is thrown.
 *
 * @example
 * await using cb = await connectCloudBrowser({ proxyCountryCode: 'de', timeout: 10 });
 * await cb.page.goto('https://example.com');
 */
export async function connectCloudBrowser(
  options: PuppeteerConnectOptions & { network: true | ObserveNetworkOptions },
): Promise<WithNetwork<PuppeteerCloudBrowser>>;
export async function connectCloudBrowser(options?: PuppeteerConnectOptions): Promise<PuppeteerCloudBrowser>;
export async function connectCloudBrowser(
  options: PuppeteerConnectOptions = {},
): Promise<PuppeteerCloudBrowser> {
  const { puppeteer, connectOptions, ...rest } = options;
  // Loaded before anything is created: a missing framework costs no browser.
  const framework = puppeteer ?? (await loadPuppeteer());
  return openCreated(driver(framework, connectOptions), rest, (init) => new PuppeteerCloudBrowser(init));
}

/**
 * Connects Puppeteer to a browser that already runs. The handle does not own it, so `stop()`
 * only disconnects, unless `own: true`.
 */
export async function attachCloudBrowser(
  browserId: string,
  options: PuppeteerAttachOptions & { network: true | ObserveNetworkOptions },
): Promise<WithNetwork<PuppeteerCloudBrowser>>;
export async function attachCloudBrowser(
  browserId: string,
  options?: PuppeteerAttachOptions,
): Promise<PuppeteerCloudBrowser>;
export async function attachCloudBrowser(
  browserId: string,
  options: PuppeteerAttachOptions = {},
): Promise<PuppeteerCloudBrowser> {
  const { puppeteer, connectOptions, ...rest } = options;
  const framework = puppeteer ?? (await loadPuppeteer());
  return openAttached(
    driver(framework, connectOptions),
    browserId,
    rest,
    (init) => new PuppeteerCloudBrowser(init),
  );
}

function driver(
  puppeteer: PuppeteerModule,
  connectOptions: PuppeteerOptions['connectOptions'],
): Driver<Connection> {
  return {
    name: 'Puppeteer',
    enforcesDeadline: false,
    headers: connectOptions?.headers,
    async connect(browserWSEndpoint) {
      const browser = await puppeteer.connect({
        defaultViewport: null,
        ...connectOptions,
        browserWSEndpoint,
      });
      try {
        const page = (await browser.pages())[0] ?? (await browser.newPage());
        return { browser, page };
      } catch (error) {
        await browser.disconnect().catch(() => {});
        throw error;
      }
    },
    async disconnect({ browser }) {
      await browser.disconnect();
    },
    onDisconnected({ browser }, listener) {
      browser.once('disconnected', listener);
    },
  };
}

/** `puppeteer-core`, else `puppeteer`: whichever the project installed. */
async function loadPuppeteer(): Promise<PuppeteerModule> {
  const loaded = await importFirst<Partial<PuppeteerModule> & { default?: PuppeteerModule }>(
    ['puppeteer-core', 'puppeteer'],
    'cloudbrowser/puppeteer needs Puppeteer: npm install puppeteer-core (or puppeteer), or pass { puppeteer }',
  );
  const connect = loaded.default?.connect ?? loaded.connect;
  if (connect === undefined) throw new TypeError('the installed Puppeteer has no connect()');
  const puppeteer = loaded.default ?? (loaded as PuppeteerModule);
  return { connect: (options) => connect.call(puppeteer, options) };
}
