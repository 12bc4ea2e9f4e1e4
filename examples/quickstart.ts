/**
 * The main job, on the local service: start it, create a profile, open a browser, log in on a local
 * page, stop, open a second browser with the same profile and find it already logged in.
 *
 *   npm start
 *
 * Everything runs on this machine: the service, real Chromium, and the web site it logs in to.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalService } from 'cloudbrowser/local';
import { chromium } from 'playwright-core';

const site = createServer((req, res) => {
  const loggedIn = /(?:^|;\s*)session=ok/.test(req.headers.cookie ?? '');
  if (req.url === '/login') {
    res.writeHead(200, { 'set-cookie': 'session=ok; Path=/; HttpOnly', 'content-type': 'text/html' });
    res.end('<p id="status">logged in</p>');
  } else {
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(`<p id="status">${loggedIn ? 'logged in' : 'anonymous'}</p>`);
  }
});
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

const step = (text: string) => console.log(`• ${text}`);

const dataDir = await mkdtemp(join(tmpdir(), 'cb-demo-'));
await using service = await startLocalService({ dataDir });
step(`local service on ${service.baseUrl}`);
const client = service.client();

const profile = await client.profiles.create({ name: 'demo user' });
step(`profile ${profile.id} created`);

/** Opens a browser with the profile, reads the account page, optionally logs in, and stops it. */
async function visit(login: boolean): Promise<string> {
  const session = await client.browsers.create({ profileId: profile.id, proxyCountryCode: null, timeout: 5 });
  try {
    const browser = await chromium.connectOverCDP(session.cdpUrl ?? '');
    const page = browser.contexts()[0]?.pages()[0] ?? (await browser.newPage());
    await page.goto(`${siteUrl}/account`);
    const before = (await page.textContent('#status')) ?? '';
    if (login) await page.goto(`${siteUrl}/login`);
    await browser.close(); // disconnects only: the browser keeps running (and billing) until stopped
    return before;
  } finally {
    const stopped = await client.browsers.stop(session.id);
    step(
      `browser ${stopped.id} stopped after billing ${stopped.browserCost} (the rest of its timeout refunded)`,
    );
  }
}

step(`first browser sees: ${await visit(true)}; logs in`);
const after = await visit(false);
step(`second browser with the same profile sees: ${after}`);
const { cookieDomains } = await client.profiles.get(profile.id);
step(`the profile keeps cookies for: ${cookieDomains.join(', ')}`);
await service.close();
await rm(dataDir, { recursive: true, force: true });
site.close();

if (after !== 'logged in') {
  console.error('expected the second browser to start logged in');
  process.exitCode = 1;
} else {
  console.log('done: logged in once, and the profile carried the login into a new browser.');
}
