/**
 * Memory with many requests and the default bound (part 2 of `bench/network.ts`): a CDP endpoint in
 * a child process (`fake-browser.ts`) streams requests in stretches; after each stretch the heap is
 * measured after a full GC. The events take the observer's real path: undici's WebSocket, the
 * pre-parse filter, JSON, the target tracker, the recorder and the ring buffer.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { observeNetwork } from 'cloudbrowser';
import { child } from './network-loads.js';

export interface Checkpoint {
  requests: number;
  heapMb: number;
  held: number;
  dropped: number;
  /** CPU time of this process per request over the stretch that ended here, µs. */
  cpuPerRequest: number;
}

export interface HeapResults {
  baselineMb: number;
  checkpoints: Checkpoint[];
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMb(): number {
  gc();
  gc();
  return getHeapStatistics().used_heap_size / (1024 * 1024);
}

export async function measureHeap(requests: number): Promise<HeapResults> {
  const fake = await child<{ wsUrl: string }>('./fake-browser.ts');
  const observer = await observeNetwork(fake.ready.wsUrl);
  let ended = 0;
  let waiting: { until: number; resolve: () => void } | undefined;
  observer.on('finished', () => {
    ended++;
    if (waiting !== undefined && ended >= waiting.until) waiting.resolve();
  });
  const baselineMb = heapMb();
  const checkpoints: Checkpoint[] = [];
  const stops = [1_000, 5_000, 10_000, 25_000, 50_000, 75_000, 100_000].filter((n) => n < requests);
  stops.push(requests);
  try {
    let sent = 0;
    for (const stop of stops) {
      const cpu = process.cpuUsage();
      fake.process.send({ send: stop - sent });
      const stretch = stop - sent;
      sent = stop;
      // Waiting without polling, so the CPU measured is the observer's.
      if (ended < stop) {
        await new Promise<void>((resolve) => {
          waiting = { until: stop, resolve };
        });
      }
      const { user, system } = process.cpuUsage(cpu);
      checkpoints.push({
        requests: stop,
        heapMb: heapMb(),
        held: observer.entries().length,
        dropped: observer.dropped,
        cpuPerRequest: (user + system) / stretch,
      });
    }
  } finally {
    await observer.stop();
    fake.process.kill();
  }
  return { baselineMb, checkpoints };
}
