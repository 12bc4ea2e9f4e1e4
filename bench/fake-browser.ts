/**
 * Child process of `bench/network.ts`: a CDP endpoint that acts as a browser with one page and, on
 * request, streams the Network events of N requests exactly as Chromium words them (six events
 * each: requestWillBeSent, its ExtraInfo, responseReceived, its ExtraInfo, dataReceived,
 * loadingFinished). The observer reads them through its real path: undici's WebSocket, the
 * message filter, JSON parsing, the target tracker and the recorder.
 *
 * Messages from the parent: `{ send: n }` streams n more requests, then answers `{ sent: total }`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServerWebSocket } from '../src/local/websocket.js';

const SESSION = 'BENCHSESSION0000000000000000000000';
const PAGE = 'BENCHPAGE0000000000000000000000000';
const page = { targetId: PAGE, type: 'page', title: 'Shop', url: 'https://shop.example/', attached: true };
let socket: ServerWebSocket | undefined;
let sent = 0;

const server = createServer((_req, res) => res.writeHead(404).end());
server.on('upgrade', (req, duplex, head) => {
  socket = ServerWebSocket.accept(req, duplex, head, {
    message: (text) => answer(JSON.parse(text) as { id: number; method: string; sessionId?: string }),
    close: () => {},
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

function reply(id: number, result: unknown, sessionId?: string): void {
  socket?.send(JSON.stringify(sessionId ? { id, result, sessionId } : { id, result }));
}

function answer(command: { id: number; method: string; sessionId?: string }): void {
  const { id, method, sessionId } = command;
  if (method === 'Browser.getVersion') reply(id, { product: 'HeadlessChrome/156.0.0.0' });
  else if (method === 'Target.getTargets') reply(id, { targetInfos: [page] });
  else if (method === 'Target.setAutoAttach' && sessionId === undefined) {
    socket?.send(
      JSON.stringify({
        method: 'Target.attachedToTarget',
        params: { sessionId: SESSION, targetInfo: page, waitingForDebugger: false },
      }),
    );
    reply(id, {});
  } else reply(id, {}, sessionId);
}

const headers = {
  accept: 'image/avif,image/webp,image/apng,image/*,*/*;q=0.8',
  'accept-encoding': 'gzip, deflate, br, zstd',
  'accept-language': 'en-US,en;q=0.9',
  referer: 'https://shop.example/',
  'sec-fetch-dest': 'image',
  'sec-fetch-mode': 'no-cors',
  'sec-fetch-site': 'cross-site',
  'user-agent':
    'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0',
};
const responseHeaders = {
  'content-type': 'image/png',
  'content-length': '1234',
  'cache-control': 'public, max-age=31536000',
  date: 'Sun, 22 Nov 2026 04:00:00 GMT',
  etag: '"5f3c-1234"',
  server: 'cdn',
  'set-cookie': 'tracking=abcdef; Path=/; Secure',
  'x-cache': 'HIT',
};

/** The six events of request number `n`, as Chromium sends them. */
function eventsOf(n: number): string[] {
  const requestId = `4242.${n}`;
  const t = 1000 + n * 0.001;
  const url = `https://cdn.example/assets/img-${n}.png?v=${n}&token=secret-${n}`;
  const event = (method: string, params: object) => JSON.stringify({ method, params, sessionId: SESSION });
  return [
    event('Network.requestWillBeSent', {
      requestId,
      loaderId: 'LOADER0000000000000000000000000000',
      documentURL: 'https://shop.example/',
      request: {
        url,
        method: 'GET',
        headers,
        mixedContentType: 'none',
        initialPriority: 'Low',
        referrerPolicy: 'strict-origin-when-cross-origin',
        isSameSite: false,
      },
      timestamp: t,
      wallTime: 1_790_000_000 + n * 0.001,
      initiator: { type: 'parser', url: 'https://shop.example/', lineNumber: 42, columnNumber: 7 },
      redirectHasExtraInfo: false,
      type: 'Image',
      frameId: PAGE,
      hasUserGesture: false,
    }),
    event('Network.requestWillBeSentExtraInfo', {
      requestId,
      associatedCookies: [],
      headers: { ...headers, cookie: 'session=abc' },
      connectTiming: { requestTime: t },
      siteHasCookieInThirdPartyPartition: false,
    }),
    event('Network.responseReceivedExtraInfo', {
      requestId,
      blockedCookies: [],
      headers: responseHeaders,
      resourceIPAddressSpace: 'Public',
      statusCode: 200,
      headersText: 'HTTP/1.1 200 OK\r\n',
      cookiePartitionKeyOpaque: false,
      exemptedCookies: [],
    }),
    event('Network.responseReceived', {
      requestId,
      loaderId: 'LOADER0000000000000000000000000000',
      timestamp: t + 0.02,
      type: 'Image',
      response: {
        url,
        status: 200,
        statusText: 'OK',
        headers: responseHeaders,
        mimeType: 'image/png',
        charset: '',
        connectionReused: true,
        connectionId: 17,
        remoteIPAddress: '93.184.216.34',
        remotePort: 443,
        fromDiskCache: false,
        fromServiceWorker: false,
        fromPrefetchCache: false,
        fromEarlyHints: false,
        encodedDataLength: 180,
        timing: {
          requestTime: t + 0.001,
          proxyStart: -1,
          proxyEnd: -1,
          dnsStart: -1,
          dnsEnd: -1,
          connectStart: -1,
          connectEnd: -1,
          sslStart: -1,
          sslEnd: -1,
          workerStart: -1,
          workerReady: -1,
          workerFetchStart: -1,
          workerRespondWithSettled: -1,
          sendStart: 0.5,
          sendEnd: 0.6,
          pushStart: 0,
          pushEnd: 0,
          receiveHeadersStart: 15,
          receiveHeadersEnd: 15.5,
        },
        responseTime: 1_790_000_000_000 + n,
        protocol: 'h2',
        alternateProtocolUsage: 'unspecifiedReason',
        securityState: 'secure',
      },
      hasExtraInfo: true,
      frameId: PAGE,
    }),
    event('Network.dataReceived', {
      requestId,
      timestamp: t + 0.021,
      dataLength: 1234,
      encodedDataLength: 0,
    }),
    event('Network.loadingFinished', { requestId, timestamp: t + 0.022, encodedDataLength: 1414 }),
  ];
}

process.on('message', async (message: { send?: number }) => {
  if (typeof message.send !== 'number') return;
  for (let i = 0; i < message.send; i++) {
    for (const text of eventsOf(sent)) socket?.send(text);
    sent++;
    // Let the socket drain now and then, as a browser's pipe would.
    if (i % 500 === 499) await new Promise((resolve) => setImmediate(resolve));
  }
  process.send?.({ sent });
});
process.on('disconnect', () => process.exit(0));

process.send?.({ wsUrl: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/devtools/browser/bench` });
