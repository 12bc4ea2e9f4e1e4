import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { frame, ServerWebSocket } from './websocket.js';

export interface CdpProxyOptions {
  request: IncomingMessage;
  socket: Duplex;
  head: Buffer;
  /** Chromium's own endpoint on loopback; never shown to the client. */
  upstreamUrl: string;
  /** Called once the client is connected through; the returned function is called when it disconnects. */
  onConnect(): () => void;
  /** A client asked Chromium to close itself; the proxy kept it from doing so. */
  onCloseRefused(): void;
}

/** An open proxied connection; `close()` ends both legs. */
export interface CdpConnection {
  close(): void;
}

/**
 * Proxies one CDP WebSocket from a client to Chromium. Chromium's frames reach the client as raw
 * bytes (a server's frames are what the client expects), so the busy direction costs no parsing.
 * The client's frames are read, because `Browser.close` must not reach Chromium: a framework closing
 * its browser object is not the service's stop action, so the browser stays up and billed until it
 * is stopped, as the cloud service behaves. It is sent on as a harmless `Browser.getVersion` with the
 * same id, so the client still gets its answer, in order.
 */
export async function proxyCdp(options: CdpProxyOptions): Promise<CdpConnection | undefined> {
  const { socket } = options;
  const opened = await openUpstream(options.upstreamUrl).catch(() => undefined);
  if (!opened) {
    socket.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n');
    return undefined;
  }
  const { upstream, rest } = opened;
  let onDisconnect: (() => void) | undefined;
  const forward = (opcode: number, payload: Buffer) => {
    if (!upstream.destroyed) upstream.write(frame(opcode, payload, true));
  };
  const client = ServerWebSocket.accept(options.request, socket, options.head, {
    message(data) {
      if (data.includes('"Browser.close"')) {
        const replacement = withoutClose(data);
        if (replacement !== undefined) {
          options.onCloseRefused();
          forward(0x1, Buffer.from(replacement));
          return;
        }
      }
      forward(0x1, Buffer.from(data));
    },
    control(opcode, payload) {
      // Pings and the closing handshake go to Chromium, whose answers come back through the pipe.
      forward(opcode, payload);
    },
    close() {
      upstream.end();
      onDisconnect?.();
      onDisconnect = undefined;
    },
  });
  if (client === undefined) {
    upstream.destroy();
    return undefined;
  }
  onDisconnect = options.onConnect();
  if (rest.length > 0) socket.write(rest);
  upstream.pipe(socket);
  upstream.on('error', () => socket.destroy());
  upstream.on('close', () => socket.end());
  return {
    close() {
      upstream.destroy();
      socket.destroy();
    },
  };
}

/** Opens a WebSocket to Chromium at the byte level: the handshake, then the bare socket. */
function openUpstream(url: string): Promise<{ upstream: Socket; rest: Buffer }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const upstream = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    const fail = (error: Error) => {
      upstream.destroy();
      reject(error);
    };
    upstream.once('error', fail);
    upstream.once('connect', () => {
      upstream.write(
        `GET ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      upstream.off('data', onData);
      upstream.off('error', fail);
      upstream.pause();
      if (!/^HTTP\/1\.1 101 /.test(received.toString('latin1', 0, 13))) {
        return fail(new Error('Chromium refused the WebSocket'));
      }
      resolve({ upstream, rest: received.subarray(end + 4) });
    };
    upstream.on('data', onData);
  });
}

/** The command to send instead of a `Browser.close`, or undefined if the message is something else. */
function withoutClose(data: string): string | undefined {
  let message: { id?: unknown; method?: unknown; sessionId?: unknown };
  try {
    message = JSON.parse(data);
  } catch {
    return undefined;
  }
  if (message.method !== 'Browser.close') return undefined;
  return JSON.stringify({
    id: message.id,
    method: 'Browser.getVersion',
    ...(typeof message.sessionId === 'string' ? { sessionId: message.sessionId } : {}),
  });
}
