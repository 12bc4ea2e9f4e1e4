import { request } from 'undici';
import { NetworkObserverError } from '../errors.js';
import type { NetworkTarget } from './types.js';

/**
 * `scheme://host:port` of a URL, for messages. A `cdpUrl`'s path (and a WebSocket URL's) holds the
 * browser's secret, and its query may hold a key: neither may reach an error or a log.
 */
export function safeEndpoint(url: string): string {
  try {
    const { protocol, host } = new URL(url);
    return `${protocol}//${host}`;
  } catch {
    return '(an unparseable URL)';
  }
}

/** The `cdpUrl` of whatever `observeNetwork` was given. */
export function cdpUrlOf(target: NetworkTarget): string {
  let url: unknown;
  if (typeof target === 'string') url = target;
  else if (typeof target === 'object' && target !== null) {
    url = 'session' in target ? target.session?.cdpUrl : 'cdpUrl' in target ? target.cdpUrl : undefined;
  }
  if (typeof url !== 'string' || url === '') {
    throw new NetworkObserverError(
      'observeNetwork: no cdpUrl: pass a cdpUrl string, a browser ({ cdpUrl }) or a handle ({ session: { cdpUrl } }) of an active browser',
    );
  }
  if (!/^(https?|wss?):\/\//i.test(url)) {
    throw new NetworkObserverError(
      `observeNetwork: the cdpUrl must be an http(s) or ws(s) URL, not ${safeEndpoint(url)}`,
    );
  }
  return url;
}

/**
 * The browser's WebSocket endpoint: a `ws(s)://` URL as is, otherwise `webSocketDebuggerUrl` from
 * `<cdpUrl>/json/version` (the path is kept: it carries the browser's secret; so is the query).
 * @throws {NetworkObserverError} naming the host and the status, never the path.
 */
export async function resolveWebSocketUrl(
  cdpUrl: string,
  options: { timeoutMs: number; signal?: AbortSignal | undefined },
): Promise<string> {
  if (/^wss?:\/\//i.test(cdpUrl)) return cdpUrl;
  const url = new URL(cdpUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/json/version`;
  const where = `${safeEndpoint(cdpUrl)}/…/json/version`;
  const signals = [AbortSignal.timeout(options.timeoutMs)];
  if (options.signal) signals.push(options.signal);
  const signal = AbortSignal.any(signals);
  let body: unknown;
  try {
    const response = await request(url, { method: 'GET', signal, headers: { accept: 'application/json' } });
    if (response.statusCode !== 200) {
      await response.body.dump();
      const hint = response.statusCode === 404 ? ' (is the browser still active?)' : '';
      throw new NetworkObserverError(`observeNetwork: ${where} answered ${response.statusCode}${hint}`);
    }
    body = await response.body.json();
  } catch (error) {
    if (error instanceof NetworkObserverError) throw error;
    if (options.signal?.aborted) throw options.signal.reason;
    const reason = signal.aborted
      ? `no answer within ${options.timeoutMs} ms`
      : `${(error as { code?: string }).code ?? 'request failed'}`;
    throw new NetworkObserverError(`observeNetwork: could not read ${where}: ${reason}`);
  }
  const ws = (body as { webSocketDebuggerUrl?: unknown } | null)?.webSocketDebuggerUrl;
  if (typeof ws !== 'string' || !/^wss?:\/\//i.test(ws)) {
    throw new NetworkObserverError(`observeNetwork: ${where} gave no webSocketDebuggerUrl`);
  }
  return ws;
}
