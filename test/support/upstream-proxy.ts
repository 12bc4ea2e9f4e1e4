import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface UpstreamProxy {
  /** `http://user:pass@127.0.0.1:<port>` when credentials are required, else without them. */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Absolute URLs it forwarded. */
  readonly forwarded: string[];
  /** Requests it refused with 407 for missing or wrong credentials. */
  readonly refused: () => number;
  close(): Promise<void>;
}

/**
 * A plain-HTTP forward proxy on loopback, standing in for a country's residential proxy. With
 * credentials it answers 407 to any request without the right `Proxy-Authorization`.
 */
export async function startUpstreamProxy(credentials?: {
  username: string;
  password: string;
}): Promise<UpstreamProxy> {
  const forwarded: string[] = [];
  let refused = 0;
  const expected = credentials
    ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
    : undefined;
  const server: Server = createServer((req, res) => {
    if (expected !== undefined && req.headers['proxy-authorization'] !== expected) {
      refused++;
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="test"' }).end();
      return;
    }
    const target = new URL(req.url ?? '');
    forwarded.push(target.href);
    const { 'proxy-authorization': _auth, 'proxy-connection': _pc, ...headers } = req.headers;
    const outgoing = request(target, { method: req.method, headers }, (upstream) => {
      res.writeHead(upstream.statusCode ?? 502, { ...upstream.headers, 'x-via-test-proxy': '1' });
      upstream.pipe(res);
    });
    outgoing.on('error', () => res.writeHead(502).end());
    req.pipe(outgoing);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const auth = credentials ? `${credentials.username}:${credentials.password}@` : '';
  return {
    url: `http://${auth}127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    forwarded,
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
