import { randomUUID } from 'node:crypto';
import {
  BadRequestError,
  NotFoundError,
  RequestValidationError,
  ResponseValidationError,
  SKILL_IS_PUBLIC_DETAIL,
  SKILL_NOT_FOUND_DETAIL,
  UnprocessableEntityError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor } from '../support/client.js';
import { json, startServer } from '../support/http-server.js';

const SKILL_ID = '7c6b5a49-3827-4165-9f4e-3d2c1b0a9f8e';

/** A SkillResponse with every required key and none of the optional ones. */
function skillBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: SKILL_ID,
    title: 'Search flights',
    description: 'Finds the cheapest flight',
    categories: ['travel', 'search'],
    domains: ['flights.example.com'],
    status: 'finished',
    parameters: [{ name: 'from', type: 'string' }],
    outputSchema: { type: 'object', properties: { price: { type: 'number' } } },
    isEnabled: true,
    isPublic: false,
    currentVersion: 3,
    createdAt: '2030-01-01T00:00:00Z',
    updatedAt: '2030-01-02T00:00:00.123456',
    ...overrides,
  };
}

describe('SkillResponse parsing', () => {
  it('fills the defaults of the spec: optional fields read as null, ParameterSchema.required as true', async () => {
    const server = await startServer((_req, res) => json(res, 200, skillBody()));
    const skill = await clientFor(server).skills.get(SKILL_ID);
    expect(skill).toMatchObject({
      slug: null,
      goal: null,
      agentPrompt: null,
      iconUrl: null,
      firstPublishedAt: null,
      lastPublishedAt: null,
      currentVersionStartedAt: null,
      currentVersionFinishedAt: null,
      code: null,
      clonedFromSkillId: null,
      currentVersion: 3,
    });
    expect(skill.parameters).toEqual([
      { name: 'from', type: 'string', required: true, description: null, cookieDomain: null },
    ]);
    expect(server.requests[0]?.url).toBe(`/api/v2/skills/${SKILL_ID}`);
  });

  it('keeps a parameter that is not required, its default (null too) and a cookie domain', async () => {
    const parameters = [
      { name: 'session', type: 'cookie', required: false, cookieDomain: '.example.com', default: null },
      { name: 'limit', type: 'number', default: 10, description: 'How many' },
    ];
    const server = await startServer((_req, res) => json(res, 200, skillBody({ parameters })));
    const skill = await clientFor(server).skills.get(SKILL_ID);
    expect(skill.parameters[0]).toMatchObject({
      required: false,
      cookieDomain: '.example.com',
      default: null,
    });
    expect(skill.parameters[1]).toMatchObject({ required: true, default: 10, description: 'How many' });
    expect('default' in (skill.parameters[0] ?? {})).toBe(true);
  });

  it('reads currentVersion null, and base64 code that decodes', async () => {
    const code = Buffer.from('export default async () => 42;').toString('base64');
    const server = await startServer((_req, res) =>
      json(res, 200, skillBody({ currentVersion: null, code })),
    );
    const skill = await clientFor(server).skills.get(SKILL_ID);
    expect(skill.currentVersion).toBeNull();
    expect(Buffer.from(skill.code ?? '', 'base64').toString()).toBe('export default async () => 42;');
  });

  const broken: { name: string; body: Record<string, unknown>; loc: (string | number)[] }[] = [
    {
      name: 'without the currentVersion key',
      body: skillBody({ currentVersion: undefined }),
      loc: ['body', 'currentVersion'],
    },
    {
      name: 'with a category outside SkillCategory',
      body: skillBody({ categories: ['games'] }),
      loc: ['body', 'categories', 0],
    },
    {
      name: 'with a status outside SkillsGenerationStatus',
      body: skillBody({ status: 'done' }),
      loc: ['body', 'status'],
    },
    {
      name: 'with a parameter type outside ParameterType',
      body: skillBody({ parameters: [{ name: 'x', type: 'date' }] }),
      loc: ['body', 'parameters', 0, 'type'],
    },
    { name: 'with code that is not base64', body: skillBody({ code: 'not base64!' }), loc: ['body', 'code'] },
    { name: 'with an id that is not a UUID', body: skillBody({ id: 'skill-1' }), loc: ['body', 'id'] },
    {
      name: 'with a createdAt that is not a date-time',
      body: skillBody({ createdAt: 'yesterday' }),
      loc: ['body', 'createdAt'],
    },
    {
      name: 'without outputSchema',
      body: skillBody({ outputSchema: undefined }),
      loc: ['body', 'outputSchema'],
    },
  ];

  it.each(broken)('a body $name is a ResponseValidationError naming the field', async ({ body, loc }) => {
    const server = await startServer((_req, res) => json(res, 200, body));
    const error = await clientFor(server)
      .skills.get(SKILL_ID)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).issues.map((i) => i.loc)).toContainEqual(loc);
  });

  it('keeps fields the spec does not list', async () => {
    const server = await startServer((_req, res) => json(res, 200, skillBody({ runs: 12 })));
    expect(await clientFor(server).skills.get(SKILL_ID)).toMatchObject({ runs: 12 });
  });
});

describe('skills.list', () => {
  it('walks every page', async () => {
    const all = Array.from({ length: 5 }, () => skillBody({ id: randomUUID() }));
    const server = await startServer((req, res) => {
      const pageNumber = Number(req.query.get('pageNumber'));
      const pageSize = Number(req.query.get('pageSize'));
      json(res, 200, {
        items: all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize),
        totalItems: all.length,
        pageNumber,
        pageSize,
      });
    });
    const skills = await clientFor(server).skills.list({ pageSize: 2 }).toArray();
    expect(skills.map((s) => s.id)).toEqual(all.map((s) => s.id));
    expect(server.requests.map((r) => r.url)).toEqual([
      '/api/v2/skills?pageNumber=1&pageSize=2',
      '/api/v2/skills?pageNumber=2&pageSize=2',
      '/api/v2/skills?pageNumber=3&pageSize=2',
    ]);
  });
});

describe('skills.rollback', () => {
  it('200: sends POST /api/v2/skills/{id}/rollback without a body and returns the updated skill', async () => {
    const server = await startServer((_req, res) => json(res, 200, skillBody({ currentVersion: 2 })));
    const skill = await clientFor(server).skills.rollback(SKILL_ID);
    expect(skill.currentVersion).toBe(2);
    expect(server.requests.map((r) => [r.method, r.url, r.body, r.headers['content-type']])).toEqual([
      ['POST', `/api/v2/skills/${SKILL_ID}/rollback`, undefined, undefined],
    ]);
  });

  it('400 for a public skill is a BadRequestError with the spec text', async () => {
    const server = await startServer((_req, res) => json(res, 400, { detail: SKILL_IS_PUBLIC_DETAIL }));
    const error = await clientFor(server)
      .skills.rollback(SKILL_ID)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, code: 'bad_request', detail: SKILL_IS_PUBLIC_DETAIL });
    expect((error as Error).message).toBe(
      `skills.rollback (POST /api/v2/skills/${SKILL_ID}/rollback) → 400: Cannot rollback a public skill. Please make the skill private first.`,
    );
  });

  it('404 for a missing skill is a NotFoundError with the spec text', async () => {
    const server = await startServer((_req, res) => json(res, 404, { detail: SKILL_NOT_FOUND_DETAIL }));
    const error = await clientFor(server)
      .skills.rollback(SKILL_ID)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, detail: 'Skill not found' });
  });

  it('422 is an UnprocessableEntityError with the HTTPValidationError entries', async () => {
    const detail = [{ loc: ['path', 'skill_id'], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }];
    const server = await startServer((_req, res) => json(res, 422, { detail }));
    const error = await clientFor(server)
      .skills.rollback(SKILL_ID)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect((error as UnprocessableEntityError).errors).toEqual(detail);
  });

  it('is never retried: it cannot be undone', async () => {
    const server = await startServer((_req, res) => json(res, 503, { detail: 'busy' }));
    await expect(clientFor(server, { maxRetries: 3 }).skills.rollback(SKILL_ID)).rejects.toMatchObject({
      status: 503,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('refuses a skill id that is not a UUID before sending', async () => {
    const server = await startServer((_req, res) => json(res, 200, skillBody()));
    const error = await clientFor(server)
      .skills.rollback('flights')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestValidationError);
    expect((error as RequestValidationError).issues[0]).toMatchObject({ loc: ['id'], msg: 'must be a UUID' });
    expect(server.requests).toHaveLength(0);
  });
});
