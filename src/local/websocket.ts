import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * The server end of a WebSocket (RFC 6455), as much as a CDP proxy needs: text and binary
 * messages, fragmentation, ping/pong and close. The client end towards Chromium is undici's.
 */

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** CDP messages carry screenshots and traces; anything larger than this is refused. */
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

export interface WebSocketHandlers {
  message(data: string): void;
  close(): void;
  /**
   * Receives ping and close frames instead of the socket answering them itself: a relay whose other
   * leg writes to the same socket passes them on, so that nothing is written between its frames.
   */
  control?(opcode: number, payload: Buffer): void;
}

export class ServerWebSocket {
  readonly #socket: Duplex;
  readonly #handlers: WebSocketHandlers;
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** Bytes the next frame needs before it can be parsed. */
  #needed = 2;
  #fragments: Buffer[] = [];
  #closed = false;

  private constructor(socket: Duplex, handlers: WebSocketHandlers) {
    this.#socket = socket;
    this.#handlers = handlers;
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
    socket.on('close', () => this.#finish());
    socket.on('error', () => this.#finish());
  }

  /** Completes the upgrade handshake, or answers 400 and returns undefined. */
  static accept(
    request: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    handlers: WebSocketHandlers,
  ): ServerWebSocket | undefined {
    const key = request.headers['sec-websocket-key'];
    if (request.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string') {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      return undefined;
    }
    const accept = createHash('sha1')
      .update(key + GUID)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    const ws = new ServerWebSocket(socket, handlers);
    if (head.length > 0) ws.#receive(head);
    return ws;
  }

  send(data: string): void {
    if (!this.#closed) this.#socket.write(frame(0x1, Buffer.from(data)));
  }

  close(code = 1000): void {
    if (this.#closed) return;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    this.#socket.end(frame(0x8, payload));
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handlers.close();
    // Let a close frame already queued go out, then let go of the socket.
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), 1_000).unref();
  }

  #receive(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    // Bytes are joined only once a whole frame is there, so a large message costs one copy.
    while (!this.#closed && this.#buffered >= this.#needed) {
      const data = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks);
      const parsed = parseFrame(data);
      if (parsed === 'too-large') {
        this.close(1009);
        return;
      }
      if ('needed' in parsed) {
        this.#chunks = [data];
        this.#needed = parsed.needed;
        return;
      }
      const rest = data.subarray(parsed.length);
      this.#chunks = rest.length > 0 ? [rest] : [];
      this.#buffered = rest.length;
      this.#needed = 2;
      this.#handle(parsed.fin, parsed.opcode, parsed.payload);
    }
  }

  #handle(fin: boolean, opcode: number, payload: Buffer): void {
    if ((opcode === 0x8 || opcode === 0x9) && this.#handlers.control) {
      this.#handlers.control(opcode, payload);
      return;
    }
    if (opcode === 0x8) {
      this.close();
      return;
    }
    if (opcode === 0x9) {
      this.#socket.write(frame(0xa, payload));
      return;
    }
    if (opcode === 0xa) return;
    this.#fragments.push(payload);
    if (!fin) return;
    const message = Buffer.concat(this.#fragments).toString('utf8');
    this.#fragments = [];
    this.#handlers.message(message);
  }
}

interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
  /** Bytes the frame took, header included. */
  length: number;
}

function parseFrame(data: Buffer): Frame | { needed: number } | 'too-large' {
  if (data.length < 2) return { needed: 2 };
  const first = data[0] as number;
  const second = data[1] as number;
  let offset = 2;
  let size = second & 0x7f;
  if (size === 126) {
    if (data.length < 4) return { needed: 4 };
    size = data.readUInt16BE(2);
    offset = 4;
  } else if (size === 127) {
    if (data.length < 10) return { needed: 10 };
    const big = data.readBigUInt64BE(2);
    if (big > BigInt(MAX_MESSAGE_BYTES)) return 'too-large';
    size = Number(big);
    offset = 10;
  }
  if (size > MAX_MESSAGE_BYTES) return 'too-large';
  const masked = (second & 0x80) !== 0;
  const maskOffset = offset;
  if (masked) offset += 4;
  if (data.length < offset + size) return { needed: offset + size };
  const payload = Buffer.from(data.subarray(offset, offset + size));
  if (masked) {
    for (let i = 0; i < payload.length; i++) {
      payload[i] = (payload[i] as number) ^ (data[maskOffset + (i & 3)] as number);
    }
  }
  return { fin: (first & 0x80) !== 0, opcode: first & 0x0f, payload, length: offset + size };
}

/** A single frame: unmasked as a server sends them, masked as a client must. */
export function frame(opcode: number, payload: Buffer, masked = false): Buffer {
  const size = payload.length;
  const header = size < 126 ? Buffer.alloc(2) : size < 0x10000 ? Buffer.alloc(4) : Buffer.alloc(10);
  header[0] = 0x80 | opcode;
  if (size < 126) header[1] = size;
  else if (size < 0x10000) {
    header[1] = 126;
    header.writeUInt16BE(size, 2);
  } else {
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(size), 2);
  }
  if (!masked) return Buffer.concat([header, payload]);
  header[1] = (header[1] as number) | 0x80;
  const mask = randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] = (body[i] as number) ^ (mask[i & 3] as number);
  return Buffer.concat([header, mask, body]);
}
