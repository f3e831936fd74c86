/** A Node binary as far as native modules care: its version and its ABI (`process.versions.modules`). */
export interface NodeRuntime {
  node: string;
  modules: string;
}

/**
 * Why `running` cannot run this install (one line saying what to do), or undefined when it can.
 * `engines` is package.json's range; `installedWith` the Node that ran `npm ci`, when recorded.
 */
export function refusal(running: NodeRuntime, engines: string | undefined, installedWith: NodeRuntime | undefined): string | undefined {
  const supported = engines === undefined || satisfies(running.node, engines);
  if (!supported) {
    const installed = installedWith && satisfies(installedWith.node, engines!) ? installedWith : undefined;
    const target = installed ? major(installed.node) : newestMajor(engines!);
    const how = installed ? `(nvm use ${target}), the one node_modules was installed with (${installed.node})` : `(${howToGetNode(target!)}), then run npm ci again`;
    return `voyage-connect needs Node ${engines} (package.json "engines"), this is Node ${running.node}: switch to Node ${target} ${how}`;
  }
  if (installedWith && installedWith.modules !== running.modules) {
    const target = major(installedWith.node);
    return `node_modules was installed (npm ci) with Node ${installedWith.node}, this is Node ${running.node}, whose native modules (argon2) differ: switch back to Node ${target} (nvm use ${target}) or run npm ci again under this Node`;
  }
  return undefined;
}

/**
 * Two ways to Node `major`: nvm, or the npm registry's `node` package, which needs neither nvm nor
 * a browser (the way .ci/run gets its Node). scripts/check-node.mjs, the `preinstall` check, says
 * the same (test/unit/project/runtime-refusal.test.ts holds the two together).
 */
export const howToGetNode = (major: number) =>
  `nvm install ${major} && nvm use ${major}, or without nvm: npm install --prefix ~/.node${major} node@${major} && export PATH=~/.node${major}/node_modules/.bin:$PATH`;

const major = (version: string) => parse(version)?.[0];

/** The newest major version a range names, to suggest. */
const newestMajor = (range: string) => Math.max(...range.split('||').map((alternative) => parse(alternative.trim().replace(/^[\^>=<~]+/, '').split(/\s/)[0])?.[0] ?? 0));

type Version = [number, number, number];

function parse(version: string): Version | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)] : undefined;
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/**
 * The subset of npm's semver ranges that "engines" uses: alternatives joined by `||`, each a
 * list of `^x.y.z`, `>=x.y.z`, `>x.y.z`, `<=x.y.z`, `<x.y.z` or `x.y.z`. Anything else counts as
 * satisfied: a check that cannot read the range must not stop a Node that may well be right.
 */
export function satisfies(version: string, range: string): boolean {
  const have = parse(version);
  if (!have) return true;
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const match = /^(\^|>=|>|<=|<|=)?(.+)$/.exec(comparator);
        const want = match && parse(match[2]);
        if (!want) return true;
        const order = compare(have, want);
        switch (match[1]) {
          case '^':
            return order >= 0 && have[0] === want[0];
          case '>=':
            return order >= 0;
          case '>':
            return order > 0;
          case '<=':
            return order <= 0;
          case '<':
            return order < 0;
          default:
            return order === 0;
        }
      }),
  );
}
