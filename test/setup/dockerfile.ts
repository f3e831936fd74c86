import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdir, stat } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';

/** One instruction of a Dockerfile, continuation lines joined. */
interface Instruction {
  keyword: string;
  args: string;
}

/** What a stage leaves behind once its steps ran: the folder standing in for its root. */
export interface BuiltStage {
  name: string;
  root: string;
  /** The last WORKDIR, as a path in `root`. */
  workdir: string;
  env: Record<string, string>;
  user?: string;
  exposed: number[];
  healthcheck?: string[];
  cmd?: string[];
}

/**
 * Runs a Dockerfile's stages without a container engine: each stage's root is a folder under
 * `scratch`, COPY reads `context` (or an earlier stage), RUN runs `sh -c` in the WORKDIR with the
 * stage's ENV (plus PATH and HOME, so the machine's node and npm cache serve). The subset the
 * project's Dockerfile uses: FROM … AS, WORKDIR, ENV k=v, COPY [--from=stage], RUN [--mount=…],
 * USER, EXPOSE, HEALTHCHECK … CMD [exec form], CMD [exec form]. Anything else is an error, so
 * the Dockerfile cannot outgrow this without the test saying so.
 */
export async function buildDockerfile(text: string, context: string, scratch: string, extraEnv: Record<string, string> = {}): Promise<BuiltStage[]> {
  const stages: BuiltStage[] = [];
  for (const { keyword, args } of parseDockerfile(text)) {
    if (keyword === 'FROM') {
      const name = /\bAS\s+(\S+)$/i.exec(args)?.[1] ?? `stage-${stages.length}`;
      stages.push({ name, root: join(scratch, name), workdir: '/', env: {}, exposed: [] });
      await mkdir(join(scratch, name), { recursive: true });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${keyword} before FROM`);
    const inRoot = (path: string) => join(stage.root, posix.resolve(stage.workdir, path));
    switch (keyword) {
      case 'WORKDIR':
        stage.workdir = posix.resolve(stage.workdir, args);
        await mkdir(inRoot('.'), { recursive: true });
        break;
      case 'ENV':
        for (const [, key, value] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[key] = value.replace(/^"(.*)"$/, '$1');
        break;
      case 'COPY': {
        const words = args.split(/\s+/);
        const from = words.find((word) => word.startsWith('--from='))?.slice('--from='.length);
        const [destination, ...sources] = words.filter((word) => !word.startsWith('--')).reverse();
        const source = (path: string) => (from ? join(stages.find((built) => built.name === from)!.root, posix.resolve('/', path)) : join(context, path));
        for (const path of sources.reverse()) {
          const into = destination.endsWith('/') && !(await stat(source(path))).isDirectory() ? join(inRoot(destination), basename(path)) : inRoot(destination);
          await cp(source(path), into, { recursive: true });
        }
        break;
      }
      case 'RUN':
        await run(args.replace(/^(--mount=\S+\s+)+/, ''), inRoot('.'), { ...stage.env, ...extraEnv });
        break;
      case 'USER':
        stage.user = args;
        break;
      case 'EXPOSE':
        stage.exposed.push(...args.split(/\s+/).map((port) => Number.parseInt(port, 10)));
        break;
      case 'HEALTHCHECK':
        stage.healthcheck = JSON.parse(args.slice(args.indexOf('CMD ') + 'CMD '.length));
        break;
      case 'CMD':
        stage.cmd = JSON.parse(args);
        break;
      default:
        throw new Error(`the Dockerfile test does not know ${keyword}`);
    }
  }
  return stages;
}

function parseDockerfile(text: string): Instruction[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [keyword] = line.split(/\s/, 1);
      return { keyword: keyword.toUpperCase(), args: line.slice(keyword.length).trim() };
    });
}

/**
 * What a build on this machine inherits of its network, as a container build inherits the
 * engine's: whom to trust and how to reach the registry. A package's install script that
 * fetches (esbuild's fallback under --omit=optional) needs them; npm's own global config may not
 * be found under a Node installed elsewhere (the npm registry's `node` package).
 */
const NETWORK_SETTINGS = /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|https?_proxy|no_proxy|npm_config_(cafile|registry|proxy|https_proxy|noproxy|strict_ssl))$/i;

async function run(command: string, cwd: string, env: Record<string, string>) {
  const network = Object.fromEntries(Object.entries(process.env).filter(([name, value]) => NETWORK_SETTINGS.test(name) && value !== undefined)) as Record<string, string>;
  const child = spawn('sh', ['-c', command], { cwd, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...network, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`RUN ${command} exited ${code}:\n${output}`);
}
