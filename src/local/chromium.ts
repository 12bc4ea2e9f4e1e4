import { type ChildProcess, spawn } from 'node:child_process';
import { readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { ChromiumLaunchError } from '../errors.js';
import { type CdpListener, CdpPipe } from './cdp-pipe.js';

export type { CdpListener } from './cdp-pipe.js';

/** How one Chromium is started. */
export interface LaunchOptions {
  /** The Chromium or Chrome executable, for example from `findChromium()`. */
  executablePath: string;
  /** The profile folder, fresh for each browser and created by the caller. Chromium owns it until it has exited. */
  userDataDir: string;
  /**
   * Proxy for every request, such as `http://127.0.0.1:1234`. Never with credentials: Chromium
   * ignores them there, and every process listing would show them. Run an auth-injecting
   * forwarder and point this at it. @default direct connections
   */
  proxyServer?: string;
  /**
   * Whether loopback destinations (`localhost`, `127.0.0.1`, `[::1]`) bypass {@link proxyServer},
   * as Chromium does by default: a page on the user's own dev server must still load when the
   * browser routes the web through a country proxy, and an upstream proxy could not reach it
   * anyway. `false` adds `--proxy-bypass-list=<-loopback>`, for tests whose upstream proxy and
   * test pages are both on loopback and must see the traffic. Ignored without `proxyServer`.
   * @default true
   */
  proxyBypassLoopback?: boolean;
  /** Window size in CSS pixels. @default Chromium's own (800×600 headless) */
  windowSize?: { width: number; height: number };
  /** New headless mode. @default true */
  headless?: boolean;
  /** More command-line switches, placed after the built-in ones. */
  extraArgs?: string[];
}

/** Options of {@link launchChromium}: the flags, plus how long to wait for it. */
export interface ChromiumLaunchOptions extends LaunchOptions {
  /** Aborting kills whatever was started; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** How long Chromium has to come up, in milliseconds. @default 30000 */
  timeoutMs?: number;
}

/** How a Chromium process ended. */
export interface ChromiumExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * One running Chromium, owned by this Node process. It cannot outlive it: Chromium exits when the
 * `--remote-debugging-pipe` pipe closes, which the kernel does when this process dies, even by SIGKILL.
 */
export interface ChromiumProcess {
  readonly pid: number;
  /** Chromium's own debugging port, bound to 127.0.0.1 only. */
  readonly port: number;
  /** `ws://127.0.0.1:<port>/devtools/browser/<uuid>` */
  readonly wsEndpoint: string;
  /** What Chromium's `/json/version` answered (`Browser`, `Protocol-Version`, `User-Agent`, …). */
  readonly version: Record<string, string>;
  /**
   * Sends a CDP command on the private control channel (the pipe), which no client of the port sees.
   * @throws {ChromiumProtocolError} when Chromium answers with an error or exits first.
   */
  send<T = unknown>(method: string, params?: object, sessionId?: string): Promise<T>;
  /** Listens to CDP events on the control channel (after e.g. `Target.setDiscoverTargets`); returns the unsubscribe. */
  on(event: 'cdp', listener: CdpListener): () => void;
  /** Settles when the browser process has exited (never rejects). */
  readonly exited: Promise<ChromiumExit>;
  /**
   * Closes Chromium gracefully (`Browser.close`, so cookies are flushed) and waits until it has
   * exited; after `graceMs` (default 5000) the whole process group is killed. Idempotent. After
   * it resolves, the user-data dir may be deleted.
   */
  close(options?: { graceMs?: number }): Promise<void>;
  /** Kills the whole process group now (SIGKILL). `exited` settles soon after. */
  kill(): void;
  /**
   * Lets Node exit while this Chromium runs (it then exits with Node, through the pipe). Calls in
   * flight (`send`, `close`) still hold Node until they settle.
   */
  unref(): void;
  /** Undoes {@link unref}: a running Chromium keeps Node alive (the default). */
  ref(): void;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * The exact command line for one Chromium, also used by the benchmark that launches Chromium bare.
 * It includes `--remote-debugging-pipe`: spawn it with `stdio[3]` and `stdio[4]` as pipes (Chromium
 * reads commands from fd 3 and writes to fd 4) and keep them open for as long as it should live.
 */
export function chromiumArgs(options: LaunchOptions): string[] {
  const args: string[] = [];
  if (options.headless ?? true) args.push('--headless=new');
  // Chromium refuses to start its sandbox as root.
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  args.push(
    // Without these, Chromium keeps calling Google (updates, sync, field trials), which is slow and
    // noisy on a closed network and never wanted for automation.
    '--disable-background-networking',
    '--disable-component-update',
    '--no-first-run',
    '--disable-sync',
    // No crash handler process (it uploads reports, and is one more process to outlive us).
    '--disable-breakpad',
    '--disable-gpu',
    '--no-default-browser-check',
    '--password-store=basic',
    '--use-mock-keychain',
    '--disable-dev-shm-usage',
    // The pipe is the control channel and the lifetime tie; the port is what clients connect to.
    '--remote-debugging-pipe',
    '--remote-debugging-address=127.0.0.1',
    '--remote-debugging-port=0',
    `--user-data-dir=${options.userDataDir}`,
  );
  if (options.windowSize) {
    const { width, height } = options.windowSize;
    if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
      throw new TypeError(`windowSize must be positive integers, got ${width}×${height}`);
    }
    args.push(`--window-size=${width},${height}`);
  }
  if (options.proxyServer) {
    if (/^[^/]*\/\/[^/]*@/.test(options.proxyServer)) {
      throw new TypeError('proxyServer must not contain credentials: run a forwarder that adds them');
    }
    args.push(`--proxy-server=${options.proxyServer}`);
    if (options.proxyBypassLoopback === false) args.push('--proxy-bypass-list=<-loopback>');
  }
  args.push(...(options.extraArgs ?? []), 'about:blank');
  return args;
}

/**
 * Starts one Chromium and resolves once its debugging port answers. On failure, timeout or abort,
 * everything started is killed and has exited before the promise rejects.
 *
 * @throws {ChromiumLaunchError} when it cannot be spawned, exits early or is not up in `timeoutMs`.
 */
export async function launchChromium(options: ChromiumLaunchOptions): Promise<ChromiumProcess> {
  const { signal, timeoutMs = 30_000 } = options;
  signal?.throwIfAborted();
  const child = spawn(options.executablePath, chromiumArgs(options), {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    // Its own process group, so the whole tree (zygotes, renderers, GPU) can be killed at once,
    // and a Ctrl-C in the terminal reaches only us: we close it properly.
    detached: true,
  });
  const chromium = new LaunchedChromium(child, options.executablePath, options.userDataDir);

  // One signal for "give up": the caller's abort or our deadline.
  const gaveUp = new AbortController();
  const onAbort = () => gaveUp.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () =>
      gaveUp.abort(
        new ChromiumLaunchError(`it did not come up within ${timeoutMs} ms`, {
          executablePath: options.executablePath,
          stderrTail: chromium.stderrTail(),
        }),
      ),
    timeoutMs,
  );
  try {
    await chromium.waitUntilReady(options.userDataDir, gaveUp.signal);
    return chromium;
  } catch (error) {
    await chromium.destroy();
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

const STDERR_LINES = 20;
/** Lines that every headless Linux box prints and that never explain a failure. */
const NOISE = /dbus\/(bus|object_proxy)\.cc|Fontconfig (error|warning)/;

class LaunchedChromium implements ChromiumProcess {
  readonly exited: Promise<ChromiumExit>;
  readonly #child: ChildProcess;
  readonly #executablePath: string;
  readonly #userDataDir: string;
  readonly #pid: number | undefined;
  readonly #writer: Socket;
  readonly #reader: Socket;
  readonly #stderr: Socket;
  readonly #pipe: CdpPipe;
  #stderrLines: string[] = [];
  #stderrPartial = '';
  #port = 0;
  #wsEndpoint = '';
  #version: Record<string, string> = {};
  #exit: ChromiumExit | undefined;
  #spawnError: Error | undefined;
  #closing: Promise<void> | undefined;
  #refd = true;
  #busy = 0;
  #onStderrLine: ((line: string) => void) | undefined;

  constructor(child: ChildProcess, executablePath: string, userDataDir: string) {
    this.#child = child;
    this.#executablePath = executablePath;
    this.#userDataDir = userDataDir;
    this.#pid = child.pid;
    this.#stderr = child.stdio[2] as Socket;
    this.#writer = child.stdio[3] as Socket;
    this.#reader = child.stdio[4] as Socket;
    // The pipes never hold Node by themselves; the child handle does, while it should (see #updateRef).
    for (const stream of [this.#stderr, this.#writer, this.#reader]) {
      stream.unref?.();
      // EPIPE and friends after Chromium died: the exit handling below reports that.
      stream.on('error', () => {});
    }
    this.#stderr.setEncoding('utf8');
    this.#stderr.on('data', (chunk: string) => this.#onStderr(chunk));
    this.#pipe = new CdpPipe({
      writer: this.#writer,
      reader: this.#reader,
      busy: (delta) => this.#hold(delta),
      goneReason: () => this.#goneReason(),
    });
    this.exited = new Promise<ChromiumExit>((resolve) => {
      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        // Helpers that outlive the browser process are useless: take the group down at once, while
        // its id cannot have been reused.
        try {
          this.#killGroup();
        } catch {
          // Not ours to report from an event handler; close() and the scan in tests would show a survivor.
        }
        this.#pipe.close();
        resolve(this.#exit);
      });
      child.on('error', (error) => {
        this.#spawnError = error;
        if (this.#pid === undefined) {
          this.#exit = { code: null, signal: null };
          this.#pipe.close();
          resolve(this.#exit);
        }
      });
    });
  }

  get pid(): number {
    return this.#pid ?? -1;
  }
  get port(): number {
    return this.#port;
  }
  get wsEndpoint(): string {
    return this.#wsEndpoint;
  }
  get version(): Record<string, string> {
    return this.#version;
  }

  send<T = unknown>(method: string, params: object = {}, sessionId?: string): Promise<T> {
    return this.#pipe.send<T>(method, params, sessionId);
  }

  on(_event: 'cdp', listener: CdpListener): () => void {
    return this.#pipe.on(listener);
  }

  close(options: { graceMs?: number } = {}): Promise<void> {
    const graceMs = options.graceMs ?? 5_000;
    this.#closing ??= this.#close(Number.isFinite(graceMs) && graceMs >= 0 ? graceMs : 5_000);
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  kill(): void {
    if (this.#exit === undefined) this.#killGroup();
  }

  unref(): void {
    this.#refd = false;
    this.#updateRef();
  }

  ref(): void {
    this.#refd = true;
    this.#updateRef();
  }

  /** The last meaningful stderr lines, without secrets. */
  stderrTail(): string {
    const lines = this.#stderrPartial ? [...this.#stderrLines, this.#stderrPartial] : this.#stderrLines;
    return lines.slice(-STDERR_LINES).map(redact).join('\n');
  }

  /** Resolves once the port answers `/json/version`; rejects on exit, spawn failure or `gaveUp`. */
  async waitUntilReady(userDataDir: string, gaveUp: AbortSignal): Promise<void> {
    const endpoint = await this.#waitForEndpoint(userDataDir, gaveUp);
    const url = new URL(endpoint);
    this.#port = Number(url.port);
    this.#wsEndpoint = endpoint;
    try {
      this.#version = await versionOf(this.#port, gaveUp);
    } catch (error) {
      if (gaveUp.aborted) throw gaveUp.reason;
      throw new ChromiumLaunchError(
        `its debugging port ${this.#port} did not answer /json/version: ${(error as Error).message}`,
        { executablePath: this.#executablePath, stderrTail: this.stderrTail() },
        { cause: error },
      );
    }
  }

  /** Kills the group and waits until the process has exited. For a launch that failed. */
  async destroy(): Promise<void> {
    this.#hold(+1);
    try {
      this.kill();
      await this.exited;
      await this.#waitForGroupGone();
      await this.#removeSingletonDir();
    } finally {
      this.#hold(-1);
      this.#dropStreams();
    }
  }

  async #close(graceMs: number): Promise<void> {
    this.#hold(+1);
    try {
      if (this.#exit === undefined) {
        // The answer may never come (Chromium exits first); the exit is what we wait for.
        this.send('Browser.close').catch(() => {});
        const timer = setTimeout(() => this.kill(), graceMs);
        try {
          await this.exited;
        } finally {
          clearTimeout(timer);
        }
      }
      await this.#waitForGroupGone();
      await this.#removeSingletonDir();
    } finally {
      this.#hold(-1);
      this.#dropStreams();
    }
  }

  #waitForEndpoint(userDataDir: string, gaveUp: AbortSignal): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let poll: NodeJS.Timeout | undefined;
      const done = (error: unknown, endpoint?: string) => {
        this.#onStderrLine = undefined;
        clearTimeout(poll);
        gaveUp.removeEventListener('abort', onAbort);
        this.#child.off('exit', onExit);
        this.#child.off('error', onError);
        if (endpoint !== undefined) resolve(endpoint);
        else reject(error);
      };
      const onAbort = () => done(gaveUp.reason);
      const onExit = (code: number | null, signal: NodeJS.Signals | null) =>
        done(
          new ChromiumLaunchError(`it exited before it was ready (${signal ?? `exit code ${code}`})`, {
            executablePath: this.#executablePath,
            exitCode: code,
            signal,
            stderrTail: this.stderrTail(),
          }),
        );
      const onError = (error: Error) =>
        done(
          new ChromiumLaunchError(
            `could not start it: ${error.message}`,
            { executablePath: this.#executablePath, stderrTail: this.stderrTail() },
            { cause: error },
          ),
        );
      if (this.#spawnError) return onError(this.#spawnError);
      if (this.#exit) return onExit(this.#exit.code, this.#exit.signal);
      if (gaveUp.aborted) return onAbort();
      gaveUp.addEventListener('abort', onAbort, { once: true });
      this.#child.once('exit', onExit);
      this.#child.once('error', onError);
      this.#onStderrLine = (line) => {
        const match = /DevTools listening on (ws:\/\/\S+)/.exec(line);
        if (match?.[1]) done(undefined, match[1]);
      };
      // Chromium also writes the port to a file, for launchers (such as some wrappers) that swallow stderr.
      const started = Date.now();
      const file = join(userDataDir, 'DevToolsActivePort');
      const check = async () => {
        try {
          // A file left by an earlier run of this profile would name a dead port.
          if ((await stat(file)).mtimeMs >= started - 1_000) {
            const [port, path] = (await readFile(file, 'utf8')).split('\n');
            if (port && /^\d+$/.test(port) && path?.startsWith('/devtools/browser/')) {
              return done(undefined, `ws://127.0.0.1:${port}${path.trim()}`);
            }
          }
        } catch {
          // Not written yet.
        }
        if (this.#onStderrLine) poll = setTimeout(check, 100);
      };
      poll = setTimeout(check, 100);
    });
  }

  #onStderr(chunk: string): void {
    const lines = (this.#stderrPartial + chunk).split('\n');
    this.#stderrPartial = (lines.pop() ?? '').slice(-2_000);
    for (const raw of lines) {
      const line = raw.trimEnd();
      this.#onStderrLine?.(line);
      if (line === '' || NOISE.test(line)) continue;
      this.#stderrLines.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
      if (this.#stderrLines.length > STDERR_LINES * 2)
        this.#stderrLines = this.#stderrLines.slice(-STDERR_LINES);
    }
  }

  #goneReason(): string {
    if (this.#exit) {
      const how = this.#exit.signal ?? `exit code ${this.#exit.code}`;
      return `Chromium has exited (${how}) before answering`;
    }
    return 'the control channel to Chromium has closed';
  }

  #killGroup(): void {
    if (this.#pid === undefined) return;
    try {
      process.kill(-this.#pid, 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  }

  /**
   * After the browser process has exited, its helpers got a SIGKILL (see the exit handler). Wait
   * (briefly) until none is alive, so the user-data dir is free and a process scan is clean.
   */
  async #waitForGroupGone(): Promise<void> {
    if (this.#pid === undefined) return;
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline && (await groupAlive(this.#pid))) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Chromium keeps its single-instance socket in a folder of its own under the temp dir
   * (`/tmp/org.chromium.Chromium.XXXXXX`), linked from `<userDataDir>/SingletonSocket`. It removes
   * it on a clean exit only; after a kill it would stay behind forever, one per browser.
   */
  async #removeSingletonDir(): Promise<void> {
    try {
      const dir = dirname(await readlink(join(this.#userDataDir, 'SingletonSocket')));
      const entries = await readdir(dir);
      // Only a folder that holds nothing but Chromium's singleton files.
      if (entries.every((entry) => /^Singleton(Socket|Cookie|Lock)$/.test(entry))) {
        await rm(dir, { recursive: true, force: true });
      }
    } catch {
      // No link (a clean exit removed it, or Chromium never got that far) or no folder: nothing to do.
    }
  }

  #dropStreams(): void {
    this.#stderr.destroy();
    this.#writer.destroy();
    this.#reader.destroy();
  }

  #hold(delta: number): void {
    this.#busy += delta;
    this.#updateRef();
  }

  #updateRef(): void {
    if (this.#exit !== undefined) return;
    if (this.#refd || this.#busy > 0) this.#child.ref();
    else this.#child.unref();
  }
}

/**
 * Whether a process group still has a live member. Zombies do not count: they hold no files, and
 * the init that inherits them (helpers reparented when the browser process died) may reap them late.
 */
async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // `pid (comm) state ppid pgrp …`; comm may contain spaces and parentheses, so split after the last ')'.
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') return true;
    } catch {
      // Gone while we looked.
    }
  }
  return false;
}

/** `GET /json/version` on Chromium's port. */
function versionOf(port: number, signal: AbortSignal): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/json/version', agent: false, signal }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => {
        try {
          const parsed = JSON.parse(body) as Record<string, unknown>;
          if (res.statusCode !== 200 || typeof parsed.webSocketDebuggerUrl !== 'string') {
            throw new Error(`unexpected answer ${res.statusCode}`);
          }
          const version: Record<string, string> = {};
          for (const [key, value] of Object.entries(parsed)) {
            if (typeof value === 'string') version[key] = value;
          }
          resolve(version);
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', (error) => reject(signal.aborted ? signal.reason : error));
    req.end();
  });
}

/** Strips what must not reach a log: credentials in URLs, and the browser's debugging path. */
function redact(line: string): string {
  return line
    .replace(/\b([a-z][\w+.-]*:\/\/)[^/\s:@]+:[^/\s@]*@/gi, '$1***@')
    .replace(/(\/devtools\/(?:browser|page)\/)[\w-]+/g, '$1…');
}
