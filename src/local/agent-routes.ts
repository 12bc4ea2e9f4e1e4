import { z } from 'zod';
import { id as uuid } from '../internal/schemas.js';
import { RunCreateParamsSchema, RunEventsQuerySchema } from '../resources/runs.js';
import { SessionCreateParamsSchema } from '../resources/sessions.js';
import type { AgentEngine, RunRecord } from './agent.js';
import { readJsonBody, readQuery, sendJson, validate } from './http.js';
import type { Context } from './routes.js';
import { domainRule, type Vault } from './vault.js';

type Route = { method: string; pattern: RegExp; handler: (ctx: Context) => Promise<void> };

const PathId = z.strictObject({ id: uuid });
const DEFAULT_EVENTS_LIMIT = 100;

const route = (method: string, path: string, handler: Route['handler']): Route => ({
  method,
  pattern: new RegExp(`^${path.replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}$`),
  handler,
});

/** `/api/v4/runs` and `/api/v3/sessions`: validated with the client's own schemas. */
export function agentRoutes(engine: AgentEngine, vault: Vault): Route[] {
  const run = (id: string | undefined) => engine.get(validate(PathId, { id }, 'path').id, 'run');
  const session = (id: string | undefined) => engine.get(validate(PathId, { id }, 'path').id, 'session');
  return [
    route('POST', '/api/v4/runs', async ({ req, res, origin }) => {
      const body = validate(RunCreateParamsSchema, await readJsonBody(req), 'body');
      const secrets = vault.resolve({
        opVaultId: body.opVaultId,
        vaultDomains: body.opVaultAllowedDomains?.map(domainRule),
        bindings: body.secretBindings,
        vaultField: 'opVaultId',
      });
      const record = await engine.create({
        kind: 'run',
        task: body.task,
        model: body.model,
        modelParams: body.modelParams,
        profileId: body.browserSettings?.profileId ?? null,
        // Absent browser settings mean the default managed proxy, as on the service.
        proxyCountryCode: body.browserSettings ? body.browserSettings.proxyCountryCode : 'us',
        secrets,
        origin,
      });
      sendJson(res, 201, runToWire(record));
    }),
    route('GET', '/api/v4/runs/{id}', async ({ res, params }) => {
      sendJson(res, 200, runToWire(run(params.id)));
    }),
    route('GET', '/api/v4/runs/{id}/status', async ({ res, params }) => {
      sendJson(res, 200, { status: run(params.id).status });
    }),
    route('POST', '/api/v4/runs/{id}/cancel', async ({ res, params }) => {
      sendJson(res, 200, runToWire(await engine.cancel(run(params.id))));
    }),
    route('GET', '/api/v4/runs/{id}/events', async ({ res, params, url }) => {
      const record = run(params.id);
      const query = validate(RunEventsQuerySchema, readQuery(url), 'query');
      sendJson(res, 200, engine.events(record, query.after ?? 0, query.limit ?? DEFAULT_EVENTS_LIMIT));
    }),
    route('POST', '/api/v3/sessions', async ({ req, res, origin }) => {
      const body = validate(SessionCreateParamsSchema, await readJsonBody(req), 'body');
      const secrets = vault.resolve({
        opVaultId: body.opVaultId,
        vaultDomains: body.allowedDomains?.map(domainRule),
        vaultField: 'opVaultId',
      });
      const record = await engine.create({
        kind: 'session',
        task: body.task,
        thinkingLevel: body.thinkingLevel,
        profileId: null,
        proxyCountryCode: 'us',
        secrets,
        origin,
      });
      sendJson(res, 201, sessionToWire(record));
    }),
    route('GET', '/api/v3/sessions/{id}', async ({ res, params }) => {
      sendJson(res, 200, sessionToWire(session(params.id)));
    }),
  ];
}

/** The v4 wire form of a run. */
export function runToWire(record: RunRecord): Record<string, unknown> {
  const { events: _events, kind: _kind, ...wire } = record;
  return wire;
}

const SESSION_STATUS: Record<string, string> = {
  queued: 'created',
  dispatching: 'created',
  running: 'running',
  completed: 'idle',
  failed: 'error',
  cancelled: 'stopped',
};

/** The v3 wire form of a session. */
export function sessionToWire(record: RunRecord): Record<string, unknown> {
  return {
    id: record.id,
    status: SESSION_STATUS[record.status] ?? record.status,
    task: record.task,
    thinkingLevel: record.thinkingLevel,
    output: record.result,
    error: record.error,
    secretAliases: record.secretAliases,
    browserId: record.browserId,
    createdAt: record.createdAt,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt,
  };
}
