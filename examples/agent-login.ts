/**
 * An Agent run on the local service: a scripted agent driver logs in to a site with a username, a
 * password and a TOTP code from a password-manager vault, asking for each by alias only. The
 * service types the values; the driver, the events and the result never contain them.
 *
 *   npx tsx examples/agent-login.ts
 *
 * Everything runs on this machine: the service, real Chromium, and the site, which Chromium reaches
 * as login.example.localhost (every *.localhost name is loopback to Chromium).
 */
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentDriver, startLocalService } from 'cloudbrowser/local';

const USER = {
  username: 'demo@example.test',
  password: 'correct horse battery staple',
  totp: 'JBSWY3DPEHPK3PXP',
};

/** RFC 6238: HMAC-SHA1 over 30-second steps, 6 digits, from a base32 secret. */
function totp(base32: string, atMs = Date.now()): string {
  const bits = [...base32].map((c) =>
    'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'.indexOf(c).toString(2).padStart(5, '0'),
  );
  const key = Buffer.from((bits.join('').match(/.{8}/g) ?? []).map((byte) => Number.parseInt(byte, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(atMs / 30_000)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = (mac.at(-1) ?? 0) & 0xf;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

// A two-step login: username and password, then a TOTP code.
const site = createServer(async (req, res) => {
  let body = '';
  for await (const chunk of req) body += chunk;
  const form = new URLSearchParams(body);
  const page = (html: string) => res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  if (
    req.url === '/login' &&
    form.get('username') === USER.username &&
    form.get('password') === USER.password
  ) {
    return page(
      '<title>Code</title><form method="post" action="/code"><input id="code" name="code"><button>Verify</button></form>',
    );
  }
  if (req.url === '/code' && form.get('code') === totp(USER.totp))
    return page('<title>Welcome</title><h1>Welcome back</h1>');
  page(
    '<title>Sign in</title><form method="post" action="/login"><input id="username" name="username">' +
      '<input id="password" name="password" type="password"><button>Sign in</button></form>',
  );
});
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const siteUrl = `http://login.example.localhost:${(site.address() as AddressInfo).port}/`;

// The scripted agent: it knows the aliases, never the values.
const agent: AgentDriver = {
  async run({ page, emit, typeSecret }) {
    await page.goto(siteUrl);
    emit({ message: 'on the sign-in page' });
    await page.focus('#username');
    await typeSecret('Demo_username');
    await page.focus('#password');
    await typeSecret('Demo_password');
    await Promise.all([page.waitForURL('**/login'), page.click('button')]);
    await page.focus('#code');
    await typeSecret('Demo_svc_2fa_code');
    await Promise.all([page.waitForURL('**/code'), page.click('button')]);
    return page.title();
  },
};

const vaultId = randomUUID();
const dataDir = await mkdtemp(join(tmpdir(), 'cb-agent-demo-'));
try {
  await using service = await startLocalService({
    dataDir,
    agent,
    vault: {
      integrations: [{ id: 'demo', items: [{ id: randomUUID(), vaultId, title: 'Demo', ...USER }] }],
    },
  });
  const client = service.client();
  const run = await client.runs.create({
    task: 'Sign in to the demo site',
    opVaultId: vaultId,
    opVaultAllowedDomains: ['example.localhost'],
  });
  for await (const event of client.runs.events(run.id, { pollIntervalMs: 200 })) {
    console.log(`• ${event.id} ${event.type} ${JSON.stringify(event.data)}`);
  }
  const done = await client.runs.get(run.id);
  console.log(`run ${done.status}: ${done.result ?? done.error}`);
  if (done.status !== 'completed') process.exitCode = 1;
} finally {
  site.close();
  await rm(dataDir, { recursive: true, force: true });
}
