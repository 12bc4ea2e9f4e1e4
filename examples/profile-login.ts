/**
 * Log in once, stay logged in: a profile keeps a browser's cookies when the browser is stopped, so
 * the next browser started with it begins logged in. On the local service, from the repository root:
 *
 *   CLOUDBROWSER_BASE_URL=local npx tsx examples/profile-login.ts
 *
 * The site it logs in to is served by this script, on this machine.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CloudBrowserClient } from 'cloudbrowser';
import { connectCloudBrowser } from 'cloudbrowser/playwright';

const sessions = new Set<string>();
const site = createServer((req, res) => {
  const sid = /(?:^|;\s*)sid=(\w+)/.exec(req.headers.cookie ?? '')?.[1];
  const html = (body: string, headers: Record<string, string> = {}) =>
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8', ...headers })
      .end(`<!doctype html>${body}`);
  if (req.method === 'POST' && req.url === '/login') {
    const token = randomBytes(12).toString('hex');
    sessions.add(token);
    // A session cookie, without an expiry: only the profile carries it into the next browser.
    return html('<p id="status">logged in</p>', { 'set-cookie': `sid=${token}; Path=/; HttpOnly` });
  }
  if (sid !== undefined && sessions.has(sid)) return html('<p id="status">logged in</p>');
  html('<form method="post" action="/login"><button>Log in</button></form><p id="status">anonymous</p>');
});
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;

try {
  const client = new CloudBrowserClient();
  const profile = await client.profiles.create({ name: 'example user' });
  console.log(`profile ${profile.id} created`);

  {
    await using cb = await connectCloudBrowser({ client, profileId: profile.id, proxyCountryCode: null });
    await cb.page.goto(url);
    console.log(`first browser: ${await cb.page.textContent('#status')}; logging in`);
    await cb.page.getByRole('button', { name: 'Log in' }).click();
    await cb.page.waitForSelector('#status:text("logged in")');
  } // stopped here: the profile is saved

  {
    await using cb = await connectCloudBrowser({ client, profileId: profile.id, proxyCountryCode: null });
    await cb.page.goto(url);
    const status = await cb.page.textContent('#status');
    console.log(`second browser, same profile: ${status}`);
    if (status !== 'logged in') process.exitCode = 1;
  }
  await client.profiles.delete(profile.id);
} finally {
  site.close();
}
