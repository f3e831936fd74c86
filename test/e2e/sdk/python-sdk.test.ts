import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pythonInterpreter } from '../../setup/device-commands.js';
import { startTestApp } from '../../setup/test-app.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../../dist/cli.js', import.meta.url));

/** A word for a POSIX shell, quoted. */
const quoted = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * The Python SDK's own tests (python/tests, pytest), in the virtual environment
 * scripts/python-env.sh makes from the registry, against a service this file starts: its token
 * manager, sign-ins and subscriber as a Python program uses them. The scenarios both SDKs share
 * run in device-sdk-scenarios.test.ts.
 */
describe('the Python SDK', () => {
  it('passes its own tests (pytest) against the running service', async () => {
    const python = await pythonInterpreter();
    const app = await startTestApp({ CODE_POLL_MIN_INTERVAL: '0' });
    try {
      const child = spawn(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'python/tests'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH, VOYAGE_API: app.baseUrl, VOYAGE_CLI: `env DATABASE_URL=${quoted(app.databaseUrl)} ${quoted(process.execPath)} ${quoted(CLI)}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      const [code] = await once(child, 'close');
      console.log(output.trim().split('\n').slice(-3).join('\n'));
      expect(code, output).toBe(0);
    } finally {
      await app.close();
    }
  }, 600_000);
});
