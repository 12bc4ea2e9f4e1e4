import { VERSION } from '../version.js';
import type { NetworkEntry, NetworkRedirect, NetworkTimings } from './types.js';

/** A HAR 1.2 document (http://www.softwareishard.com/blog/har-12-spec/). */
export interface Har {
  log: HarLog;
}

export interface HarLog {
  version: '1.2';
  creator: HarCreator;
  browser?: HarCreator;
  pages: HarPage[];
  entries: HarEntry[];
  comment?: string;
}

export interface HarCreator {
  name: string;
  version: string;
  comment?: string;
}

export interface HarPage {
  startedDateTime: string;
  id: string;
  title: string;
  pageTimings: { onContentLoad?: number; onLoad?: number; comment?: string };
  comment?: string;
}

export interface HarNameValue {
  name: string;
  value: string;
  comment?: string;
}

export interface HarRequest {
  method: string;
  url: string;
  httpVersion: string;
  cookies: HarNameValue[];
  headers: HarNameValue[];
  queryString: HarNameValue[];
  headersSize: number;
  bodySize: number;
  comment?: string;
}

export interface HarResponse {
  status: number;
  statusText: string;
  httpVersion: string;
  cookies: HarNameValue[];
  headers: HarNameValue[];
  content: { size: number; compression?: number; mimeType: string; text?: string; comment?: string };
  redirectURL: string;
  headersSize: number;
  bodySize: number;
  comment?: string;
  /** Chrome DevTools' own fields: bytes on the wire, the failure, a service worker's answer. */
  _transferSize?: number;
  _error?: string;
  _blockedReason?: string;
  _fetchedViaServiceWorker?: boolean;
}

export interface HarTimings {
  blocked: number;
  dns: number;
  connect: number;
  send: number;
  wait: number;
  receive: number;
  ssl: number;
  comment?: string;
}

export interface HarEntry {
  pageref?: string;
  startedDateTime: string;
  time: number;
  request: HarRequest;
  response: HarResponse;
  cache: Record<string, never>;
  timings: HarTimings;
  serverIPAddress?: string;
  connection?: string;
  comment?: string;
  /** Chrome DevTools' own fields, which its HAR import reads. */
  _resourceType: string;
  _fromCache?: 'memory' | 'disk';
  _initiator: { type: string; url?: string };
  _frameId?: string;
}

export interface HarSource {
  entries: readonly NetworkEntry[];
  /** The title of a page target, when known. */
  pageTitle(pageId: string): string | undefined;
  /** `Browser.getVersion`'s product, such as `HeadlessChrome/131.0.6778.0`. */
  product: string | undefined;
}

/**
 * A HAR 1.2 document of the entries: one HAR entry per response, so a redirect chain gives one entry
 * per hop (each with its `redirectURL`), as Chrome DevTools exports it. Bodies are never included;
 * headers only when they were recorded, already redacted.
 */
export function toHar(source: HarSource): Har {
  const entries: HarEntry[] = [];
  const pageStarts = new Map<string, { started: number; url: string }>();
  for (const entry of source.entries) {
    const hops = entry.redirects;
    for (let i = 0; i < hops.length; i++) {
      const next = hops[i + 1]?.url ?? entry.url;
      entries.push(redirectEntry(entry, hops[i] as NetworkRedirect, next));
    }
    entries.push(finalEntry(entry));
    if (entry.pageId !== null) {
      const started = hops[0]?.timings.start ?? entry.timings.start;
      const known = pageStarts.get(entry.pageId);
      if (known === undefined || started < known.started) {
        pageStarts.set(entry.pageId, { started, url: hops[0]?.url ?? entry.url });
      }
    }
  }
  entries.sort((a, b) => a.startedDateTime.localeCompare(b.startedDateTime));
  const pages: HarPage[] = [...pageStarts]
    .sort(([, a], [, b]) => a.started - b.started)
    .map(([id, { started, url }]) => ({
      startedDateTime: new Date(started).toISOString(),
      id,
      title: source.pageTitle(id) || url,
      pageTimings: { onContentLoad: -1, onLoad: -1 },
    }));
  const log: HarLog = {
    version: '1.2',
    creator: { name: 'cloudbrowser', version: VERSION },
    pages,
    entries,
  };
  const product = source.product?.split('/');
  if (product?.[0] && product[1]) log.browser = { name: product[0], version: product[1] };
  return { log };
}

function redirectEntry(entry: NetworkEntry, hop: NetworkRedirect, next: string): HarEntry {
  return base({
    entry,
    url: hop.url,
    method: hop.method,
    timings: hop.timings,
    remoteAddress: hop.remoteAddress,
    requestHeaders: hop.requestHeaders,
    response: {
      status: hop.status,
      statusText: hop.statusText,
      httpVersion: httpVersion(hop.protocol),
      cookies: [],
      headers: nameValues(hop.responseHeaders),
      content: { size: 0, mimeType: 'x-unknown' },
      redirectURL: next,
      headersSize: -1,
      bodySize: -1,
      _transferSize: hop.encodedDataLength,
    },
  });
}

function finalEntry(entry: NetworkEntry): HarEntry {
  const response: HarResponse = {
    status: entry.status ?? 0,
    statusText: entry.statusText,
    httpVersion: httpVersion(entry.protocol),
    cookies: [],
    headers: nameValues(entry.responseHeaders),
    content: { size: entry.decodedBodyLength, mimeType: entry.mimeType || 'x-unknown' },
    redirectURL: '',
    headersSize: -1,
    bodySize: entry.fromCache !== null ? 0 : -1,
    _transferSize: entry.encodedDataLength,
  };
  if (entry.failure !== null) response._error = entry.failure.errorText;
  if (entry.failure?.blockedReason) response._blockedReason = entry.failure.blockedReason;
  if (entry.fromServiceWorker) response._fetchedViaServiceWorker = true;
  const har = base({
    entry,
    url: entry.url,
    method: entry.method,
    timings: entry.timings,
    remoteAddress: entry.remoteAddress,
    requestHeaders: entry.requestHeaders,
    response,
  });
  if (entry.fromCache === 'memory' || entry.fromCache === 'disk') har._fromCache = entry.fromCache;
  if (entry.recovered) {
    har.comment = 'Recovered from the page’s Performance Timeline: it began before the observer attached.';
  }
  return har;
}

function base(parts: {
  entry: NetworkEntry;
  url: string;
  method: string;
  timings: NetworkTimings;
  remoteAddress: string | null;
  requestHeaders: Readonly<Record<string, string>> | undefined;
  response: HarResponse;
}): HarEntry {
  const { entry, timings } = parts;
  const harTimings: HarTimings = {
    blocked: timings.blocked,
    dns: timings.dns,
    connect: timings.connect,
    send: timings.send,
    wait: timings.wait,
    receive: timings.receive,
    ssl: timings.tls,
  };
  const har: HarEntry = {
    startedDateTime: new Date(timings.start).toISOString(),
    time: totalOf(harTimings),
    request: {
      method: parts.method,
      url: parts.url,
      httpVersion: parts.response.httpVersion,
      cookies: [],
      headers: nameValues(parts.requestHeaders),
      queryString: queryOf(parts.url),
      headersSize: -1,
      bodySize: parts.method === 'GET' || parts.method === 'HEAD' ? 0 : -1,
    },
    response: parts.response,
    cache: {},
    timings: harTimings,
    _resourceType: devtoolsResourceType(entry.resourceType),
    _initiator:
      entry.initiator.url === null
        ? { type: entry.initiator.type }
        : { ...entry.initiator, url: entry.initiator.url },
  };
  if (entry.pageId !== null) har.pageref = entry.pageId;
  if (entry.frameId !== null) har._frameId = entry.frameId;
  const ip = ipOf(parts.remoteAddress);
  if (ip !== undefined) har.serverIPAddress = ip;
  return har;
}

/** HAR's `time`: the sum of the phases, leaving out those that did not happen (-1); `ssl` is inside `connect`. */
function totalOf(t: HarTimings): number {
  const sum = [t.blocked, t.dns, t.connect, t.send, t.wait, t.receive].reduce(
    (a, b) => a + Math.max(b, 0),
    0,
  );
  return Math.round(sum * 1000) / 1000;
}

function nameValues(headers: Readonly<Record<string, string>> | undefined): HarNameValue[] {
  if (headers === undefined) return [];
  const result: HarNameValue[] = [];
  // Chromium joins repeated headers with newlines.
  for (const [name, value] of Object.entries(headers)) {
    for (const one of value.split('\n')) result.push({ name, value: one });
  }
  return result;
}

function queryOf(url: string): HarNameValue[] {
  const start = url.indexOf('?');
  if (start === -1) return [];
  const end = url.indexOf('#', start);
  const query = url.slice(start + 1, end === -1 ? undefined : end);
  if (query === '') return [];
  return query.split('&').map((pair) => {
    const equals = pair.indexOf('=');
    const name = equals === -1 ? pair : pair.slice(0, equals);
    const value = equals === -1 ? '' : pair.slice(equals + 1);
    return { name: decode(name), value: decode(value) };
  });
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** `ip:port` or `[ip]:port` → `ip`. */
function ipOf(remoteAddress: string | null): string | undefined {
  if (remoteAddress === null) return undefined;
  if (remoteAddress.startsWith('[')) return remoteAddress.slice(1, remoteAddress.indexOf(']'));
  const colon = remoteAddress.lastIndexOf(':');
  return colon === -1 ? remoteAddress : remoteAddress.slice(0, colon);
}

function httpVersion(protocol: string): string {
  switch (protocol) {
    case 'http/1.0':
      return 'HTTP/1.0';
    case 'http/1.1':
      return 'HTTP/1.1';
    case 'h2':
      return 'http/2.0';
    case 'h3':
      return 'http/3.0';
    default:
      return protocol;
  }
}

/** The resource type names of Chrome DevTools (`Common.ResourceType`), which its HAR import maps back. */
function devtoolsResourceType(type: string): string {
  switch (type) {
    case 'XHR':
      return 'xhr';
    case 'TextTrack':
      return 'texttrack';
    case 'EventSource':
      return 'eventsource';
    case 'WebSocket':
      return 'websocket';
    case 'SignedExchange':
      return 'signed-exchange';
    case 'CSPViolationReport':
      return 'csp-violation-report';
    default:
      return type.toLowerCase();
  }
}
