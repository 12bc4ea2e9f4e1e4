export { ChromiumNotFoundError } from '../errors.js';
export type { AgentContext, AgentDriver, AgentStep } from './agent.js';
export { findChromium } from './chromium-path.js';
export { type LocalService, type LocalServiceOptions, startLocalService } from './service.js';
export type { LocalSkillSeed } from './skills.js';
export type { LocalVaultOptions } from './vault.js';
