import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The small shop the example tests visit, served on this machine. */
export async function startShop(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const page = (title: string, body: string) =>
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><title>${title}</title>${body}`);
    if (req.url === '/') return page('Tiny Shop', '<h1>Tiny Shop</h1><a href="/cart">Cart</a>');
    if (req.url === '/cart') {
      return page(
        'Cart',
        `<p id="count">0 items</p><button onclick="document.getElementById('count').textContent = '1 item'">Add</button>`,
      );
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
