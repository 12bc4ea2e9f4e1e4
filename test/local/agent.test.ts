import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  APIUserAbortError,
  type Run,
  type RunCreateParams,
  type RunEvent,
  UnprocessableEntityError,
  WaitTimeoutError,
} from 'cloudbrowser';
import { type AgentContext, type LocalVaultOptions, startLocalService } from 'cloudbrowser/local';
import { request } from 'undici';
import { afterAll, describe, expect, test } from 'vitest';
import { useLocalService } from '../support/local-service.js';
import { type LoginSite, startLoginSite, totpAt } from '../support/login-site.js';

const CREDENTIALS = {
  username: 'alice.agent@example.test',
  password: 'Hunter2-Correct-Horse!',
  totpSecret: 'JBSWY3DPEHPK3PXP',
};
const VAULT_ID = '3b9e4c1a-7d2f-4e8a-9c6b-5a4d3e2f1b0c';
const ITEM_ID = '8f7e6d5c-4b3a-4291-8e7f-6d5c4b3a2918';
const OTHER_VAULT_ID = '0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const INTEGRATION = 'pm-integration-1';

const VAULT: LocalVaultOptions = {
  integrations: [
    {
      id: INTEGRATION,
      items: [
        {
          id: ITEM_ID,
          vaultId: VAULT_ID,
          title: 'Example',
          username: CREDENTIALS.username,
          password: CREDENTIALS.password,
          totp: CREDENTIALS.totpSecret,
        },
        { id: randomUUID(), vaultId: OTHER_VAULT_ID, title: 'Other', password: 'other-vault-password' },
      ],
    },
  ],
};

/** The scripted driver runs the script registered under the run's task. */
type Script = (ctx: AgentContext) => Promise<unknown>;
const scripts = new Map<string, Script>();
function script(run: Script): string {
  const task = `scripted task ${randomUUID()}`;
  scripts.set(task, run);
  return task;
}

let site: LoginSite;
afterAll(async () => {
  await site?.close();
});

const local = useLocalService(async () => {
  site = await startLoginSite(CREDENTIALS);
  return {
    vault: VAULT,
    agent: {
      run: (ctx: AgentContext) => {
        const run = scripts.get(ctx.task);
        if (!run) throw new Error(`no script for ${ctx.task}`);
        return run(ctx);
      },
    },
  };
});

/** A raw request, to see what the service itself answers without the client's own checks. */
async function raw(method: 'GET' | 'POST', path: string, body?: unknown) {
  const response = await request(`${local.service.baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-service-api-key': local.service.apiKey },
    body: body === undefined ? null : JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, body: text ? JSON.parse(text) : undefined };
}

async function allEvents(runId: string): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of local.client.runs.events(runId, { pollIntervalMs: 50 })) events.push(event);
  return events;
}

async function runToEnd(params: RunCreateParams): Promise<Run> {
  const run = await local.client.runs.create(params);
  return local.client.runs.wait(run.id, { pollIntervalMs: 50, timeoutMs: 60_000 });
}

/** Logs in on the site at `host` with the three aliases, as an agent that never sees a value. */
async function logIn(ctx: AgentContext, host: string, prefix = 'Example'): Promise<string> {
  const { page, typeSecret, emit } = ctx;
  await page.goto(`${site.origin(host)}/`);
  emit({ message: 'on the sign-in page', data: { url: page.url() } });
  await page.focus('#username');
  await typeSecret(`${prefix}_username`);
  await page.focus('#password');
  await typeSecret(`${prefix}_password`);
  await Promise.all([page.waitForURL('**/2fa'), page.click('#submit')]);
  emit({ message: 'asked for a code' });
  await page.focus('#code');
  await typeSecret(`${prefix}_svc_2fa_code`);
  await Promise.all([page.waitForURL('**/account'), page.click('#verify')]);
  return (await page.textContent('#welcome')) ?? '';
}

/** Every value that must never be shown: the credentials, the TOTP seed and every code near now. */
function secretValues(since: number): string[] {
  const codes: string[] = [];
  for (let at = since - 90_000; at <= Date.now() + 90_000; at += 30_000)
    codes.push(totpAt(CREDENTIALS.totpSecret, at));
  return [CREDENTIALS.username, CREDENTIALS.password, CREDENTIALS.totpSecret, ...codes];
}

function expectNoSecret(what: string, text: string, since: number): void {
  for (const value of secretValues(since))
    expect(text, `${what} contains a secret value`).not.toContain(value);
}

describe('an agent run with vault secrets', () => {
  test('a scripted driver logs in with username, password and TOTP using aliases only; no value shows anywhere', async () => {
    const started = Date.now();
    const profile = await local.client.profiles.create({ name: 'agent-login' });
    const attempts = site.attempts.length;
    const done = await runToEnd({
      task: script((ctx) => logIn(ctx, 'login.example.localhost')),
      browserSettings: { profileId: profile.id },
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.localhost'],
    });
    expect(done).toMatchObject({ status: 'completed', result: 'Welcome back', error: null });
    expect(site.attempts.slice(attempts)).toEqual(['login ok', '2fa ok']);
    expect(done.secretAliases).toEqual(['Example_username', 'Example_password', 'Example_svc_2fa_code']);

    const events = await allEvents(done.id);
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      'browser.ready',
      'step',
      'secret.typed',
      'secret.typed',
      'step',
      'secret.typed',
      'run.completed',
    ]);
    expect(events.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events.find((e) => e.type === 'browser.ready')?.data.live_view_url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/live\//,
    );
    expect(events.filter((e) => e.type === 'secret.typed').map((e) => e.data)).toEqual([
      { alias: 'Example_username' },
      { alias: 'Example_password' },
      { alias: 'Example_svc_2fa_code' },
    ]);

    // The browser ran with the profile and was stopped with the run, saving the login to the profile.
    const browser = await local.client.browsers.get(String(done.browserId));
    expect(browser).toMatchObject({ status: 'stopped', profileId: profile.id, proxyCountryCode: 'us' });
    expect((await local.client.profiles.get(profile.id)).cookieDomains).toContain('login.example.localhost');

    expectNoSecret('the events', JSON.stringify(events), started);
    expectNoSecret('the run', JSON.stringify(await local.client.runs.get(done.id)), started);
    expectNoSecret('the log', local.logs.join('\n'), started);
    expect(local.logs.join('\n')).toContain(
      `run ${done.id}: typed secret Example_password on login.example.localhost`,
    );
  });

  test('an explicit binding types on a subdomain of its allowed host and is refused on a foreign host', async () => {
    const outcomes: string[] = [];
    const done = await runToEnd({
      task: script(async ({ page, typeSecret }) => {
        await page.goto(`${site.origin('evil.localhost')}/`);
        await page.focus('#password');
        await typeSecret('pw').catch((e: Error) => outcomes.push(e.message));
        outcomes.push(`evil field: "${await page.inputValue('#password')}"`);
        await page.goto(`${site.origin('login.example.localhost')}/`);
        await page.focus('#password');
        await typeSecret('pw');
        outcomes.push(`field length: ${(await page.inputValue('#password')).length}`);
        return 'done';
      }),
      secretBindings: [
        {
          alias: 'pw',
          source: {
            type: 'passwordmanager',
            integrationId: INTEGRATION,
            vaultId: VAULT_ID,
            itemId: ITEM_ID,
            fieldId: 'password',
          },
          allowedDomains: ['example.localhost'],
        },
      ],
    });
    expect(done.status).toBe('completed');
    expect(outcomes).toEqual([
      'typeSecret: the secret pw may not be typed on evil.localhost; it is allowed on example.localhost',
      'evil field: ""',
      `field length: ${CREDENTIALS.password.length}`,
    ]);
    const events = await allEvents(done.id);
    expect(events.filter((e) => e.type.startsWith('secret.')).map((e) => [e.type, e.data])).toEqual([
      ['secret.refused', { alias: 'pw', host: 'evil.localhost' }],
      ['secret.typed', { alias: 'pw' }],
    ]);
    expect(site.hosts).toEqual(expect.arrayContaining([`evil.localhost:${site.port}`]));
  });

  test('v3 sessions take a vault with *.domain patterns and end idle with the output', async () => {
    const session = await local.client.sessions.create({
      task: script((ctx) => logIn(ctx, 'login.example.localhost')),
      thinkingLevel: 'medium',
      opVaultId: VAULT_ID,
      allowedDomains: ['*.example.localhost'],
    });
    expect(session.status).toBe('created');
    const done = await local.client.sessions.wait(session.id, { pollIntervalMs: 50, timeoutMs: 60_000 });
    expect(done).toMatchObject({ status: 'idle', output: 'Welcome back', thinkingLevel: 'medium' });
    // A session is not a v4 run, and the other way round.
    expect((await raw('GET', `/api/v4/runs/${session.id}`)).status).toBe(404);
  });

  test('a *.domain pattern does not cover the domain itself', async () => {
    const outcome = await local.client.sessions.create({
      task: script(async ({ page, typeSecret }) => {
        await page.goto(`${site.origin('example.localhost')}/`);
        await page.focus('#username');
        return typeSecret('Example_username').then(
          () => 'typed',
          (e: Error) => e.message,
        );
      }),
      opVaultId: VAULT_ID,
      allowedDomains: ['*.example.localhost'],
    });
    const done = await local.client.sessions.wait(outcome.id, { pollIntervalMs: 50 });
    expect(done.output).toBe(
      'typeSecret: the secret Example_username may not be typed on example.localhost; it is allowed on *.example.localhost',
    );
  });
});

describe('what a driver cannot do', () => {
  test('values a driver reads from the page are cut out of its events, its result and its error', async () => {
    const started = Date.now();
    const done = await runToEnd({
      task: script(async ({ page, typeSecret, emit }) => {
        await page.goto(`${site.origin('login.example.localhost')}/`);
        await page.focus('#password');
        await typeSecret('Example_password');
        const leaked = await page.inputValue('#password');
        emit({ message: `I saw ${leaked}`, data: { [leaked]: [leaked] } });
        throw new Error(`giving up with ${leaked}`);
      }),
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.localhost'],
    });
    expect(done).toMatchObject({ status: 'failed', error: 'giving up with [secret]' });
    const events = await allEvents(done.id);
    expect(events.find((e) => e.type === 'step')?.data).toEqual({
      message: 'I saw [secret]',
      '[secret]': ['[secret]'],
    });
    expect(events.at(-1)).toMatchObject({ type: 'run.failed', data: { error: 'giving up with [secret]' } });
    expectNoSecret('the events', JSON.stringify(events), started);
    expectNoSecret('the log', local.logs.join('\n'), started);
  });

  test('typeSecret refuses an unknown alias and a page without a focused field; emit refuses service event types', async () => {
    const done = await runToEnd({
      task: script(async ({ page, typeSecret, emit, secretAliases }) => {
        const messages: string[] = [`aliases: ${secretAliases.join(',')}`];
        await page.goto(`${site.origin('login.example.localhost')}/`);
        await typeSecret('Nope_password').catch((e: Error) => messages.push(e.message));
        await typeSecret('Example_password').catch((e: Error) => messages.push(e.message));
        try {
          emit({ type: 'run.completed' });
        } catch (e) {
          messages.push((e as Error).message);
        }
        return messages;
      }),
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.localhost'],
    });
    expect(JSON.parse(done.result ?? '[]')).toEqual([
      'aliases: Example_username,Example_password,Example_svc_2fa_code',
      'typeSecret: no secret with the alias "Nope_password"; this run has ["Example_username","Example_password","Example_svc_2fa_code"]',
      'typeSecret: no editable field has the focus; focus the field first',
      'emit: the event type run.completed belongs to the service',
    ]);
  });
});

describe('run creation rules of the service', () => {
  const pw = (alias: string) => ({
    alias,
    source: {
      type: 'passwordmanager',
      integrationId: INTEGRATION,
      vaultId: VAULT_ID,
      itemId: ITEM_ID,
      fieldId: 'password',
    },
    allowedDomains: ['example.localhost'],
  });

  test('11 explicit bindings are a 422', async () => {
    const { status, body } = await raw('POST', '/api/v4/runs', {
      task: 't',
      secretBindings: Array.from({ length: 11 }, (_, i) => pw(`pw${i}`)),
    });
    expect(status).toBe(422);
    expect(body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'secretBindings'], type: 'too_big' }),
    ]);
  });

  test('vault fields and explicit bindings share the budget of 10: 3 + 8 is a 422 through the client', async () => {
    const error = await local.client.runs
      .create({
        task: 't',
        opVaultId: VAULT_ID,
        opVaultAllowedDomains: ['example.localhost'],
        secretBindings: Array.from({ length: 8 }, (_, i) =>
          pw(`pw${i}`),
        ) as RunCreateParams['secretBindings'],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnprocessableEntityError);
    expect((error as UnprocessableEntityError).errors).toEqual([
      {
        loc: ['body', 'secretBindings'],
        msg: 'vault fields (3) and secretBindings (8) exceed the limit of 10 bindings per run',
        type: 'too_big',
      },
    ]);
  });

  test('3 vault fields and 7 bindings, 10 in all, are accepted', async () => {
    const done = await runToEnd({
      task: script(async ({ secretAliases }) => secretAliases.length),
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.localhost'],
      secretBindings: Array.from({ length: 7 }, (_, i) => pw(`pw${i}`)) as RunCreateParams['secretBindings'],
    });
    expect(done).toMatchObject({ status: 'completed', result: '10' });
  });

  test('bindings to what the vault does not hold are 422s naming the field', async () => {
    const cases = [
      [
        { integrationId: 'pm-unknown' },
        'integrationId',
        'no active password-manager integration with this id',
      ],
      [{ itemId: randomUUID() }, 'itemId', 'no item with this id in this vault of the integration'],
      [{ vaultId: OTHER_VAULT_ID }, 'itemId', 'no item with this id in this vault of the integration'],
    ] as const;
    for (const [source, field, msg] of cases) {
      const binding = pw('x');
      const { status, body } = await raw('POST', '/api/v4/runs', {
        task: 't',
        secretBindings: [{ ...binding, source: { ...binding.source, ...source } }],
      });
      expect(status).toBe(422);
      expect(body.detail).toEqual([
        { loc: ['body', 'secretBindings', 0, 'source', field], msg, type: 'value_error' },
      ]);
    }
  });

  test('an unknown opVaultId is a 422, a missing profile a 404, and an alias clash with the vault a 422', async () => {
    const unknownVault = await raw('POST', '/api/v4/runs', {
      task: 't',
      opVaultId: randomUUID(),
      opVaultAllowedDomains: ['example.com'],
    });
    expect(unknownVault.status).toBe(422);
    expect(unknownVault.body.detail[0].loc).toEqual(['body', 'opVaultId']);
    const missingProfile = await raw('POST', '/api/v4/runs', {
      task: 't',
      browserSettings: { profileId: randomUUID() },
    });
    expect(missingProfile).toEqual({ status: 404, body: { detail: 'Profile not found' } });
    const clash = await raw('POST', '/api/v4/runs', {
      task: 't',
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['example.com'],
      secretBindings: [pw('Example_password')],
    });
    expect(clash.status).toBe(422);
    expect(clash.body.detail[0]).toMatchObject({
      loc: ['body', 'secretBindings', 0, 'alias'],
      msg: 'repeats an alias of the vault',
    });
  });

  test('the service validates with the client schema: a wildcard allowed domain is a 422', async () => {
    const { status, body } = await raw('POST', '/api/v4/runs', {
      task: 't',
      opVaultId: VAULT_ID,
      opVaultAllowedDomains: ['*.example.com'],
    });
    expect(status).toBe(422);
    expect(body.detail[0].loc).toEqual(['body', 'opVaultAllowedDomains', 0]);
  });
});

describe('events, wait and cancel', () => {
  test('events come in order with increasing ids; a reader resumes after an id and drains page by page', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const run = await local.client.runs.create({
      task: script(async ({ emit }) => {
        for (let i = 1; i <= 3; i++) emit({ message: `step ${i}` });
        await gate;
        for (let i = 4; i <= 6; i++) emit({ message: `step ${i}`, data: { i } });
        return 'six steps';
      }),
    });
    // Follow live while the run is held at the gate, then let it finish.
    const following = allEvents(run.id);
    await expect
      .poll(async () => (await raw('GET', `/api/v4/runs/${run.id}/events`)).body.events.length, {
        timeout: 15_000,
      })
      .toBe(5);
    release();
    const live = await following;
    expect(live.map((e) => [e.id, e.type, e.data.message])).toEqual([
      [1, 'run.started', undefined],
      [2, 'browser.ready', undefined],
      [3, 'step', 'step 1'],
      [4, 'step', 'step 2'],
      [5, 'step', 'step 3'],
      [6, 'step', 'step 4'],
      [7, 'step', 'step 5'],
      [8, 'step', 'step 6'],
      [9, 'run.completed', undefined],
    ]);
    expect(live.every((e) => e.runId === run.id && typeof e.ts === 'string')).toBe(true);

    const resumed = [];
    for await (const e of local.client.runs.events(run.id, { after: 6, limit: 2 })) resumed.push(e.id);
    expect(resumed).toEqual([7, 8, 9]);

    expect((await raw('GET', `/api/v4/runs/${run.id}/events?after=0&limit=2`)).body).toMatchObject({
      events: [{ id: 1 }, { id: 2 }],
      nextAfter: 2,
      hasMore: true,
    });
    expect((await raw('GET', `/api/v4/runs/${run.id}/events?after=9`)).body).toEqual({
      events: [],
      nextAfter: 9,
      hasMore: false,
    });
    expect((await raw('GET', `/api/v4/runs/${run.id}/events?limit=0`)).status).toBe(422);
  });

  test('wait gives up at its timeout or on abort without cancelling; cancel then ends the run and stops its browser', async () => {
    const run = await local.client.runs.create({
      task: script(
        ({ signal }) =>
          new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      ),
    });
    await expect
      .poll(async () => (await local.client.runs.status(run.id)).status, { timeout: 15_000 })
      .toBe('running');

    const timedOut = await local.client.runs
      .wait(run.id, { timeoutMs: 300, pollIntervalMs: 50 })
      .catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WaitTimeoutError);
    expect((timedOut as Error).message).toContain('was NOT cancelled');
    expect((await local.client.runs.status(run.id)).status).toBe('running');

    const aborted = await local.client.runs
      .wait(run.id, { signal: AbortSignal.timeout(200), pollIntervalMs: 50 })
      .catch((e: unknown) => e);
    expect(aborted).toBeInstanceOf(APIUserAbortError);
    expect((await local.client.runs.status(run.id)).status).toBe('running');

    const { browserId } = await local.client.runs.get(run.id);
    expect((await local.client.browsers.get(String(browserId))).status).toBe('active');
    await local.client.runs.cancel(run.id);
    await local.client.runs.cancel(run.id);
    const cancelled = await local.client.runs.get(run.id);
    expect(cancelled).toMatchObject({ status: 'cancelled', result: null });
    expect((await local.client.browsers.get(String(browserId))).status).toBe('stopped');
    expect((await allEvents(run.id)).at(-1)?.type).toBe('run.cancelled');
  });

  test('a run id that does not exist is a 404, one that is not a UUID a 422', async () => {
    expect(await raw('GET', `/api/v4/runs/${randomUUID()}/status`)).toEqual({
      status: 404,
      body: { detail: 'Run not found' },
    });
    expect((await raw('POST', '/api/v4/runs/run-1/cancel')).status).toBe(422);
  });
});

describe('a local service without a driver', () => {
  test('fails every run with "no agent driver configured", starting no browser', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cb-no-driver-'));
    const logs: string[] = [];
    const service = await startLocalService({ dataDir, log: (line) => logs.push(line) });
    try {
      const client = service.client();
      const run = await client.runs.create({ task: 'anything' });
      const done = await client.runs.wait(run.id, { pollIntervalMs: 20 });
      expect(done.status).toBe('failed');
      expect(done.error).toMatch(/^no agent driver configured: /);
      expect(done.browserId).toBeNull();
      expect(await client.browsers.list().toArray()).toEqual([]);
    } finally {
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('runs across a restart', () => {
  test('a run that was active when the service died reads as failed after a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cb-restart-'));
    const id = randomUUID();
    const record = {
      id,
      kind: 'run',
      sessionId: randomUUID(),
      status: 'running',
      task: 't',
      model: null,
      modelParams: null,
      thinkingLevel: null,
      profileId: null,
      proxyCountryCode: 'us',
      secretAliases: [],
      result: null,
      error: null,
      browserId: null,
      createdAt: new Date().toISOString(),
      startedAt: new Date().toISOString(),
      finishedAt: null,
      events: [{ id: 1, ts: new Date().toISOString(), type: 'run.started', data: {} }],
    };
    await writeFile(join(dataDir, 'agent.json'), JSON.stringify({ runs: [record] }));
    const service = await startLocalService({ dataDir, log: false });
    try {
      const client = service.client();
      expect(await client.runs.get(id)).toMatchObject({
        status: 'failed',
        error: 'the local service restarted while the run was active',
      });
      const types = [];
      for await (const event of client.runs.events(id)) types.push(event.type);
      expect(types).toEqual(['run.started', 'run.failed']);
    } finally {
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("the project's vault rules", () => {
  async function withVault(vault: LocalVaultOptions, body: unknown) {
    const dataDir = await mkdtemp(join(tmpdir(), 'cb-vault-'));
    const service = await startLocalService({ dataDir, vault, log: false });
    try {
      const response = await request(`${service.baseUrl}/api/v4/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-service-api-key': service.apiKey },
        body: JSON.stringify(body),
      });
      return { status: response.statusCode, body: (await response.body.json()) as { detail: unknown } };
    } finally {
      await service.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  const wholeVault = { task: 't', opVaultId: VAULT_ID, opVaultAllowedDomains: ['example.com'] };
  const integration = VAULT.integrations?.[0];

  test('vault access without an active integration is a 400', async () => {
    expect(
      await withVault({ integrations: [{ ...integration, id: 'a', active: false }] }, wholeVault),
    ).toEqual({
      status: 400,
      body: {
        detail:
          'Vault access requires exactly one active password-manager integration on the project; 0 are active',
      },
    });
  });

  test('vault access with two active integrations is a 400', async () => {
    const two = {
      integrations: [
        { ...integration, id: 'a' },
        { ...integration, id: 'b' },
      ],
    } as LocalVaultOptions;
    expect((await withVault(two, wholeVault)).body.detail).toMatch(/exactly one active .*; 2 are active$/);
  });

  test('a zero-data-retention project refuses vault access with 403', async () => {
    const zdr = { ...VAULT, zeroDataRetention: true };
    expect(await withVault(zdr, wholeVault)).toEqual({
      status: 403,
      body: { detail: 'Vault access is unavailable for zero-data-retention projects' },
    });
  });
});
