/**
 * Refuses, in one line, a Node that cannot run this install: one outside package.json's
 * "engines", or one whose native ABI differs from the Node that ran `npm ci` (argon2's binary
 * then crashes the process with a bare "Segmentation fault"). The entry points import this file
 * first, and it imports only Node's own modules, so it runs before any package is evaluated.
 */
import { readFileSync } from 'node:fs';
import { type NodeRuntime, refusal } from './runtime-refusal.js';

const root = new URL('..', import.meta.url);
const readJson = (path: string): unknown => {
  try {
    return JSON.parse(readFileSync(new URL(path, root), 'utf8'));
  } catch {
    return undefined;
  }
};

const engines = (readJson('package.json') as { engines?: { node?: string } } | undefined)?.engines?.node;
// Written by the "postinstall" script at each `npm ci`; absent in an install made before it.
const record = readJson('node_modules/.voyage-connect-install.json') as Partial<NodeRuntime> | undefined;
const installedWith = typeof record?.node === 'string' && typeof record.modules === 'string' ? (record as NodeRuntime) : undefined;
const problem = refusal({ node: process.version, modules: process.versions.modules }, engines, installedWith);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
