import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { type Env, InvalidConfigError } from './env.js';

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

/**
 * TLS_CERT_FILE and TLS_KEY_FILE read and tried as a pair, or undefined without TLS; a file that
 * cannot be read, or a pair that is no certificate and its key, is a configuration error.
 */
export function readTlsFiles(env: Env): TlsFiles | undefined {
  if (!env.TLS_CERT_FILE || !env.TLS_KEY_FILE) return undefined;
  const files = { cert: readSetting('TLS_CERT_FILE', env.TLS_CERT_FILE), key: readSetting('TLS_KEY_FILE', env.TLS_KEY_FILE) };
  try {
    createSecureContext(files);
  } catch (error) {
    throw new InvalidConfigError([`Invalid configuration: TLS_CERT_FILE and TLS_KEY_FILE must be a PEM certificate and its private key (${(error as Error).message})`]);
  }
  return files;
}

function readSetting(setting: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new InvalidConfigError([`Invalid configuration: ${setting} ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`]);
  }
}
