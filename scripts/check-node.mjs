// The `preinstall` check: `npm ci` (or `npm install`) on a Node outside package.json's "engines"
// stops with one line that says which Node to get and how, instead of a warning per package and an
// install that fails only at `npm start`. npm runs it after fetching the packages, before the
// install scripts of this package. It must run on any Node, so it is plain JavaScript that imports
// only Node's own modules; src/runtime-refusal.ts makes the same check at every start, in the same
// words (test/unit/project/runtime-refusal.test.ts compares the two).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The refusal for Node `version` under the "engines" range `engines`, or undefined when it may install. */
export function preinstallRefusal(version, engines) {
  if (satisfies(version, engines)) return undefined;
  const target = Math.max(...engines.split('||').map((alternative) => parse(alternative.trim().replace(/^[\^>=<~]+/, '').split(/\s/)[0])?.[0] ?? 0));
  return `voyage-connect needs Node ${engines} (package.json "engines"), this is Node ${version}: switch to Node ${target} (nvm install ${target} && nvm use ${target}, or without nvm: npm install --prefix ~/.node${target} node@${target} && export PATH=~/.node${target}/node_modules/.bin:$PATH), then run npm ci again`;
}

function parse(version) {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2] || 0), Number(match[3] || 0)] : undefined;
}

/** npm's "engines" subset: `||` alternatives of `^x.y.z`, `>=`, `>`, `<=`, `<` or `x.y.z`; anything else passes. */
export function satisfies(version, range) {
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
        const order = have[0] - want[0] || have[1] - want[1] || have[2] - want[2];
        if (match[1] === '^') return order >= 0 && have[0] === want[0];
        if (match[1] === '>=') return order >= 0;
        if (match[1] === '>') return order > 0;
        if (match[1] === '<=') return order <= 0;
        if (match[1] === '<') return order < 0;
        return order === 0;
      }),
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { engines } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const problem = engines && engines.node ? preinstallRefusal(process.version, engines.node) : undefined;
  if (problem) {
    process.stderr.write(`${problem}\n`);
    process.exit(1);
  }
}
