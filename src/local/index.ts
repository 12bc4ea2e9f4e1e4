export { ChromiumNotFoundError } from '../errors.js';
export { findChromium } from './chromium-path.js';
export { type LocalService, type LocalServiceOptions, startLocalService } from './service.js';
