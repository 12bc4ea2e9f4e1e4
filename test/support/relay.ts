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
}

/** Relays TCP connections to `127.0.0.1:<port>`, keeping the first bytes of each and able to drop them all. */
export async function startRelay(port: number): Promise<Relay> {
  const upgrades: { request: string; response: string }[] = [];
  const sockets = new Set<Socket>();
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
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
    client.pipe(upstream).pipe(client);
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
    async [Symbol.asyncDispose]() {
      cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
