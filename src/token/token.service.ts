import { Injectable } from '@nestjs/common';
import { type AnswerDeadline, NO_DEADLINE } from '../common/http/request-deadlines.js';
import type { Requester } from '../common/http/requester.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { ClientAuthenticationService } from './client-authentication.service.js';
import { AuthorizationCodeGrant } from './grants/authorization-code.grant.js';
import { ClientCredentialsGrant } from './grants/client-credentials.grant.js';
import { DeviceCodeGrant } from './grants/device-code.grant.js';
import type { GrantHandler } from './grants/grant-handler.js';
import { RefreshTokenGrant } from './grants/refresh-token.grant.js';
import { OAuthError } from '../oauth/oauth-error.js';
import { readFormBody, requireParam } from '../oauth/oauth-params.js';

/** A token endpoint: reads the request, authenticates the client, hands over to the grant. */
@Injectable()
export class TokenService {
  private readonly ssoGrants: Map<string, GrantHandler>;
  private readonly identityGrants: Map<string, GrantHandler>;

  constructor(
    private readonly clientAuthentication: ClientAuthenticationService,
    private readonly metrics: MetricsService,
    authorizationCode: AuthorizationCodeGrant,
    refreshToken: RefreshTokenGrant,
    deviceCode: DeviceCodeGrant,
    clientCredentials: ClientCredentialsGrant,
  ) {
    this.ssoGrants = grantMap(authorizationCode, refreshToken, deviceCode);
    this.identityGrants = grantMap(clientCredentials);
  }

  /** POST /sso/token: authorization_code, refresh_token and the device grant (RFC 8628). */
  ssoToken(body: unknown, authorization: string | undefined, contentType: string | undefined, deadline: AnswerDeadline, requester: Requester): Promise<object> {
    return this.exchange(this.ssoGrants, body, authorization, contentType, deadline, requester);
  }

  /** POST /public/api/oauth2/token: client_credentials. */
  identityToken(body: unknown, authorization: string | undefined, contentType: string | undefined, requester: Requester): Promise<object> {
    // client_credentials commits nothing a retry would miss.
    return this.exchange(this.identityGrants, body, authorization, contentType, NO_DEADLINE, requester);
  }

  private async exchange(
    grants: Map<string, GrantHandler>,
    body: unknown,
    authorization: string | undefined,
    contentType: string | undefined,
    deadline: AnswerDeadline,
    requester: Requester,
  ): Promise<object> {
    const params = readFormBody(contentType, body);
    const grantType = requireParam(params, 'grant_type');
    const grant = grants.get(grantType);
    if (!grant) throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported here`);
    const client = await this.clientAuthentication.authenticate(authorization, params, requester);
    if (!client.grants.includes(grant.name)) throw new OAuthError('unauthorized_client', `this client may not use ${grant.name}`);
    const response = await grant.handle(params, client, deadline, requester);
    this.metrics.tokensIssued.inc({ grant: grant.name });
    return response;
  }
}

const grantMap = (...grants: GrantHandler[]) => new Map(grants.map((grant) => [grant.name as string, grant]));
