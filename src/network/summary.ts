import type { NetworkEntry, NetworkSummary } from './types.js';

type StatusClass = keyof NetworkSummary['byStatusClass'];

/** Counts, bytes, failures and the slowest requests of a list of entries. */
export function summarise(
  entries: readonly NetworkEntry[],
  counts: { dropped: number; inFlight: number; slowest: number },
): NetworkSummary {
  const byStatusClass: Record<StatusClass, number> = {
    '1xx': 0,
    '2xx': 0,
    '3xx': 0,
    '4xx': 0,
    '5xx': 0,
    none: 0,
  };
  const byResourceType: Record<string, number> = {};
  const byHost: Record<string, number> = {};
  const byReason: Record<string, number> = {};
  let encoded = 0;
  let decoded = 0;
  let fromCache = 0;
  let fromServiceWorker = 0;
  let failures = 0;
  for (const entry of entries) {
    byStatusClass[statusClass(entry.status)]++;
    byResourceType[entry.resourceType] = (byResourceType[entry.resourceType] ?? 0) + 1;
    const host = hostOf(entry.url);
    byHost[host] = (byHost[host] ?? 0) + 1;
    encoded += entry.encodedDataLength;
    for (const redirect of entry.redirects) encoded += redirect.encodedDataLength;
    decoded += entry.decodedBodyLength;
    if (entry.fromCache !== null) fromCache++;
    if (entry.fromServiceWorker) fromServiceWorker++;
    if (entry.failure !== null) {
      failures++;
      const reason =
        entry.failure.blockedReason === null
          ? entry.failure.errorText
          : `blocked:${entry.failure.blockedReason}`;
      byReason[reason] = (byReason[reason] ?? 0) + 1;
    }
  }
  return {
    entries: entries.length,
    dropped: counts.dropped,
    inFlight: counts.inFlight,
    byStatusClass,
    byResourceType,
    byHost,
    bytes: { encoded, decoded },
    fromCache,
    fromServiceWorker,
    failures: { count: failures, byReason },
    slowest: slowest(entries, counts.slowest),
  };
}

function statusClass(status: number | null): StatusClass {
  if (status === null || status < 100 || status >= 600) return 'none';
  return `${Math.floor(status / 100)}xx` as StatusClass;
}

/** `host` or `host:port` as the URL has it; the scheme for URLs without a host (`data:`, `blob:`). */
function hostOf(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme === -1) return url.slice(0, url.indexOf(':') + 1) || '(none)';
  const start = scheme + 3;
  let end = url.length;
  for (const stop of ['/', '?', '#']) {
    const at = url.indexOf(stop, start);
    if (at !== -1 && at < end) end = at;
  }
  const authority = url.slice(start, end);
  return authority.slice(authority.lastIndexOf('@') + 1);
}

/** The `count` slowest entries, slowest first, without sorting them all. */
function slowest(entries: readonly NetworkEntry[], count: number): NetworkEntry[] {
  if (count <= 0) return [];
  const top: NetworkEntry[] = [];
  for (const entry of entries) {
    if (top.length === count && entry.timings.total <= (top[count - 1] as NetworkEntry).timings.total)
      continue;
    let at = top.length;
    while (at > 0 && (top[at - 1] as NetworkEntry).timings.total < entry.timings.total) at--;
    top.splice(at, 0, entry);
    if (top.length > count) top.pop();
  }
  return top;
}
