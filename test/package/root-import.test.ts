import { execFile } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, ROOT } from '../support/build.js';

const run = promisify(execFile);
const LIST_LOADS = fileURLToPath(new URL('./fixtures/list-loads.mjs', import.meta.url));
const BUILT_ENTRY = pathToFileURL(`${ROOT}dist/src/index.js`).href;

/** Any file of a browser framework, loaded as ESM (a URL) or CommonJS (a path). */
const FRAMEWORK =
  /[\\/]node_modules[\\/](playwright-core|playwright|puppeteer-core|puppeteer|@playwright[\\/]test)[\\/]/;

/** Imports `target` in a fresh `node` and lists every module that process loaded. */
async function loadsOf(target: string): Promise<string[]> {
  const { stdout } = await run(process.execPath, [LIST_LOADS, target], { cwd: ROOT, timeout: 30_000 });
  const { esm, cjs } = JSON.parse(stdout) as { esm: string[]; cjs: string[] };
  return [...esm, ...cjs];
}

let release: (() => Promise<void>) | undefined;

beforeAll(async () => {
  release = await buildPackage();
}, 180_000);

afterAll(async () => {
  await release?.();
});

describe('importing cloudbrowser', () => {
  it('loads none of playwright-core, playwright, puppeteer-core, puppeteer or @playwright/test', async () => {
    const loads = await loadsOf(BUILT_ENTRY);
    // The recorder saw the real import: the entry and its runtime dependencies.
    expect(loads).toContain(BUILT_ENTRY);
    expect(loads.some((m) => /[\\/]node_modules[\\/]undici[\\/]/.test(m))).toBe(true);
    expect(loads.some((m) => /[\\/]node_modules[\\/]zod[\\/]/.test(m))).toBe(true);
    expect(loads.filter((m) => FRAMEWORK.test(m))).toEqual([]);
  });

  it.each(['playwright-core', 'puppeteer-core'])(
    'the check sees a framework when one is loaded (%s)',
    async (framework) => {
      const loads = await loadsOf(framework);
      expect(loads.filter((m) => FRAMEWORK.test(m)).length).toBeGreaterThan(0);
    },
  );
});
