import { z } from 'zod';
import { PageIterator } from '../internal/pagination.js';
import { intParam, nullable, pageOf } from '../internal/schemas.js';
import type { RequestOptions, Transport } from '../internal/transport.js';
import { parseRequest } from '../internal/validation.js';

export const ProfileCreateParamsSchema = z.strictObject({
  name: z.string().nullable().optional(),
  /** Your own id of the end user this profile belongs to: one profile per end user. */
  userId: z.string().nullable().optional(),
});

export const ProfileUpdateParamsSchema = ProfileCreateParamsSchema;

export const ProfileSchema = z.looseObject({
  id: z.string(),
  name: nullable(z.string()),
  userId: nullable(z.string()),
  lastUsedAt: nullable(z.string()),
  createdAt: nullable(z.string()),
  updatedAt: nullable(z.string()),
  /** Domains the profile holds cookies for. */
  cookieDomains: z.array(z.string()).default([]),
});

export const ProfileListParamsSchema = z.strictObject({
  pageSize: intParam(1, 100).optional(),
  pageNumber: intParam(1, Number.MAX_SAFE_INTEGER).optional(),
  /** Matches profile names. */
  query: z.string().optional(),
});

export const ProfilePageSchema = pageOf(ProfileSchema);

export type ProfileCreateParams = z.input<typeof ProfileCreateParamsSchema>;
export type ProfileUpdateParams = z.input<typeof ProfileUpdateParamsSchema>;
export type ProfileListParams = z.input<typeof ProfileListParamsSchema>;
export type Profile = z.output<typeof ProfileSchema>;

/** `/api/v4/profiles`: saved browser state (cookies, storage), one profile per end user. */
export class Profiles {
  readonly #transport: Transport;

  /** @internal */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Creates an empty profile. */
  async create(params: ProfileCreateParams = {}, options?: RequestOptions): Promise<Profile> {
    const operation = 'profiles.create';
    // async, so that a refused request rejects like every other failure instead of throwing
    return this.#transport.request(
      {
        operation,
        method: 'POST',
        path: '/api/v4/profiles',
        body: parseRequest(operation, ProfileCreateParamsSchema, params),
        response: ProfileSchema,
      },
      options,
    );
  }

  get(profileId: string, options?: RequestOptions): Promise<Profile> {
    return this.#transport.request(
      {
        operation: 'profiles.get',
        method: 'GET',
        path: '/api/v4/profiles/{id}',
        params: { id: profileId },
        response: ProfileSchema,
        idempotent: true,
      },
      options,
    );
  }

  /** Every profile, page by page; `query` narrows by name. */
  list(params: ProfileListParams = {}, options?: RequestOptions): PageIterator<Profile> {
    const operation = 'profiles.list';
    const { pageNumber = 1, pageSize, query } = parseRequest(operation, ProfileListParamsSchema, params);
    return new PageIterator((page) => {
      const search = new URLSearchParams({ pageNumber: String(page) });
      if (pageSize !== undefined) search.set('pageSize', String(pageSize));
      if (query !== undefined) search.set('query', query);
      return this.#transport.request(
        {
          operation,
          method: 'GET',
          path: '/api/v4/profiles',
          query: search,
          response: ProfilePageSchema,
          idempotent: true,
        },
        options,
      );
    }, pageNumber);
  }

  async update(profileId: string, params: ProfileUpdateParams, options?: RequestOptions): Promise<Profile> {
    const operation = 'profiles.update';
    return this.#transport.request(
      {
        operation,
        method: 'PATCH',
        path: '/api/v4/profiles/{id}',
        params: { id: profileId },
        body: parseRequest(operation, ProfileUpdateParamsSchema, params),
        response: ProfileSchema,
      },
      options,
    );
  }

  /** Deletes a profile and its saved state. */
  async delete(profileId: string, options?: RequestOptions): Promise<void> {
    await this.#transport.request(
      {
        operation: 'profiles.delete',
        method: 'DELETE',
        path: '/api/v4/profiles/{id}',
        params: { id: profileId },
      },
      options,
    );
  }
}
