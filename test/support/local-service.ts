import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CloudBrowserClient } from 'cloudbrowser';
import { type LocalService, type LocalServiceOptions, startLocalService } from 'cloudbrowser/local';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { waitForNoChromium } from './chromium-processes.js';

export interface LocalServiceFixture {
  readonly service: LocalService;
  readonly client: CloudBrowserClient;
  readonly dataDir: string;
  /** Lifecycle lines the service logged. */
  readonly logs: string[];
  /** The status the service reports for a browser now. */
  statusOf(id: string): Promise<string>;
  /** Ids of the browsers active now. */
  activeIds(): Promise<string[]>;
}

/**
 * Starts a local service with real Chromium for the file's tests, in a temporary data dir. After
 * each test it fails the test if any browser is still active (and stops them, so one leak does not
 * cascade); after all it closes the service and fails if any Chromium of ours is still alive.
 */
export function useLocalService(
  options: LocalServiceOptions | (() => Promise<LocalServiceOptions>) = {},
): LocalServiceFixture {
  const state = {} as { service: LocalService; client: CloudBrowserClient; dataDir: string };
  const logs: string[] = [];
  const activeIds = async () =>
    (await state.client.browsers.list({ filterBy: 'active', pageSize: 100 }).toArray()).map((b) => b.id);
  beforeAll(async () => {
    state.dataDir = await mkdtemp(join(tmpdir(), 'cb-test-data-'));
    state.service = await startLocalService({
      dataDir: state.dataDir,
      log: (line) => logs.push(line),
      ...(typeof options === 'function' ? await options() : options),
    });
    state.client = state.service.client();
  });
  afterEach(async () => {
    const active = await activeIds();
    await Promise.all(active.map((id) => state.client.browsers.stop(id)));
    expect(active, 'browsers left active by the test').toEqual([]);
  });
  afterAll(async () => {
    await state.service?.close();
    expect(await waitForNoChromium(), 'Chromium processes left alive').toEqual([]);
    if (state.dataDir) await rm(state.dataDir, { recursive: true, force: true });
  });
  return {
    get service() {
      return state.service;
    },
    get client() {
      return state.client;
    },
    get dataDir() {
      return state.dataDir;
    },
    logs,
    statusOf: async (id) => (await state.client.browsers.get(id)).status,
    activeIds,
  };
}
