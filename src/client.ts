import { inspect } from 'node:util';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { ConfigurationError } from './errors.js';
import { type Clock, systemClock } from './internal/clock.js';
import { readEnv } from './internal/env.js';
import { Transport } from './internal/transport.js';
import { Browsers } from './resources/browsers.js';
import { Profiles } from './resources/profiles.js';
import { Runs } from './resources/runs.js';
import { Sessions } from './resources/sessions.js';
import { Skills } from './resources/skills.js';
import { VERSION } from './version.js';

/** Options of {@link CloudBrowserClient}. Each falls back to its environment variable, then its default. */
export interface ClientOptions {
  /** The API key. @default process.env.CLOUDBROWSER_API_KEY */
  apiKey?: string;
  /**
   * The service host, such as `https://service.example`; each resource adds its `/api/vN` prefix.
   * `'local'` starts the local service (`cloudbrowser/local`) in this process on first use, with real
   * Chromium, and closes it at exit; no key is needed then.
   * @default process.env.CLOUDBROWSER_BASE_URL
   */
  baseUrl?: string;
  /** The header that carries the key. @default process.env.CLOUDBROWSER_API_KEY_HEADER ?? 'X-Service-API-Key' */
  apiKeyHeader?: string;
  /** Time limit of one attempt of one request, in milliseconds. @default 60_000 */
  timeoutMs?: number;
  /** How often a failed safe request (GET, the stop action) is repeated. @default 2 */
  maxRetries?: number;
  /** The undici dispatcher to send with: a proxy agent, a custom pool. @default undici's global dispatcher */
  dispatcher?: Dispatcher;
  /** The time source of retry backoff and polling; tests pass one that does not really wait. */
  clock?: Clock;
}

const OptionsSchema = z.object({
  apiKey: z.string().min(1, 'must not be empty'),
  baseUrl: z
    .string()
    .regex(/^https?:\/\/[^/?#]+[^?#]*$/, 'must be an http(s) URL without query or fragment')
    .transform((url) => url.replace(/\/+$/, '')),
  apiKeyHeader: z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name'),
  timeoutMs: z.number().int('must be a whole number').positive(),
  maxRetries: z.number().int('must be a whole number').min(0).max(10),
});

/** The `baseUrl` that means: start the local service in this process. */
const LOCAL = 'local';

const ENV = {
  apiKey: 'CLOUDBROWSER_API_KEY',
  baseUrl: 'CLOUDBROWSER_BASE_URL',
  apiKeyHeader: 'CLOUDBROWSER_API_KEY_HEADER',
} as const;

/**
 * The typed REST client of the service.
 *
 * @example
 * const client = new CloudBrowserClient(); // reads CLOUDBROWSER_API_KEY and CLOUDBROWSER_BASE_URL
 * const browser = await client.browsers.create({ proxyCountryCode: 'de' });
 * try { ... } finally { await client.browsers.stop(browser.id); }
 */
export class CloudBrowserClient {
  /** `/api/v4/browsers`: create, get, list, stop. */
  readonly browsers: Browsers;
  /** `/api/v4/profiles`: create, get, list, update, delete. */
  readonly profiles: Profiles;
  /** `/api/v4/runs`: Agent runs: create, get, status, cancel, events, wait. */
  readonly runs: Runs;
  /** `/api/v3/sessions`: v3 Agent tasks: create, get, wait. */
  readonly sessions: Sessions;
  /** `/api/v2/skills`: legacy skills: get, list, rollback. */
  readonly skills: Skills;
  /** The service host this client talks to. */
  readonly baseUrl: string;
  readonly apiKeyHeader: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? readEnv(ENV.apiKey);
    const baseUrl = options.baseUrl ?? readEnv(ENV.baseUrl);
    if (baseUrl === undefined)
      throw missing('baseUrl', ENV.baseUrl, 'the service host, such as https://service.example');
    const local = baseUrl === LOCAL;
    if (apiKey === undefined && !local) throw missing('apiKey', ENV.apiKey, 'your API key');
    const parsed = OptionsSchema.safeParse({
      // The embedded service has its own URL and key, known once it runs.
      apiKey: local ? 'embedded' : apiKey,
      baseUrl: local ? 'http://embedded' : baseUrl,
      apiKeyHeader: options.apiKeyHeader ?? readEnv(ENV.apiKeyHeader) ?? 'X-Service-API-Key',
      timeoutMs: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 2,
    });
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
      throw new ConfigurationError(`CloudBrowserClient: invalid options: ${problems}`);
    }
    const config = parsed.data;
    this.baseUrl = local ? LOCAL : config.baseUrl;
    this.apiKeyHeader = config.apiKeyHeader;
    this.timeoutMs = config.timeoutMs;
    this.maxRetries = config.maxRetries;
    // The embedded service is imported only when asked for, so the root entry stays light.
    const embedded = () => import('./local/embedded.js').then((m) => m.embeddedService());
    const transport = new Transport({
      baseUrl: local ? async () => (await embedded()).baseUrl : async () => config.baseUrl,
      apiKey: local ? async () => (await embedded()).apiKey : async () => config.apiKey,
      apiKeyHeader: local ? 'X-Service-API-Key' : config.apiKeyHeader,
      timeoutMs: config.timeoutMs,
      maxRetries: config.maxRetries,
      dispatcher: options.dispatcher,
      clock: options.clock ?? systemClock,
      userAgent: `cloudbrowser/${VERSION} node/${process.versions.node}`,
    });
    this.browsers = new Browsers(transport);
    this.profiles = new Profiles(transport);
    this.runs = new Runs(transport);
    this.sessions = new Sessions(transport);
    this.skills = new Skills(transport);
  }

  /** What the client shows of itself: never the key. */
  toJSON(): Record<string, unknown> {
    const { baseUrl, apiKeyHeader, timeoutMs, maxRetries } = this;
    return { baseUrl, apiKeyHeader, timeoutMs, maxRetries };
  }

  [inspect.custom](): string {
    return `CloudBrowserClient ${inspect(this.toJSON())}`;
  }
}

function missing(option: string, env: string, what: string): ConfigurationError {
  return new ConfigurationError(
    `CloudBrowserClient: no ${option}: pass { ${option} } (${what}) or set the environment variable ${env}`,
  );
}
