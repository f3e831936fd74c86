import { applyDecorators, type CanActivate, type ExecutionContext, HttpException, Injectable, SetMetadata, UseGuards } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiErrorResponse } from '../common/errors/api-error-response.decorator.js';
import { ApiOAuthErrorResponse } from '../oauth/api-oauth-error-response.decorator.js';
import { Env } from '../config/env.js';
import type { AccessTokenClaims } from '../token/access-tokens.service.js';
import { BearerAuthenticatorService, BearerRejection } from './bearer-authenticator.service.js';

/** The scope a route's token must hold: its name, or the setting that names it (DEFAULT_CLIENT_SCOPE). */
export type RequiredScope = string | ((env: Env) => string);
const REQUIRED_SCOPE = 'bearerScope';

/** How a route answers a refused token: the service's JSON errors, or RFC 6749's `{error, error_description}` (BearerExceptionFilter). */
type RefusalFormat = 'json' | 'oauth';

/**
 * Guards a route with a client's bearer token holding `scope`, and describes its refusals in the
 * OpenAPI document (`scopeInDocs` names a scope read from the settings).
 */
export function RequiresScope(scope: RequiredScope, options: { scopeInDocs?: string; format?: RefusalFormat } = {}) {
  const named = options.scopeInDocs ?? (typeof scope === 'string' ? scope : 'the required scope');
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scope), UseGuards(BearerGuard), ApiBearerRefusals(named, options.format ?? 'json'));
}

/** The guard's refusals in the OpenAPI description: 401 and 403 with WWW-Authenticate (RFC 6750 §3). */
function ApiBearerRefusals(scope: string, format: RefusalFormat) {
  const challenge = { 'WWW-Authenticate': { description: 'RFC 6750 §3: `Bearer realm="voyage-connect"`, with `error` and `error_description` when a token was sent', schema: { type: 'string' } } };
  const refusal = format === 'json' ? ApiErrorResponse : ApiOAuthErrorResponse;
  return applyDecorators(
    refusal(401, 'no bearer token, a malformed, forged or expired one, one for another audience, a revoked token or grant, or a disabled client (`invalid_token`)', challenge),
    refusal(403, `the token lacks ${scope} (\`error="insufficient_scope"\`)`, challenge),
  );
}

export type AuthenticatedRequest = FastifyRequest & { token: AccessTokenClaims };

/** Lets a request through with a valid bearer token holding the route's scope (RFC 6750); the token's claims go on `request.token`. */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly authenticator: BearerAuthenticatorService,
    private readonly reflector: Reflector,
    private readonly env: Env,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const required = this.reflector.getAllAndOverride<RequiredScope | undefined>(REQUIRED_SCOPE, [context.getHandler(), context.getClass()]);
    if (required === undefined) throw new Error(`${context.getClass().name}.${context.getHandler().name} is guarded without a scope: give it @RequiresScope`);
    const scope = typeof required === 'string' ? required : required(this.env);
    try {
      request.token = await this.authenticator.authenticate(request.headers.authorization, scope);
      return true;
    } catch (error) {
      if (!(error instanceof BearerRejection)) throw error;
      context.switchToHttp().getResponse<FastifyReply>().header('WWW-Authenticate', error.wwwAuthenticate);
      // The JSON routes answer it as any HttpException; the OAuth-format ones read the rejection from its cause (BearerExceptionFilter).
      throw new HttpException(error.message, error.status, { cause: error });
    }
  }
}
