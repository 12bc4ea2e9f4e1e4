/**
 * Page loads with and without the network observer (part 1 of `bench/network.ts`).
 *
 * Four arms, one sample of each per round, in the orders of a Williams square (over every four
 * rounds each arm follows each other arm exactly once, so what one arm leaves behind, such as an
 * observer's detach, weighs on all the others alike):
 * - `without`: nothing but Playwright;
 * - `control`: the same again, an A/A pair that shows the noise of the machine;
 * - `floor`: a bare CDP client that only attaches to the page and enables the Network domain,
 *   reading nothing (every CDP network observer costs the browser at least this);
 * - `observer`: `observeNetwork()` with its defaults.
 * Each sample times `page.goto(url, { waitUntil: 'load' })`, and counts the CPU time Chromium (all
 * its processes) and this process spent meanwhile.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CloudBrowserClient, type NetworkObserver, observeNetwork } from 'cloudbrowser';
import { chromium, type Page } from 'playwright-core';
import { WebSocket } from 'undici';

export const ARMS = ['without', 'control', 'floor', 'observer'] as const;
export type Arm = (typeof ARMS)[number];

/** A Williams square for four arms: row r is the order of round r (mod 4). */
const ORDERS = [
  [0, 1, 3, 2],
  [1, 2, 0, 3],
  [2, 3, 1, 0],
  [3, 0, 2, 1],
].map((row) => row.map((i) => ARMS[i] as Arm));

export interface Sample {
  /** `page.goto` until `load`, ms. */
  wall: number;
  /** CPU time of every Chromium process during the load, ms. */
  chromiumCpu: number;
  /** CPU time of this process (Playwright, and the observer when there is one) during the load, ms. */
  nodeCpu: number;
  /** CPU time of the local service's process (its CDP proxy forwards every message) during the load, ms. */
  serviceCpu: number;
}

export interface LoadResults {
  samples: Record<Arm, Sample[]>;
  /** Requests the observer recorded per observed load (should be subresources + 1). */
  recorded: number[];
  /** `observeNetwork()` until it resolved, ms. */
  attach: number[];
}

/** Starts a child script of this folder under tsx; resolves with its first message. */
export async function child<T>(
  file: string,
  env: Record<string, string> = {},
): Promise<{ process: ChildProcess; ready: T }> {
  const started = fork(new URL(file, import.meta.url), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<T>((resolve, reject) => {
    started.once('message', (message) => resolve(message as T));
    started.once('exit', (code) => reject(new Error(`${file} exited (${code})`)));
  });
  return { process: started, ready };
}

export async function measureLoads(options: {
  runs: number;
  subresources: number;
  /** How long the site takes to answer each subresource, ms. */
  latencyMs: number;
}): Promise<LoadResults> {
  // Chromium's user-data dir lands under this TMPDIR: that is how its processes are found.
  const chromiumTmp = await mkdtemp(join(tmpdir(), 'cb-bench-chromium-'));
  const servers = await child<{ baseUrl: string; apiKey: string; pageUrl: string; blankUrl: string }>(
    './network-servers.ts',
    {
      CB_BENCH_SUBRESOURCES: String(options.subresources),
      CB_BENCH_LATENCY_MS: String(options.latencyMs),
      TMPDIR: chromiumTmp,
    },
  );
  const { baseUrl, apiKey, pageUrl, blankUrl } = servers.ready;
  const client = new CloudBrowserClient({ baseUrl, apiKey });
  const session = await client.browsers.create({ proxyCountryCode: null });
  const cdpUrl = session.cdpUrl ?? '';
  const results: LoadResults = {
    samples: { without: [], control: [], floor: [], observer: [] },
    recorded: [],
    attach: [],
  };
  try {
    const browser = await chromium.connectOverCDP(cdpUrl);
    const page = browser.contexts()[0]?.pages()[0] as Page;
    const chromiumPid = browserPid(chromiumTmp);
    const servicePid = servers.process.pid ?? 0;

    const load = async (): Promise<Sample> => {
      // An empty page of the same site: the load that follows reuses the renderer, as a site's
      // next page does, so what is timed is the requests, not a process swap.
      await page.goto(blankUrl);
      // Let whatever the previous sample set going (a detach, a GC) settle first, for every arm alike.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const chromiumBefore = groupCpuMs(chromiumPid);
      const serviceBefore = processCpuMs(servicePid);
      const nodeBefore = process.cpuUsage();
      const started = performance.now();
      await page.goto(pageUrl, { waitUntil: 'load' });
      const wall = performance.now() - started;
      const node = process.cpuUsage(nodeBefore);
      return {
        wall,
        chromiumCpu: groupCpuMs(chromiumPid) - chromiumBefore,
        nodeCpu: (node.user + node.system) / 1000,
        serviceCpu: processCpuMs(servicePid) - serviceBefore,
      };
    };

    const run: Record<Arm, () => Promise<Sample>> = {
      without: load,
      control: load,
      async floor() {
        const floor = await openFloorClient(cdpUrl);
        try {
          return await load();
        } finally {
          floor.close();
        }
      },
      async observer() {
        const attaching = performance.now();
        const observer = await observeNetwork(session);
        results.attach.push(performance.now() - attaching);
        try {
          const sample = await load();
          results.recorded.push(await recorded(observer, options.subresources + 1));
          return sample;
        } finally {
          await observer.stop();
        }
      },
    };

    for (let i = 0; i < 3; i++) for (const arm of ARMS) await run[arm]();
    results.attach.length = 0;
    results.recorded.length = 0;
    for (let round = 0; round < options.runs; round++) {
      for (const arm of ORDERS[round % ORDERS.length] as Arm[]) results.samples[arm].push(await run[arm]());
    }
    await browser.close();
  } finally {
    await client.browsers.stop(session.id);
    servers.process.send('close');
    await new Promise((resolve) => servers.process.once('exit', resolve));
    await rm(chromiumTmp, { recursive: true, force: true });
  }
  return results;
}

/** How many of the page's requests the observer recorded, waiting briefly for the last events. */
async function recorded(observer: NetworkObserver, expected: number): Promise<number> {
  const ofThePage = (url: string) => {
    const path = new URL(url).pathname;
    return path === '/page' || /^\/[ijs]\//.test(path);
  };
  const count = () => observer.entries().filter((e) => ofThePage(e.url)).length;
  for (let waited = 0; count() < expected && waited < 2_000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return count();
}

/** The least any CDP network observer costs: one session on the page with Network enabled, nothing read. */
async function openFloorClient(cdpUrl: string): Promise<{ close(): void }> {
  const version = (await (await fetch(`${cdpUrl}/json/version`)).json()) as { webSocketDebuggerUrl: string };
  const ws = new WebSocket(version.webSocketDebuggerUrl);
  await new Promise((resolve) => ws.addEventListener('open', resolve, { once: true }));
  let nextId = 0;
  const answers = new Map<number, (result: Record<string, unknown>) => void>();
  ws.addEventListener('message', (event) => {
    const text = event.data as string;
    // Only answers are parsed; the events are dropped unread.
    if (!text.startsWith('{"id"')) return;
    const message = JSON.parse(text) as { id: number; result: Record<string, unknown> };
    answers.get(message.id)?.(message.result);
  });
  const send = (method: string, params: object = {}, sessionId?: string) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const id = ++nextId;
      answers.set(id, resolve);
      ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  const { targetInfos } = (await send('Target.getTargets')) as {
    targetInfos: { targetId: string; type: string }[];
  };
  const page = targetInfos.find((t) => t.type === 'page');
  const { sessionId } = (await send('Target.attachToTarget', {
    targetId: page?.targetId,
    flatten: true,
  })) as {
    sessionId: string;
  };
  await send(
    'Network.enable',
    { maxTotalBufferSize: 0, maxResourceBufferSize: 0, maxPostDataSize: 0 },
    sessionId,
  );
  return { close: () => ws.close() };
}

/** The pid of the Chromium browser process whose user-data dir is under `dir`. */
function browserPid(dir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (
        args.some((a) => a.startsWith(`--user-data-dir=${dir}`)) &&
        !args.some((a) => a.startsWith('--type='))
      ) {
        return Number(entry);
      }
    } catch {
      // Gone while we looked.
    }
  }
  throw new Error('the Chromium of the benchmark was not found');
}

/** CPU time, in ms, of one process. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU time, in ms, of every process in a process group (Chromium runs in a group of its own), plus
 * what the group leader has reaped from children that already exited.
 */
function groupCpuMs(pgid: number): number {
  let ticks = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      ticks += Number(fields[11]) + Number(fields[12]);
      if (Number(entry) === pgid) ticks += Number(fields[13]) + Number(fields[14]);
    } catch {
      // Gone while we looked.
    }
  }
  return ticks * 10;
}
