import type { IncomingMessage } from 'node:http';
import { Injectable } from '@nestjs/common';
import { Env } from '../config/env.js';
import type { AccessTokenClaims } from '../token/access-tokens.service.js';
import { BearerAuthenticator, BearerRejection } from './bearer-authenticator.js';

export type UpgradeDecision = { ok: true; token: AccessTokenClaims } | { ok: false; status: number; message: string; headers?: Record<string, string> };

/** Decides a stream upgrade before the handshake: origin allow-list, then the bearer token and its subscribe scope. */
@Injectable()
export class StreamAuthorizer {
  private readonly allowedOrigins: Set<string> | null;

  constructor(
    private readonly authenticator: BearerAuthenticator,
    private readonly env: Env,
  ) {
    // Origins as browsers send them: lower case, no trailing slash.
    const origins = env.WS_ALLOWED_ORIGINS?.split(',').map((origin) => origin.trim().toLowerCase().replace(/\/+$/, '')).filter(Boolean);
    this.allowedOrigins = origins?.length ? new Set(origins) : null;
  }

  /**
   * The upgrade's decision asked again once the stream is registered (NotificationGateway): a
   * revocation that arrived between the two found no stream to close, and from registration on
   * every revocation finds it. The same rule as the upgrade's and the bearer routes', not a copy.
   */
  recheck(request: IncomingMessage): Promise<UpgradeDecision> {
    return this.authorize(request);
  }

  async authorize(request: IncomingMessage): Promise<UpgradeDecision> {
    // Devices send no Origin; a browser page from an unlisted origin is refused.
    const origin = request.headers.origin;
    if (origin && this.allowedOrigins && !this.allowedOrigins.has(origin.toLowerCase())) return { ok: false, status: 403, message: 'Forbidden' };
    try {
      return { ok: true, token: await this.authenticator.authenticate(request.headers.authorization, this.env.DEFAULT_CLIENT_SCOPE) };
    } catch (error) {
      if (!(error instanceof BearerRejection)) throw error;
      return { ok: false, status: error.status, message: error.status === 401 ? 'Unauthorized' : 'Forbidden', headers: { 'WWW-Authenticate': error.wwwAuthenticate } };
    }
  }
}
