/**
 * The public shapes of the network observer: what it records per request, what `summary()` returns,
 * and the events it emits. Everything here is plain data (JSON-serialisable).
 */

/** The resource types Chromium reports (`Network.ResourceType`); new ones may appear. */
export type NetworkResourceType =
  | 'Document'
  | 'Stylesheet'
  | 'Image'
  | 'Media'
  | 'Font'
  | 'Script'
  | 'TextTrack'
  | 'XHR'
  | 'Fetch'
  | 'Prefetch'
  | 'EventSource'
  | 'WebSocket'
  | 'Manifest'
  | 'SignedExchange'
  | 'Ping'
  | 'CSPViolationReport'
  | 'Preflight'
  | 'FedCM'
  | 'Other'
  | (string & {});

/**
 * Where a request is in its life. `incomplete`: it had not ended when the observer stopped, its
 * target went away (a page closed, a renderer crashed), or it was pushed out of the in-flight bound.
 */
export type NetworkEntryState = 'pending' | 'responded' | 'finished' | 'failed' | 'incomplete';

/**
 * How long each phase took, in milliseconds, laid out as HAR lays them out: `blocked + dns + connect
 * + send + wait + receive` (leaving out -1) adds up to `total`. `-1` means the phase did not happen
 * (a reused connection has no `dns` or `connect`; plain HTTP has no `tls`).
 */
export interface NetworkTimings {
  /** When the request was issued, in milliseconds since the Unix epoch. */
  readonly start: number;
  /** Queued or stalled before anything went on the wire (includes proxy negotiation). */
  readonly blocked: number;
  /** Resolving the host name. */
  readonly dns: number;
  /** Opening the connection, TLS included. */
  readonly connect: number;
  /** The TLS handshake (part of `connect`). */
  readonly tls: number;
  /** Sending the request. */
  readonly send: number;
  /** Waiting for the first byte of the response (time to first byte after sending). */
  readonly wait: number;
  /** Reading the response body. */
  readonly receive: number;
  /** From issue to the last byte, or to the failure, or to the redirect. */
  readonly total: number;
}

/** Why a request failed. */
export interface NetworkFailure {
  /** Chromium's error, such as `net::ERR_CONNECTION_REFUSED` or `net::ERR_ABORTED`. */
  readonly errorText: string;
  /** The request was cancelled (by the page, a navigation, or an abort signal). */
  readonly canceled: boolean;
  /** Why Chromium blocked it, when it did: `csp`, `mixed-content`, `inspector`, `coep-frame-resource-needs-coep-header`, … */
  readonly blockedReason: string | null;
  /** The CORS error, when CORS refused it (`Network.CorsError`, such as `MissingAllowOriginHeader`). */
  readonly corsError: string | null;
}

/** What started a request. */
export interface NetworkInitiator {
  /** `parser`, `script`, `preload`, `SignedExchange`, `preflight` or `other`. */
  readonly type: string;
  /** The document or script that started it, when Chromium says (redacted like every URL). */
  readonly url: string | null;
}

/** One response of a redirect chain: the hop that answered 3xx before the request moved on. */
export interface NetworkRedirect {
  /** The URL that answered with the redirect (redacted). */
  readonly url: string;
  readonly method: string;
  readonly status: number;
  readonly statusText: string;
  readonly protocol: string;
  readonly remoteAddress: string | null;
  /** Bytes of this hop's response on the wire. */
  readonly encodedDataLength: number;
  readonly timings: NetworkTimings;
  /** Only with `headers: true`, redacted. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /** Only with `headers: true`, redacted. `location` is redacted like a URL. */
  readonly responseHeaders?: Readonly<Record<string, string>>;
}

/**
 * One request as the observer saw it, with its final response (after redirects). Metadata only:
 * never a body. URLs have secret query parameters redacted; headers are present only with
 * `headers: true` and have secret values redacted.
 */
export interface NetworkEntry {
  /**
   * Chromium's request id, unique within the browser; the hops of a redirect chain share it. A
   * `recovered` entry has an id of the observer's own, `recovered.<n>`.
   */
  readonly id: string;
  readonly state: NetworkEntryState;
  /** The final URL (after redirects), secret query parameters redacted. */
  readonly url: string;
  /** The HTTP method; '' when not known (a `recovered` entry). */
  readonly method: string;
  readonly resourceType: NetworkResourceType;
  /** The HTTP status, or null when no response arrived (or, `recovered`, the page was not shown it). */
  readonly status: number | null;
  readonly statusText: string;
  /** The response's MIME type, or '' without a response. */
  readonly mimeType: string;
  /** `http/1.1`, `h2`, `h3`, `data`, …; '' without a response. */
  readonly protocol: string;
  /** `ip:port` of the server (`[ip]:port` for IPv6), or null (cache hits, failures, data URLs). */
  readonly remoteAddress: string | null;
  /** Served from Chromium's memory cache, disk cache or prefetch cache; null when it went to the network. */
  readonly fromCache: 'memory' | 'disk' | 'prefetch' | null;
  /** A service worker answered it. */
  readonly fromServiceWorker: boolean;
  /** Bytes received over the network for the final response, headers included (0 for cache hits). */
  readonly encodedDataLength: number;
  /** Bytes of the body after decoding (decompression). */
  readonly decodedBodyLength: number;
  /** Timings of the final response; each redirect hop carries its own. */
  readonly timings: NetworkTimings;
  /** The hops before the final response, oldest first (empty without redirects). */
  readonly redirects: readonly NetworkRedirect[];
  readonly failure: NetworkFailure | null;
  readonly initiator: NetworkInitiator;
  /** The target id of the top-level page (tab or popup) the request belongs to; null for shared and service workers. */
  readonly pageId: string | null;
  /** The target that issued it: the page, an out-of-process iframe, or a worker. */
  readonly targetId: string;
  /** `page`, `iframe` (out-of-process), `worker`, `shared_worker` or `service_worker`. */
  readonly targetType: string;
  /** The frame that issued it, when it came from a document. */
  readonly frameId: string | null;
  /**
   * The request began before the observer could switch on its target's Network domain (a popup or
   * tab that started loading while the observer was still attaching to it), and was read back from
   * the document's own Performance Timeline when it finished. Such an entry has no method, status
   * text, remote address, initiator, headers or redirect hops; a cross-origin resource without
   * `Timing-Allow-Origin` also has no status, sizes or phases; any HTTP cache hit reads `disk`.
   */
  readonly recovered: boolean;
  /** Only with `headers: true`; lower-case names, secret values replaced by `[redacted]`. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /** Only with `headers: true`; lower-case names, secret values replaced by `[redacted]`. */
  readonly responseHeaders?: Readonly<Record<string, string>>;
}

/** What `summary()` returns. It describes the entries held now (see `maxEntries`), plus `dropped`. */
export interface NetworkSummary {
  /** Entries held. */
  readonly entries: number;
  /** Entries pushed out of the ring buffer since the observer started. */
  readonly dropped: number;
  /** Requests started and not yet ended. */
  readonly inFlight: number;
  /** Entries by the class of their final status; `none` when no response arrived. */
  readonly byStatusClass: Readonly<Record<'1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'none', number>>;
  readonly byResourceType: Readonly<Record<string, number>>;
  /** Entries by host (`host:port` when the port is not the scheme's default). */
  readonly byHost: Readonly<Record<string, number>>;
  readonly bytes: {
    /** Bytes over the network, headers included, redirect hops included. */
    readonly encoded: number;
    /** Bytes of bodies after decoding. */
    readonly decoded: number;
  };
  readonly fromCache: number;
  readonly fromServiceWorker: number;
  readonly failures: {
    readonly count: number;
    /** Failures by `errorText` (`net::ERR_…`), or `blocked:<reason>` when blocked. */
    readonly byReason: Readonly<Record<string, number>>;
  };
  /** The slowest entries by `timings.total`, slowest first. */
  readonly slowest: readonly NetworkEntry[];
}

/** Why an observer stopped. */
export interface NetworkObserverClose {
  /** `stopped`: `stop()` was called. `disconnected`: the CDP connection ended (the browser stopped). */
  readonly reason: 'stopped' | 'disconnected';
}

/** The events of a {@link NetworkObserver}, by name, with what their listeners receive. */
export interface NetworkObserverEvents {
  /** A request was issued, or moved on after a redirect (`redirects` grew). State `pending`. */
  request: NetworkEntry;
  /** Response headers arrived. State `responded`. */
  response: NetworkEntry;
  /** The request ended with its last byte; the entry is now in `entries()`. */
  finished: NetworkEntry;
  /** The request failed, or ended `incomplete`; the entry is now in `entries()`. */
  failed: NetworkEntry;
  /** The observer stopped; no event follows. */
  close: NetworkObserverClose;
}

/** What `observeNetwork` accepts: a `cdpUrl`, a browser (`{ cdpUrl }`), or a handle (`{ session: { cdpUrl } }`). */
export type NetworkTarget =
  | string
  | { readonly cdpUrl: string | null | undefined }
  | { readonly session: { readonly cdpUrl: string | null | undefined } };

/** A live stream of ended entries; `dropped` counts those the bounded queue had to let go. */
export interface NetworkEntryStream extends AsyncIterableIterator<NetworkEntry> {
  /** Entries pushed out because the consumer was slower than the browser. */
  readonly dropped: number;
}
