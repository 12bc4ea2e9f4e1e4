import { observeNetwork } from 'cloudbrowser';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startNetworkSite } from '../support/network-site.js';
import { entryWhere, openBrowser, pathOf } from '../support/observed-browser.js';
import { useSite } from '../support/site.js';

const site = useSite(startNetworkSite);

const local = useLocalService();

/** Every secret value the page sends or receives in these tests. */
const SECRETS = [
  'query-token-secret',
  'query-apikey-secret',
  'query-signature-secret',
  'query-code-secret',
  'bearer-secret',
  'x-api-key-secret',
  'custom-token-secret',
  'document-cookie-secret',
  'cookie-secret-value',
  'response-secret-value',
  'location-secret-value',
  'page-url-secret',
];

const SECRET_QUERY =
  '?token=query-token-secret&q=visible&api_key=query-apikey-secret&X-Amz-Signature=query-signature-secret&code=query-code-secret';

/** Sends a request that carries secrets in its URL and headers, and gets secrets back. */
async function sendSecrets(page: import('playwright-core').Page): Promise<void> {
  await page.evaluate("document.cookie = 'session=document-cookie-secret; path=/'");
  await page.evaluate((query) => {
    return fetch(`/secrets${query}`, {
      headers: {
        authorization: 'Bearer bearer-secret',
        'x-api-key': 'x-api-key-secret',
        'x-custom-token': 'custom-token-secret',
        'x-visible': 'plain-value',
      },
    }).then((r) => r.text());
  }, SECRET_QUERY);
}

function expectNoSecrets(text: string): void {
  for (const secret of SECRETS) expect(text, `"${secret}" leaked`).not.toContain(secret);
}

describe('redaction', () => {
  test('by default: no headers at all, and secret query parameters redacted in every URL', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/subresources?n=1&session=page-url-secret`);
    await sendSecrets(driven.page);
    const entry = await entryWhere(network, (e) => pathOf(e.url) === '/secrets');

    expect(entry.url).toBe(
      `${site.url}/secrets?token=[redacted]&q=visible&api_key=[redacted]&X-Amz-Signature=[redacted]&code=[redacted]`,
    );
    expect(entry).not.toHaveProperty('requestHeaders');
    expect(entry).not.toHaveProperty('responseHeaders');
    const image = await entryWhere(network, (e) => pathOf(e.url) === '/img/0.png');
    expect(image.initiator.url).toBe(`${site.url}/subresources?n=1&session=[redacted]`);
    // The service really received them: the observer only keeps them out of what it records.
    expect(site.received.get('/secrets')?.authorization).toBe('Bearer bearer-secret');
    expectNoSecrets(JSON.stringify([network.entries(), network.summary(), network.toHar()]));
  });

  test('with headers: true, credentials and cookies are redacted in both directions; the rest is kept', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, { headers: true });
    await driven.page.goto(`${site.url}/`);
    await sendSecrets(driven.page);
    const entry = await entryWhere(network, (e) => pathOf(e.url) === '/secrets');

    expect(entry.requestHeaders).toMatchObject({
      authorization: '[redacted]',
      'x-api-key': '[redacted]',
      'x-custom-token': '[redacted]',
      cookie: '[redacted]',
      'x-visible': 'plain-value',
      referer: `${site.url}/`,
    });
    expect(entry.requestHeaders?.host).toBe(new URL(site.url).host);
    expect(entry.responseHeaders).toMatchObject({
      'set-cookie': '[redacted]',
      'x-session-token': '[redacted]',
      location: '/next?access_token=[redacted]&page=2',
      'x-plain': 'visible',
      'content-type': 'application/json',
    });
    const har = network.toHar();
    const harEntry = har.log.entries.find((e) => pathOf(e.request.url) === '/secrets');
    expect(harEntry?.request.headers).toContainEqual({ name: 'authorization', value: '[redacted]' });
    expect(harEntry?.request.queryString).toContainEqual({ name: 'token', value: '[redacted]' });
    expect(harEntry?.request.queryString).toContainEqual({ name: 'q', value: 'visible' });
    expectNoSecrets(JSON.stringify([network.entries(), network.summary(), har]));
  });

  test('allow lists keep named values, and more names or patterns can be redacted', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, {
      headers: true,
      allowHeaders: ['X-Custom-Token'],
      redactHeaders: ['x-visible', /^x-pl/g],
      allowQueryParams: ['code'],
      redactQueryParams: ['q'],
    });
    await driven.page.goto(`${site.url}/`);
    await sendSecrets(driven.page);
    const entry = await entryWhere(network, (e) => pathOf(e.url) === '/secrets');

    expect(entry.url).toBe(
      `${site.url}/secrets?token=[redacted]&q=[redacted]&api_key=[redacted]&X-Amz-Signature=[redacted]&code=query-code-secret`,
    );
    expect(entry.requestHeaders).toMatchObject({
      'x-custom-token': 'custom-token-secret',
      'x-visible': '[redacted]',
      authorization: '[redacted]',
    });
    expect(entry.responseHeaders?.['x-plain']).toBe('[redacted]');
  });
});
