import { applyDecorators, type CanActivate, type ExecutionContext, HttpException, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { Env } from '../config/env.js';
import type { AccessTokenClaims } from '../token/access-tokens.service.js';
import { BearerAuthenticatorService, BearerRejection } from './bearer-authenticator.service.js';

/** Scope a publisher's token must carry (contract, "Notification service"). */
export const PUBLISH_SCOPE = 'notification:publish';

type Capability = 'publish' | 'subscribe';
const CAPABILITY = 'notificationCapability';

/** What the route's bearer token must allow: publishing, or subscribing (DEFAULT_CLIENT_SCOPE). */
export const Requires = (capability: Capability) => SetMetadata(CAPABILITY, capability);

/** The guard's refusals in the OpenAPI description: 401 and 403 with WWW-Authenticate (RFC 6750 §3). */
export function ApiBearerRefusals(scope: string) {
  const challenge = { 'WWW-Authenticate': { description: 'RFC 6750 §3: `Bearer realm="voyage-connect"`, with `error` and `error_description` when a token was sent', schema: { type: 'string' } } };
  return applyDecorators(
    ApiErrorResponse(401, 'no bearer token, a malformed, forged or expired one, one for another audience, a revoked token or grant, or a disabled client', challenge),
    ApiErrorResponse(403, `the token lacks ${scope} (\`error="insufficient_scope"\`)`, challenge),
  );
}

export type AuthenticatedRequest = FastifyRequest & { token: AccessTokenClaims };

@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly authenticator: BearerAuthenticatorService,
    private readonly reflector: Reflector,
    private readonly env: Env,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const capability = this.reflector.get<Capability>(CAPABILITY, context.getHandler());
    const scope = capability === 'publish' ? PUBLISH_SCOPE : this.env.DEFAULT_CLIENT_SCOPE;
    try {
      request.token = await this.authenticator.authenticate(request.headers.authorization, scope);
      return true;
    } catch (error) {
      if (!(error instanceof BearerRejection)) throw error;
      context.switchToHttp().getResponse<FastifyReply>().header('WWW-Authenticate', error.wwwAuthenticate);
      throw new HttpException(error.message, error.status);
    }
  }
}
