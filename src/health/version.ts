import { readFileSync } from 'node:fs';

/** The package version, read once; package.json sits two levels up from src/health and dist/health. */
export const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
