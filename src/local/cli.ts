#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startLocalService } from './service.js';

const USAGE = `Usage: cloudbrowser serve [options]

Runs the local service in the foreground: the cloud service's REST interface for browsers and
profiles on this machine, with real Chromium. Ctrl-C stops every browser it started, then exits.

Options:
  --port <n>            port to listen on (default: any free port)
  --host <address>      address to listen on (default: 127.0.0.1)
  --allow-remote        allow a non-loopback --host
  --data-dir <path>     where profiles and state live
  --max-browsers <n>    active browsers at once (default: 4)
  --chrome <path>       the Chromium to run
  --proxy <cc=url>      upstream proxy for a country code, e.g. de=http://user:pass@host:8080 (repeatable)
  --api-key <key>       the key to accept (default: a generated one)
`;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'allow-remote': { type: 'boolean' },
      'data-dir': { type: 'string' },
      'max-browsers': { type: 'string' },
      chrome: { type: 'string' },
      proxy: { type: 'string', multiple: true },
      'api-key': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals[0] !== 'serve') {
    process.stdout.write(USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  const proxies = Object.fromEntries(
    (values.proxy ?? []).map((pair) => {
      const at = pair.indexOf('=');
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
  const service = await startLocalService({
    ...(values.port ? { port: Number(values.port) } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values['allow-remote'] ? { allowRemote: true } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(values['max-browsers'] ? { maxBrowsers: Number(values['max-browsers']) } : {}),
    ...(values.chrome ? { chromePath: values.chrome } : {}),
    ...(values['api-key'] ? { apiKeys: [values['api-key']] } : {}),
    proxies,
    log: (line) => process.stderr.write(`[cloudbrowser] ${line}\n`),
  });
  process.stdout.write(
    `cloudbrowser local service\n  CLOUDBROWSER_BASE_URL=${service.baseUrl}\n  CLOUDBROWSER_API_KEY=${service.apiKey}\nCtrl-C stops it and every browser it started.\n`,
  );
  const shutdown = (signal: NodeJS.Signals) => {
    process.stderr.write(`[cloudbrowser] ${signal}: stopping every browser\n`);
    void service.close().then(() => process.exit(0));
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`cloudbrowser: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
