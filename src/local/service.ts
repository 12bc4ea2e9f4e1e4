import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, open, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { homedir, platform } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { z } from 'zod';
import { type ClientOptions, CloudBrowserClient } from '../client.js';
import { ConfigurationError } from '../errors.js';
import { readEnv } from '../internal/env.js';
import { countryCode } from '../internal/schemas.js';
import { type AgentDriver, AgentEngine } from './agent.js';
import { agentRoutes } from './agent-routes.js';
import { BrowserPool } from './browser-pool.js';
import { proxyCdp } from './cdp-proxy.js';
import { findChromium } from './chromium-path.js';
import { HttpError, sendJson } from './http.js';
import { liveRoutes } from './live.js';
import { toMicros } from './money.js';
import { match, restRoutes } from './routes.js';
import { type LocalSkillSeed, SkillStore, skillSeedsFrom } from './skills.js';
import { Store } from './store.js';
import { type LocalVaultOptions, vaultFrom } from './vault.js';

/** Options of {@link startLocalService}. */
export interface LocalServiceOptions {
  /** The address to listen on. A non-loopback address also needs `allowRemote: true`. @default '127.0.0.1' */
  host?: string;
  /** Allows a `host` other than loopback: the service then serves browsers to your network. @default false */
  allowRemote?: boolean;
  /** The port; 0 picks a free one. @default 0 */
  port?: number;
  /**
   * Where profiles and state live. @default `$XDG_DATA_HOME/cloudbrowser` (`~/.local/share/cloudbrowser`)
   * on Linux, `~/Library/Application Support/cloudbrowser` on macOS
   */
  dataDir?: string;
  /** The keys the service accepts. @default one generated key, `cb_<random>` */
  apiKeys?: string[];
  /** The header that carries the key. @default 'X-Service-API-Key' */
  apiKeyHeader?: string;
  /** The Chromium to run. @default found: `CHROME_PATH`, system locations, Playwright's cache, `@sparticuz/chromium` */
  chromePath?: string;
  /** Active browsers at once; one more is a 429. @default 4 */
  maxBrowsers?: number;
  /** Upstream HTTP proxies by lower-case country code, such as `{ de: 'http://user:pass@proxy:8080' }`. */
  proxies?: Record<string, string>;
  /** Price of one browser hour, a decimal string. @default '0.06' */
  hourlyRate?: string;
  /** How long one minute of `timeout` and billing lasts, in ms; tests shorten it. @default 60_000 */
  minuteMs?: number;
  /**
   * Whether the running service keeps the process alive. The embedded service behind
   * `CLOUDBROWSER_BASE_URL=local` passes false and closes itself before the process exits. @default true
   */
  keepAlive?: boolean;
  /** Where lifecycle log lines go; `false` for none. @default stderr when `CLOUDBROWSER_LOG` is set, else none */
  log?: ((line: string) => void) | false;
  /**
   * Carries out agent runs (`/api/v4/runs`, `/api/v3/sessions`) in a real local browser. No model
   * runs locally: without a driver, every run fails with "no agent driver configured".
   */
  agent?: AgentDriver;
  /** The project's password-manager integrations, whose items runs may type as secrets. @default none */
  vault?: LocalVaultOptions;
  /** v2 skills to start with; each is added once and then kept, with its versions, in the data dir. */
  skills?: LocalSkillSeed[];
}

/** A running local service. */
export interface LocalService extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: the `baseUrl` for a client. */
  readonly baseUrl: string;
  /** The first accepted key. */
  readonly apiKey: string;
  /** A client for this service; options override the base URL and key it fills in. */
  client(options?: ClientOptions): CloudBrowserClient;
  /** Stops every browser (saving profiles), then stops listening. Idempotent. */
  close(): Promise<void>;
}

const OptionsSchema = z.object({
  host: z.string().default('127.0.0.1'),
  allowRemote: z.boolean().default(false),
  port: z.number().int().min(0).max(65535).default(0),
  dataDir: z.string().min(1).optional(),
  apiKeys: z.array(z.string().min(8, 'must be at least 8 characters')).min(1).optional(),
  apiKeyHeader: z.string().default('X-Service-API-Key'),
  chromePath: z.string().optional(),
  maxBrowsers: z.number().int().positive().default(4),
  proxies: z
    .record(countryCode, z.url({ protocol: /^http$/, error: 'must be an http:// proxy URL' }))
    .default({}),
  hourlyRate: z
    .string()
    .regex(/^\d+(\.\d{1,6})?$/, 'must be a decimal such as "0.06"')
    .default('0.06'),
  minuteMs: z.number().int().positive().default(60_000),
  keepAlive: z.boolean().default(true),
});

/**
 * Starts the service's REST interface for browsers and profiles on this machine, backed by real
 * Chromium: offline, free, the same contract.
 *
 * @example
 * await using service = await startLocalService();
 * const client = service.client();
 */
export async function startLocalService(options: LocalServiceOptions = {}): Promise<LocalService> {
  const parsed = OptionsSchema.safeParse({ ...options, log: undefined });
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
    throw new ConfigurationError(`startLocalService: invalid options: ${problems}`);
  }
  const config = parsed.data;
  if (!config.allowRemote && !isLoopback(config.host)) {
    throw new ConfigurationError(
      `startLocalService: host ${config.host} is not loopback; pass allowRemote: true to serve browsers to the network`,
    );
  }
  const log = logger(options.log);
  const vault = vaultFrom(options.vault);
  const skillSeeds = skillSeedsFrom(options.skills);
  const dataDir = config.dataDir ?? defaultDataDir();
  await mkdir(dataDir, { recursive: true });
  const releaseLock = await lockDataDir(dataDir);
  const apiKeys = config.apiKeys ?? [`cb_${randomBytes(24).toString('base64url')}`];
  const keyDigests = apiKeys.map(digest);
  const store = await Store.open(dataDir);
  await recoverAfterCrash(store, log);

  let chromePath: Promise<string> | undefined;
  const pool = new BrowserPool({
    store,
    chromePath: () => (chromePath ??= findChromium(config.chromePath)),
    maxBrowsers: config.maxBrowsers,
    proxies: Object.fromEntries(Object.entries(config.proxies).map(([code, url]) => [code, upstreamOf(url)])),
    hourlyRateMicros: toMicros(config.hourlyRate),
    minuteMs: config.minuteMs,
    closeGraceMs: 5_000,
    keepAlive: config.keepAlive,
    log,
  });
  const agent = await AgentEngine.open({ pool, dataDir, driver: options.agent, log });
  const skills = await SkillStore.open(dataDir, skillSeeds);
  const rest = [...restRoutes(pool), ...agentRoutes(agent, vault), ...skills.routes()];
  const live = liveRoutes(pool);
  const headerName = config.apiKeyHeader.toLowerCase();

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => respondError(res, error, log));
  });
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => upgrade(req, socket, head));
  server.on('clientError', (_error, socket) => socket.destroy());
  if (!config.keepAlive) server.on('connection', (socket) => socket.unref());

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = `http://${req.headers.host ?? `${config.host}:${port}`}`;
    const url = new URL(req.url ?? '/', origin);
    const method = req.method ?? 'GET';
    if (/^\/(cdp|live|json)\//.test(url.pathname)) {
      // The per-browser secret in the path is the credential here, as in a cloud cdpUrl.
      const { handler, params } = match(live, method, url.pathname);
      return handler({ req, res, url, origin, params });
    }
    const key = req.headers[headerName];
    if (typeof key !== 'string' || !keyDigests.some((d) => timingSafeEqual(d, digest(key)))) {
      throw new HttpError(401, `Missing or invalid API key in the ${config.apiKeyHeader} header`);
    }
    const { handler, params } = match(rest, method, url.pathname);
    await handler({ req, res, url, origin, params });
  }

  function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const found = /^\/cdp\/([\w-]+)(\/devtools\/(?:browser|page)\/[\w-]+)$/.exec(req.url ?? '');
    const target = found ? pool.bySecret(found[1] as string) : undefined;
    if (!found || !target) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    const { record, chromium } = target;
    let connection: { close(): void } | undefined;
    void proxyCdp({
      request: req,
      socket,
      head,
      upstreamUrl: `ws://127.0.0.1:${chromium.port}${found[2]}`,
      onConnect: () => pool.connected(record.id, { close: () => connection?.close() }),
      onCloseRefused: () =>
        log(
          `browser ${record.id}: a client asked Chromium to close; ignored, only the stop action stops a browser`,
        ),
    }).then((opened) => {
      connection = opened;
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  if (!config.keepAlive) server.unref();
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const baseUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  log(`local service listening on ${baseUrl} (data in ${dataDir})`);

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await agent.close();
      await pool.stopAll('service closed');
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await store.flush();
      await skills.flush();
      await releaseLock();
      log('local service closed');
    })());

  return {
    baseUrl,
    apiKey: apiKeys[0] as string,
    client: (clientOptions = {}) =>
      new CloudBrowserClient({
        apiKeyHeader: config.apiKeyHeader,
        ...clientOptions,
        baseUrl,
        apiKey: apiKeys[0] as string,
      }),
    close,
    [Symbol.asyncDispose]: close,
  };
}

function respondError(res: ServerResponse, error: unknown, log: (line: string) => void): void {
  if (error instanceof HttpError) {
    sendJson(res, error.status, { detail: error.detail }, error.headers);
    return;
  }
  log(`internal error: ${error instanceof Error ? error.message : String(error)}`);
  sendJson(res, 500, { detail: 'Internal Server Error' });
}

/** Browsers that were active when the service died are stopped now, and no Chromium of theirs survives. */
async function recoverAfterCrash(store: Store, log: (line: string) => void): Promise<void> {
  let changed = false;
  for (const record of store.browsers.values()) {
    if (record.status !== 'active') continue;
    if (record.pid !== null && record.userDataDir !== null && isOurChromium(record.pid, record.userDataDir)) {
      try {
        process.kill(-record.pid, 'SIGKILL');
      } catch {
        process.kill(record.pid, 'SIGKILL');
      }
    }
    if (record.userDataDir) await rm(record.userDataDir, { recursive: true, force: true }).catch(() => {});
    record.status = 'stopped';
    record.finishedAt = new Date().toISOString();
    record.stopReason = 'the service restarted while it was active';
    record.costMicros = record.chargedMicros;
    record.pid = null;
    record.userDataDir = null;
    changed = true;
    log(`browser ${record.id} stopped (the service restarted while it was active)`);
  }
  if (changed) await store.save();
}

function isOurChromium(pid: number, userDataDir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(userDataDir);
  } catch {
    return false;
  }
}

/** One service per data dir, in this process or another: a second would overwrite the first one's state. */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const path = join(dataDir, 'service.lock');
  for (;;) {
    try {
      const file = await open(path, 'wx');
      await file.writeFile(String(process.pid));
      await file.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(await readFile(path, 'utf8').catch(() => ''));
    if (holder && isAlive(holder)) {
      throw new ConfigurationError(
        `startLocalService: the data dir ${dataDir} is in use by a local service in process ${holder}; pass another dataDir`,
      );
    }
    // The holder died without cleaning up: the lock is stale.
    await rm(path, { force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function defaultDataDir(): string {
  if (platform() === 'darwin') return join(homedir(), 'Library', 'Application Support', 'cloudbrowser');
  return join(readEnv('XDG_DATA_HOME') ?? join(homedir(), '.local', 'share'), 'cloudbrowser');
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

function digest(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

function upstreamOf(url: string) {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 80),
    username: parsed.username ? decodeURIComponent(parsed.username) : undefined,
    password: parsed.password ? decodeURIComponent(parsed.password) : undefined,
  };
}

function logger(option: LocalServiceOptions['log']): (line: string) => void {
  if (option === false) return () => {};
  if (option) return option;
  return readEnv('CLOUDBROWSER_LOG') ? (line) => process.stderr.write(`[cloudbrowser] ${line}\n`) : () => {};
}
