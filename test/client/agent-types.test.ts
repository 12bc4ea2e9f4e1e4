/**
 * The public types of runs, sessions, skills and webhooks, checked by the compiler (`tsc --noEmit`):
 * an `expectTypeOf` that does not hold or a `@ts-expect-error` that stops being an error fails it.
 */

import {
  CloudBrowserClient,
  CloudBrowserError,
  type Run,
  type RunCreateParams,
  type RunEvent,
  type RunModel,
  type RunStatus,
  type Session,
  type Skill,
  type SkillParameter,
  type ThinkingLevel,
  verifyWebhook,
  WaitTimeoutError,
  type WebhookEvent,
  type WebhookFailure,
  WebhookVerificationError,
} from 'cloudbrowser';
import { describe, expect, expectTypeOf, it } from 'vitest';

const client = new CloudBrowserClient({ apiKey: 'sk_x', baseUrl: 'https://service.example' });

describe('the public types of the Agent API', () => {
  it('runs.create takes the known models as hints and any other string', () => {
    expectTypeOf<'gpt-5.6-luna'>().toMatchTypeOf<RunModel>();
    expectTypeOf<'a-model-from-next-year'>().toMatchTypeOf<RunModel>();
    expectTypeOf<RunCreateParams['model']>().toEqualTypeOf<RunModel | undefined>();
    const typeOnly = () => {
      void client.runs.create({ task: 't', model: 'grok-4.5' });
      void client.runs.create({ task: 't', model: 'custom' });
      // @ts-expect-error a task is required
      void client.runs.create({ model: 'grok-4.5' });
      void client.runs.create({
        task: 't',
        secretBindings: [
          {
            alias: 'a',
            source: {
              type: 'passwordmanager',
              integrationId: 'i',
              vaultId: 'v',
              itemId: 'i',
              // @ts-expect-error a field id, not a label
              fieldId: 'Password',
            },
            allowedDomains: ['example.com'],
          },
        ],
      });
    };
    expect(typeOnly).toBeTypeOf('function');
  });

  it('runs resolve to typed runs and events', () => {
    expectTypeOf(client.runs.wait).returns.toEqualTypeOf<Promise<Run>>();
    expectTypeOf<Run['result']>().toEqualTypeOf<string | null>();
    expectTypeOf<Run['status']>().toEqualTypeOf<RunStatus>();
    expectTypeOf(client.runs.events('id')).toMatchTypeOf<AsyncIterable<RunEvent>>();
    expectTypeOf<RunEvent['id']>().toEqualTypeOf<number>();
    expectTypeOf<RunEvent['data']>().toEqualTypeOf<Record<string, unknown>>();
    expectTypeOf(client.runs.cancel).returns.toEqualTypeOf<Promise<void>>();
  });

  it('sessions and skills', () => {
    expectTypeOf<ThinkingLevel>().toEqualTypeOf<'disabled' | 'low' | 'medium' | 'high'>();
    expectTypeOf(client.sessions.wait).returns.toEqualTypeOf<Promise<Session>>();
    expectTypeOf<Skill['currentVersion']>().toEqualTypeOf<number | null>();
    expectTypeOf<Skill['code']>().toEqualTypeOf<string | null>();
    expectTypeOf<SkillParameter['required']>().toEqualTypeOf<boolean>();
    expectTypeOf(client.skills.rollback).returns.toEqualTypeOf<Promise<Skill>>();
  });

  it('webhooks verify to a typed event or a typed error', () => {
    expectTypeOf(verifyWebhook).returns.toEqualTypeOf<WebhookEvent>();
    expectTypeOf<WebhookVerificationError['code']>().toEqualTypeOf<WebhookFailure>();
    expect(WebhookVerificationError.prototype).toBeInstanceOf(CloudBrowserError);
    expect(WaitTimeoutError.prototype).toBeInstanceOf(CloudBrowserError);
  });
});
