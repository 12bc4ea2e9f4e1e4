import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach } from 'vitest';

/** One request as the server received it. */
export interface ReceivedRequest {
  method: string;
  /** The raw request target, exactly as sent: path and query, still percent-encoded. */
  url: string;
  /** The path without the query, still percent-encoded. */
  path: string;
  query: URLSearchParams;
  /** Lower-case header names. */
  headers: IncomingHttpHeaders;
  /** The body parsed as JSON; the raw text when it is not JSON; undefined when empty. */
  body: unknown;
}

/**
 * Answers one request. `res` is the real response: end it, leave it hanging, or destroy its socket.
 * The handler runs after the whole request body has arrived.
 */
export type Handler = (req: ReceivedRequest, res: ServerResponse) => unknown;

export interface TestServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Every request received so far, in arrival order. */
  readonly requests: ReceivedRequest[];
  /** TCP connections accepted so far. */
  readonly connections: () => number;
  close(): Promise<void>;
}

const open = new Set<TestServer>();

afterEach(async () => {
  const servers = [...open];
  open.clear();
  await Promise.all(servers.map((server) => server.close()));
});

/** Starts a real `node:http` server on an ephemeral port; it is closed after the current test. */
export async function startServer(handler: Handler): Promise<TestServer> {
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((incoming, res) => {
    void receive(incoming).then(async (req) => {
      requests.push(req);
      try {
        await handler(req, res);
      } catch (error) {
        if (!res.headersSent) json(res, 599, { detail: `test handler failed: ${String(error)}` });
      }
    });
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const testServer: TestServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Hanging responses and keep-alive sockets would otherwise hold close() open.
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
      });
      open.delete(testServer);
      return closed;
    },
  };
  open.add(testServer);
  return testServer;
}

async function receive(incoming: IncomingMessage): Promise<ReceivedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  let body: unknown;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  const url = incoming.url ?? '/';
  const queryAt = url.indexOf('?');
  return {
    method: incoming.method ?? '',
    url,
    path: queryAt === -1 ? url : url.slice(0, queryAt),
    query: new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)),
    headers: incoming.headers,
    body,
  };
}

/** Sends a JSON response. A `null` body sends no body at all (for 204). */
export function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (body === null) {
    res.writeHead(status, headers).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** A browser object as the service returns it; `overrides` replace or add fields. */
export function browserBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const id = randomUUID();
  return {
    id,
    status: 'active',
    cdpUrl: `http://127.0.0.1:9222/${id}`,
    liveUrl: null,
    timeoutAt: '2030-01-01T01:00:00Z',
    startedAt: '2030-01-01T00:00:00Z',
    finishedAt: null,
    proxyUsedMb: '0',
    proxyCost: '0',
    browserCost: '0.01',
    agentSessionId: null,
    recordingUrl: null,
    metadata: {},
    ...overrides,
  };
}

/** A profile object as the service returns it. */
export function profileBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: randomUUID(),
    name: 'alice',
    userId: 'user-1',
    lastUsedAt: null,
    createdAt: '2030-01-01T00:00:00Z',
    updatedAt: '2030-01-01T00:00:00Z',
    cookieDomains: [],
    ...overrides,
  };
}
