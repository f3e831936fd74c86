import { type CanActivate, type ExecutionContext, HttpException, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Env } from '../config/env.js';
import type { AccessTokenClaims } from '../token/access-tokens.service.js';
import { BearerAuthenticator, BearerRejection } from './bearer-authenticator.js';

/** Scope a publisher's token must carry (contract, "Notification service"). */
export const PUBLISH_SCOPE = 'notification:publish';

type Capability = 'publish' | 'subscribe';
const CAPABILITY = 'notificationCapability';

/** What the route's bearer token must allow: publishing, or subscribing (DEFAULT_CLIENT_SCOPE). */
export const Requires = (capability: Capability) => SetMetadata(CAPABILITY, capability);

export type AuthenticatedRequest = FastifyRequest & { token: AccessTokenClaims };

@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly authenticator: BearerAuthenticator,
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
