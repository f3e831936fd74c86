import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../../clients/client.entity.js';
import { Env } from '../../config/env.js';
import { AccessTokensService } from '../access-tokens.service.js';
import { OAuthError } from '../../oauth/oauth-error.js';
import type { OAuthParams } from '../../oauth/oauth-params.js';
import { assertScopeAllowed, formatScope, parseScope } from '../../oauth/scope.js';
import type { GrantHandler } from './grant-handler.js';

/** The notification service's token response. */
export interface ClientTokenResponse {
  access_token: string;
  expires_in: number;
  token_type: 'Bearer';
  scope: string;
  resource?: string;
}

/**
 * RFC 6749 §4.4 for devices subscribing to notifications. A hot path: after client
 * authentication it touches no database, only the cached signing key.
 */
@Injectable()
export class ClientCredentialsGrant implements GrantHandler<ClientTokenResponse> {
  readonly name = 'client_credentials';

  /** The resource servers a token may be asked for, canonical (RFC 8707 §2: the server decides which it accepts). */
  private readonly allowedResources: Map<string, string>;

  constructor(
    private readonly accessTokens: AccessTokensService,
    private readonly env: Env,
  ) {
    // Each entry was checked to be an absolute URI when the configuration was loaded.
    this.allowedResources = new Map(env.allowedResources.map((resource) => [canonicalResource(resource)!, resource]));
  }

  /** RFC 8707 §2: an absolute URI without a fragment, naming a resource server this service issues tokens for. */
  private allowedResource(asked: string): string {
    const canonical = asked.includes('#') ? null : canonicalResource(asked);
    if (canonical === null) throw new OAuthError('invalid_target', 'resource must be an absolute URI without a fragment');
    const allowed = this.allowedResources.get(canonical);
    if (allowed === undefined) throw new OAuthError('invalid_target', 'resource is not a resource server this service issues tokens for');
    return allowed;
  }

  async handle(params: OAuthParams, client: ClientEntity): Promise<ClientTokenResponse> {
    const scopes = parseScope(params.get('scope')) ?? [this.env.DEFAULT_CLIENT_SCOPE];
    assertScopeAllowed(scopes, client.scopes);
    const asked = params.get('resource');
    const resource = asked === undefined ? undefined : this.allowedResource(asked);
    const scope = formatScope(scopes)!;
    const accessToken = await this.accessTokens.issue({
      subject: client.id,
      clientId: client.id,
      scope,
      audience: resource,
      lifetimeSeconds: this.env.CLIENT_TOKEN_TTL,
    });
    return { access_token: accessToken, expires_in: this.env.CLIENT_TOKEN_TTL, token_type: 'Bearer', scope, ...(resource ? { resource } : {}) };
  }
}

/** A resource URI as compared: parsed (case of scheme and host, default ports) and without trailing slashes; null when it is no absolute URI. */
function canonicalResource(resource: string): string | null {
  try {
    return new URL(resource).href.replace(/\/+$/, '');
  } catch {
    return null;
  }
}
