import { join } from 'node:path';
import { z } from 'zod';
import { ConfigurationError } from '../errors.js';
import { id as uuid } from '../internal/schemas.js';
import {
  ParameterSchemaSchema,
  SKILL_IS_PUBLIC_DETAIL,
  SKILL_NOT_FOUND_DETAIL,
  SkillCategorySchema,
  SkillListParamsSchema,
  SkillPathSchema,
  SkillsGenerationStatusSchema,
} from '../resources/skills.js';
import { HttpError, readQuery, sendJson, validate } from './http.js';
import type { Context } from './routes.js';
import { readJson, writeAtomic } from './store.js';

/**
 * v2 skills on the local service. Skills are retired, so none is created through the interface:
 * they come from the `skills` option, are kept in `skills.json` in the data dir (written atomically),
 * and keep their versions there, so a rollback survives a restart.
 */

const dateTime = z.iso.datetime({ offset: true, local: true });

const VersionSeedSchema = z.strictObject({
  version: z.number().int().positive(),
  /** The version's generated code, base64. */
  code: z.base64().nullable().default(null),
  startedAt: dateTime.nullable().default(null),
  finishedAt: dateTime.nullable().default(null),
});

const SkillSeedSchema = z.strictObject({
  id: uuid,
  slug: z.string().nullable().default(null),
  title: z.string(),
  description: z.string().default(''),
  categories: z.array(SkillCategorySchema).default([]),
  domains: z.array(z.string()).default([]),
  goal: z.string().nullable().default(null),
  agentPrompt: z.string().nullable().default(null),
  status: SkillsGenerationStatusSchema.default('finished'),
  parameters: z.array(ParameterSchemaSchema).default([]),
  outputSchema: z.record(z.string(), z.unknown()).default({}),
  isEnabled: z.boolean().default(true),
  isPublic: z.boolean().default(false),
  iconUrl: z.string().nullable().default(null),
  clonedFromSkillId: uuid.nullable().default(null),
  /** Its versions; the highest is current. None: `currentVersion` is null. */
  versions: z.array(VersionSeedSchema).default([]),
});

/** A skill the local service starts with (unless one with its id is already stored). */
export type LocalSkillSeed = z.input<typeof SkillSeedSchema>;
type Version = z.output<typeof VersionSeedSchema>;
type SkillSeed = z.output<typeof SkillSeedSchema>;

/** The `skills` option, validated; bad seeds are a `ConfigurationError`. */
export function skillSeedsFrom(seeds: readonly LocalSkillSeed[] = []): SkillSeed[] {
  const parsed = z.array(SkillSeedSchema).safeParse(seeds);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ');
    throw new ConfigurationError(`startLocalService: invalid skills: ${problems}`);
  }
  return parsed.data;
}

interface SkillRecord extends Omit<SkillSeed, 'versions'> {
  versions: Version[];
  firstPublishedAt: string | null;
  lastPublishedAt: string | null;
  currentVersion: number | null;
  createdAt: string;
  updatedAt: string;
}

type Route = { method: string; pattern: RegExp; handler: (ctx: Context) => Promise<void> };

export class SkillStore {
  readonly #skills = new Map<string, SkillRecord>();
  readonly #path: string;
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string) {
    this.#path = path;
  }

  static async open(dataDir: string, seeds: readonly SkillSeed[]): Promise<SkillStore> {
    const store = new SkillStore(join(dataDir, 'skills.json'));
    const state = await readJson<{ skills: SkillRecord[] }>(store.#path);
    for (const skill of state?.skills ?? []) store.#skills.set(skill.id, skill);
    let added = false;
    for (const seed of seeds) {
      if (store.#skills.has(seed.id)) continue;
      store.#skills.set(seed.id, fromSeed(seed));
      added = true;
    }
    if (added) await store.#save();
    return store;
  }

  /** Resolves when every queued write has landed. */
  flush(): Promise<void> {
    return this.#writing;
  }

  routes(): Route[] {
    const skill = (id: string | undefined) => {
      const record = this.#skills.get(validate(SkillPathSchema, { id }, 'path').id);
      if (!record) throw new HttpError(404, SKILL_NOT_FOUND_DETAIL);
      return record;
    };
    return [
      {
        method: 'GET',
        pattern: /^\/api\/v2\/skills$/,
        handler: async ({ res, url }) => {
          const query = validate(SkillListParamsSchema, readQuery(url), 'query');
          const all = [...this.#skills.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
          const pageSize = query.pageSize ?? 10;
          const pageNumber = query.pageNumber ?? 1;
          const items = all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map(toWire);
          sendJson(res, 200, { items, totalItems: all.length, pageNumber, pageSize });
        },
      },
      {
        method: 'GET',
        pattern: /^\/api\/v2\/skills\/(?<id>[^/]+)$/,
        handler: async ({ res, params }) => sendJson(res, 200, toWire(skill(params.id))),
      },
      {
        method: 'POST',
        pattern: /^\/api\/v2\/skills\/(?<id>[^/]+)\/rollback$/,
        handler: async ({ res, params }) => {
          const record = skill(params.id);
          if (record.isPublic) throw new HttpError(400, SKILL_IS_PUBLIC_DETAIL);
          const current = record.currentVersion;
          const previous = record.versions
            .filter((v) => current !== null && v.version < current)
            .sort((a, b) => b.version - a.version)[0];
          if (!previous) throw new HttpError(400, 'The skill has no previous version to roll back to');
          // A rollback cannot be undone: the versions after the restored one are gone.
          record.versions = record.versions.filter((v) => v.version <= previous.version);
          record.currentVersion = previous.version;
          record.updatedAt = new Date().toISOString();
          await this.#save();
          sendJson(res, 200, toWire(record));
        },
      },
    ];
  }

  #save(): Promise<void> {
    const text = JSON.stringify({ skills: [...this.#skills.values()] });
    const next = this.#writing.then(() => writeAtomic(this.#path, text));
    this.#writing = next.catch(() => {});
    return next;
  }
}

function fromSeed(seed: SkillSeed): SkillRecord {
  const now = new Date().toISOString();
  const versions = [...seed.versions].sort((a, b) => a.version - b.version);
  const record: SkillRecord = {
    ...seed,
    versions,
    firstPublishedAt: seed.isPublic ? now : null,
    lastPublishedAt: seed.isPublic ? now : null,
    currentVersion: null,
    createdAt: now,
    updatedAt: now,
  };
  record.currentVersion = versions.at(-1)?.version ?? null;
  return record;
}

/** The `SkillResponse` of a record: the current version's code and times, not the version list. */
function toWire(record: SkillRecord): Record<string, unknown> {
  const { versions, ...skill } = record;
  const current = versions.find((v) => v.version === record.currentVersion);
  return {
    ...skill,
    currentVersion: record.currentVersion,
    currentVersionStartedAt: current?.startedAt ?? null,
    currentVersionFinishedAt: current?.finishedAt ?? null,
    code: current?.code ?? null,
  };
}
