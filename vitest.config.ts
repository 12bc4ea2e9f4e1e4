import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // Tests import the package by its public name; these point the names at the sources.
    alias: [
      { find: /^cloudbrowser$/, replacement: here('./src/index.ts') },
      { find: /^cloudbrowser\/local$/, replacement: here('./src/local/index.ts') },
      { find: /^cloudbrowser\/playwright$/, replacement: here('./adapters/playwright.ts') },
      { find: /^cloudbrowser\/puppeteer$/, replacement: here('./adapters/puppeteer.ts') },
      { find: /^cloudbrowser\/playwright-test$/, replacement: here('./adapters/playwright-test.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
