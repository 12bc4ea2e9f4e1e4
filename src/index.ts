export { type ClientOptions, CloudBrowserClient } from './client.js';
export {
  APIConnectionError,
  APIError,
  APITimeoutError,
  APIUserAbortError,
  AuthenticationError,
  BadRequestError,
  CloudBrowserError,
  ConfigurationError,
  ConflictError,
  type ErrorBody,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  type RequestInfo,
  RequestValidationError,
  ResponseValidationError,
  UnprocessableEntityError,
  type ValidationIssue,
} from './errors.js';
export type { Clock } from './internal/clock.js';
export type { Page, PageIterator } from './internal/pagination.js';
export type { RequestOptions } from './internal/transport.js';
export {
  type BrowserCreateParams,
  type BrowserListParams,
  type BrowserSession,
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
export { VERSION } from './version.js';
