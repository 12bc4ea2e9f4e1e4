import { z } from 'zod';
import { PageIterator } from '../internal/pagination.js';
import { id, intParam, nullable, pageOf } from '../internal/schemas.js';
import type { RequestOptions, Transport } from '../internal/transport.js';
import { parseRequest } from '../internal/validation.js';

export const SkillCategorySchema = z.enum([
  'search',
  'e_commerce',
  'financial',
  'news',
  'real_estate',
  'social_media',
  'travel',
  'marketplace',
  'lead_generation',
  'seo',
  'jobs',
  'developer',
  'media',
  'automation',
  'integration',
  'other',
]);

export const SkillsGenerationStatusSchema = z.enum([
  'recording',
  'generating',
  'failed',
  'finished',
  'cancelled',
  'timed_out',
]);

export const ParameterTypeSchema = z.enum(['string', 'number', 'boolean', 'object', 'array', 'cookie']);

const dateTime = z.iso.datetime({ offset: true, local: true, error: 'must be an ISO 8601 date-time' });

/** One input parameter of a skill. */
export const ParameterSchemaSchema = z.looseObject({
  name: z.string(),
  type: ParameterTypeSchema,
  /** @default true */
  required: z.boolean().default(true),
  description: nullable(z.string()),
  /** The default value; absent and `null` differ here, as `null` may be the default. */
  default: z.unknown().optional(),
  /** The domain of a `cookie` parameter. */
  cookieDomain: nullable(z.string()),
});

/** `SkillResponse`: a v2 skill as the service returns it. */
export const SkillSchema = z.looseObject({
  id,
  slug: nullable(z.string()),
  title: z.string(),
  description: z.string(),
  categories: z.array(SkillCategorySchema),
  /** Domains and websites the skill interacts with. */
  domains: z.array(z.string()),
  /** Hidden from the public view. */
  goal: nullable(z.string()),
  /** The prompt the agent used when generating the skill; hidden from the public view. */
  agentPrompt: nullable(z.string()),
  status: SkillsGenerationStatusSchema,
  parameters: z.array(ParameterSchemaSchema),
  outputSchema: z.record(z.string(), z.unknown()),
  isEnabled: z.boolean(),
  isPublic: z.boolean(),
  iconUrl: nullable(z.string()),
  firstPublishedAt: nullable(dateTime),
  lastPublishedAt: nullable(dateTime),
  /** The current version number. The key is always sent; the value may be null. */
  currentVersion: z.number().int('must be a whole number').nullable(),
  currentVersionStartedAt: nullable(dateTime),
  currentVersionFinishedAt: nullable(dateTime),
  /** The generated code, base64 encoded (enterprise tier only); decode with `Buffer.from(code, 'base64')`. */
  code: nullable(z.base64('must be base64')),
  clonedFromSkillId: nullable(id),
  createdAt: dateTime,
  updatedAt: dateTime,
});

export const SkillListParamsSchema = z.strictObject({
  pageSize: intParam(1, 100).optional(),
  pageNumber: intParam(1, Number.MAX_SAFE_INTEGER).optional(),
});

export const SkillPageSchema = pageOf(SkillSchema);

/** The path of a skill: its id is a UUID. */
export const SkillPathSchema = z.strictObject({ id });

export type SkillCategory = z.output<typeof SkillCategorySchema>;
export type SkillsGenerationStatus = z.output<typeof SkillsGenerationStatusSchema>;
export type ParameterType = z.output<typeof ParameterTypeSchema>;
export type SkillParameter = z.output<typeof ParameterSchemaSchema>;
export type Skill = z.output<typeof SkillSchema>;
export type SkillListParams = z.input<typeof SkillListParamsSchema>;

/** The `detail` the service sends when a public skill is rolled back (400). */
export const SKILL_IS_PUBLIC_DETAIL = 'Cannot rollback a public skill. Please make the skill private first.';
/** The `detail` the service sends for a skill that does not exist (404). */
export const SKILL_NOT_FOUND_DETAIL = 'Skill not found';

/** `/api/v2/skills`: legacy skills. Retired: existing ones still run, none are created. */
export class Skills {
  readonly #transport: Transport;

  /** @internal */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Reads one skill. A skill id that is not a UUID is refused before sending. */
  async get(skillId: string, options?: RequestOptions): Promise<Skill> {
    const operation = 'skills.get';
    parseRequest(operation, SkillPathSchema, { id: skillId });
    return this.#transport.request(
      {
        operation,
        method: 'GET',
        path: '/api/v2/skills/{id}',
        params: { id: skillId },
        response: SkillSchema,
        idempotent: true,
      },
      options,
    );
  }

  /** Every skill of the project, page by page. */
  list(params: SkillListParams = {}, options?: RequestOptions): PageIterator<Skill> {
    const operation = 'skills.list';
    const { pageNumber = 1, pageSize } = parseRequest(operation, SkillListParamsSchema, params);
    return new PageIterator((page) => {
      const query = new URLSearchParams({ pageNumber: String(page) });
      if (pageSize !== undefined) query.set('pageSize', String(pageSize));
      return this.#transport.request(
        {
          operation,
          method: 'GET',
          path: '/api/v2/skills',
          query,
          response: SkillPageSchema,
          idempotent: true,
        },
        options,
      );
    }, pageNumber);
  }

  /**
   * Makes the previous version of a private skill current and returns the updated skill. It cannot
   * be undone, so it is never retried.
   *
   * @throws {BadRequestError} 400: the skill is public (detail {@link SKILL_IS_PUBLIC_DETAIL}); make it private first.
   * @throws {NotFoundError} 404: no such skill (detail {@link SKILL_NOT_FOUND_DETAIL}).
   * @throws {UnprocessableEntityError} 422: the service refused the request; `errors` lists why.
   * @throws {RequestValidationError} the skill id is not a UUID; nothing was sent.
   */
  async rollback(skillId: string, options?: RequestOptions): Promise<Skill> {
    const operation = 'skills.rollback';
    parseRequest(operation, SkillPathSchema, { id: skillId });
    return this.#transport.request(
      {
        operation,
        method: 'POST',
        path: '/api/v2/skills/{id}/rollback',
        params: { id: skillId },
        response: SkillSchema,
      },
      options,
    );
  }
}
