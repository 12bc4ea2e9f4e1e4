import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoginSite {
  /** The port on 127.0.0.1; Chromium reaches it under any `*.localhost` name too. */
  readonly port: number;
  /** `http://<host>:<port>`: Chromium maps every `*.localhost` name to loopback. */
  origin(host: string): string;
  /** What the site saw, in order: `login ok`, `login refused`, `2fa ok`, `2fa refused`. */
  readonly attempts: string[];
  /** The Host header of each request, in order. */
  readonly hosts: string[];
  close(): Promise<void>;
}

export interface LoginSiteOptions {
  username: string;
  password: string;
  /** The base32 TOTP secret the second step checks codes against. */
  totpSecret: string;
}

/**
 * A small site with a two-step login: username and password, then a TOTP code (RFC 6238: HMAC-SHA1
 * over 30-second steps, 6 digits; the previous and next step are accepted for clock skew). The TOTP
 * here is written independently of the service's, so the two check each other.
 */
export async function startLoginSite(options: LoginSiteOptions): Promise<LoginSite> {
  const attempts: string[] = [];
  const hosts: string[] = [];
  const pending = new Set<string>();
  const sessions = new Set<string>();
  const server: Server = createServer((req, res) => {
    hosts.push(req.headers.host ?? '');
    const url = new URL(req.url ?? '/', 'http://site');
    const cookies = Object.fromEntries(
      (req.headers.cookie ?? '').split(/;\s*/).map((pair) => pair.split('=') as [string, string]),
    );
    const html = (status: number, body: string, headers: Record<string, string> = {}) =>
      res
        .writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers })
        .end(`<!doctype html><meta charset="utf-8">${body}`);
    const redirect = (location: string, cookie?: string) =>
      res.writeHead(303, { location, ...(cookie ? { 'set-cookie': cookie } : {}) }).end();
    const form = async () => new URLSearchParams(await readBody(req));

    void (async () => {
      if (req.method === 'GET' && url.pathname === '/') {
        return html(
          200,
          `<title>Sign in</title><form method="post" action="/login">
<input id="username" name="username" autocomplete="username">
<input id="password" name="password" type="password" autocomplete="current-password">
<button id="submit" type="submit">Sign in</button></form>`,
        );
      }
      if (req.method === 'POST' && url.pathname === '/login') {
        const fields = await form();
        if (fields.get('username') !== options.username || fields.get('password') !== options.password) {
          attempts.push('login refused');
          return html(401, '<title>Sign in failed</title><p id="error">wrong username or password</p>');
        }
        attempts.push('login ok');
        const token = randomBytes(12).toString('hex');
        pending.add(token);
        return redirect('/2fa', `pending=${token}; Path=/; HttpOnly`);
      }
      if (req.method === 'GET' && url.pathname === '/2fa') {
        if (!pending.has(cookies.pending ?? '')) return redirect('/');
        return html(
          200,
          `<title>Two-factor code</title><form method="post" action="/2fa">
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code">
<button id="verify" type="submit">Verify</button></form>`,
        );
      }
      if (req.method === 'POST' && url.pathname === '/2fa') {
        const code = (await form()).get('code') ?? '';
        const now = Date.now();
        const valid = [-1, 0, 1].some((step) => totpAt(options.totpSecret, now + step * 30_000) === code);
        if (!pending.has(cookies.pending ?? '') || !valid) {
          attempts.push('2fa refused');
          return html(401, '<title>Code refused</title><p id="error">wrong code</p>');
        }
        attempts.push('2fa ok');
        pending.delete(cookies.pending ?? '');
        const token = randomBytes(12).toString('hex');
        sessions.add(token);
        return redirect('/account', `session=${token}; Path=/; HttpOnly`);
      }
      if (req.method === 'GET' && url.pathname === '/account') {
        if (!sessions.has(cookies.session ?? '')) return redirect('/');
        return html(200, '<title>Account</title><h1 id="welcome">Welcome back</h1>');
      }
      res.writeHead(404).end();
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    origin: (host) => `http://${host}:${port}`,
    attempts,
    hosts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: AsyncIterable<unknown>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** RFC 6238 TOTP with SHA-1, 30 s steps and 6 digits, from a base32 (RFC 4648) secret. */
export function totpAt(secretBase32: string, atMs: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const bits = [...secretBase32.toUpperCase().replace(/=/g, '')]
    .map((char) => alphabet.indexOf(char).toString(2).padStart(5, '0'))
    .join('');
  const key = Buffer.from(bits.match(/.{8}/g)?.map((byte) => Number.parseInt(byte, 2)) ?? []);
  const step = Math.floor(atMs / 30_000);
  const message = Buffer.alloc(8);
  message.writeUInt32BE(Math.floor(step / 2 ** 32), 0);
  message.writeUInt32BE(step % 2 ** 32, 4);
  const hmac = createHmac('sha1', key).update(message).digest();
  const offset = (hmac.at(-1) ?? 0) & 0xf;
  const binary =
    (((hmac[offset] ?? 0) & 0x7f) << 24) |
    ((hmac[offset + 1] ?? 0) << 16) |
    ((hmac[offset + 2] ?? 0) << 8) |
    (hmac[offset + 3] ?? 0);
  return String(binary % 1_000_000).padStart(6, '0');
}
