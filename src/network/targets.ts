import type { CdpConnection } from './cdp-connection.js';
import type { AttachedToTarget, DetachedFromTarget, TargetInfo } from './protocol.js';
import { readTimeline, type TimelineRequest } from './timeline.js';

/** The kinds of target whose requests are observed. Others (the browser UI, tabs, worklets) are left alone. */
const OBSERVED_TYPES = ['page', 'iframe', 'worker', 'shared_worker', 'service_worker'] as const;
const OBSERVED = new Set<string>(OBSERVED_TYPES);
/** For `Target.setAutoAttach` and `Target.getTargets`: only these types; anything unlisted is excluded. */
const FILTER = OBSERVED_TYPES.map((type) => ({ type }));

/**
 * `Network.enable` options: Chromium keeps no bodies for this session (the observer never reads
 * them), and sends no request bodies in events.
 */
const NETWORK_ENABLE = { maxTotalBufferSize: 0, maxResourceBufferSize: 0, maxPostDataSize: 0 };

/** One target the observer is attached to, through one flattened session. */
export interface AttachedTarget {
  readonly sessionId: string;
  readonly targetId: string;
  readonly type: string;
  /** The top-level page it belongs to (itself for a page); null for shared and service workers. */
  readonly pageId: string | null;
  readonly parentSessionId: string | undefined;
}

/** What a page looked like last, for HAR `pages`. */
export interface PageInfo {
  readonly title: string;
  readonly url: string;
}

export interface TargetTrackerHooks {
  /** A session went away (its target closed or crashed): its requests will never end. */
  onGone(sessionId: string): void;
  /** Redacts the page URLs and titles kept for HAR (a title may be a URL). */
  redactUrl(url: string): string;
  /** Reading the timelines of pages and frames that appear after `start()` (see {@link TargetTracker.missed}). */
  timeline: TimelineHooks;
}

export interface TimelineHooks {
  /** A new page or frame whose timeline may be read: what it requests from now on is worth remembering. */
  watch(target: AttachedTarget): void;
  /**
   * What its timeline shows it has finished loading. Returns whether its own document is still in
   * flight: Chromium may never report that document's end, so its timeline is read again later.
   */
  read(target: AttachedTarget, requests: TimelineRequest[]): boolean;
  /** It will not be read again. */
  unwatch(target: AttachedTarget): void;
}

/**
 * Timeline reads of one new page or frame: whether one is under way, whether another is due, how
 * many are left, and the later look at a document that was still loading.
 */
interface TimelineReads {
  running: boolean;
  again: boolean;
  left: number;
  later: NodeJS.Timeout | undefined;
}

/** Reads per target: the first, one per burst of requests it missed, the later looks; a bound, not a schedule. */
const MAX_TIMELINE_READS = 8;

/** The first later look at a document still loading; each next one waits twice as long (to ~13 s). */
const LATER_READ_MS = 100;

/** Pages whose title and URL are remembered for HAR, most recent last. */
const MAX_PAGES = 1_000;

/**
 * Attaches to every page, popup, out-of-process iframe and worker of a browser, present and future,
 * through one CDP connection. At the browser level and then in every session it attaches with
 * `Target.setAutoAttach` (`waitForDebuggerOnStart`, so a new target waits for Network to be on),
 * enables the Network domain, and always releases the target at once with
 * `Runtime.runIfWaitingForDebugger`: a target is never held longer than three commands take.
 * Another client may release a target sooner; what a new page or frame loaded meanwhile is read
 * from its timeline (see {@link missed}).
 */
export class TargetTracker {
  readonly #connection: CdpConnection;
  readonly #hooks: TargetTrackerHooks;
  readonly #sessions = new Map<string, AttachedTarget>();
  readonly #sessionOfTarget = new Map<string, string>();
  readonly #pages = new Map<string, PageInfo>();
  /** Session set-ups not finished yet; `start()` waits for them. */
  readonly #setups = new Set<Promise<unknown>>();
  /** Pages and frames that appeared after `start()`, by session: see {@link missed}. */
  readonly #timelines = new Map<string, TimelineReads>();
  #started = false;

  constructor(connection: CdpConnection, hooks: TargetTrackerHooks) {
    this.#connection = connection;
    this.#hooks = hooks;
  }

  /** The target a session belongs to, if the observer is attached through it. */
  target(sessionId: string | undefined): AttachedTarget | undefined {
    return sessionId === undefined ? undefined : this.#sessions.get(sessionId);
  }

  /** Title and URL of a page target, while remembered. */
  page(targetId: string): PageInfo | undefined {
    return this.#pages.get(targetId);
  }

  get attachedCount(): number {
    return this.#sessions.size;
  }

  /**
   * Starts observing every target: the future ones by auto-attach, the present ones by the
   * auto-attach's own sweep and then, for any it did not reach, `Target.attachToTarget`.
   */
  async start(): Promise<void> {
    const connection = this.#connection;
    await connection.send('Target.setDiscoverTargets', { discover: true, filter: FILTER });
    await connection.send('Target.setAutoAttach', {
      autoAttach: true,
      waitForDebuggerOnStart: true,
      flatten: true,
      filter: FILTER,
    });
    await this.#settled();
    const { targetInfos } = await connection.send<{ targetInfos: TargetInfo[] }>('Target.getTargets', {
      filter: FILTER,
    });
    const missing = targetInfos.filter(
      (info) => OBSERVED.has(info.type) && !this.#sessionOfTarget.has(info.targetId),
    );
    // Their `attachedToTarget` events set them up like the others; a target that closed meanwhile is no loss.
    await Promise.allSettled(
      missing.map((info) =>
        connection.send('Target.attachToTarget', { targetId: info.targetId, flatten: true }),
      ),
    );
    await this.#settled();
    this.#started = true;
  }

  /**
   * A request of this session ended that was never seen to start. For a page or frame that appeared
   * after `start()`, that means it began loading before its Network domain was on: another client
   * (the user's framework) released it first, or made it with a URL. Its document's timeline is read
   * again once the read under way, if any, is done. Targets there before `start()` are left alone:
   * the observer records from the moment it starts.
   */
  missed(sessionId: string): void {
    const reads = this.#timelines.get(sessionId);
    if (reads === undefined) return;
    if (reads.running) reads.again = true;
    else void this.#readTimeline(sessionId, reads);
  }

  /** Handles a `Target.*` or `Inspector.*` event; returns false for anything else. */
  handle(method: string, params: unknown, sessionId: string | undefined): boolean {
    switch (method) {
      case 'Target.attachedToTarget':
        this.#attached(params as AttachedToTarget, sessionId);
        return true;
      case 'Target.detachedFromTarget':
        this.#detached((params as DetachedFromTarget).sessionId);
        return true;
      case 'Target.targetCreated':
      case 'Target.targetInfoChanged':
        this.#remember((params as { targetInfo: TargetInfo }).targetInfo);
        return true;
      case 'Target.targetCrashed': {
        const crashed = this.#sessionOfTarget.get((params as { targetId: string }).targetId);
        if (crashed !== undefined) this.#hooks.onGone(crashed);
        return true;
      }
      case 'Inspector.targetCrashed':
        if (sessionId !== undefined) this.#hooks.onGone(sessionId);
        return true;
      case 'Inspector.detached':
      case 'Target.targetDestroyed':
        return true;
      default:
        return false;
    }
  }

  #attached(event: AttachedToTarget, parentSessionId: string | undefined): void {
    const { sessionId, targetInfo } = event;
    const connection = this.#connection;
    const release = () => connection.send('Runtime.runIfWaitingForDebugger', {}, sessionId);
    if (!OBSERVED.has(targetInfo.type) || this.#sessionOfTarget.has(targetInfo.targetId)) {
      // Not ours to watch, or a second route to a target already watched (its requests would count
      // twice): let it run and let go of it.
      this.#track(
        release()
          .catch(() => {})
          .then(() => connection.send('Target.detachFromTarget', { sessionId })),
      );
      return;
    }
    const parent = this.target(parentSessionId);
    const target: AttachedTarget = {
      sessionId,
      targetId: targetInfo.targetId,
      type: targetInfo.type,
      pageId: pageIdOf(targetInfo, parent),
      parentSessionId,
    };
    this.#sessions.set(sessionId, target);
    this.#sessionOfTarget.set(target.targetId, sessionId);
    this.#remember(targetInfo);
    // Sent together, answered in order: Network is on before the target runs its first line.
    // The release is sent whatever happens to the others.
    const steps = [
      connection.send('Network.enable', NETWORK_ENABLE, sessionId),
      connection.send(
        'Target.setAutoAttach',
        { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: FILTER },
        sessionId,
      ),
      release(),
    ];
    const setup = Promise.allSettled(steps);
    this.#track(setup);
    if (this.#started && (target.type === 'page' || target.type === 'iframe')) {
      // Chromium lets a new target run as soon as any client releases it, so its first requests
      // may be over before Network is on here; its timeline tells what they were.
      const reads: TimelineReads = {
        running: true,
        again: false,
        left: MAX_TIMELINE_READS,
        later: undefined,
      };
      this.#hooks.timeline.watch(target);
      this.#timelines.set(sessionId, reads);
      void setup.then(() => this.#readTimeline(sessionId, reads));
    }
  }

  async #readTimeline(sessionId: string, reads: TimelineReads): Promise<void> {
    const target = this.#sessions.get(sessionId);
    if (target === undefined || reads.left === 0) return;
    reads.running = true;
    reads.again = false;
    clearTimeout(reads.later);
    reads.left--;
    let loading = false;
    try {
      const { loaded, requests } = await readTimeline(this.#connection, sessionId, target.targetId);
      // Until the load event, frames that finish later join the timeline later: look again then.
      if (this.#sessions.has(sessionId)) loading = this.#hooks.timeline.read(target, requests) || !loaded;
    } catch {
      // The target closed or navigated away meanwhile: nothing left to read.
    } finally {
      reads.running = false;
      if (reads.left === 0) {
        this.#unwatch(sessionId);
      } else if (reads.again) {
        void this.#readTimeline(sessionId, reads);
      } else if (loading && this.#timelines.has(sessionId)) {
        const wait = LATER_READ_MS * 2 ** (MAX_TIMELINE_READS - 1 - reads.left);
        reads.later = setTimeout(() => void this.#readTimeline(sessionId, reads), wait);
        reads.later.unref();
      }
    }
  }

  /** Stops reading a target's timeline: it reached its bound, went away, or the observer stopped. */
  #unwatch(sessionId: string): void {
    const reads = this.#timelines.get(sessionId);
    const target = this.#sessions.get(sessionId);
    if (reads === undefined) return;
    clearTimeout(reads.later);
    this.#timelines.delete(sessionId);
    if (target !== undefined) this.#hooks.timeline.unwatch(target);
  }

  /** The observer stopped: no timeline is read any more. */
  close(): void {
    for (const sessionId of [...this.#timelines.keys()]) this.#unwatch(sessionId);
  }

  #detached(sessionId: string): void {
    const target = this.#sessions.get(sessionId);
    if (target === undefined) return;
    this.#unwatch(sessionId);
    this.#sessions.delete(sessionId);
    if (this.#sessionOfTarget.get(target.targetId) === sessionId)
      this.#sessionOfTarget.delete(target.targetId);
    this.#hooks.onGone(sessionId);
    // Chromium reports each child's detach, but not always before the parent's; do not wait for it.
    for (const child of [...this.#sessions.values()]) {
      if (child.parentSessionId === sessionId) this.#detached(child.sessionId);
    }
  }

  #remember(info: TargetInfo | undefined): void {
    if (info?.type !== 'page') return;
    this.#pages.delete(info.targetId);
    // Until a page has a title, Chromium shows its URL there, secrets and all.
    const { redactUrl } = this.#hooks;
    this.#pages.set(info.targetId, { title: redactUrl(info.title ?? ''), url: redactUrl(info.url ?? '') });
    if (this.#pages.size > MAX_PAGES) {
      const oldest = this.#pages.keys().next().value;
      if (oldest !== undefined) this.#pages.delete(oldest);
    }
  }

  #track(promise: Promise<unknown>): void {
    const settled = promise.catch(() => {});
    this.#setups.add(settled);
    void settled.then(() => this.#setups.delete(settled));
  }

  /** Waits until every session set-up under way, including those they started, has finished. */
  async #settled(): Promise<void> {
    while (this.#setups.size > 0) await Promise.all([...this.#setups]);
  }
}

/**
 * A page is its own page; an iframe or a dedicated worker belongs to its parent's page. A shared or
 * service worker serves many pages, so it belongs to none, whichever session happened to attach it.
 */
function pageIdOf(info: TargetInfo, parent: AttachedTarget | undefined): string | null {
  if (info.type === 'page') return info.targetId;
  if (info.type === 'iframe' || info.type === 'worker') return parent?.pageId ?? null;
  return null;
}
