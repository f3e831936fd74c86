import { createServer } from 'node:http';

/** Where the browser brings the code: a listener at http://host:port/callback. */
export interface Callback {
  url: string;
  /** The code, once the browser brought it. */
  code: Promise<string>;
  close(): void;
}

const PAGE_STYLE =
  ':root{color-scheme:light dark}body{margin:0;font:16px/1.5 system-ui,sans-serif;display:grid;place-items:center;min-height:100vh;padding:1rem;box-sizing:border-box}main{max-width:24rem}h1{font-size:1.5rem;margin:0 0 .25rem}';

const page = (title: string, message: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title><style>${PAGE_STYLE}</style></head><body><main><h1>${title}</h1><p>${message}</p></main></body></html>`;

/**
 * Listens on `host:port` (port 0: any free one) for the helper's redirect. The browser gets a
 * page saying the device is signed in; the listener closes after the code came (or on close()).
 */
export async function listenForCallback(host: string, port: number): Promise<Callback> {
  let deliver!: (code: string) => void;
  const code = new Promise<string>((resolve) => (deliver = resolve));
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://callback');
    const received = url.pathname === '/callback' ? url.searchParams.get('code') : null;
    // Connection: close, so no idle browser connection keeps the listener open once it is done.
    response.writeHead(received ? 200 : 404, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', connection: 'close' });
    response.end(received ? page('Your device is signed in', 'You can close this window: the device carries on by itself.') : page('Nothing here', 'This address only receives sign-ins for the device.'));
    if (received) {
      deliver(received);
      server.close();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: listening } = server.address() as { port: number };
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${shownHost}:${listening}/callback`, code, close: () => server.close() };
}
