import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPackage, ROOT, sh } from '../support/build.js';
import { API_KEY } from '../support/client.js';
import { json, startServer } from '../support/http-server.js';

/** `npm pack` of the freshly built repository, and a consumer project that installs the tarball. */
let work: string;
let tarball: string;
let packedFiles: string[];

interface PackageJson {
  version: string;
  exports: Record<string, string | Record<string, string>>;
  bin?: string | Record<string, string>;
}

const versionOf = async (name: string) =>
  (JSON.parse(await readFile(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as PackageJson)
    .version;

/** What a build of a source since deleted would have left in `dist/`. */
const STALE = 'dist/src/left-by-an-older-build.js';

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'cloudbrowser-pack-'));
  await mkdir(join(ROOT, 'dist/src'), { recursive: true });
  await writeFile(join(ROOT, STALE), 'export const stale = true;\n');
  const release = await buildPackage();
  try {
    const { stdout } = await sh('npm', ['pack', '--json', '--pack-destination', work]);
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    if (!packed) throw new Error(`npm pack printed no result: ${stdout}`);
    tarball = join(work, packed.filename);
    packedFiles = packed.files.map((f) => f.path);
  } finally {
    await release();
  }
}, 180_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('holds the built entry points and their types, and no sources or tests', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
    const targets = Object.values(pkg.exports).flatMap((target) =>
      typeof target === 'string' ? [target] : Object.values(target),
    );
    const bins = typeof pkg.bin === 'string' ? [pkg.bin] : Object.values(pkg.bin ?? {});
    for (const target of [...targets, ...bins]) {
      expect(packedFiles, `${target} is named in package.json but not packed`).toContain(
        target.replace(/^\.\//, ''),
      );
    }
    expect(packedFiles).toContain('dist/src/index.d.ts');
    const strays = packedFiles.filter(
      (f) =>
        /^(src|test|adapters|bench|examples)\//.test(f) ||
        /^dist\/(test|bench|examples)\//.test(f) ||
        f.endsWith('.tsbuildinfo'),
    );
    expect(strays).toEqual([]);
    // The build starts from an empty dist/, so nothing from an older build is shipped.
    expect(packedFiles).not.toContain(STALE);
  });

  it('installs into a fresh project where the import type-checks with strict tsc, await using compiles, and it runs', async () => {
    const consumer = join(work, 'consumer');
    await mkdir(consumer);
    await writeFile(
      join(consumer, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2),
    );
    const [typescript, nodeTypes] = await Promise.all([versionOf('typescript'), versionOf('@types/node')]);
    await sh(
      'npm',
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        tarball,
        `typescript@${typescript}`,
        `@types/node@${nodeTypes}`,
      ],
      { cwd: consumer },
    );
    await writeFile(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          skipLibCheck: false,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'esnext.disposable'],
          types: ['node'],
          outDir: 'out',
        },
        include: ['index.ts'],
      }),
    );
    await writeFile(join(consumer, 'index.ts'), CONSUMER_SOURCE);
    await sh(process.execPath, [join(consumer, 'node_modules/typescript/bin/tsc'), '-p', consumer], {
      cwd: consumer,
    });

    const server = await startServer((req, res) =>
      req.url === '/api/v4/browsers/b-1'
        ? json(res, 200, { id: 'b-1', status: 'active', newField: 1 })
        : json(res, 404, { detail: 'Not found' }),
    );
    const { stdout } = await sh(process.execPath, [join(consumer, 'out/index.js')], {
      cwd: consumer,
      env: { ...process.env, CLOUDBROWSER_API_KEY: API_KEY, CLOUDBROWSER_BASE_URL: server.url },
    });
    expect(JSON.parse(stdout)).toEqual({
      id: 'b-1',
      released: true,
      refused: true,
      notFound: 404,
      version: JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')).version,
    });
    expect(server.requests.map((r) => [r.url, r.headers['x-service-api-key']])).toEqual([
      ['/api/v4/browsers/b-1', API_KEY],
      ['/api/v4/profiles/missing', API_KEY],
    ]);
  }, 120_000);
});

/** A consumer's program: only the public API, as a user would write it. */
const CONSUMER_SOURCE = `\
import { APIError, type BrowserSession, CloudBrowserClient, RequestValidationError, VERSION } from 'cloudbrowser';

class Lease implements AsyncDisposable {
  released = false;
  async [Symbol.asyncDispose](): Promise<void> {
    this.released = true;
  }
}

const client = new CloudBrowserClient();
const lease = new Lease();
let browser: BrowserSession;
{
  await using held = lease;
  browser = await client.browsers.get('b-1', { timeoutMs: 10_000 });
  void held;
}

let refused = false;
try {
  await client.browsers.get('../etc');
} catch (error) {
  refused = error instanceof RequestValidationError;
}

let notFound = 0;
try {
  await client.profiles.get('missing');
} catch (error) {
  if (error instanceof APIError) notFound = error.status;
}

console.log(JSON.stringify({ id: browser.id, released: lease.released, refused, notFound, version: VERSION }));
`;
