import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { TERMINAL_RUN_STATUSES } from '../resources/runs.js';
import type { BrowserPool } from './browser-pool.js';
import { HttpError } from './http.js';
import { messageOf, Redactor, SecretRefusedError, typeSecretInto } from './secret-typing.js';
import { readJson, writeAtomic } from './store.js';
import type { ResolvedSecret } from './vault.js';

/**
 * Agent runs on the local service. No model runs here: an {@link AgentDriver} of yours carries out
 * the task in a real local browser (a scripted driver in tests and demos). The service launches the
 * browser with the run's profile and proxy, connects Playwright to it, records the events, types
 * secrets for the driver, and stops the browser however the run ends.
 */

/** A step the driver reports; it becomes an event of the run. */
export interface AgentStep {
  /** The event type. Types starting with `run.`, `browser.` or `secret.` belong to the service. @default 'step' */
  type?: string;
  /** A line for people following the run; stored as `data.message`. */
  message?: string;
  /** More fields of the event's `data`; JSON values only. */
  data?: Record<string, unknown>;
}

/** What a driver gets for one run. */
export interface AgentContext {
  readonly runId: string;
  /** The natural-language goal. */
  readonly task: string;
  /** The model the run asked for, if any; the driver decides what it means. */
  readonly model: string | null;
  /** A Playwright page of the run's browser. */
  readonly page: Page;
  /** Aborts when the run is cancelled or the service closes: stop then. */
  readonly signal: AbortSignal;
  /** The aliases of the secrets the run may type; never their values. */
  readonly secretAliases: readonly string[];
  /** Records a step as an event of the run. Secret values in it are cut out. */
  emit(step: AgentStep): void;
  /**
   * Types the secret with this alias into the page's focused field, if the page's host is one of
   * the secret's allowed domains (a host covers its subdomains). A `one-time-password` field types
   * the current TOTP code. The value is never returned; an event `secret.typed` names the alias.
   * Rejects, and records `secret.refused`, on any other host.
   */
  typeSecret(alias: string): Promise<void>;
}

/**
 * Carries out a run's task. Resolve with the result (a string is kept as it is, anything else as
 * JSON, `undefined` as no result); reject to fail the run.
 *
 * @example
 * const agent: AgentDriver = {
 *   async run({ page, emit, typeSecret }) {
 *     await page.goto('https://login.example.com/');
 *     await page.focus('#user');
 *     await typeSecret('Example_username');
 *     emit({ message: 'username typed' });
 *     return 'logged in';
 *   },
 * };
 * await using service = await startLocalService({ agent });
 */
export interface AgentDriver {
  run(context: AgentContext): Promise<unknown>;
}

interface StoredEvent {
  id: number;
  ts: string;
  type: string;
  data: Record<string, unknown>;
}

/** A v4 run or a v3 session (a session is a run seen through the v3 interface). */
export interface RunRecord {
  id: string;
  kind: 'run' | 'session';
  sessionId: string;
  status: string;
  task: string;
  model: string | null;
  modelParams: Record<string, unknown> | null;
  thinkingLevel: string | null;
  profileId: string | null;
  proxyCountryCode: string | null;
  secretAliases: string[];
  result: string | null;
  error: string | null;
  browserId: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  events: StoredEvent[];
}

export interface CreateRunInput {
  kind: 'run' | 'session';
  task: string;
  model?: string | undefined;
  modelParams?: Record<string, unknown> | undefined;
  thinkingLevel?: string | undefined;
  profileId: string | null;
  proxyCountryCode: string | null;
  secrets: ResolvedSecret[];
  /** `http://host:port` as the client addressed the service: the base of the live view URL. */
  origin: string;
}

interface EngineOptions {
  pool: BrowserPool;
  dataDir: string;
  driver: AgentDriver | undefined;
  log: (line: string) => void;
}

interface Active {
  controller: AbortController;
  /** Why it was aborted: a cancel, or the service closing. */
  reason: 'cancel' | 'close' | undefined;
  done: Promise<void>;
}

type Outcome =
  | { status: 'completed'; result: string | null }
  | { status: 'failed'; error: string }
  | { status: 'cancelled' };

export const NO_DRIVER =
  'no agent driver configured: no model runs locally; pass startLocalService({ agent }) a driver that carries out the task';
const NO_PLAYWRIGHT =
  'playwright-core is not installed: the local service drives agent runs with it; install it (npm install playwright-core) or playwright';
/** Terminal runs kept for reads; older ones are forgotten. */
const ENDED_KEPT = 1000;
const CONNECT_TIMEOUT_MS = 30_000;
const RESERVED_TYPE = /^(run|browser|secret)\./;

/** The runs of the local service, their events, and their execution. */
export class AgentEngine {
  readonly #options: EngineOptions;
  readonly #runs = new Map<string, RunRecord>();
  readonly #active = new Map<string, Active>();
  #writing: Promise<void> = Promise.resolve();

  private constructor(options: EngineOptions) {
    this.#options = options;
  }

  /** Reads the runs kept in the data dir; runs that were active when the service died have failed. */
  static async open(options: EngineOptions): Promise<AgentEngine> {
    const engine = new AgentEngine(options);
    const state = await readJson<{ runs: RunRecord[] }>(engine.#path);
    let recovered = false;
    for (const run of state?.runs ?? []) {
      engine.#runs.set(run.id, run);
      if (TERMINAL_RUN_STATUSES.has(run.status)) continue;
      engine.#finish(run, {
        status: 'failed',
        error: 'the local service restarted while the run was active',
      });
      recovered = true;
    }
    if (recovered) await engine.#save();
    return engine;
  }

  get #path(): string {
    return join(this.#options.dataDir, 'agent.json');
  }

  /** Records a run and starts it; the answer does not wait for the browser. */
  async create(input: CreateRunInput): Promise<RunRecord> {
    const { store } = this.#options.pool;
    if (input.profileId !== null && !store.profiles.has(input.profileId)) {
      throw new HttpError(404, 'Profile not found');
    }
    const record: RunRecord = {
      id: randomUUID(),
      kind: input.kind,
      sessionId: randomUUID(),
      status: 'queued',
      task: input.task,
      model: input.model ?? null,
      modelParams: input.modelParams ?? null,
      thinkingLevel: input.thinkingLevel ?? null,
      profileId: input.profileId,
      proxyCountryCode: input.proxyCountryCode,
      secretAliases: input.secrets.map((secret) => secret.alias),
      result: null,
      error: null,
      browserId: null,
      createdAt: new Date().toISOString(),
      startedAt: null,
      finishedAt: null,
      events: [],
    };
    this.#runs.set(record.id, record);
    const active: Active = { controller: new AbortController(), reason: undefined, done: Promise.resolve() };
    this.#active.set(record.id, active);
    active.done = this.#execute(record, input, active).finally(() => this.#active.delete(record.id));
    this.#options.log(
      `${record.kind} ${record.id} created (${record.secretAliases.length} secret alias(es), profile ${record.profileId ?? 'none'})`,
    );
    await this.#save();
    return record;
  }

  /** A run (`kind: 'run'`) or a session; 404 otherwise. */
  get(id: string, kind: RunRecord['kind']): RunRecord {
    const record = this.#runs.get(id);
    if (!record || record.kind !== kind)
      throw new HttpError(404, kind === 'run' ? 'Run not found' : 'Session not found');
    return record;
  }

  /** Cancels a run and resolves once it has ended and its browser is stopped. Idempotent. */
  async cancel(record: RunRecord): Promise<RunRecord> {
    const active = this.#active.get(record.id);
    if (active) {
      active.reason ??= 'cancel';
      active.controller.abort(new Error('the run was cancelled'));
      await active.done;
    }
    return record;
  }

  /** The events after `after`, at most `limit`, and where to resume. */
  events(
    record: RunRecord,
    after: number,
    limit: number,
  ): { events: (StoredEvent & { runId: string })[]; nextAfter: number; hasMore: boolean } {
    const newer = record.events.filter((event) => event.id > after);
    const page = newer.slice(0, limit);
    return {
      events: page.map((event) => ({ runId: record.id, ...event })),
      nextAfter: page.at(-1)?.id ?? after,
      hasMore: newer.length > page.length,
    };
  }

  /** Ends every active run (failed: the service closed) and stops its browser. */
  async close(): Promise<void> {
    const active = [...this.#active.values()];
    for (const run of active) {
      run.reason ??= 'close';
      run.controller.abort(new Error('the local service closed'));
    }
    await Promise.all(active.map((run) => run.done));
    await this.#writing;
  }

  async #execute(record: RunRecord, input: CreateRunInput, active: Active): Promise<void> {
    const { pool, driver, log } = this.#options;
    const { signal } = active.controller;
    const redactor = new Redactor(input.secrets);
    let browser: Browser | undefined;
    let ended = false;
    let outcome: Outcome;
    try {
      record.status = 'dispatching';
      record.startedAt = new Date().toISOString();
      this.#event(record, 'run.started', { status: 'dispatching' });
      if (driver === undefined) throw new Error(NO_DRIVER);
      const playwright = await loadPlaywright();
      signal.throwIfAborted();
      const created = await pool.create(
        {
          profileId: record.profileId,
          proxyCountryCode: record.proxyCountryCode,
          metadata: { [`cloudbrowser.${record.kind}Id`]: record.id },
        },
        signal,
      );
      record.browserId = created.id;
      const { cdpUrl, liveUrl } = pool.toWire(created, input.origin);
      // The per-browser secret of these URLs stays out of errors; the live URL is for the run's events.
      redactor.addUrlSecret(cdpUrl);
      browser = await untilAborted(
        playwright.chromium.connectOverCDP(cdpUrl ?? '', { timeout: CONNECT_TIMEOUT_MS }),
        signal,
      );
      const context = browser.contexts()[0] ?? (await browser.newContext());
      const page = context.pages()[0] ?? (await context.newPage());
      record.status = 'running';
      this.#event(record, 'browser.ready', { browser_id: created.id, live_view_url: liveUrl });
      log(`${record.kind} ${record.id} running in browser ${created.id}`);
      const agentContext = this.#context({
        record,
        page,
        signal,
        secrets: input.secrets,
        redactor,
        ended: () => ended,
      });
      const result = await untilAborted(
        Promise.resolve().then(() => driver.run(agentContext)),
        signal,
      );
      outcome = { status: 'completed', result: toResult(result, redactor) };
    } catch (error) {
      if (signal.aborted && active.reason === 'cancel') outcome = { status: 'cancelled' };
      else if (signal.aborted)
        outcome = { status: 'failed', error: 'the local service closed while the run was active' };
      else outcome = { status: 'failed', error: redactor.text(messageOf(error)) };
    }
    ended = true;
    // Stopped before Playwright lets go, so the disconnect is not mistaken for a stray one.
    if (record.browserId !== null) {
      await pool
        .stop(record.browserId, `${record.kind} ${record.id} ended`)
        .catch((error: Error) =>
          log(`${record.kind} ${record.id}: its browser did not stop: ${error.message}`),
        );
    }
    await browser?.close().catch(() => {});
    // Only now, with the browser stopped, does the run read as ended.
    this.#finish(record, outcome);
    log(
      `${record.kind} ${record.id} ${outcome.status}${outcome.status === 'failed' ? `: ${outcome.error}` : ''}`,
    );
    await this.#save().catch((error: Error) => log(`runs not saved: ${error.message}`));
  }

  #context(spec: {
    record: RunRecord;
    page: Page;
    signal: AbortSignal;
    secrets: readonly ResolvedSecret[];
    redactor: Redactor;
    ended: () => boolean;
  }): AgentContext {
    const { record, page, signal, secrets, redactor } = spec;
    const { log } = this.#options;
    const open = (what: string) => {
      if (spec.ended() || signal.aborted) throw new Error(`${what}: the run has ended`);
    };
    return {
      runId: record.id,
      task: record.task,
      model: record.model,
      page,
      signal,
      secretAliases: secrets.map((secret) => secret.alias),
      emit: (step) => {
        open('emit');
        const type = step.type ?? 'step';
        if (RESERVED_TYPE.test(type)) throw new Error(`emit: the event type ${type} belongs to the service`);
        const data = { ...(step.message === undefined ? {} : { message: step.message }), ...step.data };
        this.#event(record, type, redactor.deep(JSON.parse(JSON.stringify(data))) as Record<string, unknown>);
      },
      typeSecret: async (alias) => {
        open('typeSecret');
        const secret = secrets.find((s) => s.alias === alias);
        if (!secret) {
          throw new Error(
            `typeSecret: no secret with the alias ${JSON.stringify(alias)}; this run has ${JSON.stringify(secrets.map((s) => s.alias))}`,
          );
        }
        try {
          const host = await typeSecretInto({ page, secret, redactor, stillOpen: () => open('typeSecret') });
          this.#event(record, 'secret.typed', { alias });
          log(`${record.kind} ${record.id}: typed secret ${alias} on ${host}`);
        } catch (error) {
          if (error instanceof SecretRefusedError) {
            this.#event(record, 'secret.refused', { alias, host: error.host });
            log(
              `${record.kind} ${record.id}: refused to type secret ${alias} on ${error.host ?? 'a page without a host'}`,
            );
          }
          throw error;
        }
      },
    };
  }

  #event(record: RunRecord, type: string, data: Record<string, unknown>): void {
    const last = record.events.at(-1);
    record.events.push({ id: (last?.id ?? 0) + 1, ts: new Date().toISOString(), type, data });
  }

  #finish(record: RunRecord, outcome: Outcome): void {
    record.status = outcome.status;
    record.finishedAt = new Date().toISOString();
    if (outcome.status === 'completed') record.result = outcome.result;
    if (outcome.status === 'failed') record.error = outcome.error;
    this.#event(record, `run.${outcome.status}`, outcome.status === 'failed' ? { error: outcome.error } : {});
  }

  #save(): Promise<void> {
    const ended = [...this.#runs.values()].filter((run) => TERMINAL_RUN_STATUSES.has(run.status));
    for (const old of ended.slice(0, Math.max(0, ended.length - ENDED_KEPT))) this.#runs.delete(old.id);
    const text = JSON.stringify({ runs: [...this.#runs.values()] });
    const next = this.#writing.then(() => writeAtomic(this.#path, text));
    this.#writing = next.catch(() => {});
    return next;
  }
}

/** Loads Playwright only now, when a run executes: it is an optional peer of the package. */
async function loadPlaywright(): Promise<typeof import('playwright-core')> {
  try {
    return await import('playwright-core');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
  }
  const fallback = 'playwright';
  try {
    return (await import(fallback)) as typeof import('playwright-core');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
  }
  throw new Error(NO_PLAYWRIGHT);
}

/** Resolves with `promise`, or rejects as soon as `signal` aborts; a later rejection of `promise` is ignored. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => {});
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function toResult(value: unknown, redactor: Redactor): string | null {
  if (value === undefined || value === null) return null;
  return redactor.text(typeof value === 'string' ? value : JSON.stringify(value));
}
