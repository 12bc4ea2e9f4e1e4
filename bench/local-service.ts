/**
 * The local service against the physical limit: how long from `browsers.create` until a CDP client
 * gets an answer through `cdpUrl`, and how long `browsers.stop` takes, against launching the same
 * Chromium directly with the same flags and talking to its own port. Alternated, median of many.
 *
 *   npm run bench:local [-- --runs 25]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startLocalService } from 'cloudbrowser/local';
import { WebSocket } from 'undici';
import { chromiumArgs } from '../src/local/chromium.js';
import { findChromium } from '../src/local/chromium-path.js';
import { machine, median, writeSection } from './report.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '25' } } });
const runs = Number(values.runs);

/** Opens a WebSocket and waits for the answer to one command: the browser is usable. */
async function answer(wsUrl: string): Promise<WebSocket> {
  const ws = new WebSocket(wsUrl);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' })));
    ws.addEventListener('message', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`no answer from ${wsUrl}`)), { once: true });
  });
  return ws;
}

async function webSocketOf(httpUrl: string): Promise<string> {
  const version = (await (await fetch(`${httpUrl}/json/version`)).json()) as { webSocketDebuggerUrl: string };
  return version.webSocketDebuggerUrl;
}

const executablePath = await findChromium();
const dataDir = await mkdtemp(join(tmpdir(), 'cb-bench-'));
const service = await startLocalService({ dataDir, log: false, chromePath: executablePath });
const client = service.client();

async function viaService(): Promise<{ ready: number; stop: number }> {
  const started = performance.now();
  const session = await client.browsers.create({ proxyCountryCode: null });
  const ws = await answer(await webSocketOf(session.cdpUrl ?? ''));
  const ready = performance.now() - started;
  ws.close();
  const stopping = performance.now();
  await client.browsers.stop(session.id);
  return { ready, stop: performance.now() - stopping };
}

/** The same Chromium, same flags, spawned by hand: the physical limit of create-to-connectable. */
async function bare(): Promise<{ ready: number; stop: number }> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'cloudbrowser-bare-'));
  const started = performance.now();
  const child = spawn(executablePath, chromiumArgs({ executablePath, userDataDir }), {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const endpoint = await new Promise<string>((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (found?.[1]) resolve(found[1]);
    });
    child.once('exit', () => reject(new Error('Chromium exited')));
  });
  const ws = await answer(await webSocketOf(`http://${new URL(endpoint).host}`));
  const ready = performance.now() - started;
  const stopping = performance.now();
  ws.send(JSON.stringify({ id: 2, method: 'Browser.close' }));
  await exited;
  const stop = performance.now() - stopping;
  ws.close();
  await rm(userDataDir, { recursive: true, force: true });
  return { ready, stop };
}

const samples = {
  service: [] as { ready: number; stop: number }[],
  bare: [] as { ready: number; stop: number }[],
};
await viaService(); // warm-up: the first launch pays for disk caches
await bare();
for (let i = 0; i < runs; i++) {
  // Alternate which goes first, so drift in the machine's load falls on both alike.
  if (i % 2 === 0) {
    samples.service.push(await viaService());
    samples.bare.push(await bare());
  } else {
    samples.bare.push(await bare());
    samples.service.push(await viaService());
  }
}
await service.close();
await rm(dataDir, { recursive: true, force: true });

const m = (list: { ready: number; stop: number }[], key: 'ready' | 'stop') => median(list.map((s) => s[key]));
const readyRatio = m(samples.service, 'ready') / m(samples.bare, 'ready');
const stopRatio = m(samples.service, 'stop') / m(samples.bare, 'stop');
const ms = (value: number) => `${value.toFixed(0)} ms`;
const body = `## Local service: create → CDP-connectable, and stop

\`npm run bench:local\` (\`bench/local-service.ts\`), ${runs} runs each, alternated, after one warm-up.
Service: \`browsers.create\` over HTTP, then \`<cdpUrl>/json/version\` and a CDP command answered
through the service's proxy. Baseline: the same Chromium spawned directly with the same flags,
then its own \`/json/version\` and the same command. Stop: \`browsers.stop\` (graceful close, no
profile) against sending \`Browser.close\` to the bare Chromium and waiting for it to exit.

| | local service (median) | bare launch (median) | ratio |
|---|---|---|---|
| create → connectable | ${ms(m(samples.service, 'ready'))} | ${ms(m(samples.bare, 'ready'))} | **${readyRatio.toFixed(2)}×** |
| stop → stopped | ${ms(m(samples.service, 'stop'))} | ${ms(m(samples.bare, 'stop'))} | ${stopRatio.toFixed(2)}× |

Goal: create-to-connectable within 1.3× of the bare launch. Machine: ${machine()}.`;
await writeSection('local-service', body);
console.log(body);
