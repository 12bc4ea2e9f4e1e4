import type { CdpConnection } from './cdp-connection.js';
import type { NetworkResourceType } from './types.js';

/**
 * One request as a document's own Performance Timeline (Navigation and Resource Timing) remembers
 * it. Phase times are milliseconds after `start`, -1 where the browser does not expose them (a
 * cross-origin resource without `Timing-Allow-Origin` shows only its start and end).
 */
export interface TimelineRequest {
  /** The document's URL for `navigation`; a resource's URL as requested, before any redirect. No fragment. */
  url: string;
  /** `navigation` for the document itself, else the resource's `initiatorType` (`img`, `script`, `fetch`, …). */
  kind: string;
  /** Milliseconds since the Unix epoch. */
  start: number;
  /** 0 when not exposed (a cross-origin resource without CORS). */
  status: number;
  protocol: string;
  contentType: string;
  fromCache: boolean;
  fromServiceWorker: boolean;
  transferSize: number;
  decodedBodySize: number;
  dnsStart: number;
  dnsEnd: number;
  connectStart: number;
  connectEnd: number;
  tlsStart: number;
  requestStart: number;
  responseStart: number;
  responseEnd: number;
}

/** Runs in a world of the observer's own, so a page's scripts can neither see it nor feed it. */
const WORLD_NAME = 'cloudbrowser-network';

const EXPRESSION = `(() => {
  const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  const requests = entries.map((e) => {
    const at = (time) => (time > 0 ? time - e.startTime : -1);
    return {
      url: e.name,
      kind: e.entryType === 'navigation' ? 'navigation' : e.initiatorType,
      start: performance.timeOrigin + e.startTime,
      status: e.responseStatus ?? 0,
      protocol: e.nextHopProtocol,
      contentType: e.contentType ?? '',
      fromCache: e.deliveryType === 'cache' || (e.transferSize === 0 && e.decodedBodySize > 0),
      fromServiceWorker: e.workerStart > 0,
      transferSize: e.transferSize,
      decodedBodySize: e.decodedBodySize,
      dnsStart: at(e.domainLookupStart),
      dnsEnd: at(e.domainLookupEnd),
      connectStart: at(e.connectStart),
      connectEnd: at(e.connectEnd),
      tlsStart: at(e.secureConnectionStart),
      requestStart: at(e.requestStart),
      responseStart: at(e.responseStart),
      responseEnd: at(e.responseEnd),
    };
  });
  return { loaded: document.readyState === 'complete', requests };
})()`;

/** What a reading of a frame's timeline found. */
export interface Timeline {
  /**
   * Whether the document has fired its load event: until then, its frames' documents (added to its
   * timeline as they load) and its own may still be missing.
   */
  loaded: boolean;
  /** Over HTTP(S) and complete only, since those still loading end in events the observer receives. */
  requests: TimelineRequest[];
}

/**
 * Reads the requests a frame's current document has finished from its Performance Timeline.
 * `frameId` is a page's or an out-of-process iframe's target id (its main frame).
 */
export async function readTimeline(
  connection: CdpConnection,
  sessionId: string,
  frameId: string,
): Promise<Timeline> {
  const { executionContextId } = await connection.send<{ executionContextId: number }>(
    'Page.createIsolatedWorld',
    { frameId, worldName: WORLD_NAME },
    sessionId,
  );
  const { result } = await connection.send<{ result?: { value?: unknown } }>(
    'Runtime.evaluate',
    { expression: EXPRESSION, contextId: executionContextId, returnByValue: true, silent: true },
    sessionId,
  );
  const value = result?.value as Partial<Timeline> | undefined;
  if (!Array.isArray(value?.requests)) return { loaded: true, requests: [] };
  const requests = value.requests
    .filter(
      (item: TimelineRequest) =>
        typeof item?.url === 'string' && /^https?:/.test(item.url) && item.responseEnd > 0,
    )
    .map((item: TimelineRequest) => ({ ...item, url: withoutFragment(item.url) }));
  return { loaded: value.loaded !== false, requests };
}

/** CDP gives a request's URL without its fragment; so must the timeline, to be compared with it. */
function withoutFragment(url: string): string {
  const hash = url.indexOf('#');
  return hash === -1 ? url : url.slice(0, hash);
}

/** The resource type Chromium would have reported, as well as the initiator and content type tell. */
export function resourceTypeOf(request: TimelineRequest): NetworkResourceType {
  switch (request.kind) {
    case 'navigation':
    case 'iframe':
    case 'frame':
      return 'Document';
    case 'img':
    case 'image':
    case 'input':
      return 'Image';
    case 'script':
      return 'Script';
    case 'fetch':
      return 'Fetch';
    case 'xmlhttprequest':
      return 'XHR';
    case 'beacon':
      return 'Ping';
    case 'video':
    case 'audio':
      return 'Media';
    case 'track':
      return 'TextTrack';
  }
  // `link`, `css` and `other` may be anything; the content type says what arrived.
  const type = request.contentType;
  if (type === 'text/css') return 'Stylesheet';
  if (type.startsWith('font/') || type.startsWith('application/font')) return 'Font';
  if (type.startsWith('image/')) return 'Image';
  if (type.includes('javascript')) return 'Script';
  return 'Other';
}
