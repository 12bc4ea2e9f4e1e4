/**
 * The parts of the Chrome DevTools Protocol the observer reads, as Chromium sends them. Only the
 * fields used are declared; every one is treated as possibly missing, because proxies and older
 * browsers differ.
 */

/** `Network.ResourceTiming`: milliseconds relative to `requestTime` (seconds), -1 when not applicable. */
export interface ResourceTiming {
  requestTime: number;
  proxyStart: number;
  proxyEnd: number;
  dnsStart: number;
  dnsEnd: number;
  connectStart: number;
  connectEnd: number;
  sslStart: number;
  sslEnd: number;
  sendStart: number;
  sendEnd: number;
  receiveHeadersEnd: number;
}

export interface CdpRequest {
  url: string;
  urlFragment?: string;
  method: string;
  headers?: Record<string, string>;
}

export interface CdpResponse {
  url: string;
  status: number;
  statusText?: string;
  headers?: Record<string, string>;
  mimeType?: string;
  remoteIPAddress?: string;
  remotePort?: number;
  fromDiskCache?: boolean;
  fromServiceWorker?: boolean;
  fromPrefetchCache?: boolean;
  encodedDataLength?: number;
  timing?: ResourceTiming;
  protocol?: string;
}

export interface CdpInitiator {
  type: string;
  url?: string;
  stack?: { callFrames?: { url?: string }[] };
}

export interface RequestWillBeSent {
  requestId: string;
  loaderId?: string;
  documentURL?: string;
  request: CdpRequest;
  /** Seconds on Chromium's monotonic clock. */
  timestamp: number;
  /** Seconds since the Unix epoch. */
  wallTime: number;
  initiator?: CdpInitiator;
  redirectResponse?: CdpResponse;
  type?: string;
  frameId?: string;
}

export interface ResponseReceived {
  requestId: string;
  timestamp: number;
  type?: string;
  response: CdpResponse;
  frameId?: string;
}

export interface DataReceived {
  requestId: string;
  timestamp: number;
  dataLength: number;
  encodedDataLength?: number;
}

export interface LoadingFinished {
  requestId: string;
  timestamp: number;
  encodedDataLength: number;
}

export interface LoadingFailed {
  requestId: string;
  timestamp: number;
  type?: string;
  errorText: string;
  canceled?: boolean;
  blockedReason?: string;
  corsErrorStatus?: { corsError?: string };
}

export interface RequestServedFromCache {
  requestId: string;
}

export interface ExtraInfo {
  requestId: string;
  headers?: Record<string, string>;
}

export interface TargetInfo {
  targetId: string;
  type: string;
  title?: string;
  url?: string;
  attached?: boolean;
}

export interface AttachedToTarget {
  sessionId: string;
  targetInfo: TargetInfo;
  waitingForDebugger?: boolean;
}

export interface DetachedFromTarget {
  sessionId: string;
  targetId?: string;
}
