import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { refusal, satisfies } from '../../../src/runtime-refusal.js';
// @ts-expect-error: plain JavaScript without types (it must run on any Node, before the install)
import { preinstallRefusal, satisfies as preinstallSatisfies } from '../../../scripts/check-node.mjs';

const ENGINES = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;

describe('the Node version check', () => {
  it('reads package.json\'s "engines" range', () => {
    expect(ENGINES).toBe('^22.22.3 || ^24.15.0');
    for (const version of ['v22.22.3', 'v22.30.0', 'v24.15.0', 'v24.21.0']) expect(satisfies(version, ENGINES), version).toBe(true);
    for (const version of ['v20.20.2', 'v22.22.2', 'v23.11.0', 'v24.14.9', 'v25.0.0']) expect(satisfies(version, ENGINES), version).toBe(false);
    expect(satisfies('v20.1.0', '>=18.0.0 <21')).toBe(true);
    expect(satisfies('v21.0.0', '>=18.0.0 <21')).toBe(false);
  });

  it('lets through a supported Node with the install\'s ABI, or with no record of the install', () => {
    expect(refusal({ node: 'v24.21.0', modules: '137' }, ENGINES, { node: 'v24.15.0', modules: '137' })).toBeUndefined();
    expect(refusal({ node: 'v22.22.3', modules: '127' }, ENGINES, undefined)).toBeUndefined();
  });

  it('suggests the Node the install was made with when it is supported, the newest supported one otherwise', () => {
    expect(refusal({ node: 'v20.20.2', modules: '115' }, ENGINES, { node: 'v22.22.3', modules: '127' })).toBe(
      'voyage-connect needs Node ^22.22.3 || ^24.15.0 (package.json "engines"), this is Node v20.20.2: switch to Node 22 (nvm use 22), the one node_modules was installed with (v22.22.3)',
    );
    expect(refusal({ node: 'v20.20.2', modules: '115' }, ENGINES, { node: 'v20.20.2', modules: '115' })).toBe(
      'voyage-connect needs Node ^22.22.3 || ^24.15.0 (package.json "engines"), this is Node v20.20.2: switch to Node 24 (nvm install 24 && nvm use 24, or without nvm: npm install --prefix ~/.node24 node@24 && export PATH=~/.node24/node_modules/.bin:$PATH), then run npm ci again',
    );
  });

  it('says at install (the preinstall check) what it says at start, for the same Nodes', () => {
    const versions = ['v18.20.0', 'v20.20.2', 'v22.22.2', 'v22.22.3', 'v23.11.0', 'v24.14.9', 'v24.15.0', 'v24.21.0', 'v25.0.0', 'nonsense'];
    for (const version of versions) {
      expect(preinstallSatisfies(version, ENGINES), version).toBe(satisfies(version, ENGINES));
      expect(preinstallRefusal(version, ENGINES), version).toBe(refusal({ node: version, modules: '0' }, ENGINES, undefined));
    }
    expect(preinstallRefusal('v20.20.2', ENGINES)).toContain('npm install --prefix ~/.node24 node@24');
  });
});
