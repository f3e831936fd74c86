import type { IncomingMessage } from 'node:http';
import { Injectable } from '@nestjs/common';
import { decodeProtectedHeader } from 'jose';
import { Env } from '../../config/env.js';
import { BearerAuthenticatorService, BearerRejection } from '../../bearer/bearer-authenticator.service.js';
import type { ResumePosition } from '../delivery/delivery.service.js';
import { readResumePosition } from './resume-position.js';
import type { StreamToken } from './streams.service.js';
import { PROTOCOL_V2 } from './websocket-streams.js';

export type UpgradeDecision =
  | { ok: true; token: StreamToken; resume?: ResumePosition }
  | { ok: false; status: number; message: string; headers?: Record<string, string> };

/**
 * Decides who may open a stream, before anything starts: the origin allow-list, then the bearer
 * token and its subscribe scope, and a v2 client's resume position. A v2 stream's replacement
 * token passes the same checks and must be its client's.
 */
@Injectable()
export class StreamAuthorizerService {
  private readonly allowedOrigins: Set<string> | null;

  constructor(
    private readonly authenticator: BearerAuthenticatorService,
    private readonly env: Env,
  ) {
    // Origins as browsers send them: lower case, no trailing slash.
    const origins = env.WS_ALLOWED_ORIGINS?.split(',').map((origin) => origin.trim().toLowerCase().replace(/\/+$/, '')).filter(Boolean);
    this.allowedOrigins = origins?.length ? new Set(origins) : null;
  }

  /**
   * The upgrade's decision asked again once the stream is registered (StreamsService.start): a
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
    let resume: ResumePosition | undefined;
    if (offersV2(request)) {
      const query = new URL(request.url ?? '', 'http://localhost').searchParams;
      const read = readResumePosition(query.get('after') ?? undefined, query.get('epoch') ?? undefined);
      if ('error' in read) return { ok: false, status: 400, message: `Bad Request: ${read.error}` };
      resume = read;
    }
    try {
      const claims = await this.authenticator.authenticate(request.headers.authorization, this.env.DEFAULT_CLIENT_SCOPE);
      return { ok: true, token: { claims, kid: signingKeyOf(request.headers.authorization?.trim().split(/ +/)[1]) }, resume };
    } catch (error) {
      if (!(error instanceof BearerRejection)) throw error;
      return { ok: false, status: error.status, message: error.status === 401 ? 'Unauthorized' : 'Forbidden', headers: { 'WWW-Authenticate': error.wwwAuthenticate } };
    }
  }

  /** A v2 stream's new token: valid as the upgrade's must be, with the subscribe scope, and of the stream's own client. */
  async replacement(accessToken: string, clientId: string): Promise<StreamToken | undefined> {
    try {
      const { claims } = await this.authenticator.authenticateToken(accessToken, this.env.DEFAULT_CLIENT_SCOPE);
      return claims.client_id === clientId ? { claims, kid: signingKeyOf(accessToken) } : undefined;
    } catch (error) {
      if (error instanceof BearerRejection) return undefined;
      throw error;
    }
  }
}

/** Whether the client offers protocol v2 among its subprotocols. */
export const offersV2 = (request: IncomingMessage) =>
  (request.headers['sec-websocket-protocol'] ?? '').split(',').some((protocol) => protocol.trim() === PROTOCOL_V2);

/** The `kid` of a token already verified (only its header is read): what a key's revocation names. */
export function signingKeyOf(token: string | undefined): string | undefined {
  try {
    const { kid } = decodeProtectedHeader(token ?? '');
    return typeof kid === 'string' ? kid : undefined;
  } catch {
    return undefined;
  }
}
