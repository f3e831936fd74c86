import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { isProcessAlive } from '../../src/database/process-alive.js';

/**
 * A real reverse proxy in front of the service: Debian's nginx (or NGINX_PATH), run by the test
 * as its own foreground child on a free port, with its config, pid, logs and temp files in a
 * folder of its own. The system nginx the package may have started on port 80 is neither used
 * nor touched.
 *
 * The default configuration is the corporate proxy a ship's traffic often crosses: HTTP/1.1 to
 * the service but without the `Upgrade` / `Connection: upgrade` headers (so a WebSocket cannot be
 * opened through it), response buffering on with gzip for text responses (a compressed stream is
 * then held back until the proxy's buffer fills or the response ends, unless the service turns
 * buffering off per response with `X-Accel-Buffering: no`), an idle read timeout (a stream must
 * send something before it) and the `X-Forwarded-For` / `X-Forwarded-Proto` headers.
 * `websocket: true` adds the upgrade headers.
 *
 * Buffering alone does not hold a trickle back from a client that reads at once: nginx passes on
 * what it has whenever the client can take it. Its gzip does, as it compresses into whole buffers
 * until told to flush, which unbuffered responses are after every read. Hence gzip in the default.
 */

export interface NginxOptions {
  /** The service's port on 127.0.0.1. */
  upstreamPort: number;
  /** A second instance's port, taken when the first refuses connections (an nginx `backup` server). */
  backupPort?: number;
  /** Pass the WebSocket upgrade through (default false: as a proxy that refuses WebSocket). */
  websocket?: boolean;
  /** `proxy_read_timeout`: how long the proxy waits for the service to send anything (default 20). */
  readTimeoutSeconds?: number;
  /** `proxy_buffering` (default true, nginx's own default). */
  buffering?: boolean;
  /** Compress text responses (event streams included) for clients that accept gzip (default true). */
  gzip?: boolean;
  /** More directives for the proxied location, e.g. `['proxy_buffer_size 16k;']`. */
  extraDirectives?: string[];
}

export interface Nginx {
  /** `http://127.0.0.1:PORT`: the service as seen through the proxy. */
  baseUrl: string;
  port: number;
  /** Stops the proxy (every connection through it ends) and starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  /** What nginx wrote on stderr (its error log) since it was first started. */
  output(): string;
}

/** Folders of this module's proxies are named after the process that started them (for the stale sweep). */
const FOLDER_PREFIX = 'voyage-connect-nginx-';
/** What a proxy compressing "text" compresses (text/html is always in). */
const GZIP_TYPES = 'text/plain text/css text/event-stream application/json application/javascript';
const ENSURE_SCRIPT = fileURLToPath(new URL('../../scripts/ensure-nginx.sh', import.meta.url));

/** The nginx binary: NGINX_PATH, `nginx` on PATH, or Debian's /usr/sbin/nginx; undefined when none. */
export function findNginx(): string | undefined {
  const candidates = [process.env.NGINX_PATH, ...(process.env.PATH ?? '').split(delimiter).map((dir) => dir && join(dir, 'nginx')), '/usr/sbin/nginx'];
  return candidates.find((path): path is string => {
    if (!path) return false;
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * The nginx binary, installed first by scripts/ensure-nginx.sh when missing (when this user may);
 * otherwise why there is none, in the script's words, for a test to skip with.
 */
export function ensureNginx(): { path: string } | { missing: string } {
  const found = findNginx();
  if (found) return { path: found };
  const result = spawnSync('sh', [ENSURE_SCRIPT], { encoding: 'utf8', timeout: 300_000 });
  const installed = findNginx();
  if (installed) return { path: installed };
  return { missing: (result.stderr || result.error?.message || 'nginx was not found').trim() };
}

/** Starts nginx in front of the service on 127.0.0.1:`upstreamPort`; resolves once it accepts connections. */
export async function startNginx(options: NginxOptions): Promise<Nginx> {
  const binary = findNginx();
  if (!binary) throw new Error('nginx was not found: run scripts/ensure-nginx.sh, or set NGINX_PATH');
  sweepStaleProxies();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `${FOLDER_PREFIX}${process.pid}-`));
  for (const temp of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, temp));
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig(dir, port, options));

  let output = '';
  let child: ChildProcess | undefined;
  const start = async () => {
    // -p: relative paths (logs) resolve in the folder; -e: errors before the config is read go to stderr.
    const started = spawn(binary, ['-p', `${dir}/`, '-e', 'stderr', '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child = started;
    await untilAccepting(port, started, () => output);
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    // SIGTERM is nginx's fast shutdown: open connections end now, as when a proxy restarts.
    const exited = once(running, 'exit');
    running.kill('SIGTERM');
    const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  // A test that dies without stopping its proxy must not leave it holding the port.
  const onExit = () => child?.kill('SIGTERM');
  process.once('exit', onExit);

  await start().catch(async (error: Error) => {
    await stop();
    throw error;
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    output: () => output,
    async restart() {
      await stop();
      await start();
    },
    async stop() {
      process.removeListener('exit', onExit);
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function nginxConfig(dir: string, port: number, options: NginxOptions): string {
  const upgrade = options.websocket
    ? ['proxy_set_header Upgrade $http_upgrade;', 'proxy_set_header Connection $connection_upgrade;']
    : []; // nginx's defaults: Upgrade is hop-by-hop and not passed on, Connection is `close`
  const location = [
    `proxy_pass http://${options.backupPort === undefined ? `127.0.0.1:${options.upstreamPort}` : 'service'};`,
    'proxy_http_version 1.1;',
    'proxy_set_header Host $http_host;',
    'proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    'proxy_set_header X-Forwarded-Proto $scheme;',
    ...upgrade,
    `proxy_buffering ${options.buffering === false ? 'off' : 'on'};`,
    `proxy_read_timeout ${options.readTimeoutSeconds ?? 20}s;`,
    ...(options.gzip === false ? [] : ['gzip on;', `gzip_types ${GZIP_TYPES};`]),
    ...(options.extraDirectives ?? []),
  ];
  // Workers run as the master's user: as root, nginx would otherwise switch them to `nobody`,
  // who may not write the temp folders.
  const user = process.getuid?.() === 0 ? [`user ${userInfo().username};`] : [];
  return [
    ...user,
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    'error_log stderr warn;',
    'events { worker_connections 1024; }',
    'http {',
    `  access_log ${join(dir, 'access.log')};`,
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((temp) => `  ${temp}_temp_path ${join(dir, temp)};`),
    '  map $http_upgrade $connection_upgrade { default upgrade; "" close; }',
    ...(options.backupPort === undefined ? [] : [`  upstream service { server 127.0.0.1:${options.upstreamPort}; server 127.0.0.1:${options.backupPort} backup; }`]),
    '  server {',
    `    listen 127.0.0.1:${port};`,
    '    location / {',
    ...location.map((line) => `      ${line}`),
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');
}

/** Resolves once the proxy accepts a TCP connection on `port`; rejects if it exits first (with its stderr). */
async function untilAccepting(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited on start: ${output().trim()}`);
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.setTimeout(1_000, () => socket.destroy());
      socket.once('connect', () => {
        resolve(true);
        socket.destroy();
      });
      socket.once('error', () => {}); // refused: 'close' follows
      socket.once('close', () => resolve(false)); // a no-op after connect
    });
    if (accepted) return;
    if (Date.now() > deadline) throw new Error(`nginx did not accept connections on ${port} within 10 s: ${output().trim()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Stops proxies left by test processes that died without stopping them, and removes their folders. */
function sweepStaleProxies(): void {
  for (const name of readdirSync(tmpdir())) {
    const owner = Number(/^voyage-connect-nginx-(\d+)-/.exec(name)?.[1]);
    if (!owner || isProcessAlive(owner)) continue;
    const dir = join(tmpdir(), name);
    const pidFile = join(dir, 'nginx.pid');
    const master = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    // Only an nginx started with this folder's config: a reused pid is left alone.
    if (master && isProcessAlive(master) && readCommandLine(master).includes(dir)) process.kill(master, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}


function readCommandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}
