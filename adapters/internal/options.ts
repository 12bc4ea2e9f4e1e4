/** The options every adapter takes, their defaults and validation, and the client they resolve to. */
import {
  type BrowserCreateParams,
  type ClientOptions,
  CloudBrowserClient,
  ConfigurationError,
  type ObserveNetworkOptions,
} from 'cloudbrowser';
import { z } from 'zod';
import type { ServiceAccess } from './supervisor.js';

/** How `autoReconnect` retries after an unexpected disconnect. */
export interface AutoReconnectOptions {
  /** Reconnect attempts after one disconnect before giving up. @default 3 */
  attempts?: number;
  /** Wait before the first attempt, in milliseconds; doubled before each further one. @default 500 */
  delayMs?: number;
}

/** Options of both `connectCloudBrowser` and `attachCloudBrowser`, whatever the framework. */
export interface CommonOptions {
  /**
   * The client to use, or options to make one with.
   * @default a client made from the environment: `CLOUDBROWSER_API_KEY`, `CLOUDBROWSER_BASE_URL`
   */
  client?: CloudBrowserClient | ClientOptions;
  /**
   * How long connecting the framework may take, in milliseconds: from the browser's `cdpUrl` to a
   * usable page. The create request has its own limit, the client's `timeoutMs`.
   * @default 30_000
   */
  connectTimeoutMs?: number;
  /**
   * Aborts the setup. Whatever was created by then is stopped before the returned promise rejects.
   * Aborting after the handle was returned does nothing: call `stop()`.
   */
  signal?: AbortSignal;
  /**
   * On a disconnect the handle did not ask for (a network drop, the framework's browser object being
   * closed), re-read the browser's `cdpUrl` and connect again to the same browser. Never creates a
   * browser. Re-read `page`, `context` and `browser` from the handle after a reconnect: the old
   * objects belong to the old connection. `true` means the defaults of {@link AutoReconnectOptions}.
   * @default false
   */
  autoReconnect?: boolean | AutoReconnectOptions;
  /**
   * Also start a small watchdog process that stops the browser if this process dies without warning
   * (SIGKILL, out of memory), when no handler can run. It gets the service address, the API key and
   * the browser id over IPC, never through its command line or environment, and exits when nothing is
   * left to watch. It needs the API key: from `client` options, or `CLOUDBROWSER_API_KEY` when
   * `client` is a client instance. Not needed, and not started, for `CLOUDBROWSER_BASE_URL=local`,
   * whose Chromium ends with the process anyway.
   * @default false
   */
  supervise?: boolean;
  /**
   * Also record the browser's network traffic with {@link observeNetwork} (its own CDP connection,
   * independent of the framework), as `handle.network`; it stops with the handle. `true` means the
   * observer's defaults: metadata only, no headers or bodies, secrets redacted, 10,000 entries.
   * @default false
   */
  network?: boolean | ObserveNetworkOptions;
}

/** Options of `connectCloudBrowser`: the common ones and the service's browser create fields. */
export interface ConnectOptions extends CommonOptions, BrowserCreateParams {}

/** Options of `attachCloudBrowser`. */
export interface AttachOptions extends CommonOptions {
  /**
   * Take ownership: `stop()` and disposal then stop the browser, and the process guards (and
   * `supervise`) cover it. Without it the handle only connects and disconnects.
   * @default false
   */
  own?: boolean;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

const SettingsSchema = z.strictObject({
  connectTimeoutMs: z.number().int('must be a whole number').positive().default(DEFAULT_CONNECT_TIMEOUT_MS),
  autoReconnect: z
    .union([
      z.boolean(),
      z.strictObject({
        attempts: z.number().int('must be a whole number').min(1).max(100).default(3),
        delayMs: z.number().int('must be a whole number').min(0).max(600_000).default(500),
      }),
    ])
    .default(false)
    .transform((value) =>
      value === false ? undefined : value === true ? { attempts: 3, delayMs: 500 } : value,
    ),
  supervise: z.boolean().default(false),
  own: z.boolean().default(false),
});

/** The adapter options after defaults and validation. */
export type Settings = z.output<typeof SettingsSchema>;

export function settingsOf(operation: string, options: Record<string, unknown>): Settings {
  const parsed = SettingsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
  throw new ConfigurationError(`${operation}: invalid options: ${problems}`);
}

/** The client the `client` option names: the instance itself, or one made from the options (or the environment). */
export function clientOf(option: CommonOptions['client']): CloudBrowserClient {
  return isClient(option) ? option : new CloudBrowserClient(option);
}

/** Whether `value` is a client rather than client options; duck-typed, as two copies of the package may meet. */
export function isClient(value: CommonOptions['client']): value is CloudBrowserClient {
  return (
    value instanceof CloudBrowserClient ||
    (typeof value === 'object' && value !== null && 'browsers' in value)
  );
}

/** The API key as far as the adapter can know it: a client instance keeps its own to itself. */
export function readApiKey(option: CommonOptions['client']): string | undefined {
  const fromOptions = isClient(option) ? undefined : option?.apiKey;
  return fromOptions ?? (process.env.CLOUDBROWSER_API_KEY?.trim() || undefined);
}

/** What the watchdog needs, or undefined when there is nothing for it to do. */
export function serviceAccess(
  operation: string,
  option: CommonOptions['client'],
  client: CloudBrowserClient,
): ServiceAccess | undefined {
  if (client.baseUrl === 'local') return undefined;
  const apiKey = readApiKey(option);
  if (apiKey === undefined) {
    throw new ConfigurationError(
      `${operation}: supervise needs the API key for its watchdog, and a client instance does not reveal its key: pass client options ({ client: { apiKey, baseUrl } }) or set CLOUDBROWSER_API_KEY`,
    );
  }
  return { baseUrl: client.baseUrl, apiKey, apiKeyHeader: client.apiKeyHeader };
}

/** Splits adapter options from the create fields, which go to the service as they are. */
export function split(options: ConnectOptions): { common: CommonOptions; create: BrowserCreateParams } {
  const { client, connectTimeoutMs, signal, autoReconnect, supervise, network, ...create } = options;
  const common: CommonOptions = {};
  if (client !== undefined) common.client = client;
  if (connectTimeoutMs !== undefined) common.connectTimeoutMs = connectTimeoutMs;
  if (signal !== undefined) common.signal = signal;
  if (autoReconnect !== undefined) common.autoReconnect = autoReconnect;
  if (supervise !== undefined) common.supervise = supervise;
  if (network !== undefined) common.network = network;
  return { common, create };
}
