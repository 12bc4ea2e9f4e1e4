export { type ClientOptions, CloudBrowserClient } from './client.js';
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  BrowserConnectError,
  type BrowserConnectFailure,
  CloudBrowserError,
  ConfigurationError,
  ConflictError,
  type ErrorBody,
  InternalServerError,
  NetworkObserverError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  type RequestInfo,
  RequestValidationError,
  ResponseValidationError,
  UnprocessableEntityError,
  type ValidationIssue,
  WaitTimeoutError,
  type WebhookFailure,
  WebhookVerificationError,
} from './errors.js';
export type { Clock } from './internal/clock.js';
export type { Page, PageIterator } from './internal/pagination.js';
export type { RequestOptions } from './internal/transport.js';
export type {
  Har,
  HarCreator,
  HarEntry,
  HarLog,
  HarNameValue,
  HarPage,
  HarRequest,
  HarResponse,
  HarTimings,
} from './network/har.js';
export { type NetworkObserver, observeNetwork } from './network/observer.js';
export type { ObserveNetworkOptions } from './network/options.js';
export type {
  NetworkEntry,
  NetworkEntryState,
  NetworkEntryStream,
  NetworkFailure,
  NetworkInitiator,
  NetworkObserverClose,
  NetworkObserverEvents,
  NetworkRedirect,
  NetworkResourceType,
  NetworkSummary,
  NetworkTarget,
  NetworkTimings,
} from './network/types.js';
export {
  type BrowserCreateParams,
  type BrowserListParams,
  type BrowserSession,
  type BrowserStopAllParams,
  type Browsers,
  CREATE_TAG,
  type CustomProxy,
} from './resources/browsers.js';
export type {
  Profile,
  ProfileCreateParams,
  ProfileListParams,
  Profiles,
  ProfileUpdateParams,
} from './resources/profiles.js';
export type {
  Run,
  RunBrowserSettings,
  RunCreateParams,
  RunEvent,
  RunEventsOptions,
  RunEventType,
  RunModel,
  RunStatus,
  RunStatusResponse,
  Runs,
  RunWaitOptions,
  SecretBinding,
  SecretFieldId,
} from './resources/runs.js';
export type {
  Session,
  SessionCreateParams,
  SessionStatus,
  Sessions,
  SessionWaitOptions,
  ThinkingLevel,
} from './resources/sessions.js';
export {
  type ParameterType,
  SKILL_IS_PUBLIC_DETAIL,
  SKILL_NOT_FOUND_DETAIL,
  type Skill,
  type SkillCategory,
  type SkillListParams,
  type SkillParameter,
  type Skills,
  type SkillsGenerationStatus,
} from './resources/skills.js';
export { VERSION } from './version.js';
export {
  type VerifyWebhookOptions,
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookHeaders,
} from './webhooks.js';
