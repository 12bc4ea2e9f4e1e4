import { type ChildProcess, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CloudBrowserError } from 'cloudbrowser';

/** Where the watchdog stops browsers: given to it over IPC, never on its command line or environment. */
export interface ServiceAccess {
  baseUrl: string;
  apiKey: string;
  apiKeyHeader: string;
}

/** Parent → watchdog. */
export type ToWatchdog =
  | { type: 'watch'; id: string; service: ServiceAccess }
  | { type: 'release'; id: string };
/** Watchdog → parent. */
export type FromWatchdog = { type: 'watching'; id: string };

/** How long the watchdog may take to start and confirm it watches a browser. */
const ACK_TIMEOUT_MS = 15_000;

/**
 * The parent's side of `supervise: true`: one watchdog process per process, started on the first
 * supervised browser. It learns each browser over IPC and stops those still watched if this
 * process dies without warning (SIGKILL, out of memory), which no handler here can catch. When
 * nothing is left to watch, the channel is closed and the watchdog exits.
 */
export class Supervisor {
  #child: ChildProcess | undefined;
  /** What the watchdog watches, kept here too so that a replacement watchdog can be told again. */
  readonly #watched = new Map<string, ServiceAccess>();
  readonly #pending = new Map<string, { child: ChildProcess; resolve(): void; reject(error: Error): void }>();

  /** Resolves once the watchdog confirms it watches `id`; from then on, a killed process cannot leak it. */
  watch(id: string, service: ServiceAccess): Promise<void> {
    const child = this.#start();
    this.#watched.set(id, service);
    return new Promise<void>((resolve, reject) => {
      // The timer also keeps this process alive while the watchdog starts: its channel does not.
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(new CloudBrowserError(`supervise: the watchdog did not confirm browser ${id} in time`));
      }, ACK_TIMEOUT_MS);
      this.#pending.set(id, {
        child,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.#send(child, { type: 'watch', id, service });
    });
  }

  /** The browser was stopped (or handed back): the watchdog forgets it, and exits once it watches nothing. */
  release(id: string): void {
    if (!this.#watched.delete(id)) return;
    const child = this.#child;
    if (!child?.connected) return;
    this.#send(child, { type: 'release', id });
    if (this.#watched.size === 0) {
      child.disconnect();
      this.#child = undefined;
    }
  }

  #start(): ChildProcess {
    if (this.#child?.connected) return this.#child;
    const { path, execArgv, cwd } = watchdogEntry();
    const child = fork(path, [], {
      execArgv,
      cwd,
      env: watchdogEnv(),
      // Its own process group: a Ctrl-C in the terminal reaches this process, whose guards stop the
      // browsers; the watchdog must outlive it to catch what they could not.
      detached: true,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
    });
    child.on('message', (message: FromWatchdog) => {
      if (message.type === 'watching') {
        this.#pending.get(message.id)?.resolve();
        this.#pending.delete(message.id);
      }
    });
    child.on('error', (error) => this.#failAll(child, error.message));
    child.on('exit', (code, signal) => this.#failAll(child, `it exited (${signal ?? code})`));
    // Neither the process nor its channel keeps this process alive.
    child.unref();
    child.channel?.unref();
    this.#child = child;
    // A watchdog that died (it should not) is replaced, and the replacement told what is still live.
    for (const [id, service] of this.#watched) this.#send(child, { type: 'watch', id, service });
    return child;
  }

  #send(child: ChildProcess, message: ToWatchdog): void {
    child.send(message, (error) => {
      if (error) this.#failAll(child, error.message);
    });
  }

  #failAll(child: ChildProcess, reason: string): void {
    if (this.#child === child) this.#child = undefined;
    for (const [id, pending] of this.#pending) {
      if (pending.child !== child) continue;
      this.#pending.delete(id);
      pending.reject(
        new CloudBrowserError(`supervise: the watchdog failed before it watched browser ${id}: ${reason}`),
      );
    }
  }
}

/**
 * What the watchdog inherits of the environment: only what any Node process may need to reach a
 * service (certificates, proxies, locale, temp dir), so that no key, ours or anyone's, travels in it.
 */
const INHERITED_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'TEMP',
  'TMP',
  'SYSTEMROOT',
  'LANG',
  'TZ',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
];

function watchdogEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of INHERITED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

/** The compiled watchdog next to this file, or, when running from source, the TypeScript one under tsx. */
function watchdogEntry(): { path: string; execArgv: string[]; cwd: string } {
  const fromSource = import.meta.url.endsWith('.ts');
  const path = fileURLToPath(new URL(fromSource ? './watchdog.ts' : './watchdog.js', import.meta.url));
  if (!existsSync(path)) throw new CloudBrowserError(`supervise: the watchdog ${path} is missing`);
  if (!fromSource) return { path, execArgv: [], cwd: fileURLToPath(new URL('.', import.meta.url)) };
  // From source the watchdog needs tsx and the repository's tsconfig paths, like the code that started it.
  return {
    path,
    execArgv: ['--import', import.meta.resolve('tsx')],
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  };
}

/** The one supervisor of this process, shared like the process guards. */
export function supervisor(): Supervisor {
  const key = Symbol.for('cloudbrowser.supervisor');
  const global = globalThis as { [key]?: Supervisor };
  global[key] ??= new Supervisor();
  return global[key];
}
