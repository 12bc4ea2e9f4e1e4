import type {
  CdpResponse,
  DataReceived,
  ExtraInfo,
  LoadingFailed,
  LoadingFinished,
  RequestWillBeSent,
  ResponseReceived,
} from './protocol.js';
import type { Redactor } from './redact.js';
import { RingBuffer } from './ring-buffer.js';
import type { AttachedTarget } from './targets.js';
import { resourceTypeOf, type TimelineRequest } from './timeline.js';
import { layOutTimeline, layOutTimings } from './timings.js';
import type {
  NetworkEntry,
  NetworkEntryState,
  NetworkFailure,
  NetworkInitiator,
  NetworkRedirect,
} from './types.js';

/** What the recorder tells its owner. `wants` lets it skip building snapshots nobody listens to. */
export interface RecorderHooks {
  wants(event: 'request' | 'response'): boolean;
  started(entry: NetworkEntry): void;
  responded(entry: NetworkEntry): void;
  /** An entry ended and was stored (`finished`, `failed` or `incomplete`). */
  ended(entry: NetworkEntry): void;
  /** A request the observer never saw start ended in this session: it began before Network was on. */
  missed(sessionId: string): void;
}

export interface RecorderOptions {
  maxEntries: number;
  maxInFlight: number;
  headers: boolean;
  redactor: Redactor;
  hooks: RecorderHooks;
}

/** The response part of a request in flight, kept as raw as possible until the request ends. */
interface Response {
  status: number;
  statusText: string;
  mimeType: string;
  protocol: string;
  remoteAddress: string | null;
  fromDisk: boolean;
  fromPrefetch: boolean;
  fromServiceWorker: boolean;
  encodedDataLength: number;
  timing: CdpResponse['timing'];
  headers: Record<string, string> | undefined;
}

/** A request between `requestWillBeSent` and its end. */
interface InFlight {
  id: string;
  url: string;
  method: string;
  resourceType: string;
  frameId: string | null;
  initiator: NetworkInitiator;
  target: AttachedTarget;
  /** The session that reported last: when it goes, the request cannot end. */
  session: string;
  startSeconds: number;
  wallSeconds: number;
  /** The time of the latest event: where an `incomplete` request is taken to have ended. */
  lastSeconds: number;
  response: Response | undefined;
  fromMemory: boolean;
  decoded: number;
  redirects: NetworkRedirect[];
  requestHeaders: Record<string, string> | undefined;
  /** Raw-header events (cookies included), one per hop, in order; only with `headers: true`. */
  extraRequest: Record<string, string>[] | undefined;
  extraResponse: Record<string, string>[] | undefined;
}

/** Header events that arrived before their request; a few, for a short while. */
const MAX_EARLY_EXTRA_INFO = 500;

/**
 * Requests remembered per watched target (see {@link NetworkRecorder.watch}): more than a timeline
 * holds unless the page enlarges it (250 by default, its first ones).
 */
const MAX_REMEMBERED = 1_000;

/** The requests a watched target made, as its timeline names them, with how often each was seen. */
interface Remembered {
  counts: Map<string, number>;
  size: number;
}

/**
 * Turns the Network domain's events, from any session, into one {@link NetworkEntry} per request.
 * Events of one request may come from several sessions (an out-of-process iframe's document is
 * requested in its parent's session and finishes in its own), so requests are keyed by Chromium's
 * request id, which is unique in the browser. Both maps are bounded, and so is each entry.
 */
export class NetworkRecorder {
  readonly #options: RecorderOptions;
  readonly #redactor: Redactor;
  readonly #hooks: RecorderHooks;
  readonly #inFlight = new Map<string, InFlight>();
  readonly #earlyExtra = new Map<
    string,
    { request: Record<string, string>[]; response: Record<string, string>[] }
  >();
  readonly entries: RingBuffer<NetworkEntry>;
  /** By target id: what watched pages and frames requested, kept apart from the ring buffer. */
  readonly #remembered = new Map<string, Remembered>();
  #recovered = 0;

  constructor(options: RecorderOptions) {
    this.#options = options;
    this.#redactor = options.redactor;
    this.#hooks = options.hooks;
    this.entries = new RingBuffer(options.maxEntries);
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Handles one `Network.*` event of an attached target. */
  handle(method: string, params: unknown, target: AttachedTarget, sessionId: string): void {
    switch (method) {
      case 'Network.requestWillBeSent':
        this.#requestWillBeSent(params as RequestWillBeSent, target, sessionId);
        break;
      case 'Network.responseReceived':
        this.#responseReceived(params as ResponseReceived, sessionId);
        break;
      case 'Network.dataReceived': {
        const { requestId, dataLength, timestamp } = params as DataReceived;
        const request = this.#inFlight.get(requestId);
        if (request !== undefined) {
          request.decoded += dataLength;
          request.lastSeconds = timestamp;
        }
        break;
      }
      case 'Network.loadingFinished':
        this.#loadingFinished(params as LoadingFinished, sessionId);
        break;
      case 'Network.loadingFailed':
        this.#loadingFailed(params as LoadingFailed, sessionId);
        break;
      case 'Network.requestServedFromCache': {
        const request = this.#inFlight.get((params as { requestId: string }).requestId);
        if (request !== undefined) request.fromMemory = true;
        break;
      }
      case 'Network.requestWillBeSentExtraInfo':
      case 'Network.responseReceivedExtraInfo':
        if (this.#options.headers) this.#extraInfo(method, params as ExtraInfo);
        break;
    }
  }

  /** A session went away: its requests will never end; they are stored `incomplete`. */
  sessionGone(sessionId: string): void {
    for (const request of [...this.#inFlight.values()]) {
      if (request.session === sessionId) this.#end(request, 'incomplete', request.lastSeconds, null);
    }
  }

  /** Stores every request still in flight as `incomplete` (the observer is stopping). */
  endAll(): void {
    for (const request of [...this.#inFlight.values()])
      this.#end(request, 'incomplete', request.lastSeconds, null);
    this.#earlyExtra.clear();
  }

  /**
   * Starts remembering what a new page or frame requests, so that its timeline can be told apart
   * from what was recorded, however many entries the ring buffer has let go meanwhile.
   */
  watch(targetId: string): void {
    this.#remembered.set(targetId, { counts: new Map(), size: 0 });
  }

  unwatch(targetId: string): void {
    this.#remembered.delete(targetId);
  }

  /**
   * Reconciles a watched target's Performance Timeline with what was recorded of it, matching by URL
   * as many times as each was seen. A request that ended is accounted for. A request still in flight
   * that the timeline shows finished ends now, with the timeline's end and sizes: Chromium reports a
   * document committed before its Network domain was fully on as started but never as finished.
   * What nothing accounts for began before the observer switched Network on, and is stored as a
   * `recovered` entry.
   * @returns whether the target's own document is still in flight: its end may never be reported.
   */
  recover(target: AttachedTarget, requests: readonly TimelineRequest[]): boolean {
    const { targetId } = target;
    const seen = new Map(this.#remembered.get(targetId)?.counts);
    const open = new Map<string, InFlight[]>();
    for (const request of this.#inFlight.values()) {
      const key = timelineKey(targetId, request.target.targetId, request);
      if (key === undefined) continue;
      const same = open.get(key);
      if (same === undefined) open.set(key, [request]);
      else same.push(request);
    }
    for (const request of requests) {
      // An out-of-process iframe's document is its parent's request, in the parent's timeline too.
      if (target.type === 'iframe' && request.kind === 'navigation') continue;
      const url = this.#redactor.url(request.url);
      const times = seen.get(url) ?? 0;
      if (times > 0) {
        seen.set(url, times - 1);
        continue;
      }
      const unended = open.get(url)?.shift();
      if (unended !== undefined) {
        this.#endFromTimeline(unended, request);
        continue;
      }
      const entry: NetworkEntry = {
        id: `recovered.${++this.#recovered}`,
        state: 'finished',
        url,
        method: '',
        resourceType: resourceTypeOf(request),
        status: request.status > 0 ? request.status : null,
        statusText: '',
        mimeType: request.contentType,
        protocol: request.protocol,
        remoteAddress: null,
        fromCache: request.fromCache ? 'disk' : null,
        fromServiceWorker: request.fromServiceWorker,
        encodedDataLength: request.transferSize,
        decodedBodyLength: request.decodedBodySize,
        timings: layOutTimeline(request),
        redirects: [],
        failure: null,
        initiator: { type: 'other', url: null },
        pageId: target.pageId,
        targetId,
        targetType: target.type,
        frameId: targetId,
        recovered: true,
      };
      if (this.#options.headers) Object.assign(entry, { requestHeaders: {}, responseHeaders: {} });
      this.#store(entry);
    }
    const ownDocument = (request: InFlight) =>
      request.target.targetId === targetId &&
      request.frameId === targetId &&
      request.resourceType === 'Document';
    return [...open.values()].some((same) => same.some(ownDocument));
  }

  /** Ends a request whose end events never came, as its timeline record shows it. */
  #endFromTimeline(request: InFlight, record: TimelineRequest): void {
    request.response ??= {
      status: record.status,
      statusText: '',
      mimeType: record.contentType,
      protocol: record.protocol,
      remoteAddress: null,
      fromDisk: record.fromCache,
      fromPrefetch: false,
      fromServiceWorker: record.fromServiceWorker,
      encodedDataLength: 0,
      timing: undefined,
      headers: undefined,
    };
    request.response.encodedDataLength = record.transferSize;
    request.decoded = Math.max(request.decoded, record.decodedBodySize);
    // The timeline's end is on the page's wall clock; the request's times are on Chromium's monotonic one.
    const endSeconds =
      request.startSeconds + (record.start + record.responseEnd) / 1000 - request.wallSeconds;
    this.#end(request, 'finished', Math.max(request.lastSeconds, endSeconds), null);
  }

  #requestWillBeSent(event: RequestWillBeSent, target: AttachedTarget, sessionId: string): void {
    const existing = this.#inFlight.get(event.requestId);
    if (existing !== undefined) {
      // The same id again is a redirect: the previous hop ended with `redirectResponse`.
      if (event.redirectResponse === undefined) return;
      this.#redirected(existing, event);
      existing.session = sessionId;
      if (this.#hooks.wants('request')) this.#hooks.started(this.#snapshot(existing, 'pending', null));
      return;
    }
    if (this.#inFlight.size >= this.#options.maxInFlight) {
      const oldest = this.#inFlight.values().next().value;
      if (oldest !== undefined) this.#end(oldest, 'incomplete', oldest.lastSeconds, null);
    }
    const redactor = this.#redactor;
    const request: InFlight = {
      id: event.requestId,
      url: redactor.url(event.request.url),
      method: event.request.method,
      resourceType: event.type ?? 'Other',
      frameId: event.frameId ?? null,
      initiator: initiatorOf(event, redactor),
      target,
      session: sessionId,
      startSeconds: event.timestamp,
      wallSeconds: event.wallTime,
      lastSeconds: event.timestamp,
      response: undefined,
      fromMemory: false,
      decoded: 0,
      redirects: [],
      requestHeaders: this.#options.headers ? redactor.headers(event.request.headers) : undefined,
      extraRequest: undefined,
      extraResponse: undefined,
    };
    const early = this.#earlyExtra.get(event.requestId);
    if (early !== undefined) {
      this.#earlyExtra.delete(event.requestId);
      request.extraRequest = early.request;
      request.extraResponse = early.response;
    }
    this.#inFlight.set(request.id, request);
    if (this.#hooks.wants('request')) this.#hooks.started(this.#snapshot(request, 'pending', null));
  }

  /** Closes the current hop with its 3xx response and starts the next one. */
  #redirected(request: InFlight, event: RequestWillBeSent): void {
    const response = this.#response(event.redirectResponse as CdpResponse);
    const hop = request.redirects.length;
    const timings = layOutTimings({
      startSeconds: request.startSeconds,
      wallSeconds: request.wallSeconds,
      endSeconds: event.timestamp,
      timing: response.timing,
      responded: true,
    });
    const redirect: NetworkRedirect = {
      url: request.url,
      method: request.method,
      status: response.status,
      statusText: response.statusText,
      protocol: response.protocol,
      remoteAddress: response.remoteAddress,
      encodedDataLength: response.encodedDataLength,
      timings,
    };
    if (this.#options.headers) {
      Object.assign(redirect, {
        requestHeaders: request.extraRequest?.[hop] ?? request.requestHeaders ?? {},
        responseHeaders: request.extraResponse?.[hop] ?? response.headers ?? {},
      });
    }
    // A chain is bounded like everything else: Chromium itself gives up after 20 redirects.
    if (request.redirects.length < 50) request.redirects.push(redirect);
    request.url = this.#redactor.url(event.request.url);
    request.method = event.request.method;
    request.startSeconds = event.timestamp;
    request.wallSeconds = event.wallTime;
    request.lastSeconds = event.timestamp;
    request.response = undefined;
    request.fromMemory = false;
    request.decoded = 0;
    if (this.#options.headers) request.requestHeaders = this.#redactor.headers(event.request.headers);
  }

  #responseReceived(event: ResponseReceived, sessionId: string): void {
    const request = this.#inFlight.get(event.requestId);
    if (request === undefined) return;
    request.session = sessionId;
    request.lastSeconds = event.timestamp;
    request.response = this.#response(event.response);
    if (event.type !== undefined) request.resourceType = event.type;
    if (this.#hooks.wants('response')) this.#hooks.responded(this.#snapshot(request, 'responded', null));
  }

  #loadingFinished(event: LoadingFinished, sessionId: string): void {
    const request = this.#inFlight.get(event.requestId);
    if (request === undefined) {
      this.#hooks.missed(sessionId);
      return;
    }
    request.session = sessionId;
    if (request.response !== undefined) request.response.encodedDataLength = event.encodedDataLength;
    this.#end(request, 'finished', event.timestamp, null);
  }

  #loadingFailed(event: LoadingFailed, sessionId: string): void {
    const request = this.#inFlight.get(event.requestId);
    if (request === undefined) {
      this.#hooks.missed(sessionId);
      return;
    }
    if (event.type !== undefined) request.resourceType = event.type;
    this.#end(request, 'failed', event.timestamp, {
      errorText: event.errorText,
      canceled: event.canceled === true,
      blockedReason: event.blockedReason ?? null,
      corsError: event.corsErrorStatus?.corsError ?? null,
    });
  }

  #extraInfo(method: string, event: ExtraInfo): void {
    const headers = this.#redactor.headers(event.headers);
    const isRequest = method === 'Network.requestWillBeSentExtraInfo';
    const request = this.#inFlight.get(event.requestId);
    if (request !== undefined) {
      if (isRequest) request.extraRequest ??= [];
      else request.extraResponse ??= [];
      const list = (isRequest ? request.extraRequest : request.extraResponse) as Record<string, string>[];
      if (list.length <= request.redirects.length + 1) list.push(headers);
      return;
    }
    // Chromium may send these before `requestWillBeSent`.
    let early = this.#earlyExtra.get(event.requestId);
    if (early === undefined) {
      if (this.#earlyExtra.size >= MAX_EARLY_EXTRA_INFO) {
        const oldest = this.#earlyExtra.keys().next().value;
        if (oldest !== undefined) this.#earlyExtra.delete(oldest);
      }
      early = { request: [], response: [] };
      this.#earlyExtra.set(event.requestId, early);
    }
    const list = isRequest ? early.request : early.response;
    if (list.length < 4) list.push(headers);
  }

  #response(response: CdpResponse): Response {
    return {
      status: response.status,
      statusText: response.statusText ?? '',
      mimeType: response.mimeType ?? '',
      protocol: response.protocol ?? '',
      remoteAddress: remoteAddressOf(response),
      fromDisk: response.fromDiskCache === true,
      fromPrefetch: response.fromPrefetchCache === true,
      fromServiceWorker: response.fromServiceWorker === true,
      encodedDataLength: response.encodedDataLength ?? 0,
      timing: response.timing,
      headers: this.#options.headers ? this.#redactor.headers(response.headers) : undefined,
    };
  }

  #end(
    request: InFlight,
    state: NetworkEntryState,
    endSeconds: number,
    failure: NetworkFailure | null,
  ): void {
    this.#inFlight.delete(request.id);
    this.#store(this.#snapshot(request, state, failure, endSeconds, true));
  }

  #store(entry: NetworkEntry): void {
    if (this.#remembered.size > 0) {
      this.#remember(entry, entry.targetId);
      if (entry.frameId !== null && entry.frameId !== entry.targetId) this.#remember(entry, entry.frameId);
    }
    this.entries.push(entry);
    this.#hooks.ended(entry);
  }

  #remember(entry: NetworkEntry, id: string): void {
    const remembered = this.#remembered.get(id);
    if (remembered === undefined || remembered.size >= MAX_REMEMBERED) return;
    const key = timelineKey(id, entry.targetId, entry);
    if (key === undefined) return;
    remembered.counts.set(key, (remembered.counts.get(key) ?? 0) + 1);
    remembered.size++;
  }

  /** The public form of a request: a new object, so what listeners keep never changes under them. */
  #snapshot(
    request: InFlight,
    state: NetworkEntryState,
    failure: NetworkFailure | null,
    endSeconds = request.lastSeconds,
    final = false,
  ): NetworkEntry {
    const { response, target } = request;
    const fromCache = response?.fromDisk
      ? 'disk'
      : response?.fromPrefetch
        ? 'prefetch'
        : request.fromMemory
          ? 'memory'
          : null;
    const entry: NetworkEntry = {
      id: request.id,
      state,
      url: request.url,
      method: request.method,
      resourceType: request.resourceType,
      status: response?.status ?? null,
      statusText: response?.statusText ?? '',
      mimeType: response?.mimeType ?? '',
      protocol: response?.protocol ?? '',
      // A cached response repeats the address of the one it copies; nothing was sent there now.
      remoteAddress: fromCache === null ? (response?.remoteAddress ?? null) : null,
      fromCache,
      fromServiceWorker: response?.fromServiceWorker ?? false,
      encodedDataLength: response?.encodedDataLength ?? 0,
      decodedBodyLength: request.decoded,
      timings: layOutTimings({
        startSeconds: request.startSeconds,
        wallSeconds: request.wallSeconds,
        endSeconds: Math.max(endSeconds, request.startSeconds),
        timing: response?.timing,
        responded: response !== undefined,
      }),
      // A request that ended is gone from the map: its list is handed over, not copied.
      redirects: final ? request.redirects : request.redirects.slice(),
      failure,
      initiator: request.initiator,
      pageId: target.pageId,
      targetId: target.targetId,
      targetType: target.type,
      frameId: request.frameId,
      recovered: false,
    };
    if (this.#options.headers) {
      const hop = request.redirects.length;
      Object.assign(entry, {
        requestHeaders: request.extraRequest?.[hop] ?? request.requestHeaders ?? {},
        responseHeaders: request.extraResponse?.[hop] ?? response?.headers ?? {},
      });
    }
    return entry;
  }
}

/**
 * How the timeline of target `id` names a request, or undefined when it is not in that timeline:
 * a document of its own by where it ended up, anything else it asked for by its first URL (an
 * out-of-process iframe's document is the request of its parent's frame and in its parent's
 * timeline, so it counts for both).
 */
function timelineKey(
  id: string,
  ownerId: string,
  request: Pick<NetworkEntry, 'url' | 'resourceType' | 'frameId' | 'redirects'>,
): string | undefined {
  if (ownerId !== id && request.frameId !== id) return undefined;
  if (request.resourceType === 'Document' && request.frameId === id) return request.url;
  return request.redirects[0]?.url ?? request.url;
}

function remoteAddressOf(response: CdpResponse): string | null {
  const ip = response.remoteIPAddress;
  if (ip === undefined || ip === '') return null;
  const host = ip.includes(':') && !ip.startsWith('[') ? `[${ip}]` : ip;
  return response.remotePort === undefined ? host : `${host}:${response.remotePort}`;
}

function initiatorOf(event: RequestWillBeSent, redactor: Redactor): NetworkInitiator {
  const initiator = event.initiator;
  const url = initiator?.url ?? initiator?.stack?.callFrames?.[0]?.url;
  return { type: initiator?.type ?? 'other', url: url ? redactor.url(url) : null };
}
