import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../setup/test-app.js';

describe('TLS_CERT_FILE and TLS_KEY_FILE', () => {
  let dir: string;
  let app: TestApp;
  let ca: Buffer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voyage-connect-tls-'));
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert,
    ]);
    ca = await readFile(cert);
    app = await startTestApp({ TLS_CERT_FILE: cert, TLS_KEY_FILE: key });
  });
  afterAll(async () => {
    await app?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('makes the service serve https itself', async () => {
    const url = app.baseUrl.replace('http:', 'https:');
    const status = await new Promise<number>((resolve, reject) =>
      request(`${url}/health/live`, { ca }, (response) => {
        response.resume();
        resolve(response.statusCode!);
      })
        .on('error', reject)
        .end(),
    );
    expect(status).toBe(200);
    await expect(fetch(`${app.baseUrl}/health/live`)).rejects.toThrow();
  });
});
