/**
 * The watchdog of `supervise: true`, run as a child process with an IPC channel (see
 * supervisor.ts). It learns which browsers to watch, and the service to stop them on, only over
 * IPC. When the channel closes it stops whatever it still watches: nothing, if the parent released
 * everything and let go; its browsers, if the parent died without warning. Then it exits.
 */
import type { FromWatchdog, ServiceAccess, ToWatchdog } from './supervisor.js';

const watched = new Map<string, ServiceAccess>();

if (typeof process.send !== 'function') {
  process.stderr.write('cloudbrowser watchdog: start it through supervise: true, not by hand\n');
  process.exit(2);
}

process.on('message', (message: ToWatchdog) => {
  if (message.type === 'watch') {
    watched.set(message.id, message.service);
    const reply: FromWatchdog = { type: 'watching', id: message.id };
    process.send?.(reply);
  } else if (message.type === 'release') {
    watched.delete(message.id);
  }
});

// A terminal's Ctrl-C or hang-up is for the parent, whose own guards act on it; this process must
// stay to catch what they could not.
for (const signal of ['SIGINT', 'SIGHUP'] as const) process.on(signal, () => {});

process.on('disconnect', () => {
  void sweep().then((ok) => process.exit(ok ? 0 : 1));
});

/** Stops every browser still watched; true when all of them are stopped. */
async function sweep(): Promise<boolean> {
  if (watched.size === 0) return true;
  const { CloudBrowserClient } = await import('cloudbrowser');
  const clients = new Map<string, InstanceType<typeof CloudBrowserClient>>();
  const results = await Promise.allSettled(
    [...watched].map(([id, service]) => {
      const key = JSON.stringify(service);
      let client = clients.get(key);
      if (client === undefined) {
        client = new CloudBrowserClient({ ...service, timeoutMs: 10_000, maxRetries: 3 });
        clients.set(key, client);
      }
      return client.browsers.stop(id);
    }),
  );
  const ids = [...watched.keys()];
  const failed = results.flatMap((result, i) =>
    result.status === 'rejected' ? [`${ids[i]} (${String(result.reason)})`] : [],
  );
  const stopped = ids.filter((_, i) => results[i]?.status === 'fulfilled');
  if (stopped.length > 0) {
    process.stderr.write(
      `cloudbrowser watchdog: its process ended without stopping browser(s) ${stopped.join(', ')}; they are stopped now\n`,
    );
  }
  if (failed.length > 0) process.stderr.write(`cloudbrowser watchdog: could not stop ${failed.join(', ')}\n`);
  return failed.length === 0;
}
