import type { BrowserPool } from './browser-pool.js';
import { HttpError, sendJson } from './http.js';
import type { Context } from './routes.js';

type Route = { method: string; pattern: RegExp; handler: (ctx: Context) => Promise<void> };

/**
 * What a `cdpUrl` and a `liveUrl` serve. The per-browser secret in the path is the credential, so
 * these need no API key; an unknown or stopped browser's secret is a 404.
 */
export function liveRoutes(pool: BrowserPool): Route[] {
  const target = (secret: string | undefined) => {
    const found = secret === undefined ? undefined : pool.bySecret(secret);
    if (!found) throw new HttpError(404, 'Not Found');
    return found;
  };
  return [
    {
      method: 'GET',
      pattern: /^\/json\/version\/?$/,
      async handler() {
        throw new HttpError(
          404,
          "Each browser's /json/version is under its cdpUrl (<cdpUrl>/json/version). Puppeteer's browserURL " +
            'resolves it from the host root and drops that path: pass the webSocketDebuggerUrl it gives as browserWSEndpoint.',
        );
      },
    },
    {
      method: 'GET',
      pattern: /^\/cdp\/(?<secret>[\w-]+)\/json\/version\/?$/,
      async handler({ res, params, origin }) {
        const { chromium } = target(params.secret);
        const browserPath = new URL(chromium.wsEndpoint).pathname;
        sendJson(res, 200, {
          ...chromium.version,
          webSocketDebuggerUrl: `${origin.replace(/^http/, 'ws')}/cdp/${params.secret}${browserPath}`,
        });
      },
    },
    {
      method: 'GET',
      pattern: /^\/live\/(?<secret>[\w-]+)\/?$/,
      async handler({ res, params }) {
        const { record } = target(params.secret);
        const html = `<!doctype html><meta charset="utf-8"><title>Browser ${record.id}</title>
<style>body{margin:0;background:#222;color:#ddd;font:14px system-ui}img{display:block;max-width:100%}</style>
<p>Browser ${record.id}, live (a screenshot a second)</p><img id="view" alt="">
<script>const view=document.getElementById('view');
setInterval(()=>{view.src='screenshot?'+Date.now()},1000);view.src='screenshot';</script>`;
        res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
          .end(html);
      },
    },
    {
      method: 'GET',
      pattern: /^\/live\/(?<secret>[\w-]+)\/screenshot$/,
      async handler({ res, params }) {
        const { chromium } = target(params.secret);
        const { targetInfos } = await chromium.send<{ targetInfos: { targetId: string; type: string }[] }>(
          'Target.getTargets',
        );
        const page = targetInfos.find((t) => t.type === 'page');
        if (!page) throw new HttpError(404, 'The browser has no open page');
        const { sessionId } = await chromium.send<{ sessionId: string }>('Target.attachToTarget', {
          targetId: page.targetId,
          flatten: true,
        });
        try {
          const { data } = await chromium.send<{ data: string }>('Page.captureScreenshot', {}, sessionId);
          res
            .writeHead(200, { 'content-type': 'image/png', 'cache-control': 'no-store' })
            .end(Buffer.from(data, 'base64'));
        } finally {
          await chromium.send('Target.detachFromTarget', { sessionId }).catch(() => {});
        }
      },
    },
  ];
}
