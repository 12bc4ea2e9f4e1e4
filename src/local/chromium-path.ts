import { spawn } from 'node:child_process';
import { constants, createReadStream, createWriteStream } from 'node:fs';
import {
  access,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createBrotliDecompress } from 'node:zlib';
import { ChromiumNotFoundError } from '../errors.js';

/**
 * Where {@link findChromium} looks. Every field defaults to this machine; tests inject their own.
 * Not public.
 */
export interface ChromiumSearch {
  /** @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
  /** @default process.platform */
  platform?: NodeJS.Platform;
  /** @default process.arch */
  arch?: string;
  /** @default os.homedir() */
  homeDir?: string;
  /** Absolute paths of system installs, tried in order. @default the usual Linux or macOS locations */
  systemPaths?: readonly string[];
  /** Where npm packages that ship a Chromium are resolved from. @default the working directory, then this package */
  packageBases?: readonly string[];
  /** Where a Chromium shipped compressed in an npm package is unpacked. @default `$XDG_CACHE_HOME/cloudbrowser` or `~/.cache/cloudbrowser` */
  cacheDir?: string;
}

/** Names looked up on PATH, before the fixed locations. */
const PATH_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

const LINUX_PATHS = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/usr/local/bin/chromium',
  '/opt/google/chrome/chrome',
  '/usr/lib/chromium/chromium',
  // Last: snap confinement gives it a private /tmp, which breaks user-data dirs under os.tmpdir().
  '/snap/bin/chromium',
];

const MAC_APPS = [
  'Google Chrome.app/Contents/MacOS/Google Chrome',
  'Chromium.app/Contents/MacOS/Chromium',
  'Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing',
  'Google Chrome Beta.app/Contents/MacOS/Google Chrome Beta',
  'Google Chrome Canary.app/Contents/MacOS/Google Chrome Canary',
];

/** Executables inside one Playwright browser folder (`chromium-<rev>`, `chromium_headless_shell-<rev>`), old and new layouts. */
const PLAYWRIGHT_LAYOUTS: Record<
  'linux' | 'darwin',
  Record<'chromium' | 'chromium_headless_shell', string[]>
> = {
  linux: {
    chromium: ['chrome-linux64/chrome', 'chrome-linux-arm64/chrome', 'chrome-linux/chrome'],
    chromium_headless_shell: [
      'chrome-headless-shell-linux64/chrome-headless-shell',
      'chrome-headless-shell-linux-arm64/chrome-headless-shell',
      'chrome-linux/headless_shell',
    ],
  },
  darwin: {
    chromium: [
      'chrome-mac-arm64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing',
      'chrome-mac-x64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing',
      'chrome-mac/Chromium.app/Contents/MacOS/Chromium',
    ],
    chromium_headless_shell: [
      'chrome-headless-shell-mac-arm64/chrome-headless-shell',
      'chrome-headless-shell-mac-x64/chrome-headless-shell',
      'chrome-mac/headless_shell',
    ],
  },
};

const SPARTICUZ = '@sparticuz/chromium';

/** How to get a Chromium, at the end of every "not found" message. */
const HOW_TO = [
  'Get one in any of these ways:',
  '  - install it system-wide: `apt-get install chromium` (Debian, Ubuntu), or install Google Chrome;',
  '  - point at one you have: set CHROME_PATH=/path/to/chrome, or pass the chromePath option;',
  '  - `npx playwright install chromium` (Playwright keeps it in its browser cache, which is searched);',
  `  - \`npm install --save-dev ${SPARTICUZ}@143\` (Linux x64, needs nothing but Node: it ships a headless Chromium and the libraries it needs; newer majors require Node 22).`,
].join('\n');

/**
 * Finds a Chromium (or Chrome) executable for the local service. Looks, in order, at: `option`;
 * `CHROME_PATH`; the usual system locations (PATH, then fixed Linux or macOS paths); Playwright's
 * browser cache (`PLAYWRIGHT_BROWSERS_PATH` or its default), newest first; then a Chromium shipped
 * inside the npm package `@sparticuz/chromium` if it is installed next to the working directory or
 * to cloudbrowser (Linux x64 only; unpacked once into a cache folder).
 *
 * @param option an explicit path (the `chromePath` option). If given (not blank), it must exist.
 * @param search internal: where to look, for tests; defaults to this machine.
 * @throws {ChromiumNotFoundError} when nothing is found (the message says how to get one), or when
 *   `option` or `CHROME_PATH` points at something that is not an executable file.
 */
export async function findChromium(option?: string, search: ChromiumSearch = {}): Promise<string> {
  const env = search.env ?? process.env;
  const platform = search.platform ?? process.platform;
  const home = search.homeDir ?? homedir();
  const searched: string[] = [];

  if (option !== undefined && option.trim() !== '') {
    return explicit(option.trim(), 'the chromePath option', [`chromePath option: ${option}`]);
  }
  const fromEnv = env.CHROME_PATH?.trim();
  if (fromEnv) return explicit(fromEnv, 'CHROME_PATH', [`CHROME_PATH: ${fromEnv}`]);
  searched.push('CHROME_PATH (not set)');

  const system = search.systemPaths ?? systemPaths(platform, env, home);
  for (const candidate of system) {
    searched.push(candidate);
    if (await isExecutableFile(candidate)) return candidate;
  }

  const cache = playwrightCacheDir(platform, env, home, search.packageBases ?? defaultPackageBases());
  if (cache !== undefined && (platform === 'linux' || platform === 'darwin')) {
    searched.push(`Playwright's browser cache: ${cache}/{chromium,chromium_headless_shell}-*`);
    for (const candidate of await playwrightExecutables(cache, platform)) {
      if (await isExecutableFile(candidate)) return candidate;
    }
  }

  const arch = search.arch ?? process.arch;
  if (platform === 'linux' && arch === 'x64') {
    const bases = search.packageBases ?? defaultPackageBases();
    searched.push(`npm package ${SPARTICUZ}, resolved from ${bases.join(' and ')}`);
    const packageDir = resolvePackageDir(SPARTICUZ, bases);
    if (packageDir !== undefined) {
      return unpackSparticuz(packageDir, search.cacheDir ?? defaultCacheDir(env, home));
    }
  } else {
    searched.push(`npm package ${SPARTICUZ} (skipped: it ships Linux x64 binaries only)`);
  }

  throw new ChromiumNotFoundError(
    `No Chromium found for the local service. Looked at:\n${searched.map((s) => `  - ${s}`).join('\n')}\n${HOW_TO}`,
    searched,
  );
}

async function explicit(path: string, what: string, searched: string[]): Promise<string> {
  const absolute = resolve(path);
  const problem = await executableProblem(absolute);
  if (problem === undefined) return absolute;
  throw new ChromiumNotFoundError(
    `${what} points at ${absolute}, which ${problem}. Fix it, or unset it to let cloudbrowser search the usual places.\n${HOW_TO}`,
    searched,
  );
}

async function executableProblem(path: string): Promise<string | undefined> {
  try {
    if (!(await stat(path)).isFile()) return 'is not a file';
  } catch {
    return 'does not exist';
  }
  try {
    await access(path, constants.X_OK);
    return undefined;
  } catch {
    return 'is not executable';
  }
}

async function isExecutableFile(path: string): Promise<boolean> {
  return (await executableProblem(path)) === undefined;
}

function systemPaths(
  platform: NodeJS.Platform,
  env: Readonly<Record<string, string | undefined>>,
  home: string,
): string[] {
  if (platform === 'darwin') {
    return [
      ...MAC_APPS.map((app) => `/Applications/${app}`),
      ...MAC_APPS.map((app) => join(home, 'Applications', app)),
    ];
  }
  if (platform !== 'linux') return [];
  const onPath = (env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => isAbsolute(dir))
    .flatMap((dir) => PATH_NAMES.map((name) => join(dir, name)));
  return [...new Set([...onPath, ...LINUX_PATHS])];
}

function playwrightCacheDir(
  platform: NodeJS.Platform,
  env: Readonly<Record<string, string | undefined>>,
  home: string,
  bases: readonly string[],
): string | undefined {
  const configured = env.PLAYWRIGHT_BROWSERS_PATH?.trim();
  if (configured === '0') {
    // Playwright's "inside the package" mode.
    const dir = resolvePackageDir('playwright-core', bases);
    return dir === undefined ? undefined : join(dir, '.local-browsers');
  }
  if (configured) return resolve(configured);
  if (platform === 'darwin') return join(home, 'Library', 'Caches', 'ms-playwright');
  return join(env.XDG_CACHE_HOME?.trim() || join(home, '.cache'), 'ms-playwright');
}

/** Candidate executables in Playwright's cache: full Chromium before headless shell, each newest revision first. */
async function playwrightExecutables(cache: string, platform: 'linux' | 'darwin'): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(cache);
  } catch {
    return [];
  }
  const layouts = PLAYWRIGHT_LAYOUTS[platform];
  const found: string[] = [];
  for (const kind of ['chromium', 'chromium_headless_shell'] as const) {
    const revisions = entries
      .map((entry) => new RegExp(`^${kind}-(\\d+)$`).exec(entry))
      .filter((match) => match !== null)
      .map((match) => ({ dir: match[0], revision: Number(match[1]) }))
      .sort((a, b) => b.revision - a.revision);
    for (const { dir } of revisions) {
      for (const layout of layouts[kind]) found.push(join(cache, dir, layout));
    }
  }
  return found;
}

function defaultPackageBases(): string[] {
  return [process.cwd(), dirname(fileURLToPath(import.meta.url))];
}

/** The root folder of an installed package, resolved the way `require` would from each base in turn. */
function resolvePackageDir(name: string, bases: readonly string[]): string | undefined {
  for (const base of bases) {
    let entry: string;
    try {
      // The file need not exist: resolution starts from its folder.
      entry = createRequire(join(base, 'noop.js')).resolve(name);
    } catch {
      continue;
    }
    // Package exports may hide package.json, so walk up from the entry point to the package root.
    for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
      if (dir.endsWith(join('node_modules', name))) return dir;
    }
  }
  return undefined;
}

function defaultCacheDir(env: Readonly<Record<string, string | undefined>>, home: string): string {
  return join(env.XDG_CACHE_HOME?.trim() || join(home, '.cache'), 'cloudbrowser');
}

/**
 * Unpacks the Chromium that `@sparticuz/chromium` ships (brotli-compressed, in its `bin/`) into
 * `<cacheDir>/sparticuz-chromium-<version>/` and returns a launcher script there.
 *
 * The package's own `executablePath()` is not used: outside AWS Lambda it unpacks only the binary,
 * which then fails on a machine with only Node (`libnspr4.so: cannot open shared object file`),
 * because the NSS/NSPR/expat libraries it links against ship in `al2023.tar.br` and are only
 * unpacked on Lambda, into a process-wide `LD_LIBRARY_PATH`. It also unpacks into a shared,
 * unversioned `/tmp/chromium`, returns a stale binary of another version if one is there, and can
 * return a half-written one to a concurrent caller. Here every version gets its own folder, it is
 * unpacked into a temporary folder and renamed into place (so concurrent callers never see half a
 * Chromium), and the launcher script sets the library and font paths for Chromium alone.
 */
async function unpackSparticuz(packageDir: string, cacheDir: string): Promise<string> {
  const { version } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  const safeVersion = typeof version === 'string' && /^[\w.+-]+$/.test(version) ? version : 'unknown';
  const target = join(cacheDir, `sparticuz-chromium-${safeVersion}`);
  const launcher = join(target, 'chrome');
  if (await isExecutableFile(launcher)) return usedNow(target, launcher);

  const bin = join(packageDir, 'bin');
  await mkdir(cacheDir, { recursive: true });
  const staging = await mkdtemp(join(cacheDir, `.sparticuz-chromium-${safeVersion}-`));
  try {
    await pipeline(
      createReadStream(join(bin, 'chromium.br')),
      createBrotliDecompress(),
      createWriteStream(join(staging, 'chromium'), { mode: 0o755 }),
    );
    await untarBrotli(join(bin, 'al2023.tar.br'), staging); // lib/libnss3.so, libnspr4.so, libexpat.so.1, …
    await mkdir(join(staging, 'fonts'));
    await untarBrotli(join(bin, 'fonts.tar.br'), join(staging, 'fonts')); // fonts/Open_Sans/*.ttf
    await writeFile(
      join(staging, 'fonts', 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${xml(join(target, 'fonts', 'fonts'))}</dir>\n  <cachedir>${xml(join(target, 'fonts', 'cache'))}</cachedir>\n</fontconfig>\n`,
    );
    await writeFile(join(staging, 'chrome'), launcherScript(target, safeVersion), { mode: 0o755 });
    try {
      await rename(staging, target);
    } catch (error) {
      // Someone else finished first: theirs is as good as ours.
      if (!(await isExecutableFile(launcher))) throw error;
    }
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  await pruneUnused(cacheDir, target);
  return usedNow(target, launcher);
}

/** An unpacked version nobody has asked for in this long is removed when another is unpacked. */
const UNUSED_FOR_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Marks an unpacked version as used (its folder's time), so that pruning can tell. A version may
 * serve several projects on one machine, so only long disuse, not a newer version, retires it.
 */
async function usedNow(target: string, launcher: string): Promise<string> {
  const now = new Date();
  await utimes(target, now, now).catch(() => {});
  return launcher;
}

/** Removes the other unpacked versions (about 200 MB each) that have not been used for {@link UNUSED_FOR_MS}. */
async function pruneUnused(cacheDir: string, keep: string): Promise<void> {
  for (const name of await readdir(cacheDir).catch(() => [])) {
    const folder = join(cacheDir, name);
    if (!name.startsWith('sparticuz-chromium-') || folder === keep) continue;
    const { mtimeMs } = await stat(folder).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs > UNUSED_FOR_MS) await rm(folder, { recursive: true, force: true });
  }
}

/**
 * A launcher that runs the unpacked Chromium with its own libraries. `exec` keeps the pid and the
 * inherited file descriptors (the `--remote-debugging-pipe` fds 3 and 4), so it behaves exactly
 * like the binary for whoever spawns it.
 */
function launcherScript(target: string, version: string): string {
  return [
    '#!/bin/sh',
    `# Written by cloudbrowser: runs the Chromium shipped in @sparticuz/chromium ${version}`,
    '# with the libraries it ships (NSS, NSPR, expat), which a machine with only Node lacks.',
    `LD_LIBRARY_PATH=${sh(join(target, 'lib'))}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`,
    'export LD_LIBRARY_PATH',
    '# Without a system fontconfig, Chromium would have no fonts at all.',
    `[ -e /etc/fonts/fonts.conf ] || { FONTCONFIG_FILE=${sh(join(target, 'fonts', 'fonts.conf'))}; export FONTCONFIG_FILE; }`,
    `exec ${sh(join(target, 'chromium'))} "$@"`,
    '',
  ].join('\n');
}

/** Extracts a brotli-compressed tar with the system `tar`, present on every Linux this binary runs on. */
async function untarBrotli(archive: string, into: string): Promise<void> {
  const tar = spawn('tar', ['-x', '--no-same-owner', '-C', into], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  tar.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  const exited = new Promise<void>((resolveExit, reject) => {
    tar.once('error', reject);
    tar.once('close', (code) =>
      code === 0
        ? resolveExit()
        : reject(new Error(`tar -x of ${archive} failed (exit ${code}): ${stderr.trim()}`)),
    );
  });
  // Wait for both even when one fails, so no tar is left running.
  const [piped, extracted] = await Promise.allSettled([
    pipeline(createReadStream(archive), createBrotliDecompress(), tar.stdin),
    exited,
  ]);
  if (extracted.status === 'rejected') throw extracted.reason;
  // tar exits at the end-of-archive marker, possibly before the padding after it was written to it:
  // once tar succeeded, its stdin closing early is not an error.
  const early = ['EPIPE', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_STREAM_DESTROYED'];
  if (piped.status === 'rejected' && !early.includes((piped.reason as NodeJS.ErrnoException).code ?? '')) {
    throw piped.reason;
  }
}

function sh(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

function xml(value: string): string {
  return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}
