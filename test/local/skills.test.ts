import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BadRequestError, NotFoundError, RequestValidationError, SKILL_IS_PUBLIC_DETAIL } from 'cloudbrowser';
import { type LocalSkillSeed, startLocalService } from 'cloudbrowser/local';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const code = (text: string) => Buffer.from(text).toString('base64');
const PRIVATE_ID = randomUUID();
const PUBLIC_ID = randomUUID();
const SINGLE_ID = randomUUID();
const SEEDS: LocalSkillSeed[] = [
  {
    id: PRIVATE_ID,
    title: 'Search flights',
    description: 'Finds the cheapest flight',
    categories: ['travel'],
    parameters: [{ name: 'from', type: 'string' }],
    versions: [
      { version: 1, code: code('v1') },
      { version: 2, code: code('v2'), startedAt: '2030-01-02T00:00:00Z', finishedAt: '2030-01-02T00:05:00Z' },
      { version: 3, code: code('v3') },
    ],
  },
  { id: PUBLIC_ID, title: 'Public skill', isPublic: true, versions: [{ version: 1 }, { version: 2 }] },
  { id: SINGLE_ID, title: 'One version', versions: [{ version: 1 }] },
];

let dataDir: string;
beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'cb-skills-'));
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

/** A service on the shared data dir; skills need no browser. */
async function withService<T>(
  run: (service: Awaited<ReturnType<typeof startLocalService>>) => Promise<T>,
): Promise<T> {
  const service = await startLocalService({ dataDir, skills: SEEDS, log: false });
  try {
    return await run(service);
  } finally {
    await service.close();
  }
}

describe('v2 skills on the local service', () => {
  test('get and list return SkillResponse objects the client parses, with the current version', async () => {
    await withService(async (service) => {
      const client = service.client();
      const skill = await client.skills.get(PRIVATE_ID);
      expect(skill).toMatchObject({
        id: PRIVATE_ID,
        currentVersion: 3,
        code: code('v3'),
        isPublic: false,
        status: 'finished',
        parameters: [{ name: 'from', type: 'string', required: true }],
      });
      expect('versions' in skill).toBe(false);
      const all = await client.skills.list({ pageSize: 2 }).toArray();
      expect(all.map((s) => s.id).sort()).toEqual([PRIVATE_ID, PUBLIC_ID, SINGLE_ID].sort());
    });
  });

  test('rollback: 200 makes the previous version current; 400 public, 404 missing, 422 not a UUID', async () => {
    await withService(async (service) => {
      const client = service.client();
      const rolled = await client.skills.rollback(PRIVATE_ID);
      expect(rolled).toMatchObject({
        currentVersion: 2,
        code: code('v2'),
        currentVersionStartedAt: '2030-01-02T00:00:00Z',
        currentVersionFinishedAt: '2030-01-02T00:05:00Z',
      });

      const publicError = await client.skills.rollback(PUBLIC_ID).catch((e: unknown) => e);
      expect(publicError).toBeInstanceOf(BadRequestError);
      expect((publicError as BadRequestError).detail).toBe(SKILL_IS_PUBLIC_DETAIL);
      expect((await client.skills.get(PUBLIC_ID)).currentVersion).toBe(2);

      const missing = await client.skills.rollback(randomUUID()).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(NotFoundError);
      expect((missing as NotFoundError).detail).toBe('Skill not found');

      // The client refuses a non-UUID itself; sent raw, the service answers 422.
      await expect(client.skills.rollback('flights')).rejects.toBeInstanceOf(RequestValidationError);
      const response = await request(`${service.baseUrl}/api/v2/skills/flights/rollback`, {
        method: 'POST',
        headers: { 'x-service-api-key': service.apiKey },
      });
      expect(response.statusCode).toBe(422);
      expect(await response.body.json()).toEqual({
        detail: [expect.objectContaining({ loc: ['path', 'id'], msg: 'must be a UUID' })],
      });

      const none = await client.skills.rollback(SINGLE_ID).catch((e: unknown) => e);
      expect(none).toBeInstanceOf(BadRequestError);
      expect((none as BadRequestError).detail).toBe('The skill has no previous version to roll back to');
    });
  });

  test('a rollback is kept on disk across a restart, and cannot be undone', async () => {
    const saved = JSON.parse(await readFile(join(dataDir, 'skills.json'), 'utf8')) as {
      skills: { id: string; versions: { version: number }[] }[];
    };
    expect(saved.skills.find((s) => s.id === PRIVATE_ID)?.versions.map((v) => v.version)).toEqual([1, 2]);
    await withService(async (service) => {
      const client = service.client();
      // The seeds come again with version 3; the stored skill wins.
      expect((await client.skills.get(PRIVATE_ID)).currentVersion).toBe(2);
      expect((await client.skills.rollback(PRIVATE_ID)).currentVersion).toBe(1);
      const again = await client.skills.rollback(PRIVATE_ID).catch((e: unknown) => e);
      expect(again).toBeInstanceOf(BadRequestError);
    });
  });

  test('bad seeds are refused when the service starts', async () => {
    const error = await startLocalService({
      dataDir: join(dataDir, 'bad'),
      skills: [{ id: 'not-a-uuid', title: 'x' }],
      log: false,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^startLocalService: invalid skills: 0\.id must be a UUID/);
  });
});
