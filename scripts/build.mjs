// Builds dist/ (the service, the CLI, dist/migrations/) and the device SDK (packages/device/dist/) in place: never by deleting it first, since
// a running service may be using it. Outputs whose source is gone are removed afterwards (a
// deleted migration left in dist/migrations/ would still be applied). With --if-stale (npm start)
// it builds only when a source, a tsconfig or a package file is newer than the last build.
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, rmSync, statSync, writeFileSync, existsSync, rmdirSync, utimesSync } from 'node:fs';
import { join, relative } from 'node:path';

const STAMP = 'dist/.build-stamp';
const INPUTS = ['src', 'migrations', 'tsconfig.json', 'tsconfig.build.json', 'tsconfig.migrations.json', 'nest-cli.json', 'package.json', 'package-lock.json', 'scripts/build.mjs', 'packages/device/src', 'packages/device/tsconfig.json', 'packages/device/package.json'];

/** Newest modification time under `path`, folders included: deleting a file touches its folder. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((entry) => newest(join(path, entry))));
}

function isStale() {
  const built = statSync(STAMP, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return Math.max(...INPUTS.map(newest)) > built;
}

/** The source a file of dist/ was compiled from: dist/migrations/x.js from migrations/x.ts, dist/y.js from src/y.ts. */
function sourceOf(output) {
  const path = relative('dist', output).replace(/\.js(\.map)?$/, '.ts');
  return path.startsWith('migrations/') ? path : join('src', path);
}

/** Removes compiled files whose source no longer exists, and the folders that leaves empty. */
function pruneOrphans(folder) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) {
      pruneOrphans(path);
      if (readdirSync(path).length === 0) rmdirSync(path);
    } else if (/\.js(\.map)?$/.test(entry.name) && !existsSync(sourceOf(path))) {
      rmSync(path);
    }
  }
}

if (!process.argv.includes('--if-stale') || isStale()) {
  const started = new Date();
  if (process.argv.includes('--if-stale')) {
    process.stderr.write(existsSync(STAMP) ? 'building dist/ (the sources changed since the last build)\n' : 'building dist/ (first start: about 20 s)\n');
  }
  execFileSync(join('node_modules', '.bin', 'nest'), ['build'], { stdio: 'inherit' });
  execFileSync(join('node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.migrations.json'], { stdio: 'inherit' });
  // The device SDK (packages/device/dist/), versioned and tested with the service; the container
  // image is built without it (the Dockerfile copies the service's sources only).
  if (existsSync(join('packages', 'device', 'tsconfig.json'))) {
    execFileSync(join('node_modules', '.bin', 'tsc'), ['-p', join('packages', 'device', 'tsconfig.json')], { stdio: 'inherit' });
    chmodSync(join('packages', 'device', 'dist', 'command.js'), 0o755);
  }
  pruneOrphans('dist');
  // Stamped with the build's start: a source saved during the build makes the next start build again.
  writeFileSync(STAMP, '');
  utimesSync(STAMP, started, started);
}
