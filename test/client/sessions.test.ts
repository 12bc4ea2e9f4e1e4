import {
  APIUserAbortError,
  RequestValidationError,
  type SessionCreateParams,
  WaitTimeoutError,
} from 'cloudbrowser';
import { describe, expect, it } from 'vitest';
import { clientFor, recordingClock } from '../support/client.js';
import { json, startServer } from '../support/http-server.js';

const SESSION_ID = '5e4d3c2b-1a09-4f8e-9d7c-6b5a49382716';

function sessionBody(overrides: Record<string, unknown> = {}) {
  return { id: SESSION_ID, status: 'created', output: null, ...overrides };
}

describe('sessions.create', () => {
  it('sends POST /api/v3/sessions with task and thinkingLevel', async () => {
    const server = await startServer((_req, res) => json(res, 201, sessionBody()));
    const session = await clientFor(server).sessions.create({
      task: 'Find the opening hours',
      thinkingLevel: 'low',
    });
    expect(session).toEqual(sessionBody());
    expect(server.requests.map((r) => [r.method, r.url, r.body])).toEqual([
      ['POST', '/api/v3/sessions', { task: 'Find the opening hours', thinkingLevel: 'low' }],
    ]);
  });

  it('sends the vault options as opVaultId and allowedDomains, wildcard patterns included', async () => {
    const server = await startServer((_req, res) => json(res, 201, sessionBody()));
    await clientFor(server).sessions.create({
      task: 'Log in',
      opVaultId: 'vault-1',
      allowedDomains: ['*.Example.com', 'sso.example.net'],
    });
    expect(server.requests[0]?.body).toEqual({
      task: 'Log in',
      opVaultId: 'vault-1',
      allowedDomains: ['*.example.com', 'sso.example.net'],
    });
  });

  const refused: { name: string; params: unknown; loc: (string | number)[]; rule: string }[] = [
    {
      name: 'a thinking level the service does not have',
      params: { task: 't', thinkingLevel: 'max' },
      loc: ['thinkingLevel'],
      rule: 'must be one of disabled, low, medium, high',
    },
    {
      name: 'opVaultId without allowedDomains',
      params: { task: 't', opVaultId: 'v' },
      loc: ['allowedDomains'],
      rule: 'is required when opVaultId is sent',
    },
    {
      name: 'allowedDomains without opVaultId',
      params: { task: 't', allowedDomains: ['example.com'] },
      loc: ['allowedDomains'],
      rule: 'is only used with opVaultId',
    },
    {
      name: 'a pattern with a wildcard inside',
      params: { task: 't', opVaultId: 'v', allowedDomains: ['login.*.example.com'] },
      loc: ['allowedDomains', 0],
      rule: 'must be a host name such as example.com or a pattern such as *.example.com',
    },
    {
      name: 'a pattern with a scheme',
      params: { task: 't', opVaultId: 'v', allowedDomains: ['https://*.example.com'] },
      loc: ['allowedDomains', 0],
      rule: 'no scheme, port or path',
    },
    { name: 'a missing task', params: {}, loc: ['task'], rule: 'expected string' },
  ];

  it.each(refused)('refuses $name before sending', async ({ params, loc, rule }) => {
    const server = await startServer((_req, res) => json(res, 201, sessionBody()));
    const error = await clientFor(server)
      .sessions.create(params as SessionCreateParams)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RequestValidationError);
    expect((error as RequestValidationError).issues).toContainEqual(
      expect.objectContaining({ loc, msg: expect.stringContaining(rule) }),
    );
    expect(server.requests).toHaveLength(0);
  });
});

describe('sessions.get and sessions.wait', () => {
  it('sessions.get reads GET /api/v3/sessions/{id} with its output', async () => {
    const server = await startServer((_req, res) =>
      json(res, 200, sessionBody({ status: 'idle', output: 'Open 9 to 5' })),
    );
    const session = await clientFor(server).sessions.get(SESSION_ID);
    expect(session).toMatchObject({ status: 'idle', output: 'Open 9 to 5' });
    expect(server.requests[0]?.url).toBe(`/api/v3/sessions/${SESSION_ID}`);
  });

  it('sessions.wait polls until the task is over and resolves with the session', async () => {
    const statuses = ['created', 'running', 'running', 'idle'];
    let polls = 0;
    const server = await startServer((_req, res) =>
      json(res, 200, sessionBody({ status: statuses[polls++], output: polls === 4 ? 'done' : null })),
    );
    const client = clientFor(server);
    const session = await client.sessions.wait(SESSION_ID, { pollIntervalMs: 100 });
    expect(session).toMatchObject({ status: 'idle', output: 'done' });
    expect(server.requests).toHaveLength(4);
    expect(client.sleeps).toEqual([100, 100, 100]);
  });

  it.each(['stopped', 'timed_out', 'error'])('sessions.wait also ends on %s', async (status) => {
    const server = await startServer((_req, res) => json(res, 200, sessionBody({ status })));
    expect((await clientFor(server).sessions.wait(SESSION_ID)).status).toBe(status);
  });

  it('sessions.wait times out with an error that says the session was NOT stopped', async () => {
    let fire: () => void = () => {};
    const fired = new Promise<void>((resolve) => {
      fire = resolve;
    });
    const { clock } = recordingClock({ onSleep: (ms) => (ms === 5_000 ? fired : Promise.resolve()) });
    let polls = 0;
    const server = await startServer((_req, res) => {
      if (++polls === 2) fire();
      json(res, 200, sessionBody({ status: 'running' }));
    });
    const error = await clientFor(server, { clock })
      .sessions.wait(SESSION_ID, { timeoutMs: 5_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as Error).message).toContain('the session was NOT cancelled and keeps running');
  });

  it('sessions.wait stops on abort', async () => {
    const controller = new AbortController();
    const server = await startServer((_req, res) => {
      controller.abort();
      json(res, 200, sessionBody({ status: 'running' }));
    });
    await expect(
      clientFor(server).sessions.wait(SESSION_ID, { signal: controller.signal }),
    ).rejects.toBeInstanceOf(APIUserAbortError);
  });
});
