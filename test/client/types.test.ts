/**
 * The public surface, checked by the compiler: `tsc --noEmit` (part of `npm test`) fails when an
 * `expectTypeOf` does not hold or a `@ts-expect-error` line stops being an error. The calls sit in
 * functions that never run; only their types matter.
 */

import * as publicApi from 'cloudbrowser';
import {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  BrowserConnectError,
  type BrowserCreateParams,
  type BrowserSession,
  type ClientOptions,
  CloudBrowserClient,
  CloudBrowserError,
  ConfigurationError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  type Page,
  type PageIterator,
  PermissionDeniedError,
  type Profile,
  RateLimitError,
  type RequestOptions,
  RequestValidationError,
  ResponseValidationError,
  UnprocessableEntityError,
  type ValidationIssue,
} from 'cloudbrowser';
import { describe, expect, expectTypeOf, it } from 'vitest';

const client = new CloudBrowserClient({ apiKey: 'sk_x', baseUrl: 'https://service.example' });

describe('the public types', () => {
  it('browsers.create takes typed params and resolves to a BrowserSession', () => {
    expectTypeOf(client.browsers.create).parameter(0).toEqualTypeOf<BrowserCreateParams | undefined>();
    expectTypeOf(client.browsers.create).returns.toEqualTypeOf<Promise<BrowserSession>>();
    expectTypeOf<BrowserCreateParams['proxyCountryCode']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<BrowserCreateParams['timeout']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<BrowserCreateParams['metadata']>().toEqualTypeOf<Record<string, string> | undefined>();

    const typeOnly = () => {
      // @ts-expect-error a country code is a string
      void client.browsers.create({ proxyCountryCode: 1 });
      // @ts-expect-error unknown keys are refused
      void client.browsers.create({ proxyCountry: 'de' });
      // @ts-expect-error metadata values are strings
      void client.browsers.create({ metadata: { n: 1 } });
      // @ts-expect-error a custom proxy needs a port
      void client.browsers.create({ customProxy: { host: 'proxy.example' } });
      void client.browsers.create({ proxyCountryCode: null, customProxy: { host: 'h', port: 1 } });
    };
    expect(typeOnly).toBeTypeOf('function');
  });

  it('a BrowserSession has the fields the client relies on', () => {
    expectTypeOf<BrowserSession['id']>().toEqualTypeOf<string>();
    expectTypeOf<BrowserSession['cdpUrl']>().toEqualTypeOf<string | null>();
    expectTypeOf<BrowserSession['metadata']>().toEqualTypeOf<Record<string, string>>();
    expectTypeOf<BrowserSession['browserCost']>().toEqualTypeOf<string | null>();
    expectTypeOf<BrowserSession>().toHaveProperty('status');
  });

  it('list() is an AsyncIterable of items with pages() and toArray()', () => {
    expectTypeOf(client.browsers.list()).toEqualTypeOf<PageIterator<BrowserSession>>();
    expectTypeOf(client.browsers.list()).toMatchTypeOf<AsyncIterable<BrowserSession>>();
    expectTypeOf(client.browsers.list().toArray()).toEqualTypeOf<Promise<BrowserSession[]>>();
    expectTypeOf(client.browsers.list().pages()).toMatchTypeOf<AsyncIterable<Page<BrowserSession>>>();
    expectTypeOf(client.profiles.list()).toMatchTypeOf<AsyncIterable<Profile>>();
  });

  it('every method takes per-call RequestOptions', () => {
    expectTypeOf(client.browsers.get).parameter(1).toEqualTypeOf<RequestOptions | undefined>();
    expectTypeOf(client.browsers.stop).parameter(1).toEqualTypeOf<RequestOptions | undefined>();
    expectTypeOf(client.profiles.update).parameter(2).toEqualTypeOf<RequestOptions | undefined>();
    expectTypeOf<RequestOptions>().toEqualTypeOf<{
      signal?: AbortSignal;
      timeoutMs?: number;
      maxRetries?: number;
    }>();
    expectTypeOf(client.browsers.stop).returns.toEqualTypeOf<Promise<BrowserSession>>();
    expectTypeOf(client.profiles.delete).returns.toEqualTypeOf<Promise<void>>();
    expectTypeOf(client.profiles.create).returns.toEqualTypeOf<Promise<Profile>>();
  });

  it('ClientOptions are all optional', () => {
    expectTypeOf<Record<string, never>>().toMatchTypeOf<ClientOptions>();
    expectTypeOf<ClientOptions['apiKey']>().toEqualTypeOf<string | undefined>();
    const typeOnly = () => {
      // @ts-expect-error timeoutMs is a number of milliseconds
      void new CloudBrowserClient({ timeoutMs: '5s' });
    };
    expect(typeOnly).toBeTypeOf('function');
  });

  it('the error classes are exported and form one tree', () => {
    for (const type of [
      APIError,
      APIConnectionError,
      APITimeoutError,
      APIUserAbortError,
      BrowserConnectError,
      ConfigurationError,
      RequestValidationError,
      ResponseValidationError,
    ]) {
      expect(type.prototype).toBeInstanceOf(CloudBrowserError);
    }
    for (const type of [
      BadRequestError,
      AuthenticationError,
      PermissionDeniedError,
      NotFoundError,
      ConflictError,
      UnprocessableEntityError,
      RateLimitError,
      InternalServerError,
    ]) {
      expect(type.prototype).toBeInstanceOf(APIError);
    }
    expect(APITimeoutError.prototype).toBeInstanceOf(APIConnectionError);
    expectTypeOf<APIError['status']>().toEqualTypeOf<number>();
    expectTypeOf<APIError['requestId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CloudBrowserError['code']>().toEqualTypeOf<string>();
    expectTypeOf<UnprocessableEntityError['errors']>().toEqualTypeOf<readonly ValidationIssue[]>();
    expectTypeOf<RateLimitError['limit']>().toEqualTypeOf<'rate' | 'concurrency'>();
    expectTypeOf<RateLimitError['retryAfterMs']>().toEqualTypeOf<number | undefined>();
  });

  it('the root entry exports exactly the documented runtime names', () => {
    expect(Object.keys(publicApi).sort()).toEqual([
      'APIConnectionError',
      'APIError',
      'APITimeoutError',
      'APIUserAbortError',
      'AuthenticationError',
      'BadRequestError',
      'BrowserConnectError',
      'CREATE_TAG',
      'CloudBrowserClient',
      'CloudBrowserError',
      'ConfigurationError',
      'ConflictError',
      'InternalServerError',
      'NetworkObserverError',
      'NotFoundError',
      'PermissionDeniedError',
      'RateLimitError',
      'RequestValidationError',
      'ResponseValidationError',
      'SKILL_IS_PUBLIC_DETAIL',
      'SKILL_NOT_FOUND_DETAIL',
      'UnprocessableEntityError',
      'VERSION',
      'WaitTimeoutError',
      'WebhookVerificationError',
      'observeNetwork',
      'verifyWebhook',
    ]);
  });
});
