import { type ChildProcess, execFile, type SpawnOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PYTHON_ENV_SCRIPT = fileURLToPath(new URL('../../scripts/python-env.sh', import.meta.url));

/** A device SDK, by the command it installs: the scenarios run each language's command alike. */
export interface DeviceLanguage {
  name: 'TypeScript' | 'Python';
  /** The argv before the command's own words (`subscribe …`). */
  argv(): Promise<string[]>;
}

let pythonReady: Promise<string> | undefined;

/** The Python SDK's virtual environment (made once from the registry by scripts/python-env.sh), as its interpreter's path. */
export function pythonInterpreter(): Promise<string> {
  pythonReady ??= promisify(execFile)('sh', [PYTHON_ENV_SCRIPT], { cwd: ROOT, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 }).then(({ stdout }) => stdout.trim().split('\n').pop()!);
  return pythonReady;
}

export const DEVICE_LANGUAGES: DeviceLanguage[] = [
  { name: 'TypeScript', argv: async () => [process.execPath, fileURLToPath(new URL('../../packages/device/dist/command.js', import.meta.url))] },
  { name: 'Python', argv: async () => [await pythonInterpreter(), '-m', 'voyage_connect'] },
];

/** A running device command: its JSON lines on stdout, its words on stderr. */
export interface DeviceCommand {
  child: ChildProcess;
  /** The JSON objects printed so far. */
  lines(): Record<string, unknown>[];
  stderr(): string;
  /** Resolves once `check` holds on what was printed; rejects after `timeoutMs`, or when the command exits first. */
  until(check: () => boolean, what: string, timeoutMs?: number): Promise<void>;
  /** The exit code (null when killed by a signal), once stdout and stderr are read to the end. */
  exited: Promise<number | null>;
}

/** How a command is started: `spawn`, or a satellite link's `exec` (inside its network namespace). */
type Launcher = (command: string, args: string[], options: SpawnOptions) => ChildProcess;

export async function startDeviceCommand(language: DeviceLanguage, args: string[], env: Record<string, string>, launch: Launcher = spawn): Promise<DeviceCommand> {
  const [command, ...prefix] = await language.argv();
  const child = launch(command, [...prefix, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const checks = new Set<() => void>();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    for (const check of checks) check();
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const check of checks) check();
  });
  const exited = once(child, 'close').then(([code]) => code as number | null);
  const lines = () =>
    stdout
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const until = (check: () => boolean, what: string, timeoutMs = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`${language.name}: no ${what} within ${timeoutMs} ms.\nstdout:\n${stdout}\nstderr:\n${stderr}`)), timeoutMs);
      const done = (error?: Error) => {
        checks.delete(attempt);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const attempt = () => {
        if (check()) done();
      };
      checks.add(attempt);
      attempt();
      void exited.then(() => checks.has(attempt) && done(new Error(`${language.name} exited before ${what}.\nstdout:\n${stdout}\nstderr:\n${stderr}`)));
    });
  return { child, lines, stderr: () => stderr, until, exited };
}
