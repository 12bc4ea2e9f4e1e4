/**
 * The adapters against the raw path they wrap: `connectCloudBrowser()` until a usable page, against
 * `client.browsers.create` + the framework's own CDP connect + first page, for Playwright and
 * Puppeteer; and the handle's `stop()` against `client.browsers.stop`. Alternated, median of many,
 * on the local service.
 *
 *   npm run bench:adapters [-- --runs 25]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startLocalService } from 'cloudbrowser/local';
import { connectCloudBrowser as connectPlaywright } from 'cloudbrowser/playwright';
import { connectCloudBrowser as connectPuppeteer } from 'cloudbrowser/puppeteer';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { machine, median, writeSection } from './report.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '25' } } });
const runs = Number(values.runs);

const dataDir = await mkdtemp(join(tmpdir(), 'cb-bench-'));
const service = await startLocalService({ dataDir, log: false });
const client = service.client();

interface Sample {
  ready: number;
  stop: number;
}

/** Times `open` until a usable page, then `close` until the browser is stopped. */
async function time(open: () => Promise<() => Promise<unknown>>): Promise<Sample> {
  const started = performance.now();
  const close = await open();
  const ready = performance.now() - started;
  const stopping = performance.now();
  await close();
  return { ready, stop: performance.now() - stopping };
}

const paths: Record<string, { adapter: () => Promise<Sample>; raw: () => Promise<Sample> }> = {
  Playwright: {
    adapter: () =>
      time(async () => {
        const cb = await connectPlaywright({ client, proxyCountryCode: null });
        await cb.page.evaluate('1');
        return () => cb.stop();
      }),
    raw: () =>
      time(async () => {
        const session = await client.browsers.create({ proxyCountryCode: null });
        const browser = await chromium.connectOverCDP(session.cdpUrl ?? '');
        const page = browser.contexts()[0]?.pages()[0] ?? (await browser.newPage());
        await page.evaluate('1');
        return async () => {
          await browser.close();
          await client.browsers.stop(session.id);
        };
      }),
  },
  Puppeteer: {
    adapter: () =>
      time(async () => {
        const cb = await connectPuppeteer({ client, proxyCountryCode: null });
        await cb.page.evaluate('1');
        return () => cb.stop();
      }),
    raw: () =>
      time(async () => {
        const session = await client.browsers.create({ proxyCountryCode: null });
        const version = (await (await fetch(`${session.cdpUrl}/json/version`)).json()) as {
          webSocketDebuggerUrl: string;
        };
        const browser = await puppeteer.connect({ browserWSEndpoint: version.webSocketDebuggerUrl });
        const page = (await browser.pages())[0] ?? (await browser.newPage());
        await page.evaluate('1');
        return async () => {
          await browser.disconnect();
          await client.browsers.stop(session.id);
        };
      }),
  },
};

const rows: string[] = [];
for (const [framework, { adapter, raw }] of Object.entries(paths)) {
  const samples = { adapter: [] as Sample[], raw: [] as Sample[] };
  await adapter(); // warm-up: module loading and disk caches
  await raw();
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so drift in the machine's load falls on both alike.
    const order = i % 2 === 0 ? (['adapter', 'raw'] as const) : (['raw', 'adapter'] as const);
    for (const which of order) samples[which].push(await (which === 'adapter' ? adapter() : raw()));
  }
  const m = (which: 'adapter' | 'raw', key: keyof Sample) => median(samples[which].map((s) => s[key]));
  const ms = (value: number) => `${value.toFixed(0)} ms`;
  for (const [label, key] of [
    ['connect → usable page', 'ready'],
    ['stop → stopped', 'stop'],
  ] as const) {
    rows.push(
      `| ${framework} | ${label} | ${ms(m('adapter', key))} | ${ms(m('raw', key))} | **${(m('adapter', key) / m('raw', key)).toFixed(2)}×** |`,
    );
  }
}
await service.close();
await rm(dataDir, { recursive: true, force: true });

const body = `## Adapters: connectCloudBrowser() against the raw path

\`npm run bench:adapters\` (\`bench/adapters.ts\`), ${runs} runs each, alternated, after one warm-up,
on the local service. Adapter: \`connectCloudBrowser()\` until its page evaluates an expression,
then \`stop()\`. Raw: \`client.browsers.create\`, the framework's own CDP connect and first page,
the same expression; then disconnect and \`client.browsers.stop\`.

| framework | what | adapter (median) | raw path (median) | ratio |
|---|---|---|---|---|
${rows.join('\n')}

Goal: the adapter within 1.05× of the raw path. Machine: ${machine()}.`;
await writeSection('adapters', body);
console.log(body);
