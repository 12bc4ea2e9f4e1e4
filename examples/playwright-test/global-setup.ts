import { CloudBrowserClient } from 'cloudbrowser';
import { type LocalService, startLocalService } from 'cloudbrowser/local';
import { startShop } from './site.js';

/**
 * Runs once, in the Playwright Test runner, before any worker starts; workers inherit the
 * environment it sets.
 *
 * With `CLOUDBROWSER_BASE_URL=local` it starts ONE local service here and hands its address and key
 * to the workers. Each worker is a process of its own: left at `local`, every worker would start an
 * embedded service of its own, all on the same data dir, which one service at a time may use.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const shop = await startShop();
  process.env.EXAMPLE_SHOP_URL = shop.url;

  let service: LocalService | undefined;
  if (process.env.CLOUDBROWSER_BASE_URL === 'local') {
    const dataDir = process.env.CLOUDBROWSER_LOCAL_DATA_DIR;
    service = await startLocalService(dataDir ? { dataDir } : {});
    process.env.CLOUDBROWSER_BASE_URL = service.baseUrl;
    process.env.CLOUDBROWSER_API_KEY = service.apiKey;
  }

  return async () => {
    // Every worker stopped its browser in its teardown, failed tests or not: nothing should be left.
    const left = await new CloudBrowserClient().browsers.list({ filterBy: 'active' }).toArray();
    console.log(`cloud browsers left active after the run: ${left.length}`);
    await service?.close();
    await shop.close();
  };
}
