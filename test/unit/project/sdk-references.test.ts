import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { pythonInterpreter } from '../../setup/device-commands.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const run = promisify(execFile);

/** Every file under `folder`, by its path within it, with its text. */
async function contents(folder: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(folder, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[relative(folder, join(entry.parentPath, entry.name))] = await readFile(join(entry.parentPath, entry.name), 'utf8');
  }
  return files;
}

/** The SDKs' API references are generated from their code: a change to the code that is not in the reference fails here. */
describe('the device SDKs’ API references', () => {
  it('docs/sdk/typescript is what typedoc makes of packages/device (npm run docs:sdk)', async () => {
    const out = await mkdtemp(join(tmpdir(), 'voyage-connect-typedoc-'));
    try {
      await run(join(ROOT, 'node_modules', '.bin', 'typedoc'), ['--out', out], { cwd: join(ROOT, 'packages', 'device') });
      expect(await contents(out)).toEqual(await contents(join(ROOT, 'docs', 'sdk', 'typescript')));
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 120_000);

  it('docs/sdk/python is what python/scripts/gen_docs.py makes of python/voyage_connect', async () => {
    const python = await pythonInterpreter();
    const verdict = await run(python, ['python/scripts/gen_docs.py', '--check'], { cwd: ROOT }).then(
      () => 'current',
      (error: { stdout: string; stderr: string }) => `${error.stdout}${error.stderr}`,
    );
    expect(verdict).toBe('current');
  }, 600_000);
});
