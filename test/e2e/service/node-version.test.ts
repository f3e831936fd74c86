import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { satisfies } from '../../../src/runtime-refusal.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ENGINES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

/** A Node on this machine that package.json's "engines" excludes (CI machines have Node 20 at /usr/bin/node). */
function unsupportedNode(): { path: string; version: string } | undefined {
  const onPath = spawnSync('which', ['-a', 'node'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  for (const path of new Set(['/usr/bin/node', '/usr/local/bin/node', ...onPath])) {
    const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (version && !satisfies(version, ENGINES)) return { path, version };
  }
  return undefined;
}
const oldNode = unsupportedNode();

/** Runs a built entry point with `node`, its environment free of any database setting. */
function runEntry(node: string, script: string, args: string[] = []) {
  return spawnSync(node, [script, ...args], { encoding: 'utf8', timeout: 20_000, env: { PATH: process.env.PATH ?? '', DATABASE_URL: 'not-a-url' } });
}

/** What a shell still on another Node gets after `npm ci` on the supported one: one line, never a segfault. */
describe('the Node version check of the entry points', () => {
  const scratch: string[] = [];
  afterAll(() => {
    for (const folder of scratch) rmSync(folder, { recursive: true, force: true });
  });

  it.skipIf(!oldNode)(`refuses a Node outside "engines" (${oldNode?.version ?? 'skipped: no such Node on this machine'}) in one line that says what to do, in the service and the CLI`, () => {
    for (const [script, args] of [['dist/main.js', []], ['dist/cli.js', ['user:list']]] as const) {
      const result = runEntry(oldNode!.path, join(ROOT, script), [...args]);
      expect(result.signal, `${script}: ${result.stderr}`).toBeNull();
      expect(result.status, script).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        new RegExp(`^voyage-connect needs Node \\^22\\.22\\.3 \\|\\| \\^24\\.15\\.0 \\(package\\.json "engines"\\), this is Node ${oldNode!.version.replaceAll('.', '\\.')}: switch to Node 24 .*\\n$`),
      );
      expect(result.stderr.split('\n')).toHaveLength(2);
    }
  });

  /** package.json's `preinstall` command, run as npm runs it (sh in the package's folder) with `node` first on PATH. */
  const preinstall = (node: string) => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { preinstall: string } };
    return spawnSync('sh', ['-c', scripts.preinstall], { cwd: ROOT, encoding: 'utf8', timeout: 20_000, env: { PATH: `${dirname(node)}:${process.env.PATH}` } });
  };

  it('stops npm ci at its preinstall check on a Node outside "engines" in one line naming the npm registry\'s node package, and lets the supported Node through', () => {
    const passed = preinstall(process.execPath);
    expect(passed.status).toBe(0);
    expect(passed.stdout + passed.stderr).toBe('');
    if (!oldNode) return; // no unsupported Node on this machine (CI machines have Node 20 at /usr/bin/node)
    const refused = preinstall(oldNode.path);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `voyage-connect needs Node ^22.22.3 || ^24.15.0 (package.json "engines"), this is Node ${oldNode.version}: switch to Node 24 (nvm install 24 && nvm use 24, or without nvm: npm install --prefix ~/.node24 node@24 && export PATH=~/.node24/node_modules/.bin:$PATH), then run npm ci again\n`,
    );
  });

  const INSTALL_RECORD = '.voyage-connect-install.json';

  /** A copy of the built app whose node_modules (the real packages, linked) says it was installed by `installedWith`. */
  function appInstalledWith(installedWith: { node: string; modules: string }): string {
    const app = mkdtempSync(join(tmpdir(), 'voyage-connect-node-'));
    scratch.push(app);
    cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
    mkdirSync(join(app, 'node_modules'));
    // Every package linked, but not the install record: writing through a link to it would change
    // the real one under the tests running beside this one.
    for (const entry of readdirSync(join(ROOT, 'node_modules')).filter((name) => name !== INSTALL_RECORD)) {
      symlinkSync(join(ROOT, 'node_modules', entry), join(app, 'node_modules', entry));
    }
    writeFileSync(join(app, 'node_modules', INSTALL_RECORD), JSON.stringify(installedWith));
    return app;
  }

  it('refuses a supported Node other than the one npm ci ran under, naming both, and runs under that one', () => {
    const real = readFileSync(join(ROOT, 'node_modules', INSTALL_RECORD), 'utf8');
    const other = appInstalledWith({ node: 'v22.22.3', modules: '127' });
    // The copy's record is its own: the real install, which tests beside this one use, is untouched.
    expect(readFileSync(join(ROOT, 'node_modules', INSTALL_RECORD), 'utf8')).toBe(real);
    const refused = runEntry(process.execPath, join(other, 'dist/cli.js'), ['user:list']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      `node_modules was installed (npm ci) with Node v22.22.3, this is Node ${process.version}, whose native modules (argon2) differ: switch back to Node 22 (nvm use 22) or run npm ci again under this Node\n`,
    );

    const same = appInstalledWith({ node: process.version, modules: process.versions.modules });
    const ran = runEntry(process.execPath, join(same, 'dist/cli.js'), ['user:list']);
    // Past the check: the next thing it reads is the configuration.
    expect(ran.stderr).toMatch(/^error: Invalid configuration: DATABASE_URL must be a postgres:\/\/ URL/);
  });

  it('records the Node of each install: npm ci runs the postinstall script', () => {
    const app = mkdtempSync(join(tmpdir(), 'voyage-connect-install-'));
    scratch.push(app);
    mkdirSync(join(app, 'node_modules'));
    const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { postinstall: string } };
    execFileSync('sh', ['-c', scripts.postinstall], { cwd: app, env: { PATH: `${dirname(process.execPath)}:${process.env.PATH}` } });
    expect(JSON.parse(readFileSync(join(app, 'node_modules', '.voyage-connect-install.json'), 'utf8'))).toEqual({ node: process.version, modules: process.versions.modules });
  });
});
