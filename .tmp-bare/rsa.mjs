import { generateKeyPairSync, sign } from 'node:crypto';
for (const [name, opts, extra] of [['RS256 (RSA-2048)', ['rsa', { modulusLength: 2048 }], {}], ['ES256 (P-256)', ['ec', { namedCurve: 'P-256' }], { dsaEncoding: 'ieee-p1363' }]]) {
  const { privateKey } = generateKeyPairSync(...opts);
  const data = Buffer.alloc(400, 'a');
  for (let i = 0; i < 200; i++) sign('sha256', data, { key: privateKey, ...extra });
  const n = 2000, t = performance.now();
  for (let i = 0; i < n; i++) sign('sha256', data, { key: privateKey, ...extra });
  console.log(name, ((performance.now() - t) * 1000 / n).toFixed(0), 'µs per signature');
}
