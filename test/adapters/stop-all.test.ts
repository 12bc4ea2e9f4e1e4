import { RequestValidationError } from 'cloudbrowser';
import { describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';

const local = useLocalService();

describe('browsers.stopAll', () => {
  test('stops every active browser carrying all the given metadata, and only those', async () => {
    const { browsers } = local.client;
    const create = (metadata: Record<string, string>) =>
      browsers.create({ proxyCountryCode: null, metadata });
    const [a, b, otherRun, otherJob] = await Promise.all([
      create({ ci: 'run-1', job: 'e2e' }),
      create({ ci: 'run-1', job: 'e2e', shard: '2' }),
      create({ ci: 'run-2', job: 'e2e' }),
      create({ ci: 'run-1', job: 'lint' }),
    ]);
    const stopped = await browsers.stopAll({ metadata: { ci: 'run-1', job: 'e2e' } });
    expect(stopped.map((s) => s.id).sort()).toEqual([a?.id, b?.id].sort());
    expect(stopped.every((s) => s.status === 'stopped')).toBe(true);

    const active = await browsers.list({ filterBy: 'active' }).toArray();
    expect(active.map((s) => s.id).sort()).toEqual([otherRun?.id, otherJob?.id].sort());
    await Promise.all(active.map((s) => browsers.stop(s.id)));
  });

  test('returns an empty list when nothing matches, and leaves stopped browsers alone', async () => {
    const { browsers } = local.client;
    const done = await browsers.create({ proxyCountryCode: null, metadata: { ci: 'run-3' } });
    await browsers.stop(done.id);
    expect(await browsers.stopAll({ metadata: { ci: 'run-3' } })).toEqual([]);
  });

  test('refuses an empty metadata filter, so it never sweeps every browser of the project', async () => {
    await expect(local.client.browsers.stopAll({ metadata: {} })).rejects.toThrow(RequestValidationError);
    await expect(local.client.browsers.stopAll({ metadata: {} })).rejects.toThrow(
      'browsers.stopAll: invalid request: metadata: must have at least one pair; nothing was sent',
    );
  });
});
