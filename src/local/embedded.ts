import { readEnv } from '../internal/env.js';
import { type LocalService, startLocalService } from './service.js';

/**
 * The service behind `CLOUDBROWSER_BASE_URL=local`: started in this process on first use, shared by
 * every client of the process, and closed (its browsers stopped) when the process is about to exit.
 * It never keeps the process alive by itself.
 */
let embedded: Promise<LocalService> | undefined;

export function embeddedService(): Promise<LocalService> {
  const dataDir = readEnv('CLOUDBROWSER_LOCAL_DATA_DIR');
  embedded ??= startLocalService({ keepAlive: false, ...(dataDir ? { dataDir } : {}) }).then((service) => {
    process.once('beforeExit', () => void service.close());
    return service;
  });
  return embedded;
}
