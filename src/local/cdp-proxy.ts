import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'undici';
import { ServerWebSocket } from './websocket.js';

export interface CdpProxyOptions {
  request: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  /** Chromium's own endpoint on loopback; never shown to the client. */
  upstreamUrl: string;
  /** Called once the client is connected through; the returned function is called when it disconnects. */
  onConnect(): () => void;
  /** A client asked Chromium to close itself; the proxy answered in its place. */
  onCloseRefused(): void;
}

/** An open proxied connection; `close()` ends both legs. */
export interface CdpConnection {
  close(): void;
}

/**
 * Proxies one CDP WebSocket from a client to Chromium. `Browser.close` is answered here and not
 * forwarded: a framework closing its browser object is not the service's stop action, so the
 * browser stays up and billed until it is stopped, as the cloud service behaves.
 */
export function proxyCdp(options: CdpProxyOptions): Promise<CdpConnection | undefined> {
  const { socket } = options;
  return new Promise((resolve) => {
    const upstream = new WebSocket(options.upstreamUrl);
    const failed = () => {
      socket.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n');
      resolve(undefined);
    };
    upstream.addEventListener('error', failed, { once: true });
    upstream.addEventListener(
      'open',
      () => {
        upstream.removeEventListener('error', failed);
        let onDisconnect: (() => void) | undefined;
        const client = ServerWebSocket.accept(options.request, socket, options.head, {
          message(data) {
            if (data.includes('"Browser.close"')) {
              const reply = refuseClose(data);
              if (reply !== undefined) {
                options.onCloseRefused();
                client?.send(reply);
                return;
              }
            }
            if (upstream.readyState === WebSocket.OPEN) upstream.send(data);
          },
          close() {
            upstream.close();
            onDisconnect?.();
            onDisconnect = undefined;
          },
        });
        if (client === undefined) {
          upstream.close();
          return resolve(undefined);
        }
        onDisconnect = options.onConnect();
        upstream.addEventListener('message', (event) => {
          client.send(
            typeof event.data === 'string' ? event.data : Buffer.from(event.data as ArrayBuffer).toString(),
          );
        });
        upstream.addEventListener('close', () => client.close(1001));
        upstream.addEventListener('error', () => client.close(1011));
        resolve({ close: () => client.close(1001) });
      },
      { once: true },
    );
  });
}

/** The reply to a `Browser.close` command, or undefined if the message is something else. */
function refuseClose(data: string): string | undefined {
  let message: { id?: unknown; method?: unknown; sessionId?: unknown };
  try {
    message = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (message.method !== 'Browser.close') return undefined;
  return JSON.stringify({
    id: message.id,
    result: {},
    ...(typeof message.sessionId === 'string' ? { sessionId: message.sessionId } : {}),
  });
}
