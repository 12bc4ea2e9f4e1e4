import type { ResourceTiming } from './protocol.js';
import type { TimelineRequest } from './timeline.js';
import type { NetworkTimings } from './types.js';

/** When a request (or one hop of it) started and ended, on Chromium's clocks. */
export interface Span {
  /** Issue time, seconds on Chromium's monotonic clock (`timestamp`). */
  startSeconds: number;
  /** Issue time, seconds since the Unix epoch (`wallTime`). */
  wallSeconds: number;
  /** End (last byte, failure or redirect), seconds on the monotonic clock. */
  endSeconds: number;
  /** `response.timing`, when the response had one (not for memory-cache hits or failures). */
  timing: ResourceTiming | undefined;
  /** Whether any response arrived: without one, the whole time counts as `blocked`. */
  responded: boolean;
}

/**
 * Lays Chromium's timing out in HAR phases. Everything before sending that was not DNS or connecting
 * is `blocked` (queueing, proxy, stalls), and `receive` runs from the first header byte to the end,
 * so the phases add up to `total` exactly.
 */
export function layOutTimings(span: Span): NetworkTimings {
  const total = Math.max(0, (span.endSeconds - span.startSeconds) * 1000);
  const start = round(span.wallSeconds * 1000);
  const { timing } = span;
  // A memory-cache hit repeats the timing of the response it copies, which began before this request.
  const stale = timing !== undefined && timing.requestTime < span.startSeconds - 0.001;
  if (timing === undefined || !(timing.requestTime > 0) || stale) return wholly(start, total, span.responded);
  // Chromium's timing starts at `requestTime`, a little after the request was issued.
  const offset = Math.max(0, (timing.requestTime - span.startSeconds) * 1000);
  const dns = phase(timing.dnsStart, timing.dnsEnd);
  const connect = phase(timing.connectStart, timing.connectEnd);
  const tls = phase(timing.sslStart, timing.sslEnd);
  const sendStart = timing.sendStart >= 0 ? timing.sendStart : 0;
  const sendEnd = timing.sendEnd >= sendStart ? timing.sendEnd : sendStart;
  const headersEnd = timing.receiveHeadersEnd >= sendEnd ? timing.receiveHeadersEnd : sendEnd;
  const blocked = Math.max(0, offset + sendStart - Math.max(dns, 0) - Math.max(connect, 0));
  const send = sendEnd - sendStart;
  const wait = headersEnd - sendEnd;
  const receive = Math.max(0, total - blocked - Math.max(dns, 0) - Math.max(connect, 0) - send - wait);
  return phased(start, total, { blocked, dns, connect, tls, send, wait, receive });
}

/**
 * Lays a Performance Timeline record out in the same phases. It does not separate sending from
 * waiting (`send` is 0), and a cross-origin resource without `Timing-Allow-Origin` exposes only its
 * whole time, counted as `receive` as for a cache hit.
 */
export function layOutTimeline(request: TimelineRequest): NetworkTimings {
  const total = Math.max(0, request.responseEnd);
  const start = round(request.start);
  if (!(request.requestStart >= 0 && request.responseStart >= request.requestStart)) {
    return wholly(start, total, true);
  }
  // Equal start and end: a reused connection or a cached lookup, which did not happen now.
  const dns = request.dnsEnd > request.dnsStart ? request.dnsEnd - request.dnsStart : -1;
  const connect = request.connectEnd > request.connectStart ? request.connectEnd - request.connectStart : -1;
  const tls = connect >= 0 && request.tlsStart > 0 ? request.connectEnd - request.tlsStart : -1;
  const wait = request.responseStart - request.requestStart;
  const receive = Math.max(0, total - request.responseStart);
  const blocked = Math.max(0, total - Math.max(dns, 0) - Math.max(connect, 0) - wait - receive);
  return phased(start, total, { blocked, dns, connect, tls, send: 0, wait, receive });
}

/** Only the whole time is known: a response spent it reading (a cache hit), a request without one waiting. */
function wholly(start: number, total: number, responded: boolean): NetworkTimings {
  const whole = round(total);
  const blocked = responded ? -1 : whole;
  const receive = responded ? whole : 0;
  return { start, blocked, dns: -1, connect: -1, tls: -1, send: 0, wait: 0, receive, total: whole };
}

/** Rounds measured phases; `total` is at least their sum (-1 phases left out). */
function phased(
  start: number,
  total: number,
  phases: Omit<NetworkTimings, 'start' | 'total'>,
): NetworkTimings {
  const { blocked, dns, connect, tls, send, wait, receive } = phases;
  const sum = blocked + Math.max(dns, 0) + Math.max(connect, 0) + send + wait + receive;
  return {
    start,
    blocked: round(blocked),
    dns: round(dns),
    connect: round(connect),
    tls: round(tls),
    send: round(send),
    wait: round(wait),
    receive: round(receive),
    total: round(Math.max(total, sum)),
  };
}

function phase(start: number, end: number): number {
  return start >= 0 && end >= start ? end - start : -1;
}

/** Microsecond precision is all Chromium has; more digits are noise in a HAR file. */
function round(ms: number): number {
  return ms < 0 ? -1 : Math.round(ms * 1000) / 1000;
}
