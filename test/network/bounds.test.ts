import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ConfigurationError, type NetworkObserver, observeNetwork } from 'cloudbrowser';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { startNetworkSite } from '../support/network-site.js';
import { entryWhere, openBrowser, pathOf } from '../support/observed-browser.js';
import { useSite } from '../support/site.js';

const site = useSite(startNetworkSite);

const local = useLocalService();

describe('bounds', () => {
  test('the ring buffer keeps the newest maxEntries entries and counts the rest as dropped', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, { maxEntries: 5 });
    const ended: string[] = [];
    network.on('finished', (entry) => ended.push(entry.url));
    // Waited for from before the load: by the time it ends, later requests may have pushed it out.
    const lastImage = entryWhere(network, (e) => pathOf(e.url) === '/img/19.png');
    await driven.page.goto(`${site.url}/subresources?n=20`);
    await lastImage;

    const held = network.entries();
    expect(held).toHaveLength(5);
    expect(ended.length).toBeGreaterThanOrEqual(23);
    expect(network.dropped).toBe(ended.length - 5);
    // The newest five, oldest first.
    expect(held.map((e) => e.url)).toEqual(ended.slice(-5));
    const summary = network.summary();
    expect(summary.entries).toBe(5);
    expect(summary.dropped).toBe(network.dropped);
    expect(Object.values(summary.byStatusClass).reduce((a, b) => a + b, 0)).toBe(5);
  });

  test('maxInFlight bounds the requests tracked in flight: the oldest is recorded incomplete', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session, { maxInFlight: 2 });
    await driven.page.goto(`${site.url}/`);
    await driven.page.evaluate(() => {
      for (let i = 0; i < 4; i++) void fetch(`/slow?ms=20000&i=${i}`);
    });
    await entryWhere(network, (e) => e.url.endsWith('i=1'));

    const incomplete = network.entries().filter((e) => pathOf(e.url) === '/slow');
    // The oldest go first. The page's favicon, requested whenever Chromium gets to it, may push out a third.
    expect(incomplete.map((e) => e.url.slice(-3)).slice(0, 2)).toEqual(['i=0', 'i=1']);
    for (const entry of incomplete)
      expect(entry).toMatchObject({ state: 'incomplete', status: null, failure: null });
    expect(network.summary().inFlight).toBe(2);
  });

  test('summary lists the slowest entries, slowest first, and counts by type and host', async () => {
    await using driven = await openBrowser(local.client);
    await using network = await observeNetwork(driven.session);
    await driven.page.goto(`${site.url}/with-iframe`);
    await driven.page.evaluate(() => Promise.all([fetch('/slow?ms=1000'), fetch('/slow?ms=300')]));
    await entryWhere(network, (e) => e.url.endsWith('ms=1000'));
    await entryWhere(network, (e) => pathOf(e.url) === '/img/in-frame.png');

    const summary = network.summary({ slowest: 2 });
    // On a loaded machine a document may take longer than the shorter fetch: compare with the entries.
    const byTotal = network.entries().sort((a, b) => b.timings.total - a.timings.total);
    expect(summary.slowest.map((e) => e.id)).toEqual(byTotal.slice(0, 2).map((e) => e.id));
    expect(summary.slowest[0]?.url).toMatch(/ms=1000$/);
    expect(summary.slowest[0]?.timings.total).toBeGreaterThanOrEqual(1000);
    expect(summary.byResourceType).toMatchObject({ Document: 2, Fetch: 3, Image: 1 });
    expect(summary.byHost[new URL(site.url).host]).toBeGreaterThanOrEqual(3);
    expect(summary.byHost[new URL(site.crossSiteUrl).host]).toBeGreaterThanOrEqual(2);
    expect(summary.bytes.encoded).toBeGreaterThan(summary.bytes.decoded);
    expect(summary.failures.count).toBe(0);
    expect(network.summary({ slowest: 0 }).slowest).toEqual([]);
  });
});

test('continueFrom starts a new observer with a stopped one’s entries and dropped count', async () => {
  await using driven = await openBrowser(local.client);
  const first = await observeNetwork(driven.session, { maxEntries: 5 });
  const lastImage = entryWhere(first, (e) => pathOf(e.url) === '/img/19.png');
  await driven.page.goto(`${site.url}/subresources?n=20`);
  await lastImage;

  // A running observer would record everything twice; anything else is not an observer.
  await expect(observeNetwork(driven.session, { continueFrom: first })).rejects.toThrow(
    /continueFrom must be an observer that has stopped/,
  );
  await expect(
    observeNetwork(driven.session, { continueFrom: {} as unknown as typeof first }),
  ).rejects.toBeInstanceOf(ConfigurationError);

  await first.stop();
  await using second = await observeNetwork(driven.session, { continueFrom: first, maxEntries: 10 });
  expect(second.entries()).toEqual(first.entries());
  expect(second.dropped).toBe(first.dropped);
  await driven.page.goto(`${site.url}/`);
  await entryWhere(second, (e) => pathOf(e.url) === '/');
  expect(second.entries().slice(0, 5)).toEqual(first.entries());
  expect(first.entries().some((e) => pathOf(e.url) === '/')).toBe(false);
});

test('an observer does not hold on to the one it continued from, so reconnects do not chain buffers', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  await using driven = await openBrowser(local.client);
  let first: NetworkObserver | undefined = await observeNetwork(driven.session);
  await first.stop();
  await using second = await observeNetwork(driven.session, { continueFrom: first });
  const firstRef = new WeakRef(first);
  first = undefined;
  await expect
    .poll(async () => {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
      return firstRef.deref() === undefined;
    })
    .toBe(true);
  expect(second.stopped).toBe(false);
});
