import { Injectable } from '@nestjs/common';
import type { ClientEntity } from '../clients/client.entity.js';
import { ClientsService } from '../clients/clients.service.js';
import type { Requester } from '../common/http/requester.js';
import { SecurityEvents } from '../common/logging/security-events.js';
import { invalidRequest, OAuthError } from './oauth-error.js';
import type { OAuthParams } from './oauth-params.js';

interface PresentedCredentials {
  clientId: string;
  secret: string;
  method: 'client_secret_basic' | 'client_secret_post';
}

/** client_secret_basic and client_secret_post (RFC 6749 §2.3.1), exactly one per request. */
@Injectable()
export class ClientAuthentication {
  constructor(
    private readonly clients: ClientsService,
    private readonly events: SecurityEvents,
  ) {}

  async authenticate(authorization: string | undefined, params: OAuthParams, requester: Requester): Promise<ClientEntity> {
    const credentials = presentedCredentials(authorization, params);
    const basic = credentials.method === 'client_secret_basic';
    const checked = await this.clients.checkSecret(credentials.clientId, credentials.secret);
    if ('refused' in checked) {
      this.events.emit('client.refused', { reason: checked.refused, clientId: credentials.clientId.slice(0, 200) }, requester);
      throw new OAuthError('invalid_client', 'client authentication failed', { basicChallenge: basic });
    }
    return checked.client;
  }
}

function presentedCredentials(authorization: string | undefined, params: OAuthParams): PresentedCredentials {
  const bodySecret = params.get('client_secret');
  const bodyId = params.get('client_id');
  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    if (bodySecret !== undefined) throw invalidRequest('client credentials were sent both in the Authorization header and in the body');
    if (bodyId !== undefined && bodyId !== basic.clientId) throw invalidRequest('client_id does not match the Authorization header');
    return { ...basic, method: 'client_secret_basic' };
  }
  if (bodyId === undefined || bodySecret === undefined) throw new OAuthError('invalid_client', 'client authentication is required');
  return { clientId: bodyId, secret: bodySecret, method: 'client_secret_post' };
}

/** Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1). */
function parseBasic(header: string): { clientId: string; secret: string } {
  const match = /^Basic ([A-Za-z0-9+/]+={0,2})$/i.exec(header.trim());
  const decoded = match ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new OAuthError('invalid_client', 'malformed HTTP Basic credentials', { basicChallenge: true });
  try {
    return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError('invalid_client', 'malformed HTTP Basic credentials', { basicChallenge: true });
  }
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, ' '));
