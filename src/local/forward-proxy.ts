import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** An upstream HTTP proxy, with the credentials Chromium cannot take on its command line. */
export interface Upstream {
  host: string;
  port: number;
  username?: string | undefined;
  password?: string | undefined;
}

/**
 * A loopback HTTP proxy in front of one browser: Chromium talks to it without credentials, it
 * forwards to the upstream with `Proxy-Authorization`, and it counts the bytes for `proxyUsedMb`.
 */
export class ForwardProxy {
  readonly #server: Server;
  readonly #upstream: Upstream;
  readonly #sockets = new Set<Duplex>();
  #bytes = 0;

  private constructor(upstream: Upstream) {
    this.#upstream = upstream;
    this.#server = createServer((req, res) => this.#forward(req, res));
    this.#server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.#tunnel(req, socket, head),
    );
  }

  static async start(upstream: Upstream): Promise<ForwardProxy> {
    const proxy = new ForwardProxy(upstream);
    await new Promise<void>((resolve, reject) => {
      proxy.#server.once('error', reject);
      proxy.#server.listen(0, '127.0.0.1', resolve);
    });
    return proxy;
  }

  /** The address to give Chromium's `--proxy-server`. */
  get url(): string {
    const address = this.#server.address();
    return typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '';
  }

  /** Bytes carried both ways so far. */
  get bytes(): number {
    let live = 0;
    for (const socket of this.#sockets) live += socketBytes(socket);
    return this.#bytes + live;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #track(socket: Duplex): void {
    this.#sockets.add(socket);
    socket.once('close', () => {
      this.#bytes += socketBytes(socket);
      this.#sockets.delete(socket);
    });
  }

  #authorization(): Record<string, string> {
    const { username, password } = this.#upstream;
    if (username === undefined && password === undefined) return {};
    const token = Buffer.from(`${username ?? ''}:${password ?? ''}`).toString('base64');
    return { 'proxy-authorization': `Basic ${token}` };
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    this.#track(req.socket);
    const headers = { ...req.headers, ...this.#authorization() };
    const outgoing = request({
      host: this.#upstream.host,
      port: this.#upstream.port,
      method: req.method,
      path: req.url,
      headers,
    });
    outgoing.on('response', (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
    });
    outgoing.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(outgoing);
  }

  #tunnel(req: IncomingMessage, client: Duplex, head: Buffer): void {
    this.#track(client);
    const upstream: Socket = connect(this.#upstream.port, this.#upstream.host);
    const fail = () => {
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
      upstream.destroy();
    };
    upstream.once('error', fail);
    client.on('error', () => upstream.destroy());
    upstream.once('connect', () => {
      const auth = this.#authorization()['proxy-authorization'];
      upstream.write(
        `CONNECT ${req.url} HTTP/1.1\r\nHost: ${req.url}\r\n${auth ? `Proxy-Authorization: ${auth}\r\n` : ''}\r\n`,
      );
      let reply = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        reply = Buffer.concat([reply, chunk]);
        const end = reply.indexOf('\r\n\r\n');
        if (end === -1) return;
        upstream.off('data', onData);
        // The upstream's answer goes back as it is: 200 opens the tunnel, 407 or 502 explains the refusal.
        client.write(reply.subarray(0, end + 4));
        if (!/^HTTP\/1\.[01] 200/.test(reply.toString('latin1', 0, 12))) {
          client.end();
          upstream.destroy();
          return;
        }
        const rest = reply.subarray(end + 4);
        if (rest.length > 0) client.write(rest);
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      };
      upstream.on('data', onData);
    });
    client.once('close', () => upstream.destroy());
  }
}

function socketBytes(socket: Duplex): number {
  const s = socket as Partial<Socket>;
  return (s.bytesRead ?? 0) + (s.bytesWritten ?? 0);
}
