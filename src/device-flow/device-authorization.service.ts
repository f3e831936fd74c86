import { Injectable } from '@nestjs/common';
import type { Requester } from '../common/http/requester.js';
import { DEVICE_CODE_GRANT } from '../clients/client.entity.js';
import { randomToken, sha256 } from '../common/crypto/opaque-token.js';
import { Env } from '../config/env.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ClientAuthenticationService } from '../token/client-authentication.service.js';
import { DeviceCodesRepository } from '../codes/device-codes.repository.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { readFormBody } from '../oauth/oauth-params.js';
import { assertScopeAllowed, formatScope, parseScope, userGrantScopes } from '../oauth/scope.js';
import { displayUserCode, generateUserCode } from './user-code.js';

/** RFC 8628 §3.2. */
export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** Draws of a user code that is not in use: with 20^8 codes, a second draw is already rare. */
const USER_CODE_DRAWS = 5;

/** Starts device authorizations (RFC 8628 §3.1): a device code for the device, a user code for its user. */
@Injectable()
export class DeviceAuthorizationService {
  constructor(
    private readonly clientAuthentication: ClientAuthenticationService,
    private readonly deviceCodes: DeviceCodesRepository,
    private readonly metrics: MetricsService,
    private readonly env: Env,
  ) {}

  async start(body: unknown, authorization: string | undefined, contentType: string | undefined, requester: Requester): Promise<DeviceAuthorizationResponse> {
    const params = readFormBody(contentType, body);
    const client = await this.clientAuthentication.authenticate(authorization, params, requester);
    if (!client.grants.includes(DEVICE_CODE_GRANT)) throw new OAuthError('unauthorized_client', 'this client may not use the device authorization grant');
    const scope = parseScope(params.get('scope'));
    assertScopeAllowed(scope, userGrantScopes(client));

    // RFC 8628 §5.2: the device code is a bearer secret; 256 random bits, stored hashed.
    const deviceCode = randomToken(32);
    const userCode = await this.storeWithFreeUserCode(sha256(deviceCode), client.id, formatScope(scope));
    this.metrics.deviceAuthorizations.inc({ event: 'started' });
    const verificationUri = `${this.env.frontendUrl}/sso/device`;
    return {
      device_code: deviceCode,
      user_code: displayUserCode(userCode),
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${displayUserCode(userCode)}`,
      expires_in: this.env.DEVICE_CODE_TTL,
      interval: this.env.DEVICE_POLL_INTERVAL,
    };
  }

  private async storeWithFreeUserCode(deviceCodeHash: Buffer, clientId: string, scope: string | null): Promise<string> {
    for (let draw = 0; draw < USER_CODE_DRAWS; draw++) {
      const userCode = generateUserCode();
      const stored = await this.deviceCodes.insert({
        deviceCodeHash,
        userCode,
        clientId,
        scope,
        lifetimeSeconds: this.env.DEVICE_CODE_TTL,
        intervalSeconds: this.env.DEVICE_POLL_INTERVAL,
      });
      if (stored) return userCode;
    }
    throw new Error(`no free user code in ${USER_CODE_DRAWS} draws`);
  }
}
