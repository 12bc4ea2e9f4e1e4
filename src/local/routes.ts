import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { id as uuid } from '../internal/schemas.js';
import {
  BrowserCreateParamsSchema,
  BrowserListParamsSchema,
  BrowserStopBodySchema,
} from '../resources/browsers.js';
import {
  ProfileCreateParamsSchema,
  ProfileListParamsSchema,
  ProfileUpdateParamsSchema,
} from '../resources/profiles.js';
import type { BrowserPool } from './browser-pool.js';
import { HttpError, readJsonBody, readQuery, sendJson, validate } from './http.js';

/** One request as a route sees it. */
export interface Context {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** `http://host:port` as the client addressed us: the base of `cdpUrl` and `liveUrl`. */
  origin: string;
  params: Record<string, string>;
}

type Handler = (ctx: Context) => Promise<void>;

interface Route {
  method: string;
  pattern: RegExp;
  handler: Handler;
}

const PathId = z.strictObject({ id: uuid });

/** The REST routes of browsers and profiles, under `/api/v4` and the v2 and v3 aliases. */
export function restRoutes(pool: BrowserPool): Route[] {
  const { store } = pool;
  const browser = (id: string) => {
    const record = store.browsers.get(validate(PathId, { id }, 'path').id);
    if (!record) throw new HttpError(404, 'Browser not found');
    return record;
  };
  const profile = (id: string) => {
    const record = store.profiles.get(validate(PathId, { id }, 'path').id);
    if (!record) throw new HttpError(404, 'Profile not found');
    return record;
  };
  const route = (method: string, path: string, handler: Handler): Route => ({
    method,
    pattern: new RegExp(`^/api/v[234]${path.replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}$`),
    handler,
  });

  return [
    route('POST', '/browsers', async ({ req, res, origin }) => {
      const body = validate(BrowserCreateParamsSchema, await readJsonBody(req), 'body');
      // A client that gives up mid-create must not leave a billed browser: the pool undoes the create.
      const gaveUp = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) gaveUp.abort();
      });
      const record = await pool.create(body, gaveUp.signal);
      sendJson(res, 201, pool.toWire(record, origin));
    }),
    route('GET', '/browsers', async ({ res, url, origin }) => {
      const query = validate(BrowserListParamsSchema, readQuery(url), 'query');
      const wanted = Object.entries(query.metadata ?? {});
      const matches = [...store.browsers.values()]
        .filter((b) => query.filterBy === undefined || b.status === query.filterBy)
        .filter((b) => wanted.every(([key, value]) => b.metadata[key] === value))
        .sort((a, b) => b.startedAt.localeCompare(a.startedAt));
      sendJson(
        res,
        200,
        page(matches, query, (b) => pool.toWire(b, origin)),
      );
    }),
    route('GET', '/browsers/{id}', async ({ res, params, origin }) => {
      sendJson(res, 200, pool.toWire(browser(params.id ?? ''), origin));
    }),
    route('PATCH', '/browsers/{id}', async ({ req, res, params, origin }) => {
      const record = browser(params.id ?? '');
      validate(BrowserStopBodySchema, await readJsonBody(req), 'body');
      sendJson(res, 200, pool.toWire(await pool.stop(record.id, 'stop action'), origin));
    }),
    route('POST', '/profiles', async ({ req, res }) => {
      const body = validate(ProfileCreateParamsSchema, await readJsonBody(req), 'body');
      const now = new Date().toISOString();
      const record = {
        id: randomUUID(),
        name: body.name ?? null,
        userId: body.userId ?? null,
        lastUsedAt: null,
        createdAt: now,
        updatedAt: now,
        cookieDomains: [],
      };
      store.profiles.set(record.id, record);
      await store.save();
      sendJson(res, 201, record);
    }),
    route('GET', '/profiles', async ({ res, url }) => {
      const query = validate(ProfileListParamsSchema, readQuery(url), 'query');
      const needle = query.query?.toLowerCase();
      const matches = [...store.profiles.values()]
        .filter((p) => needle === undefined || (p.name ?? '').toLowerCase().includes(needle))
        .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
      sendJson(
        res,
        200,
        page(matches, query, (p) => p),
      );
    }),
    route('GET', '/profiles/{id}', async ({ res, params }) => {
      sendJson(res, 200, profile(params.id ?? ''));
    }),
    route('PATCH', '/profiles/{id}', async ({ req, res, params }) => {
      const record = profile(params.id ?? '');
      const body = validate(ProfileUpdateParamsSchema, await readJsonBody(req), 'body');
      if (body.name !== undefined) record.name = body.name;
      if (body.userId !== undefined) record.userId = body.userId;
      record.updatedAt = new Date().toISOString();
      await store.save();
      sendJson(res, 200, record);
    }),
    route('DELETE', '/profiles/{id}', async ({ res, params }) => {
      const record = profile(params.id ?? '');
      store.profiles.delete(record.id);
      await store.deleteProfileState(record.id);
      await store.save();
      sendJson(res, 204, null);
    }),
  ];
}

/** Finds the route for a request: 404 for an unknown path, 405 for a known path with another method. */
export function match(
  routes: Route[],
  method: string,
  pathname: string,
): { handler: Handler; params: Record<string, string> } {
  let pathKnown = false;
  for (const route of routes) {
    const found = route.pattern.exec(pathname);
    if (!found) continue;
    pathKnown = true;
    if (route.method === method) return { handler: route.handler, params: { ...found.groups } };
  }
  throw new HttpError(pathKnown ? 405 : 404, pathKnown ? 'Method Not Allowed' : 'Not Found');
}

function page<T, U>(
  all: T[],
  query: { pageSize?: number | undefined; pageNumber?: number | undefined },
  map: (item: T) => U,
) {
  const pageSize = query.pageSize ?? 10;
  const pageNumber = query.pageNumber ?? 1;
  const items = all.slice((pageNumber - 1) * pageSize, pageNumber * pageSize).map(map);
  return { items, totalItems: all.length, pageNumber, pageSize };
}
