/**
 * Scraping with Playwright on a cloud browser: open a page, read a list from it, print it as JSON.
 * On the local service, from the repository root:
 *
 *   CLOUDBROWSER_BASE_URL=local npx tsx examples/playwright-scrape.ts
 *
 * The page it reads is served by this script, on this machine. Leaving the `await using` block
 * stops the browser (billing ends) even if something in it throws.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connectCloudBrowser } from 'cloudbrowser/playwright';

const catalogue = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<title>Catalogue</title>
<ul>
  <li class="product"><span class="name">Kettle</span> <span class="price">24.90</span></li>
  <li class="product"><span class="name">Teapot</span> <span class="price">31.00</span></li>
  <li class="product"><span class="name">Mug</span> <span class="price">7.50</span></li>
</ul>`);
});
await new Promise<void>((resolve) => catalogue.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(catalogue.address() as AddressInfo).port}/`;

try {
  // proxyCountryCode: null: the page is on this machine, no proxy in between.
  await using cb = await connectCloudBrowser({ proxyCountryCode: null, timeout: 5 });
  console.log(`browser ${cb.id} connected`);
  await cb.page.goto(url);
  const products = await cb.page.locator('.product').evaluateAll((items) =>
    items.map((item) => ({
      name: item.querySelector('.name')?.textContent ?? '',
      price: item.querySelector('.price')?.textContent ?? '',
    })),
  );
  console.log(JSON.stringify({ title: await cb.page.title(), products }));
} finally {
  catalogue.close();
}
console.log('browser stopped');
