import { createConnection, createServer, type Socket } from 'node:net';

/** A TCP relay on port 0 to a local port; see {@link startRelay}. */
export interface Relay extends AsyncDisposable {
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Every connection's first bytes each way, in order: its HTTP request and answer (an upgrade's handshake). */
  readonly upgrades: { request: string; response: string }[];
  /** Drops every connection open now, as a network failure would; new ones are still relayed. */
  cut(): void;
  /** Stops passing on what clients send (buffered, not lost), as a stalled client would; the other way still flows. */
  hold(): void;
  /** Passes on what {@link hold} buffered, and everything after it. */
  release(): void;
  /**
   * From now on, drops each WebSocket message the server sends whose text `drop` returns true for,
   * as a server that never sent it would. Messages are read whole, so the stream stays well formed.
   */
  dropFromServer(drop: (text: string) => boolean): void;
}

/** Relays TCP connections to `127.0.0.1:<port>`, keeping the first bytes of each and able to drop them all. */
export async function startRelay(port: number): Promise<Relay> {
  const upgrades: { request: string; response: string }[] = [];
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let dropFromServer: (text: string) => boolean = () => false;
  const server = createServer((client) => {
    const upgrade = { request: '', response: '' };
    upgrades.push(upgrade);
    const upstream = createConnection({ host: '127.0.0.1', port });
    const pair = { client, upstream };
    pairs.add(pair);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        pairs.delete(pair);
        // Either side gone: the other goes too, as through a real network.
        client.destroy();
        upstream.destroy();
      });
    }
    client.once('data', (chunk: Buffer) => {
      upgrade.request = chunk.toString('latin1');
    });
    upstream.once('data', (chunk: Buffer) => {
      upgrade.response = chunk.toString('latin1');
    });
    client.pipe(upstream);
    upstream.on(
      'data',
      serverFrames(
        (bytes) => client.write(bytes),
        (text) => dropFromServer(text),
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const relayPort = typeof address === 'object' && address !== null ? address.port : 0;
  const cut = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    port: relayPort,
    url: `http://127.0.0.1:${relayPort}`,
    upgrades,
    cut,
    hold() {
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        client.pause();
      }
    },
    release() {
      for (const { client, upstream } of pairs) client.pipe(upstream);
    },
    dropFromServer(drop) {
      dropFromServer = drop;
    },
    async [Symbol.asyncDispose]() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Splits what a server sends into its HTTP head and then, after an upgrade, whole WebSocket frames
 * (a server's are not masked), passing each on unless it is a text frame that `drop` matches.
 */
function serverFrames(
  pass: (bytes: Buffer) => void,
  drop: (text: string) => boolean,
): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  let state: 'head' | 'frames' | 'raw' = 'head';
  return (chunk) => {
    if (state === 'raw') return pass(chunk);
    pending = Buffer.concat([pending, chunk]);
    if (state === 'head') {
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      // Anything but an upgrade (a plain HTTP answer) passes as it is.
      state = pending.subarray(0, 12).toString('latin1') === 'HTTP/1.1 101' ? 'frames' : 'raw';
      if (state === 'raw') return pass(pending);
      pass(pending.subarray(0, headEnd + 4));
      pending = pending.subarray(headEnd + 4);
    }
    for (;;) {
      if (pending.length < 2) return;
      const opcode = (pending[0] as number) & 0x0f;
      let length = (pending[1] as number) & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (pending.length < 4) return;
        length = pending.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (pending.length < 10) return;
        length = Number(pending.readBigUInt64BE(2));
        offset = 10;
      }
      if (pending.length < offset + length) return;
      const frame = pending.subarray(0, offset + length);
      pending = pending.subarray(offset + length);
      if (!(opcode === 1 && drop(frame.subarray(offset).toString('utf8')))) pass(frame);
    }
  };
}
